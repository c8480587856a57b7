"""live.js in a real browser: its server is killed (SIGKILL) and started again.

The page reconnects on its own (backoff with jitter), receives the whole region
as the database has it by then, and takes patches again.
"""

from __future__ import annotations

import asyncio
import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.conf import settings
from django.db import connections

from newsroom.live.testing import ServerProcess
from newsroom.live.tests.test_end_to_end import PASSWORD, log_in, server_env
from newsroom.runs.models import Run
from newsroom.runs.status import RunStatus

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed"),
    pytest.mark.skipif(
        not settings.REDIS_URL,
        reason="the test publishes to the server process over the Redis channel layer",
    ),
]


def in_thread(fn, *args):
    """Playwright's sync API runs an event loop on this thread: database work
    and the channel layer go to another thread."""

    def call():
        try:
            return fn(*args)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(call).result(60)


def save_status(run_id: int, status: RunStatus) -> None:
    Run.objects.filter(pk=run_id).update(status=status.to_json())


def publish(run_id: int, change: dict) -> None:
    from channels.layers import get_channel_layer

    async def send():
        layer = get_channel_layer()
        await layer.group_send(
            f"run.{run_id}", {"type": "run.change", "change": change}
        )
        if hasattr(layer, "close_pools"):
            await layer.close_pools()

    asyncio.run(send())


def test_a_page_whose_server_died_reconnects_gets_the_region_then_patches(
    make_reader, tmp_path
):
    from playwright.sync_api import expect, sync_playwright

    alice = make_reader("alice", PASSWORD)
    run = Run.objects.create(reader=alice, state=Run.State.RUNNING)
    status = RunStatus(run.pk, alice.pk, "running")
    for sid in (1, 2, 3):
        status.add_source(sid, f"Source {sid}", "World")
    Run.objects.filter(pk=run.pk).update(status=status.to_json())
    connections.close_all()
    env = server_env(NEWSROOM_RUN_WORKER="external", NEWSROOM_FOLD_IN_SERVE="0")
    server = ServerProcess(env, log=tmp_path / "serve.log").start()
    row = f"#live-src-{run.pk}-"
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM)
            try:
                page = log_in(browser.new_context(), server.url, "alice")
                page.goto(f"{server.url}/runs/{run.pk}/")
                expect(page.locator(f"{row}1")).to_have_class("live-row is-queued")

                server.process.kill()  # SIGKILL: the socket just drops (1006)
                server.process.wait(10)
                # Meanwhile the run went on: the database has source 1 done.
                status.report(1, "ok", message="Source 1: ok", count=4, ms=20)
                in_thread(save_status, run.pk, status)
                server = ServerProcess(
                    env, port=server.port, log=tmp_path / "serve2.log"
                ).start()

                # Reconnected: the whole region, as the database has it.
                expect(page.locator(f"{row}1")).to_have_class(
                    "live-row is-ok", timeout=30_000
                )
                # And patches again.
                change = status.report(
                    2, "error", message="Source 2: failed", error="HTTP 500"
                )
                in_thread(publish, run.pk, change)
                expect(page.locator(f"{row}2")).to_have_class(
                    "live-row is-error", timeout=15_000
                )
            finally:
                browser.close()
    finally:
        server.stop()
