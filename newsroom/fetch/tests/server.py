"""A local HTTP server for network tests: 127.0.0.1, port 0, routes set by the test.

Each route is a function(request) -> Reply (or a Reply). Handlers run in the
server's own threads, so a slow route never blocks the test's event loop.
"""

from __future__ import annotations

import functools
import gzip
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit


@dataclass
class Reply:
    status: int = 200
    body: bytes | Iterable[bytes] = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds before the status line
    chunk_delay: float = 0.0  # seconds between body chunks (slow bodies)
    # Called once the whole answer is written, with True when the client was
    # still there to take it (a killed client's request may be read after it died).
    sent: Callable[[bool], None] | None = None


@dataclass
class Request:
    path: str
    query: str
    headers: dict[str, str]
    client_port: int = 0


Route = Callable[[Request], Reply] | Reply


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    # Headers and body go out in two writes; with Nagle on, the body waited for
    # the client's delayed ACK of the headers (40 ms on Linux) after `sent`
    # had already reported the answer delivered.
    disable_nagle_algorithm = True

    def log_message(self, format, *args):  # keep test output quiet
        pass

    def do_GET(self):
        parts = urlsplit(self.path)
        request = Request(
            parts.path,
            parts.query,
            {k.lower(): v for k, v in self.headers.items()},
            self.client_address[1],
        )
        self.server.requests.append(request)
        route = self.server.routes.get(parts.path)
        reply = Reply(404, b"no such route") if route is None else route
        if callable(reply):
            reply = reply(request)
        if reply.delay:
            time.sleep(reply.delay)
        try:
            self.send_response(reply.status)
            chunks = [reply.body] if isinstance(reply.body, bytes) else reply.body
            for key, value in reply.headers.items():
                self.send_header(key, value)
            if isinstance(reply.body, bytes):
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)
                self.wfile.flush()
                if reply.sent is not None:
                    reply.sent(not _peer_closed(self.connection))
                return
            # Chunked so the body can trickle.
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for chunk in chunks:
                if reply.chunk_delay:
                    time.sleep(reply.chunk_delay)
                self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            if reply.sent is not None:
                reply.sent(not _peer_closed(self.connection))
        except (BrokenPipeError, ConnectionResetError):
            if reply.sent is not None:
                reply.sent(False)
            # the client gave up, as the test wanted


def _peer_closed(sock: socket.socket) -> bool:
    """Whether the client has closed its end (a keep-alive client that is still
    there has sent nothing more; one that died left an end of stream)."""
    try:
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except (BlockingIOError, ValueError):  # ValueError: TLS sockets take no flags
        return False
    except OSError:
        return True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def handle_error(self, request, client_address):
        pass  # clients that give up mid-body (timeouts, caps) are what tests want

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.routes: dict[str, Route] = {}
        self.requests: list[Request] = []


class LocalServer:
    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self._server = _Server()
        self.scheme = "http"
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
            self.scheme = "https"
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def requests(self) -> list[Request]:
        return self._server.requests

    def route(self, path: str, reply: Route) -> str:
        self._server.routes[path] = reply
        return self.url(path)

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"{self.scheme}://{host}:{self.port}{path}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def rss(n: int = 3, title: str = "Local feed", pad: int = 0) -> bytes:
    items = "".join(
        f"<item><title>Item {i}</title><link>http://example.org/{i}</link>"
        f"<guid>http://example.org/{i}</guid><description>{'x' * pad}</description></item>"
        for i in range(n)
    )
    return (
        '<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel>'
        f"<title>{title}</title><link>http://example.org/</link>{items}</channel></rss>"
    ).encode()


@functools.lru_cache(maxsize=4)
def gzip_bomb(inflated: int) -> bytes:
    """`inflated` zero bytes, gzipped: about a thousandth of that on the wire."""
    return gzip.compress(b"\0" * inflated, compresslevel=9)


def client_trusting(trusted: set[str], resolver):
    """A fetch client that checks addresses as production does, except for the
    `trusted` host names (mapped by `resolver` to the local server): stand-ins
    for public sites, so tests can reach them while every other host, and every
    redirect hop, is held to the private-network rules."""
    from newsroom.fetch import make_client

    client = make_client(allow_private=False, resolver=resolver)
    backend = client._transport.backend
    original = backend.checked_addresses

    async def checked(host, port):
        backend.allow_private = host in trusted
        return await original(host, port)

    backend.checked_addresses = checked
    return client


def tls_contexts(hostname: str) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """(server, client) TLS contexts: a throwaway CA and a certificate for
    `hostname` only, so a test can tell whether the client checked the name."""
    import datetime
    import os
    import tempfile

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Newsroom test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hostname)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName(hostname)]), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    with tempfile.TemporaryDirectory() as tmp:
        cert_path, key_path = (
            os.path.join(tmp, "cert.pem"),
            os.path.join(tmp, "key.pem"),
        )
        with open(cert_path, "wb") as f:
            f.write(cert.public_bytes(pem))
        with open(key_path, "wb") as f:
            f.write(
                key.private_bytes(
                    pem,
                    serialization.PrivateFormat.PKCS8,
                    serialization.NoEncryption(),
                )
            )
        server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        server.load_cert_chain(cert_path, key_path)
    client = ssl.create_default_context(cadata=ca.public_bytes(pem).decode())
    return server, client
