"""End to end: real server processes, a real browser, real sockets.

The server is `manage.py serve` in its own process on the test database (its run
worker executes the run); feeds come from a local HTTP server on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connections

from newsroom.fetch.tests.server import LocalServer, Reply, rss
from newsroom.live import pages as live_pages
from newsroom.live.testing import ServerProcess, WsClient
from newsroom.runs.models import Run
from newsroom.runs.status import RunStatus
from newsroom.sources.models import Category, Source

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
PASSWORD = "correct horse battery"
OUTLETS = [
    "Reuters",
    "Guardian",
    "Le Monde",
    "NHK",
    "Al Jazeera",
    "Nature",
    "Ars Technica",
    "Financial Times",
    "The Atlantic",
    "Der Spiegel",
    "El País",
    "BBC",
    "NPR",
    "Science Daily",
    "Wired",
    "Bloomberg",
    "The Hindu",
    "ABC Australia",
    "DW",
    "Axios",
]
SECTIONS = ["World", "Science", "Business", "Technology", "Culture"]

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def database_url() -> str:
    db = settings.DATABASES["default"]
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    auth = db["USER"] + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def server_env(**extra: str) -> dict[str, str]:
    env = {
        "DATABASE_URL": database_url(),
        "SECRET_KEY": settings.SECRET_KEY,
        "NEWSROOM_ALLOW_PRIVATE_NETWORKS": "1",
        "LOG_LEVEL": "WARNING",
        # These tests watch the run itself and compare the page with the run's
        # final saved status. Fold outcomes and the briefing after the run keep
        # changing that status after "Done"; their way into the sidebar has its
        # own tests (runs receivers, live hub).
        "NEWSROOM_FOLD_IN_SERVE": "0",
        "NEWSROOM_BRIEF_AFTER_RUN": "0",
        **extra,
    }
    if settings.REDIS_URL:
        env["REDIS_URL"] = settings.REDIS_URL
    return env


def make_sources(reader, feeds: LocalServer, count: int) -> None:
    categories = {
        name: Category.objects.create(reader=reader, name=name, position=i)
        for i, name in enumerate(SECTIONS)
    }
    for i in range(count):
        section = SECTIONS[i % len(SECTIONS)]
        # Every 23rd feed fails; the rest answer after a short wait so the run
        # takes a few seconds and can be watched.
        reply = (
            Reply(500, b"down")
            if i % 23 == 7
            else Reply(
                200,
                rss(i % 9 + 1, title=f"Feed {i}"),
                {"Content-Type": "application/rss+xml"},
                delay=0.02 + (i % 5) * 0.03,
            )
        )
        url = feeds.route(f"/feed/{i}", reply)
        Source.objects.create(
            reader=reader,
            url=url,
            category=categories[section],
            title=f"{OUTLETS[i % len(OUTLETS)]} · {section} {i // len(OUTLETS) + 1}",
        )


@pytest.fixture
def feeds():
    server = LocalServer()
    yield server
    server.close()


@pytest.fixture
def live_server_process(tmp_path):
    connections.close_all()  # the server process shares the test database
    server = ServerProcess(server_env(), log=tmp_path / "serve.log").start()
    yield server
    server.stop()


def log_in(context, base: str, username: str):
    page = context.new_page()
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit], input[type=submit]")
    page.wait_for_url(f"{base}/")
    return page


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
def test_a_reader_watches_a_run_of_200_sources_live(
    make_reader, feeds, live_server_process, tmp_path
):
    from playwright.sync_api import expect, sync_playwright

    alice = make_reader("alice", PASSWORD)
    make_reader("bob", PASSWORD)
    make_sources(alice, feeds, 200)
    connections.close_all()
    base = live_server_process.url
    shot = Path(os.environ.get("LIVE_SCREENSHOT") or tmp_path / "dashboard.png")

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM)
        try:
            # Bob's dashboard is open the whole time; count every frame it gets.
            bob_frames: list[str] = []
            bob = log_in(browser.new_context(), base, "bob")
            bob.on(
                "websocket",
                lambda ws: ws.on("framereceived", lambda f: bob_frames.append(f)),
            )
            bob.reload()
            expect(bob.locator("#live-sidebar")).to_contain_text("No runs yet")

            context = browser.new_context(viewport={"width": 1440, "height": 1000})
            board = log_in(context, base, "alice")  # the dashboard, left open
            expect(board.locator("#live-sidebar")).to_contain_text("No runs yet")
            runner = context.new_page()
            runner.goto(f"{base}/")
            runner.click("text=Run now")
            runner.wait_for_url(re.compile(r"/runs/\d+/$"))
            run_id = int(runner.url.rstrip("/").rsplit("/", 1)[1])

            # The open dashboard follows the new run and fills in as it works.
            rows = board.locator("#live-sidebar .live-row")
            expect(rows).to_have_count(200, timeout=30_000)
            expect(board.locator("#live-sidebar .live-row.is-ok").nth(40)).to_be_attached(
                timeout=30_000
            )
            board.screenshot(path=str(shot))

            for page in (board, runner):
                expect(page.locator(f"#live-head-{run_id} .badge")).to_have_text(
                    "Done", timeout=90_000
                )
                expect(
                    page.locator(".live-row.is-queued, .live-row.is-fetching")
                ).to_have_count(0)
            shown = [page_state(page, run_id) for page in (board, runner)]
            assert bob_frames == []
            expect(bob.locator("#live-sidebar")).to_contain_text("No runs yet")

            # Logging out in one tab sends the reader's other tab to the login screen.
            runner.click("text=Log out")
            board.wait_for_url(re.compile(r"/accounts/login/"), timeout=15_000)
        finally:
            browser.close()
    assert shot.exists()
    # Playwright's sync API runs a loop in this thread: read the database after.
    status = wait_for_final_status(run_id)
    assert status.counts["error"] > 0 and status.counts["ok"] > 150
    for rows, totals in shown:
        assert rows == {sid: entry["state"] for sid, entry in status.sources.items()}
        assert totals == {
            "ok": status.counts["ok"],
            "error": status.counts["error"],
            "not_modified": status.counts["not_modified"],
            "done": "200 / 200 sources",
            "items": status.items,
        }


def wait_for_final_status(run_id: int) -> RunStatus:
    # The run's last write is saved synchronously as it ends; it may land just
    # after the page shows "Done", so give the other process a moment.
    deadline = time.monotonic() + 15
    while True:
        connections.close_all()
        run = Run.objects.get(pk=run_id)
        if run.state == Run.State.DONE and run.status.get("run_state") == "done":
            return RunStatus.from_json(run.status, run.pk, run.reader_id)
        assert time.monotonic() < deadline, f"run {run_id} is {run.state}"
        time.sleep(0.2)


def page_state(page, run_id: int) -> tuple[dict[int, str], dict]:
    """Each row's state as the page shows it, and the totals."""
    rows = page.locator(".live-row").evaluate_all(
        "rows => rows.map(r => [r.id, r.className])"
    )
    states = {
        int(row_id.rsplit("-", 1)[1]): cls.split("is-")[1] for row_id, cls in rows
    }
    totals: dict = {
        key: int(
            page.locator(f"#live-totals-{run_id} .live-stat.is-{key} b").inner_text()
        )
        for key in ("ok", "error", "not_modified")
    }
    totals["done"] = page.locator(f"#live-totals-{run_id} .live-done").inner_text()
    totals["items"] = int(
        page.locator(f"#live-totals-{run_id} .live-items b").first.inner_text()
    )
    return states, totals


