"""The browser's egress proxy: every connection Chromium makes goes through here.

    python -m sessions_app.egress --port 0 --token T [--allow-private]

A small forward proxy on 127.0.0.1: CONNECT for https and WebSockets (Chromium
tunnels ws:// and wss:// alike), absolute-URI requests for plain http. Each
destination is resolved once, refused if ANY of its addresses is not public
(the safe fetcher's own rule, newsroom.fetch.addresses), and connected to one
of exactly the addresses that were checked, so a name that resolves elsewhere a
moment later (DNS rebinding) has nothing to swap. Chromium is launched with
this proxy and without its implicit loopback bypass: page requests, WebSockets,
service-worker fetches, prefetches and every redirect hop pass through it,
whichever process drives the page and whether or not it routes requests.

The page guard in pool.py stays the first layer (it names refusals per page);
this process is the one a page cannot get around. It runs detached beside
Chromium and outlives the process that launched it, like the browser. Imports
no Django: the mode comes from the command line, fixed for its lifetime.

A request for HEALTH_PATH (origin form, not a proxied URL) answers
`newsroom-egress <token> private=allowed|refused`: the launcher's token tells
this proxy from another program that later took the port.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import logging
import os
import signal
import socket
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from newsroom.fetch.addresses import blocked_reason

log = logging.getLogger("newsroom.egress")

HEALTH_PATH = "/newsroom-egress"
REFUSED_HEADER = "X-Newsroom-Egress-Refused"
HEAD_LIMIT = 64 * 1024  # a request head larger than this is refused
RESPONSE_HEAD_LIMIT = 256 * 1024  # response heads carry cookies
CHUNK = 256 * 1024
HEAD_TIMEOUT = 30.0
CONNECT_TIMEOUT = 10.0
# Hop-by-hop headers of the client's request; the upstream gets its own.
_HOP = {b"connection", b"keep-alive", b"proxy-connection", b"proxy-authorization"}

# async def resolve(host, port) -> IP address strings, in the order to try them
Resolver = Callable[[str, int], Awaitable[list[str]]]


class Refusal(Exception):
    """The destination may not be reached; `status` and str() for the answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def system_resolver(host: str, port: int) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(
        host, port, type=socket.SOCK_STREAM
    )
    addresses: list[str] = []
    for *_, sockaddr in infos:
        if sockaddr[0] not in addresses:
            addresses.append(sockaddr[0])
    return addresses


def _literal(host: str) -> str | None:
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return None


def verdict(host: str, addresses: list[str]) -> str | None:
    """Why `host` (resolved to `addresses`) may not be reached, or None."""
    for address in addresses:
        why = blocked_reason(address)
        if why is not None:
            if address == host:
                return f"{host} is {why}"
            return f"{host} resolves to {address}, {why}"
    return None


