"""A run against a local server: every bad input ends as a clear error on its
own source, the run completes, and nothing else is lost."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async

from fold_app.models import Delivery
from newsroom.fetch.tests.server import Reply, gzip_bomb, rss
from newsroom.runs.extract import LINKS_CONTENT_TYPE
from newsroom.runs.kinds import RenderedPage, RenderError, _renderers, register_renderer
from newsroom.runs.models import Run
from newsroom.runs.tests.helpers import add_source, run_reader, states
from newsroom.sources.models import Source

pytestmark = pytest.mark.django_db(transaction=True)
MiB = 1024 * 1024

FEED_HEADERS = {"Content-Type": "application/rss+xml; charset=utf-8"}
PAGE = b"""<html><body>
<a href="/news/1">First story</a> <a href="/about">About us</a>
<a href="https://elsewhere.example/news/2"><img alt="Second story"></a>
<a href="/news/3">
   Third
   story </a>
</body></html>"""


@pytest.fixture
def bad_web(server, web):
    """Routes for every bad input in the issue, plus a few good ones."""
    routes = {
        "/ok": Reply(body=rss(5), headers=FEED_HEADERS),
        "/404": Reply(404, b"missing"),
        "/410": Reply(410, b"gone"),
        "/429": Reply(429, b"slow down", headers={"Retry-After": "3600"}),
        "/500": Reply(500, b"oops"),
        "/503": Reply(503, b"down"),
        "/slow": Reply(body=rss(), delay=4),
        "/trickle": Reply(body=(b"<rss>" for _ in range(100)), chunk_delay=0.05),
        "/loop-a": Reply(302, headers={"Location": "/loop-b"}),
        "/loop-b": Reply(302, headers={"Location": "/loop-a"}),
        "/to-loopback": Reply(302, headers={"Location": server.url("/ok")}),
        "/big": Reply(body=b"x" * (16 * MiB)),
        "/bomb": Reply(body=gzip_bomb(40 * MiB), headers={"Content-Encoding": "gzip"}),
        "/wrong-charset": Reply(
            body="<rss><title>Café</title></rss>".encode("latin-1"),
            headers={"Content-Type": "application/rss+xml; charset=klingon"},
        ),
        "/no-charset": Reply(
            body=rss(2), headers={"Content-Type": "application/rss+xml"}
        ),
        "/html": Reply(
            body=b"<!DOCTYPE html><html><body>hi</body></html>",
            headers={"Content-Type": "text/html"},
        ),
        "/empty": Reply(body=b""),
        "/page": Reply(body=PAGE, headers={"Content-Type": "text/html; charset=utf-8"}),
    }
    for path, reply in routes.items():
        server.route(path, reply)
    return web


EXPECTED = {
    # title: (path or URL, kind, extra, expected state, expected error (substring))
    "ok feed": ("/ok", "feed", {}, "ok", ""),
    "not found": ("/404", "feed", {}, "error", "HTTP 404 Not Found"),
    "gone": ("/410", "feed", {}, "error", "HTTP 410 Gone"),
    "rate limited": (
        "/429",
        "feed",
        {},
        "error",
        "HTTP 429 Too Many Requests; asked to retry after",
    ),
    "server error": ("/500", "feed", {}, "error", "HTTP 500 Internal Server Error"),
    "unavailable": ("/503", "feed", {}, "error", "HTTP 503 Service Unavailable"),
    "never answers": (
        "/slow",
        "feed",
        {},
        "error",
        "the server sent nothing for 1.5 s",
    ),
    "trickles": ("/trickle", "feed", {}, "error", "timed out after 2 s"),
    "redirect loop": ("/loop-a", "feed", {}, "error", "too many redirects (11)"),
    "redirect to loopback": (
        "/to-loopback",
        "feed",
        {},
        "error",
        "blocked: 127.0.0.1 is a loopback address",
    ),
    "private host": (
        "http://private.test/feed",
        "feed",
        {},
        "error",
        "blocked: private.test resolves to 10.0.0.5, a private address",
    ),
    "file scheme": (
        "file:///etc/passwd",
        "feed",
        {},
        "error",
        "only http and https URLs can be fetched (this one is file:)",
    ),
    "ftp scheme": (
        "ftp://feeds.test/feed.xml",
        "feed",
        {},
        "error",
        "only http and https URLs can be fetched (this one is ftp:)",
    ),
    "huge": ("/big", "feed", {}, "error", "body larger than 15 MiB"),
    "bomb": ("/bomb", "feed", {}, "error", "body larger than 15 MiB"),
    "wrong charset": ("/wrong-charset", "feed", {}, "ok", ""),
    "no charset": ("/no-charset", "feed", {}, "ok", ""),
    "html not feed": ("/html", "feed", {}, "ok", ""),
    "empty": ("/empty", "feed", {}, "error", "the server sent an empty body"),
    "scraped": ("/page", "scrape", {"link_pattern": r"/news/\d+$"}, "ok", ""),
    "bad pattern": (
        "/page",
        "scrape",
        {"link_pattern": "(unclosed"},
        "error",
        "the link pattern is not a valid regular expression",
    ),
    "browser without renderer": (
        "/page",
        "browser",
        {},
        "error",
        "no renderer registered",
    ),
}


def _make_sources(reader, web):
    for title, (where, kind, extra, _, _) in EXPECTED.items():
        url = web.url(where) if where.startswith("/") else where
        if title == "bad pattern":
            url = web.url(where, host="other.test")  # one URL per reader
        if title == "browser without renderer":
            url = web.url("/page?browser")
        add_source(reader, url, title, kind, **extra)


async def test_every_bad_input_is_a_clear_error_and_the_run_completes(
    alice, bad_web, fast_limits, monkeypatch
):
    # sessions_app registers the real renderer; this case is about having none.
    monkeypatch.delitem(_renderers, "browser", raising=False)
    await sync_to_async(_make_sources)(alice, bad_web)
    run, executor = await run_reader(alice, bad_web)

    assert run.state == Run.State.DONE and run.finished_at is not None
    saved = states(run)
    for title, (_, _, _, state, error) in EXPECTED.items():
        assert saved[title][0] == state, (title, saved[title])
        assert error in saved[title][1], (title, saved[title])
        if state == "ok":
            assert saved[title][1] == ""
    # The saved snapshot is the final one: every source done, the last log line says so.
    assert run.status["run_state"] == "done"
    assert run.status["log"][-1]["msg"].startswith("Run finished")
    assert run.status["seq"] == executor.status.seq
    # Nothing else lost: one delivery per ok source, with the right kind.
    deliveries = await sync_to_async(
        lambda: {
            d.source.title: d
            for d in Delivery.objects.select_related("source", "payload")
        }
    )()
    assert set(deliveries) == {t for t, v in EXPECTED.items() if v[3] == "ok"}
    assert bytes(deliveries["ok feed"].body) == rss(5)
    assert deliveries["ok feed"].content_type.startswith("application/rss+xml")
    assert (
        deliveries["ok feed"].run_id == run.pk and deliveries["ok feed"].kind == "feed"
    )
    # HTML where a feed was expected is recorded as is: the fold worker decides.
    assert deliveries["html not feed"].kind == "feed"
    assert bytes(deliveries["html not feed"].body).startswith(b"<!DOCTYPE html>")


async def test_log_lines_explain_the_warnings(alice, bad_web, fast_limits):
    for title in ("wrong charset", "html not feed"):
        where = EXPECTED[title][0]
        await sync_to_async(add_source)(alice, bad_web.url(where), title)
    run, _ = await run_reader(alice, bad_web)
    lines = [line["msg"] for line in run.status["log"]]
    assert any("unknown charset 'klingon'" in msg for msg in lines)
    assert any("an HTML page, not a feed; journaled" in msg for msg in lines)


async def test_scraped_links_are_journaled_as_entries(alice, bad_web):
    await sync_to_async(add_source)(
        alice, bad_web.url("/page"), "scraped", "scrape", link_pattern=r"/news/\d+$"
    )
    run, _ = await run_reader(alice, bad_web)
    delivery = await sync_to_async(Delivery.objects.select_related("payload").get)()
    assert delivery.kind == "scrape" and delivery.content_type == LINKS_CONTENT_TYPE
    body = json.loads(bytes(delivery.body))
    assert body["page_url"] == bad_web.url("/page")
    assert body["entries"] == [
        {"url": bad_web.url("/news/1"), "title": "First story"},
        {"url": "https://elsewhere.example/news/2", "title": "Second story"},
        {"url": bad_web.url("/news/3"), "title": "Third story"},
    ]
    assert run.status["sources"][0]["count"] == 3


async def test_browser_sources_use_the_registered_renderer(alice, bad_web):
    calls = []

    async def render(source):
        calls.append(source.url)
        if "broken" in source.url:
            raise RenderError("the page crashed the browser")
        return RenderedPage(url=source.url, html='<a href="/news/9">Rendered story</a>')

    await sync_to_async(add_source)(alice, bad_web.url("/app"), "app", "browser")
    await sync_to_async(add_source)(alice, bad_web.url("/broken"), "broken", "browser")
    previous = _renderers.get("browser")  # sessions_app's real one, when installed
    register_renderer("browser", render)
    try:
        run, _ = await run_reader(alice, bad_web)
    finally:
        _renderers.pop("browser", None)
        if previous is not None:
            register_renderer("browser", previous)
    assert sorted(calls) == [bad_web.url("/app"), bad_web.url("/broken")]
    assert states(run) == {
        "app": ("ok", ""),
        "broken": ("error", "the page crashed the browser"),
    }
    delivery = await sync_to_async(Delivery.objects.select_related("payload").get)()
    assert delivery.kind == "browser"
    assert json.loads(bytes(delivery.body))["entries"][0]["title"] == "Rendered story"


async def test_conditional_get_ends_as_not_modified(alice, server, web):
    def route(request):
        if request.headers.get("if-none-match") == '"v1"':
            return Reply(304)
        return Reply(body=rss(), headers={"ETag": '"v1"'})

    server.route("/etag", route)
    source = await sync_to_async(add_source)(alice, web.url("/etag"), "etag")
    first, _ = await run_reader(alice, web)
    second, _ = await run_reader(alice, web)
    assert states(first) == {"etag": ("ok", "")}
    assert states(second) == {"etag": ("not_modified", "")}
    await sync_to_async(source.refresh_from_db)()
    assert source.etag == '"v1"' and source.last_status == "not_modified"
    assert await sync_to_async(Delivery.objects.count)() == 1


async def test_health_records_errors_and_backoff(alice, server, web, settings):
    settings.NEWSROOM_SOURCE_RETRY_INTERVAL = 600
    server.route("/down", Reply(500))
    source = await sync_to_async(add_source)(alice, web.url("/down"), "down")
    await run_reader(alice, web)
    await sync_to_async(source.refresh_from_db)()
    assert source.error_count == 1 and source.last_status == "error"
    assert source.last_error == "HTTP 500 Internal Server Error"
    first_wait = source.next_attempt_at - source.last_fetched_at
    assert first_wait.total_seconds() == 600
    await run_reader(alice, web)
    await sync_to_async(source.refresh_from_db)()
    assert source.error_count == 2
    assert (source.next_attempt_at - source.last_fetched_at).total_seconds() == 1200
    # Recovery clears the error and the backoff.
    server.route("/down", Reply(body=rss()))
    await run_reader(alice, web)
    await sync_to_async(source.refresh_from_db)()
    assert (source.error_count, source.last_error, source.next_attempt_at) == (
        0,
        "",
        None,
    )
    assert source.last_success_at is not None


async def test_retry_after_is_honoured(alice, server, web):
    server.route("/busy", Reply(429, headers={"Retry-After": "7200"}))
    source = await sync_to_async(add_source)(alice, web.url("/busy"), "busy")
    await run_reader(alice, web)
    await sync_to_async(source.refresh_from_db)()
    assert source.retry_after is not None
    assert (source.next_attempt_at - source.last_fetched_at).total_seconds() >= 7190
    # The next run does not fetch it before then, and says why.
    requests_before = len(server.requests)
    run, _ = await run_reader(alice, web)
    assert len(server.requests) == requests_before
    state, error = states(run)["busy"]
    assert state == "error" and error.startswith(
        "not fetched: the server asked us to wait until"
    )
    await sync_to_async(source.refresh_from_db)()
    assert source.error_count == 1  # not counted as another failure


async def test_per_host_limit_holds(alice, server, web):
    import threading
    import time

    lock = threading.Lock()
    active: dict[str, int] = {}
    peak: dict[str, int] = {}
    overall = {"now": 0, "peak": 0}

    def route(request):
        # Counted inside the handler: the client only frees its slot after the
        # reply, so the server never sees more than the client allows at once.
        host = request.headers["host"].split(":")[0]
        with lock:
            active[host] = active.get(host, 0) + 1
            peak[host] = max(peak.get(host, 0), active[host])
            overall["now"] += 1
            overall["peak"] = max(overall["peak"], overall["now"])
        time.sleep(0.03)  # the server's latency, so requests overlap
        with lock:
            active[host] -= 1
            overall["now"] -= 1
        return Reply(body=rss(1))

    server.route("/feed", route)
    for i in range(8):
        await sync_to_async(add_source)(alice, web.url(f"/feed?{i}"), f"a{i}")
        await sync_to_async(add_source)(
            alice, web.url(f"/feed?{i}", host="other.test"), f"b{i}"
        )
    run, _ = await run_reader(alice, web, concurrency=3, per_host=2)
    assert run.status["run_state"] == "done"
    assert all(state == "ok" for state, _ in states(run).values())
    assert peak["feeds.test"] <= 2 and peak["other.test"] <= 2
    assert overall["peak"] <= 3


async def test_a_deleted_source_is_an_error_not_a_crash(alice, server, web):
    server.route("/ok", Reply(body=rss()))
    keep = await sync_to_async(add_source)(alice, web.url("/ok"), "keep")
    gone = await sync_to_async(add_source)(alice, web.url("/ok?gone"), "gone")
    run = await sync_to_async(
        __import__("newsroom.runs.worker", fromlist=["queue_run"]).queue_run
    )(alice, Run.Trigger.RETRY, [keep.pk, gone.pk])
    await sync_to_async(Source.objects.filter(pk=gone.pk).delete)()
    from newsroom.runs.tests.helpers import execute

    await execute(run, web)
    await sync_to_async(run.refresh_from_db)()
    assert states(run) == {
        "keep": ("ok", ""),
        "gone": ("error", "this source was deleted"),
    }


async def test_each_source_ends_in_one_change_with_state_count_time_and_log(
    alice, bad_web
):
    from asgiref.sync import sync_to_async as s2a

    from newsroom.runs.executor import RunExecutor
    from newsroom.runs.status import DONE_STATES
    from newsroom.runs.worker import claim_run, queue_run, worker_tag

    await s2a(add_source)(alice, bad_web.url("/ok"), "feed")
    await s2a(add_source)(alice, bad_web.url("/404"), "missing")
    await s2a(add_source)(
        alice, bad_web.url("/page"), "page", "scrape", link_pattern=r"/news/"
    )
    run = await s2a(queue_run)(alice)
    assert await s2a(claim_run)(run, worker_tag())
    client = bad_web.client()
    executor = RunExecutor(run, client=client)
    changes = []
    executor.observers.append(changes.append)
    try:
        await executor.execute()
    finally:
        await client.aclose()
    final = [c for c in changes if c.get("source", {}).get("state") in DONE_STATES]
    assert len(final) == 3  # one each
    by_state = {c["source"]["state"]: c for c in final}
    for change in final:
        assert change["log"]["source"] == change["source"]["id"]
        assert change["source"]["ms"] is not None
    assert by_state["error"]["source"]["error"] == "HTTP 404 Not Found"
    assert by_state["error"]["log"]["msg"] == "missing: HTTP 404 Not Found"
    scraped = next(c for c in final if c["log"]["msg"].startswith("page:"))
    assert (
        scraped["source"]["count"] == 3 and scraped["log"]["msg"] == "page: ok, 3 links"
    )
    # Sequence numbers are gapless and in order: replicas can follow them.
    assert [c["seq"] for c in changes] == list(range(1, len(changes) + 1))