@pytest.mark.skipif(not settings.REDIS_URL, reason="needs the Redis channel layer")
def test_two_daphne_processes_serve_viewers_of_the_same_run(make_reader, tmp_path):
    from django.test import Client

    alice = make_reader("alice", PASSWORD)
    bob = make_reader("bob", PASSWORD)
    run = Run.objects.create(reader=alice, state=Run.State.RUNNING)
    status = RunStatus(run.pk, alice.pk, "running")
    for sid in range(1, 31):
        status.add_source(sid, f"Source {sid}", SECTIONS[sid % 5])
    Run.objects.filter(pk=run.pk).update(status=status.to_json())
    sessions = {}
    for user in (alice, bob):
        client = Client()
        client.force_login(user)
        sessions[user.username] = client.cookies["sessionid"].value
    sessions["bob_page"] = live_pages.sidebar_page(bob.pk).digest
    connections.close_all()
    servers = [
        ServerProcess(
            server_env(NEWSROOM_RUN_WORKER="external"), log=tmp_path / f"s{n}.log"
        )
        for n in range(2)
    ]
    try:
        for server in servers:
            server.start()
        asyncio.run(_watch_from_both(servers, run.pk, status, sessions))
    finally:
        for server in servers:
            server.stop()


async def _watch_from_both(servers, run_id: int, status: RunStatus, sessions) -> None:
    from channels.layers import get_channel_layer

    viewers = []
    for server in servers:
        for _ in range(2):
            url = f"ws://127.0.0.1:{server.port}/ws/live/run/{run_id}/"
            viewers.append(
                await WsClient(
                    url, cookie=f"sessionid={sessions['alice']}", origin=server.url
                ).connect()
            )
    have = sessions["bob_page"]
    bobs = [
        await WsClient(
            f"ws://127.0.0.1:{s.port}/ws/live/sidebar/?have={have}",
            cookie=f"sessionid={sessions['bob']}",
            origin=s.url,
        ).connect()
        for s in servers
    ]
    for viewer in viewers:
        _, first = await viewer.recv(timeout=20)
        assert first and "full" in first.split("-->")[0]
        viewer.ack(first)

    # The run's changes, published as the executor (another process) does.
    layer = get_channel_layer()
    for sid in range(1, 31):
        for change in (
            status.report(sid, "fetching", message=f"Source {sid}: fetching"),
            status.report(
                sid, "ok", message=f"Source {sid}: ok", count=sid, ms=10 * sid
            ),
        ):
            await layer.group_send(
                f"run.{run_id}", {"type": "run.change", "change": change}
            )
    await layer.group_send(
        f"run.{run_id}",
        {"type": "run.change", "change": status.set_run_state("done", "Run finished")},
    )
    for viewer in viewers:
        text = ""
        while "Run finished" not in text:
            _, frame = await viewer.recv(timeout=20)
            assert frame is not None, f"stream closed {viewer.close_code}"
            viewer.ack(frame)
            text += frame
        # The totals the viewer shows last: every source ok.
        assert re.findall(r"<b>(\d+)</b><span>ok</span>", text)[-1] == "30"
    for bob in bobs:
        with pytest.raises(TimeoutError):
            await bob.recv(timeout=0.5)
        assert bob.received == 0
    for client in (*viewers, *bobs):
        client.close()
    if hasattr(layer, "close_pools"):
        await layer.close_pools()
