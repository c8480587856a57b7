"""A tiny HTTP server on 127.0.0.1 (port 0) serving fixed routes, for network tests."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Route:
    body: bytes
    content_type: str = "text/html; charset=utf-8"
    status: int = 200
    location: str = ""


class LocalSite:
    def __init__(self, server: ThreadingHTTPServer, routes: dict[str, Route]) -> None:
        self.server = server
        self.routes = routes
        self.requests: list[str] = []

    @property
    def base(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def url(self, path: str) -> str:
        return self.base + path


@contextmanager
def serve(routes: dict[str, Route]) -> Iterator[LocalSite]:
    site: LocalSite

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            site.requests.append(self.path)
            route = site.routes.get(self.path)
            if route is None:
                route = Route(b"not found", "text/plain", 404)
            self.send_response(route.status)
            self.send_header("Content-Type", route.content_type)
            self.send_header("Content-Length", str(len(route.body)))
            if route.location:
                self.send_header("Location", site.url(route.location))
            self.end_headers()
            self.wfile.write(route.body)

        def log_message(self, *args) -> None:  # keep test output quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    site = LocalSite(server, routes)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield site
    finally:
        server.shutdown()
        server.server_close()
