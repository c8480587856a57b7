"""Heartbeat rows: written by the process, read with their state."""

from __future__ import annotations

import asyncio
import threading
from datetime import timedelta

import pytest

from newsroom.ops import heartbeat
from newsroom.ops.heartbeat import Heartbeats
from newsroom.ops.models import Heartbeat
from newsroom.services import ServiceGroup

pytestmark = pytest.mark.django_db


def test_a_beat_writes_one_row_per_role_and_the_next_beat_updates_it(clock):
    hb = Heartbeats(process="host-a:41", clock=clock)
    hb.add("runs", detail=lambda: {"running": 2})
    hb.add("fold")
    assert hb.beat() == 2
    started = clock.now
    clock.advance(15)
    hb.beat()
    rows = {r.role: r for r in Heartbeat.objects.all()}
    assert set(rows) == {"runs", "fold"}
    assert rows["runs"].process == "host-a:41"
    assert rows["runs"].started_at == started
    assert rows["runs"].last_beat_at == clock.now
    assert rows["runs"].detail == {"running": 2}
    assert rows["fold"].stopped_at is None


def test_two_processes_of_one_role_keep_their_own_rows(clock):
    for pid in (1, 2):
        hb = Heartbeats(process=f"host:{pid}", clock=clock)
        hb.add("web")
        hb.beat()
    assert sorted(Heartbeat.objects.values_list("process", flat=True)) == [
        "host:1",
        "host:2",
    ]


def test_a_detail_that_fails_still_beats_and_says_why(clock):
    hb = Heartbeats(process="h:1", clock=clock)
    hb.add("web", detail=lambda: 1 / 0)
    hb.beat()
    assert "division by zero" in Heartbeat.objects.get().detail["detail_error"]


def test_the_state_goes_stale_after_three_missed_beats(clock, settings):
    settings.NEWSROOM_HEARTBEAT_INTERVAL = 10.0
    hb = Heartbeats(process="h:1", clock=clock)
    hb.add("fold")
    hb.beat()
    row = Heartbeat.objects.get()
    stale_after = heartbeat.stale_after()
    assert stale_after == timedelta(seconds=30)
    clock.advance(30)
    assert row.state(stale_after, clock.now) == "fresh"
    clock.advance(0.5)
    assert row.state(stale_after, clock.now) == "stale"
    # A new beat makes it fresh again.
    hb.beat()
    row.refresh_from_db()
    assert row.state(stale_after, clock.now) == "fresh"


def test_removing_a_role_marks_its_row_stopped_and_keeps_it(clock):
    hb = Heartbeats(process="h:1", clock=clock)
    hb.add("runs")
    hb.add("fold")
    hb.beat()
    hb.remove("runs")
    clock.advance(5)
    hb.beat()
    runs = Heartbeat.objects.get(role="runs")
    assert runs.state(heartbeat.stale_after(), clock.now) == "stopped"
    clock.advance(3600)
    # Stale rows are shown, never deleted behind the operator's back.
    assert Heartbeat.objects.count() == 2
    fold = Heartbeat.objects.get(role="fold")
    assert fold.state(heartbeat.stale_after(), clock.now) == "stale"


def test_stop_marks_every_role_of_the_process_stopped(clock):
    hb = Heartbeats(process="h:1", clock=clock)
    hb.add("web")
    hb.add("reaper")
    hb.beat()
    hb.stop()
    assert {
        r.state(heartbeat.stale_after(), clock.now) for r in Heartbeat.objects.all()
    } == {"stopped"}


def test_a_blocked_event_loop_withholds_the_beat():
    loop = asyncio.new_event_loop()
    try:
        hb = Heartbeats(process="h:1")
        hb.loop = loop  # never running: as good as blocked
        assert hb._loop_answers(0.05) is False
    finally:
        loop.close()
    # A closed loop (the process is ending) withholds it too, without raising.
    assert hb._loop_answers(0.05) is False


def test_a_running_event_loop_answers_and_its_lag_is_recorded():
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        hb = Heartbeats(process="h:1")
        hb.loop = loop
        assert hb._loop_answers(5) is True
        assert hb.loop_lag_ms is not None and hb.loop_lag_ms >= 0
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()


class Role:
    name = "a role"
    role = "fold"

    def __init__(self) -> None:
        self.running = asyncio.Event()

    def heartbeat_detail(self) -> dict:
        return {"folded": 12}

    async def run(self, stop: asyncio.Event) -> None:
        self.running.set()
        await stop.wait()


@pytest.mark.django_db(transaction=True)
async def test_serve_roles_beat_while_they_run_and_stop_with_the_group(monkeypatch):
    from asgiref.sync import sync_to_async

    beats = Heartbeats(process="serve:7")
    monkeypatch.setattr(heartbeat, "_heartbeats", beats)
    role = Role()
    group = ServiceGroup([role])
    group.start()
    await role.running.wait()
    assert beats.roles() == ["fold"]
    await sync_to_async(beats.beat)()
    row = await Heartbeat.objects.aget(role="fold")
    assert row.stopped_at is None and row.process == "serve:7"
    assert row.detail == {"folded": 12}
    await group.shutdown()
    assert beats.roles() == []
    await sync_to_async(beats.beat)()
    row = await Heartbeat.objects.aget(role="fold")
    assert row.stopped_at is not None
    # The database thread keeps its connection: close it for the teardown.
    from django.db import connections

    await sync_to_async(connections.close_all)()


@pytest.mark.django_db(transaction=True)
def test_stop_called_on_a_running_event_loop_still_marks_the_rows_stopped():
    # daphne's shutdown trigger runs on the loop's thread, where Django refuses
    # database work: the last beat must still be written.
    hb = Heartbeats(process="h:2")
    hb.add("web")

    async def shutdown_trigger() -> None:
        hb.stop()

    asyncio.run(shutdown_trigger())
    assert Heartbeat.objects.get(process="h:2").stopped_at is not None


def test_the_admin_lists_heartbeats_with_stale_ones_marked(
    operator_client, operator, clock
):
    operator.is_superuser = True
    operator.save()
    for process in ("fresh:1", "dead:2"):
        hb = Heartbeats(process=process)
        hb.add("runs")
        hb.beat()
    Heartbeat.objects.filter(process="dead:2").update(
        last_beat_at=clock.now - timedelta(minutes=5)
    )
    page = operator_client.get("/admin/ops/heartbeat/").content.decode()
    assert "fresh:1" in page and "dead:2" in page
    assert page.count("<strong>STALE</strong>") == 1
    assert "300 s ago" in page or "301 s ago" in page
