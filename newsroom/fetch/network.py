"""The connection layer of the safe fetcher: resolve, check, connect to the checked IP.

httpcore asks its network backend to `connect_tcp(host, port)`. Our backend
resolves `host` itself, refuses the connection if ANY resolved address is not
public (unless private networks are allowed), and connects to one of exactly the
addresses it checked. TLS still runs against the host name (httpcore passes the
origin host as SNI and certificate name) and the Host header is unchanged, so
only the address lookup is pinned: DNS rebinding between check and connect has
nothing to swap. Every new connection, including each redirect hop to a new
origin, goes through this check.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
from collections.abc import Awaitable, Callable, Iterable

import httpcore
import httpx

from newsroom.fetch.addresses import blocked_reason
from newsroom.fetch.pool import LeanConnectionPool, SocketCachingStream

# async def resolve(host, port) -> list of IP address strings
Resolver = Callable[[str, int], Awaitable[list[str]]]


class BlockedAddress(Exception):
    """The host resolves to an address fetches may not reach; str() says why."""


class ResolveError(Exception):
    """The host name could not be resolved; str() says so in plain words."""


async def system_resolver(host: str, port: int) -> list[str]:
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise ResolveError(f"cannot resolve {host} ({e.strerror or e})") from None
    addresses: list[str] = []
    for _family, _type, _proto, _canon, sockaddr in infos:
        address = sockaddr[0]
        if address not in addresses:
            addresses.append(address)
    return addresses


def _literal(host: str) -> str | None:
    try:
        return str(ipaddress.ip_address(host.strip("[]")))
    except ValueError:
        return None


class PinnedBackend(httpcore.AsyncNetworkBackend):
    def __init__(
        self, *, allow_private: bool, resolver: Resolver | None = None
    ) -> None:
        self.allow_private = allow_private
        self.resolver = resolver or system_resolver
        self._inner = httpcore.AnyIOBackend()

    async def checked_addresses(self, host: str, port: int) -> list[str]:
        literal = _literal(host)
        if literal is not None:
            addresses = [literal]
        else:
            addresses = await self.resolver(host, port)
            if not addresses:
                raise ResolveError(f"cannot resolve {host} (no addresses)")
        if not self.allow_private:
            for address in addresses:
                reason = blocked_reason(address)
                if reason is None:
                    continue
                if literal is not None:
                    raise BlockedAddress(f"blocked: {address} is {reason}")
                raise BlockedAddress(f"blocked: {host} resolves to {address}, {reason}")
        return addresses

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            async with asyncio.timeout(timeout):
                addresses = await self.checked_addresses(host, port)
        except TimeoutError:
            raise httpcore.ConnectTimeout(f"resolving {host} timed out") from None
        last: Exception | None = None
        for address in addresses:
            try:
                stream = await self._inner.connect_tcp(
                    address,
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
                return SocketCachingStream(stream)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as e:
                last = e
        assert last is not None
        raise last

    async def connect_unix_socket(self, path, timeout=None, socket_options=None):
        raise BlockedAddress("blocked: Unix sockets cannot be fetched")

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class SafeTransport(httpx.AsyncHTTPTransport):
    def __init__(
        self,
        *,
        allow_private: bool,
        resolver: Resolver | None = None,
        limits: httpx.Limits,
        verify: ssl.SSLContext | bool = True,
    ) -> None:
        super().__init__(trust_env=False, limits=limits, http2=False, verify=verify)
        self.backend = PinnedBackend(allow_private=allow_private, resolver=resolver)
        # httpx builds its pool without a way to pass a network backend; build
        # the same pool with ours (the pool is httpcore's public API).
        self._pool = LeanConnectionPool(
            ssl_context=self._pool._ssl_context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            http1=True,
            http2=False,
            network_backend=self.backend,
        )


class SafeClient(httpx.AsyncClient):
    """An AsyncClient whose every connection goes through PinnedBackend.

    Environment proxies and .netrc are ignored (trust_env=False), redirects are
    never followed by httpx (the fetcher follows them by hand)."""


def make_client(
    *,
    allow_private: bool | None = None,
    resolver: Resolver | None = None,
    max_connections: int = 32,
    user_agent: str | None = None,
    verify: ssl.SSLContext | bool = True,
) -> SafeClient:
    """A client for `fetch`. `allow_private` defaults to the Django setting
    NEWSROOM_ALLOW_PRIVATE_NETWORKS; `user_agent` to NEWSROOM_USER_AGENT;
    `verify` (certificate checks) to the system's trusted authorities."""
    if allow_private is None or user_agent is None:
        from django.conf import settings

        if allow_private is None:
            allow_private = settings.NEWSROOM_ALLOW_PRIVATE_NETWORKS
        if user_agent is None:
            user_agent = settings.NEWSROOM_USER_AGENT
    limits = httpx.Limits(
        max_connections=max_connections,
        max_keepalive_connections=max_connections,
        keepalive_expiry=30,
    )
    transport = SafeTransport(
        allow_private=allow_private, resolver=resolver, limits=limits, verify=verify
    )
    return SafeClient(
        transport=transport,
        trust_env=False,
        follow_redirects=False,
        headers={"User-Agent": user_agent},
    )
