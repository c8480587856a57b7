"""PostgreSQL refusing connections, seen by each long-running worker: one WARNING
when the outage starts (no traceback), a capped backoff while it lasts, one INFO
when the database answers again, and nothing lost. A bug still gets its
traceback. The outage is real: the test database is reached through a
FlakyProxy that refuses and cuts connections on the test's word."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

import pytest
from asgiref.sync import sync_to_async
from django.db import connections

from fold_app.models import Delivery
from fold_app.tests.feeds import RSS_TYPE, rss
from fold_app.worker import Worker
from newsroom.ops.heartbeat import Heartbeats
from newsroom.ops.models import Heartbeat
from newsroom.runs.models import Run
from newsroom.runs.worker import IDLE_WAIT, RunWorker, queue_run
from newsroom.sources.models import Source
from newsroom.tests.faultkit import is_postgres
from sessions_app.reaper import Reaper

pytestmark = pytest.mark.skipif(
    not is_postgres(), reason="a database outage is a PostgreSQL fault"
)

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


class Said:
    """What one logger said, by level."""

    def __init__(self, caplog, name: str) -> None:
        caplog.set_level(logging.INFO)
        self.caplog = caplog
        self.name = name

    def at(self, level: int) -> list[logging.LogRecord]:
        return [
            r
            for r in self.caplog.records
            if r.name == self.name and r.levelno == level
        ]

    def outage_said_once(self, who: str, what: str) -> None:
        (warning,) = self.at(logging.WARNING)
        assert warning.exc_info is None
        assert warning.getMessage().startswith(
            f"{who}: database unreachable during {what} ("
        )
        assert warning.getMessage().endswith("retrying until it is back")
        assert self.at(logging.ERROR) == []

    def back_said_once(self, who: str) -> None:
        (info,) = [
            r for r in self.at(logging.INFO) if "reachable again" in r.getMessage()
        ]
        assert info.getMessage().startswith(f"{who}: database reachable again after")


def pending_deliveries(reader, count: int) -> list[Delivery]:
    source = Source.objects.create(reader=reader, url="https://ex.org/feed.xml")
    return [
        Delivery.objects.create(
            source=source,
            received_at=T0 + timedelta(seconds=n),
            body=rss({"guid": f"g{n}", "title": f"T{n}"}),
            content_type=RSS_TYPE,
        )
        for n in range(count)
    ]


def test_the_fold_worker_says_an_outage_once_and_folds_after_it(
    db_via_proxy, alice, caplog
):
    said = Said(caplog, "fold_app.worker")
    deliveries = pending_deliveries(alice, 3)
    worker = Worker()
    db_via_proxy.refuse()
    waits = [worker.step(tick=60) for _ in range(4)]
    assert waits == [0.5, 1.0, 2.0, 4.0]  # backing off, not the tick
    said.outage_said_once("fold worker", "a fold pass")
    db_via_proxy.accept()
    assert worker.step(tick=60) == 60
    said.back_said_once("fold worker")
    statuses = Delivery.objects.filter(pk__in=[d.pk for d in deliveries])
    assert set(statuses.values_list("status", flat=True)) == {"parsed"}


def test_a_fold_worker_bug_keeps_its_traceback(db_via_proxy, alice, caplog):
    said = Said(caplog, "fold_app.worker")
    pending_deliveries(alice, 1)

    def broken_fold(delivery_id):
        raise RuntimeError("a bug in the fold step")

    worker = Worker(fold=broken_fold)
    assert worker.step(tick=60) == 60  # the tick: a bug is not waited out
    (error,) = said.at(logging.ERROR)
    assert error.getMessage() == "fold pass failed"
    assert error.exc_info is not None and error.exc_info[0] is RuntimeError
    assert said.at(logging.WARNING) == []


@pytest.mark.asyncio
async def test_the_run_worker_says_an_outage_once_and_claims_after_it(
    db_via_proxy, alice, caplog
):
    said = Said(caplog, "newsroom.runs.worker")
    run = await sync_to_async(queue_run)(alice)
    worker = RunWorker(schedule=False)
    db_via_proxy.refuse()
    try:
        waits = [await worker.round() for _ in range(4)]
        assert waits == [0.5, 1.0, 2.0, 4.0]
        said.outage_said_once("run worker", "a round (claim, recover, schedule)")
        db_via_proxy.accept()
        # The run queued before the outage is claimed once the database
        # answers, and runs to the end (alice has no sources: it is quick).
        assert await worker.round() == 0
        said.back_said_once("run worker")
        await asyncio.wait(list(worker.tasks), timeout=60)  # hang guard only
        await sync_to_async(run.refresh_from_db)()
        assert run.state == Run.State.DONE
        assert await worker.round() == IDLE_WAIT
    finally:
        await sync_to_async(connections.close_all)()


def test_the_reaper_says_an_outage_once_and_sweeps_after_it(db_via_proxy, caplog):
    said = Said(caplog, "sessions_app.reaper")
    reaper = Reaper(available=lambda: None)
    db_via_proxy.refuse()
    rounds = [reaper.round(every=3.0) for _ in range(4)]
    assert rounds == [(None, 0.5), (None, 1.0), (None, 2.0), (None, 3.0)]
    said.outage_said_once("session reaper", "a session sweep")
    db_via_proxy.accept()
    result, wait = reaper.round(every=3.0)
    assert result is not None and result.closed == [] and wait == 3.0
    said.back_said_once("session reaper")


def test_the_heartbeat_says_an_outage_once_and_beats_after_it(db_via_proxy, caplog):
    said = Said(caplog, "newsroom.ops.heartbeat")
    beats = Heartbeats(process="host:1")
    beats.add("fold")
    db_via_proxy.refuse()
    assert [beats.try_beat() for _ in range(3)] == [False, False, False]
    said.outage_said_once("heartbeat", "a beat")
    db_via_proxy.accept()
    assert beats.try_beat()
    said.back_said_once("heartbeat")
    assert Heartbeat.objects.get().role == "fold"
