"""One Chromium and one local site shared by a test module; a settable clock."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from newsroom.tests.clock import HandClock
from sessions_app import browser as host_mod
from sessions_app.models import BrowserHost
from sessions_app.registry import new_tag

PAGES = {
    "/js": """<!doctype html><title>loading</title><div id=out></div>
<script>setTimeout(() => {
  document.title = 'Written by script';
  document.getElementById('out').innerHTML =
    '<a href="/story/1">First story</a> <a href="/story/2">Second story</a>';
}, 50);</script>""",
    "/click": """<!doctype html><title>before</title>
<button id=go style="position:absolute;left:10px;top:120px;width:200px;height:60px"
 onclick="document.title='after'; document.getElementById('said').textContent='clicked'">Go</button>
<p id=said>not yet</p><input id=field><a id=away href="/plain">away</a>""",
    "/login": """<!doctype html><title>login</title>
<script>document.cookie = 'member=yes; path=/';</script>""",
    "/plain": "<!doctype html><title>plain</title><p>plain page</p>",
}


class Site:
    def __init__(self) -> None:
        self.hits: list[str] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                site.hits.append(self.path)
                path = self.path.split("?")[0]
                if path == "/members":
                    member = "member=yes" in (self.headers.get("Cookie") or "")
                    body = (
                        '<title>members</title><a href="/secret-story">Members only</a>'
                        if member
                        else "<title>members</title><p>log in first</p>"
                    )
                else:
                    body = PAGES.get(path, "<title>not found</title>")
                data = body.encode()
                self.send_response(200 if path in PAGES or path == "/members" else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return self.base + path


@pytest.fixture(scope="module")
def site():
    s = Site()
    yield s
    s.server.shutdown()


@pytest.fixture(scope="module")
def chromium():
    """A real Chromium for the module, or a skip saying why there is none."""
    try:
        executable = host_mod.find_chromium()
    except host_mod.BrowserUnavailable as e:
        pytest.skip(f"browser tests need Chromium: {e}")
    # Behind a proxy that passes private addresses: the test site is on loopback.
    launched = host_mod.launch(executable, 0, allow_private=True)
    yield {
        **launched.record(),
        "executable": executable,
        "baseline_mb": host_mod.browser_mb(launched.proc.pid) or 0.0,
    }
    from sessions_app.pool import get_pool

    try:
        get_pool().run(get_pool().stop(), timeout=10)
    except Exception:
        pass
    launched.stop()


@pytest.fixture
def host(chromium, db, settings):
    """The shared browser recorded as this test's host (a new tag per test)."""
    import socket

    settings.NEWSROOM_ALLOW_PRIVATE_NETWORKS = True  # the test site is on loopback
    row = BrowserHost.objects.create(
        pk=1, tag=new_tag(), hostname=socket.gethostname(), **chromium
    )
    yield row
    # Pages of this test must not linger in the shared browser for the next one.
    from sessions_app.models import BrowserSession
    from sessions_app.pool import get_pool

    pool = get_pool()
    for context_id in BrowserSession.objects.exclude(context_id="").values_list(
        "context_id", flat=True
    ):
        try:
            pool.run(pool.dispose(row.ws_url, context_id), timeout=10)
        except Exception:
            break  # the test stopped the browser


@pytest.fixture
def clock():
    return HandClock()
