"""The browser's egress proxy: on its own over sockets, then behind a real Chromium.

Pages here are driven without the pool's route guard (as by a process that never
installed it): what is refused is refused by the proxy. Each browser check runs
against a proxy that refuses private addresses and, as the control that shows
the check can fail, one that passes them.
"""

from __future__ import annotations

import asyncio
import socket
import threading

import pytest

from sessions_app import browser as host_mod
from sessions_app.egress import REFUSED_HEADER, Proxy
from sessions_app.models import BrowserHost
from sessions_app.pool import get_pool
from sessions_app.registry import SessionError, new_tag
from sessions_app.sessions import Sessions


class Running:
    """A Proxy serving on 127.0.0.1 from its own loop thread."""

    def __init__(self, **options) -> None:
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.proxy = Proxy(token="tok", **options)
        sock = socket.create_server(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        self.server = asyncio.run_coroutine_threadsafe(
            self.proxy.serve(sock), self.loop
        ).result(5)

    def ask(self, raw: bytes, then: bytes = b"") -> bytes:
        """Send `raw`, then `then` once an answer has begun; all read until EOF."""
        answer = b""
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
            s.sendall(raw)
            try:
                answer = s.recv(65536)
                if then and answer:
                    s.sendall(then)
                while chunk := s.recv(65536):
                    answer += chunk
            except (TimeoutError, ConnectionResetError):
                pass  # a tunnel to nowhere, or an answer closed before `then`
        return answer

    def close(self) -> None:
        async def stop() -> None:
            self.server.close()
            tasks = asyncio.all_tasks() - {asyncio.current_task()}
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(5)
        self.loop.call_soon_threadsafe(self.loop.stop)


@pytest.fixture
def proxy_for():
    running: list[Running] = []

    def make(**options) -> Running:
        running.append(Running(**options))
        return running[-1]

    yield make
    for r in running:
        r.close()


def get(url: str) -> bytes:
    return f"GET {url} HTTP/1.1\r\nHost: x\r\n\r\n".encode()


def connect(authority: str) -> bytes:
    return f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode()


def test_the_health_answer_names_the_token_and_the_mode(proxy_for):
    assert (
        proxy_for(allow_private=False)
        .ask(get("/newsroom-egress"))
        .endswith(b"\r\n\r\nnewsroom-egress tok private=refused")
    )
    assert (
        proxy_for(allow_private=True)
        .ask(get("/newsroom-egress"))
        .endswith(b"private=allowed")
    )


@pytest.mark.parametrize(
    "request_for, why",
    [
        (lambda p: get(f"http://127.0.0.1:{p}/plain"), "127.0.0.1 is a loopback"),
        (
            lambda p: get(f"http://localhost:{p}/plain"),
            "localhost resolves to 127.0.0.1, a loopback",
        ),
        (lambda p: connect(f"127.0.0.1:{p}"), "127.0.0.1 is a loopback"),
        (lambda p: connect(f"localhost:{p}"), "localhost resolves to"),
        (lambda p: connect(f"[::1]:{p}"), "::1 is a loopback"),
        (lambda p: connect("[::ffff:127.0.0.1]:80"), "IPv4-mapped"),
        (lambda p: get("http://169.254.169.254/latest/"), "link-local"),
        (lambda p: connect("10.0.0.1:443"), "a private address"),
    ],
)
def test_private_destinations_are_refused_with_the_reason(
    proxy_for, site, request_for, why
):
    running = proxy_for(allow_private=False)
    port = site.server.server_address[1]
    before = len(site.hits)
    answer = running.ask(request_for(port))
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 403 ")
    assert f"{REFUSED_HEADER}: refused by Newsroom's egress proxy".encode() in head
    assert why.encode() in body and b"private networks" in body
    assert site.hits[before:] == []
    assert running.proxy.refused == 1


def test_with_private_networks_allowed_it_forwards_and_tunnels(proxy_for, site):
    running = proxy_for(allow_private=True)
    port = site.server.server_address[1]
    answer = running.ask(get(f"http://localhost:{port}/plain?x=1"))
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.0 200 ") and b"Connection: close" in head
    assert b"<title>plain</title>" in body
    assert site.hits[-1] == "/plain?x=1"
    tunnelled = running.ask(
        connect(f"127.0.0.1:{port}"),
        then=b"GET /click HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
    )
    assert tunnelled.startswith(b"HTTP/1.1 200 Connection Established\r\n\r\n")
    assert b"<title>before</title>" in tunnelled
    assert site.hits[-1] == "/click"


def test_a_kept_alive_connection_carries_one_request_only(proxy_for, site):
    # A second request on the same connection may name another host: it must
    # go through the check on a connection of its own, never ride the first.
    running = proxy_for(allow_private=True)
    port = site.server.server_address[1]
    before = len(site.hits)
    answer = running.ask(
        get(f"http://127.0.0.1:{port}/plain") + get(f"http://127.0.0.1:{port}/second")
    )
    assert answer.count(b"HTTP/1.") == 1
    assert site.hits[before:] == ["/plain"]


def test_it_connects_to_the_address_it_checked_without_resolving_again(proxy_for, site):
    port = site.server.server_address[1]
    calls: list[str] = []

    async def local(host: str, port: int) -> list[str]:
        calls.append(host)
        return ["127.0.0.1"]

    # A name only this resolver knows: reaching the site proves the proxy
    # connected to the address it was given, not to a lookup of its own.
    running = proxy_for(allow_private=True, resolver=local)
    assert b"<title>plain</title>" in running.ask(
        get(f"http://rebind.test:{port}/plain")
    )
    assert calls == ["rebind.test"]

    # DNS rebinding: public when checked, loopback on any second lookup.
    answers = [["93.184.215.14"], ["127.0.0.1"]]

    async def rebinding(host: str, port: int) -> list[str]:
        calls.append(host)
        return answers[min(len(calls) - 2, 1)]

    running = proxy_for(allow_private=False, resolver=rebinding, connect_timeout=1)
    before = len(site.hits)
    running.ask(connect(f"rebind.test:{port}"), then=b"GET /pinned HTTP/1.0\r\n\r\n")
    assert calls == ["rebind.test", "rebind.test"]  # once for each proxy
    assert "/pinned" not in site.hits[before:]


# --- behind a real Chromium ---


@pytest.fixture(scope="module")
def strict_chromium(chromium):
    """A second browser whose proxy refuses private addresses."""
    launched = host_mod.launch(chromium["executable"], 0, allow_private=False)
    yield launched
    try:
        get_pool().run(get_pool().stop(), timeout=10)
    except Exception:
        pass
    launched.stop()


WS_ATTEMPT = """(url) => new Promise(done => {
  const ws = new WebSocket(url);
  ws.onopen = () => done('open');
  ws.onerror = () => done('error');
})"""


async def unguarded_visits(ws_url: str, site, cdp_port: int) -> dict:
    """Loads and connections from pages no route guard watches; what each got."""
    base = site.base
    local = base.replace("127.0.0.1", "localhost")
    browser = await get_pool().browser(ws_url)
    context = await browser.new_context()
    # A stand-in for a public site that redirects inside, served by the browser
    # itself (no network): every hop after it goes out through the proxy.
    public_page = (
        f"<title>public</title><img src='http://public.example/to-pixel'>"
        f"<script>fetch('{local}/fetched')</script>"
    )

    async def public(route) -> None:
        if route.request.url.endswith("/to-private"):
            await route.fulfill(status=302, headers={"Location": f"{base}/plain"})
        elif route.request.url.endswith("/to-pixel"):
            await route.fulfill(status=302, headers={"Location": f"{local}/pixel"})
        else:
            await route.fulfill(status=200, content_type="text/html", body=public_page)

    await context.route("http://public.example/**", public)
    page = await context.new_page()
    seen: dict = {}
    try:
        for name, url in [
            ("loopback", f"{base}/js"),
            ("localhost", f"{local}/click"),
            ("redirect", "http://public.example/to-private"),
            # The browser's own control port: a page there could drive it.
            ("cdp", f"http://127.0.0.1:{cdp_port}/json/version"),
        ]:
            try:
                response = await page.goto(url, timeout=10_000)
                seen[name] = (
                    response.status,
                    response.headers.get("x-newsroom-egress-refused"),
                )
            except Exception as e:
                seen[name] = str(e).splitlines()[0]
        await page.goto("http://public.example/page", wait_until="networkidle")
        seen["ws"] = await page.evaluate(
            WS_ATTEMPT, f"ws://127.0.0.1:{site.server.server_address[1]}/ws"
        )
        seen["ws_localhost"] = await page.evaluate(
            WS_ATTEMPT, f"{local.replace('http', 'ws')}/ws-named"
        )
    finally:
        await context.close()
    return seen


LOCAL_PATHS = ["/js", "/click", "/plain", "/pixel", "/fetched", "/ws", "/ws-named"]


@pytest.mark.browser
@pytest.mark.parametrize("proxy", ["refusing", "allowing"])
def test_pages_reach_no_private_address_whoever_drives_them(
    proxy, chromium, strict_chromium, site, settings
):
    settings.NEWSROOM_ALLOW_PRIVATE_NETWORKS = proxy == "allowing"
    if proxy == "refusing":
        ws_url, endpoint = strict_chromium.ws_url, strict_chromium.endpoint
    else:
        ws_url, endpoint = chromium["ws_url"], chromium["endpoint"]
    before = len(site.hits)
    pool = get_pool()
    seen = pool.run(
        unguarded_visits(ws_url, site, int(endpoint.rsplit(":", 1)[1])), timeout=60
    )
    reached = {path.split("?")[0] for path in site.hits[before:]} - {"/favicon.ico"}
    if proxy == "allowing":  # the control: every attempt below does reach the site
        assert reached == set(LOCAL_PATHS)
        assert seen["cdp"][0] == 200
        return
    assert reached == set()
    for name in ("loopback", "localhost", "redirect", "cdp"):
        status, why = seen[name]
        assert status == 403 and "refused by Newsroom's egress proxy" in why
    assert "localhost resolves to 127.0.0.1" in seen["localhost"][1]
    assert seen["ws"] == seen["ws_localhost"] == "error"


@pytest.fixture
def strict_host(strict_chromium, db, settings):
    """The refusing browser recorded as the shared one."""
    row = BrowserHost.objects.create(
        pk=1,
        tag=new_tag(),
        hostname=socket.gethostname(),
        executable="chromium",
        **strict_chromium.record(),
    )
    yield row
    pool = get_pool()
    from sessions_app.models import BrowserSession

    for context_id in BrowserSession.objects.exclude(context_id="").values_list(
        "context_id", flat=True
    ):
        pool.run(pool.dispose(row.ws_url, context_id), timeout=10)


def unknown_memory() -> None:
    return None


@pytest.mark.browser
@pytest.mark.django_db
def test_what_the_proxy_refuses_reaches_the_reader_as_a_message(
    strict_host, site, alice, settings
):
    # This process lets the route guard pass loopback, as if the name had
    # resolved publicly for it: the proxy alone refuses, and the reader is told.
    settings.NEWSROOM_ALLOW_PRIVATE_NETWORKS = True
    port = site.server.server_address[1]
    sessions = Sessions(available=unknown_memory)
    with pytest.raises(SessionError) as caught:
        sessions.scrape(alice, f"http://localhost:{port}/plain", keep=True)
    assert caught.value.status == 422
    assert "egress proxy" in str(caught.value)
    assert "localhost resolves to 127.0.0.1, a loopback address" in str(caught.value)
    with pytest.raises(SessionError) as caught:
        sessions.scrape(alice, f"https://127.0.0.1:{port}/plain", keep=False)
    assert "the browser's egress proxy refused it" in str(caught.value)
    assert "a loopback address" in str(caught.value)

    pool = get_pool()
    html = (
        f"<title>embeds</title><img src='http://localhost:{port}/pixel.png'>"
        f"<script>new WebSocket('ws://127.0.0.1:{port}/live')</script>"
    )
    state = pool.run(
        pool.render(strict_host.ws_url, "data:text/html," + html, [], None, 10)
    )
    assert state.title == "embeds"
    assert any("localhost resolves to 127.0.0.1" in b for b in state.blocked)
    assert any(
        "egress proxy refused it" in b and "127.0.0.1" in b for b in state.blocked
    ), state.blocked


@pytest.mark.browser
@pytest.mark.django_db
def test_a_browser_lives_only_while_its_proxy_answers(chromium, settings):
    settings.NEWSROOM_ALLOW_PRIVATE_NETWORKS = True
    first = host_mod.ensure_browser()
    try:
        assert first.egress_private and host_mod.probe(first)
        # The proxy dies: the browser counts as dead, and both are relaunched.
        host_mod._kill_group(first.egress_pid, first.egress_token)
        assert not host_mod.probe(first)
        second = host_mod.ensure_browser()
        assert second.tag != first.tag and second.pid != first.pid
        assert host_mod.probe(second)
        assert not _alive(first.pid)
        # A process that refuses private networks does not use a proxy that
        # passes them (launched under the other setting): it relaunches.
        settings.NEWSROOM_ALLOW_PRIVATE_NETWORKS = False
        third = host_mod.ensure_browser()
        assert third.tag != second.tag and not third.egress_private
        assert not _alive(second.egress_pid)
        # The other way round the stricter browser is kept.
        settings.NEWSROOM_ALLOW_PRIVATE_NETWORKS = True
        assert host_mod.ensure_browser().tag == third.tag
    finally:
        host_mod.stop_browser()


@pytest.mark.browser
def test_the_proxy_exits_with_its_browser(chromium):
    launched = host_mod.launch(chromium["executable"], 0, allow_private=False)
    try:
        launched.proc.kill()
        launched.proc.wait(10)
        assert launched.egress.wait(15) == 0
    finally:
        launched.stop()


def _alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
