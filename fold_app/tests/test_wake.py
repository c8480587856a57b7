"""The wake signal across processes, and the worker as a `serve` role."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connections

from fold_app import wake
from fold_app.journal import record_delivery
from fold_app.models import Delivery
from fold_app.service import FoldService, fold_service
from fold_app.signals import delivery_folded
from fold_app.tests.feeds import RSS_TYPE, rss
from newsroom.services import configured_services
from newsroom.sources.models import Source


def test_a_notify_in_another_process_wakes_this_one_over_the_channel_layer():
    if wake._cross_process_layer() is None:
        pytest.skip(
            "in-memory channel layer: one process, nothing crosses (set REDIS_URL)"
        )
    target = wake.WakeSignal()
    listener = wake.WakeListener(target=target)
    listener.start()
    try:
        assert listener.ready.wait(10)
        target.wait(0)
        code = "import django; django.setup(); from fold_app import wake; wake.notify(); assert wake.flush(10)"
        subprocess.run(
            [sys.executable, "-c", code],
            cwd=settings.BASE_DIR,
            check=True,
            timeout=60,
            env={**os.environ, "DJANGO_SETTINGS_MODULE": "newsroom.settings"},
        )
        assert target.wait(10) is True
    finally:
        listener.stop()


def test_without_a_cross_process_layer_the_listener_stays_off(settings):
    settings.CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}
    }
    from channels.layers import channel_layers

    channel_layers.backends.clear()
    try:
        listener = wake.WakeListener()
        listener.start()
        assert not listener.enabled and listener.ready.is_set()
    finally:
        channel_layers.backends.clear()


def test_serve_runs_the_fold_worker_unless_told_not_to(settings):
    assert "fold_app.service.fold_service" in settings.NEWSROOM_SERVICES
    assert any(s.name == "fold worker" for s in configured_services())
    settings.NEWSROOM_FOLD_IN_SERVE = False
    assert fold_service() is None


@pytest.mark.django_db(transaction=True)
async def test_the_serve_role_folds_at_start_and_on_a_wake_without_blocking_the_loop(
    alice,
):
    source = await Source.objects.acreate(reader=alice, url="https://ex.org/feed.xml")
    await sync_to_async(record_delivery)(
        source=source, body=rss({"guid": "a", "title": "A"}), content_type=RSS_TYPE
    )
    loop = asyncio.get_running_loop()
    folded: asyncio.Queue[str] = asyncio.Queue()

    def heard(sender, delivery, **kw):
        loop.call_soon_threadsafe(folded.put_nowait, delivery.pk)

    delivery_folded.connect(heard)
    stop = asyncio.Event()
    task = asyncio.create_task(FoldService().run(stop))
    try:
        await asyncio.wait_for(folded.get(), 20)  # the first pass at start
        # The event loop stays free while the worker waits and folds.
        ticks = 0
        for _ in range(5):
            await asyncio.sleep(0)
            ticks += 1
        assert ticks == 5
        # A delivery recorded later is folded on its wake signal (the tick is 60 s).
        second = await sync_to_async(record_delivery)(
            source=source, body=rss({"guid": "b", "title": "B"}), content_type=RSS_TYPE
        )
        assert await asyncio.wait_for(folded.get(), 20) == second.pk
    finally:
        stop.set()
        await asyncio.wait_for(task, 20)
        delivery_folded.disconnect(heard)
    assert await Delivery.objects.filter(status="parsed").acount() == 2
    assert not [t for t in threading.enumerate() if t.name == "fold-worker"]
    await sync_to_async(connections.close_all)()  # the ORM's async thread