class Proxy:
    def __init__(
        self,
        *,
        token: str,
        allow_private: bool,
        resolver: Resolver | None = None,
        connect_timeout: float = CONNECT_TIMEOUT,
    ) -> None:
        self.token = token
        self.allow_private = allow_private
        self.resolver = resolver or system_resolver
        self.connect_timeout = connect_timeout
        self.refused = 0  # how many destinations were refused (for tests and logs)

    @property
    def health(self) -> bytes:
        mode = "allowed" if self.allow_private else "refused"
        return f"newsroom-egress {self.token} private={mode}".encode()

    async def serve(self, sock: socket.socket) -> asyncio.Server:
        return await asyncio.start_server(self.handle, sock=sock, limit=HEAD_LIMIT)

    # --- one client connection ---

    async def handle(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        upstream: asyncio.StreamWriter | None = None
        try:
            try:
                async with asyncio.timeout(HEAD_TIMEOUT):
                    head = await reader.readuntil(b"\r\n\r\n")
            except (
                asyncio.IncompleteReadError,
                asyncio.LimitOverrunError,
                TimeoutError,
            ):
                return
            method, target, version, headers = _parse_head(head)
            if method == b"CONNECT":
                host, port = _authority(target.decode("latin-1"))
                up_reader, upstream = await self.connect(host, port)
                writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                await _relay(reader, writer, up_reader, upstream)
            elif target.startswith(b"/"):
                if target.split(b"?")[0] == HEALTH_PATH.encode():
                    _answer(writer, 200, self.health)
                else:
                    _answer(writer, 400, b"this is a proxy: ask for absolute URLs")
            else:
                await self.forward(reader, writer, method, target, version, headers)
        except Refusal as e:
            if e.status == 403:
                self.refused += 1
                log.warning("refused: %s", e)
            _answer(writer, e.status, str(e).encode(), refused=e.status == 403)
        except (ConnectionError, OSError, asyncio.IncompleteReadError) as e:
            log.debug("connection ended: %s", e)
        finally:
            if upstream is not None:
                upstream.transport.abort()
            try:
                if not writer.is_closing():
                    await writer.drain()
            except (ConnectionError, OSError):
                pass
            writer.close()

    async def connect(
        self, host: str, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """Resolve `host` once, check every address, connect to a checked one."""
        literal = _literal(host)
        if literal is not None:
            addresses = [literal]
        else:
            try:
                addresses = await self.resolver(host, port)
            except (OSError, UnicodeError) as e:
                raise Refusal(502, f"cannot resolve {host}: {e}") from None
            if not addresses:
                raise Refusal(502, f"cannot resolve {host}: no addresses")
        if not self.allow_private:
            why = verdict(host, addresses)
            if why:
                raise Refusal(
                    403,
                    f"refused by Newsroom's egress proxy: {why}; pages may not reach "
                    "private networks (NEWSROOM_ALLOW_PRIVATE_NETWORKS=1 allows it)",
                )
        last: Exception | None = None
        for address in addresses:  # pinned: only ever the addresses checked above
            try:
                async with asyncio.timeout(self.connect_timeout):
                    return await asyncio.open_connection(
                        address, port, limit=RESPONSE_HEAD_LIMIT
                    )
            except (OSError, TimeoutError) as e:
                last = e
        raise Refusal(502, f"cannot connect to {host} port {port}: {last}")

    async def forward(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        method: bytes,
        target: bytes,
        version: bytes,
        headers: list[tuple[bytes, bytes]],
    ) -> None:
        """One plain-http request, absolute-URI form, on its own upstream connection.

        The client connection is closed after the answer ("Connection: close"):
        a kept-alive proxy connection may carry the next request to another
        host, which must go through the check again."""
        parts = urlsplit(target.decode("latin-1"))
        if parts.scheme not in ("http", "ws") or not parts.hostname:
            raise Refusal(400, f"only http URLs can be proxied, not {parts.scheme!r}")
        try:
            port = parts.port or 80
        except ValueError:
            raise Refusal(400, "bad port") from None
        upgrade = any(name.lower() == b"upgrade" for name, _ in headers)
        length, chunked = _body_length(headers)
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        lines = [b"%s %s %s" % (method, path.encode("latin-1"), version)]
        for name, value in headers:
            low = name.lower()
            if low in _HOP and not (upgrade and low == b"connection"):
                continue
            lines.append(name + b": " + value)
        if not upgrade:
            lines.append(b"Connection: close")
        up_reader, upstream = await self.connect(parts.hostname, port)
        try:
            upstream.write(b"\r\n".join(lines) + b"\r\n\r\n")
            # Only this request's body: bytes after it are not this host's.
            if upgrade or chunked:
                body = asyncio.ensure_future(_pipe(reader, upstream))
            else:
                body = asyncio.ensure_future(_copy(reader, upstream, length))
            try:
                while True:
                    head = await up_reader.readuntil(b"\r\n\r\n")
                    status = head[9:12]
                    if status == b"101" or not status.startswith(b"1"):
                        break
                    writer.write(head)  # 100 Continue, 103 Early Hints
                if status == b"101":
                    writer.write(head)
                    await _relay(reader, writer, up_reader, upstream, started=body)
                    return
                writer.write(_closing(head))
                await _pipe(up_reader, writer, eof=False)
            finally:
                body.cancel()
        finally:
            upstream.transport.abort()


# --- bytes ---


def _parse_head(head: bytes) -> tuple[bytes, bytes, bytes, list[tuple[bytes, bytes]]]:
    lines = head[:-4].split(b"\r\n")
    try:
        method, target, version = lines[0].split(b" ")
    except ValueError:
        raise Refusal(400, "bad request line") from None
    headers = []
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        if not sep or not name or name != name.strip():
            raise Refusal(400, "bad header line")
        headers.append((name, value.strip()))
    return method.upper(), target, version, headers


def _body_length(headers: list[tuple[bytes, bytes]]) -> tuple[int, bool]:
    """(Content-Length or 0, whether the body is chunked)."""
    length, chunked = 0, False
    for name, value in headers:
        low = name.lower()
        if low == b"transfer-encoding":
            chunked = chunked or b"chunked" in value.lower()
        elif low == b"content-length":
            if not value.isdigit():
                raise Refusal(400, "bad Content-Length")
            length = int(value)
    return length, chunked


def _authority(target: str) -> tuple[str, int]:
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise Refusal(400, f"CONNECT needs host:port, not {target!r}")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not host:
        raise Refusal(400, f"CONNECT needs host:port, not {target!r}")
    return host, int(port)


def _closing(head: bytes) -> bytes:
    """The response head with its connection headers replaced by a close."""
    lines = head[:-4].split(b"\r\n")
    kept = [lines[0]] + [
        line
        for line in lines[1:]
        if line.partition(b":")[0].strip().lower() not in _HOP
    ]
    return b"\r\n".join([*kept, b"Connection: close", b"Proxy-Connection: close"]) + (
        b"\r\n\r\n"
    )


def _answer(
    writer: asyncio.StreamWriter, status: int, text: bytes, *, refused: bool = False
) -> None:
    reason = {200: b"OK", 400: b"Bad Request", 403: b"Forbidden", 502: b"Bad Gateway"}
    extra = b""
    if refused:
        # Header values must be one line of latin-1; the message is ASCII.
        extra = REFUSED_HEADER.encode() + b": " + text.replace(b"\r\n", b" ") + b"\r\n"
    writer.write(
        b"HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
        b"Content-Length: %d\r\nConnection: close\r\n%s\r\n%s"
        % (status, reason.get(status, b"Error"), len(text), extra, text)
    )


async def _pipe(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, eof: bool = True
) -> None:
    while data := await reader.read(CHUNK):
        writer.write(data)
        await writer.drain()
    if eof and writer.can_write_eof() and not writer.is_closing():
        writer.write_eof()


async def _copy(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, length: int
) -> None:
    while length > 0:
        data = await reader.read(min(length, CHUNK))
        if not data:
            return
        writer.write(data)
        length -= len(data)
        await writer.drain()


async def _relay(
    client_r: asyncio.StreamReader,
    client_w: asyncio.StreamWriter,
    up_r: asyncio.StreamReader,
    up_w: asyncio.StreamWriter,
    *,
    started: asyncio.Future | None = None,
) -> None:
    """Both directions until either end closes or fails: browsers do not
    half-close, and a tunnel left waiting on a silent server would linger."""
    tasks = [
        started or asyncio.ensure_future(_pipe(client_r, up_w)),
        asyncio.ensure_future(_pipe(up_r, client_w)),
    ]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            task.result()  # a reset is only logged, by the caller
    finally:
        for task in tasks:
            task.cancel()


# --- the detached process ---


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--token", required=True)
    parser.add_argument("--allow-private", action="store_true")
    parser.add_argument(
        "--exit-with", type=int, metavar="PID", help="exit when this process has"
    )
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--fd", type=int, help="an inherited listening socket")
    where.add_argument("--port", type=int, help="listen on 127.0.0.1:PORT")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=os.environ.get("LOG_LEVEL", "INFO"),
        format="%(asctime)s egress %(levelname)s %(message)s",
    )
    if args.fd is not None:
        sock = socket.socket(fileno=args.fd)
    else:
        sock = socket.create_server(("127.0.0.1", args.port))
    proxy = Proxy(token=args.token, allow_private=args.allow_private)
    asyncio.run(_serve_forever(proxy, sock, args.exit_with))


async def _serve_forever(
    proxy: Proxy, sock: socket.socket, browser_pid: int | None
) -> None:
    server = await proxy.serve(sock)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    if browser_pid:
        loop.create_task(_watch(browser_pid, stop))
    log.info(
        "listening on 127.0.0.1:%s, private networks %s",
        sock.getsockname()[1],
        "allowed" if proxy.allow_private else "refused",
    )
    async with server:
        await stop.wait()


async def _watch(pid: int, stop: asyncio.Event) -> None:
    """Set `stop` once `pid` has exited: a proxy without its browser has no use."""
    while True:
        await asyncio.sleep(2.0)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            log.info("browser (pid %s) exited; stopping", pid)
            stop.set()
            return
        except PermissionError:
            pass


if __name__ == "__main__":
    main()
