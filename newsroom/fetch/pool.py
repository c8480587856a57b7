"""A leaner httpcore connection pool for hundreds of requests at 32 connections.

Profiling a 500-feed run showed most of the event loop's time inside httpcore's
pool bookkeeping, not in I/O: on every request start and end it walks all
connections, counts them again for every idle one (quadratic), and asks each
idle one's socket whether it is readable through anyio's attribute lookup
(a fresh dict and getpeername() per call). This pool keeps httpcore's exact
rules and only removes the repeated work: the count is taken once per step,
and streams remember their raw socket.

Tied to httpcore 1.0.x (pinned in requirements.txt): `_assign_requests_to_connections`
is the one internal it overrides, with the same behaviour.
"""

from __future__ import annotations

import ssl
import typing

import httpcore
from httpcore._utils import is_socket_readable


class SocketCachingStream(httpcore.AsyncNetworkStream):
    """Wraps a backend stream; answers "socket" and "is_readable" from the raw
    socket found once, instead of a fresh attribute lookup per call."""

    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self._inner = inner
        self._sock = inner.get_extra_info("socket")

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self._inner.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        inner = await self._inner.start_tls(ssl_context, server_hostname, timeout)
        return SocketCachingStream(inner)

    def get_extra_info(self, info: str) -> typing.Any:
        if info == "socket":
            return self._sock
        if info == "is_readable":
            return is_socket_readable(self._sock)
        return self._inner.get_extra_info(info)


class LeanConnectionPool(httpcore.AsyncConnectionPool):
    def _assign_requests_to_connections(self) -> list:
        closing = []
        connections = self._connections
        # Clean up closed, expired and surplus idle connections. (httpcore's
        # "surplus" test counts every connection, not just idle ones; kept as is.)
        for connection in list(connections):
            if connection.is_closed():
                connections.remove(connection)
            elif connection.has_expired():
                connections.remove(connection)
                closing.append(connection)
            elif (
                connection.is_idle()
                and len(connections) > self._max_keepalive_connections
            ):
                connections.remove(connection)
                closing.append(connection)

        for pool_request in [r for r in self._requests if r.is_queued()]:
            origin = pool_request.request.url.origin
            available = None
            idle = None
            for connection in connections:
                if available is None and (
                    connection.can_handle_request(origin) and connection.is_available()
                ):
                    available = connection
                    break
                if idle is None and connection.is_idle():
                    idle = connection
            if available is not None:
                pool_request.assign_to_connection(available)
            elif len(connections) < self._max_connections:
                connection = self.create_connection(origin)
                connections.append(connection)
                pool_request.assign_to_connection(connection)
            elif idle is not None:
                connections.remove(idle)
                closing.append(idle)
                connection = self.create_connection(origin)
                connections.append(connection)
                pool_request.assign_to_connection(connection)
        return closing
