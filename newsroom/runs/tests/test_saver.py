"""Batched saves: many writes, at most one Run row write per second per run."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from newsroom.runs.models import Run
from newsroom.runs.saver import RunSaver
from newsroom.runs.status import RunStatus
from newsroom.tests.clock import HandClock

pytestmark = pytest.mark.django_db


def _status(run: Run) -> RunStatus:
    status = RunStatus(run.pk, run.reader_id)
    for sid in range(1, 6):
        status.add_source(sid, f"source {sid}")
    return status


def _run_writes(queries) -> int:
    return sum(1 for q in queries if q["sql"].lstrip().upper().startswith("UPDATE"))


def test_writes_within_a_second_cost_one_save(alice):
    run = Run.objects.create(reader=alice, state=Run.State.RUNNING)
    clock = HandClock(0.0)
    saver = RunSaver(clock=clock)
    status = _status(run)
    with CaptureQueriesContext(connection) as queries:
        # 100 status writes spread over 0.0 .. 0.99 s of the injected clock.
        for n in range(100):
            clock.now = n / 100
            status.note(f"line {n}")
            saver.mark(status)
            saver.save_due()
    assert saver.writes == 1 and _run_writes(queries) == 1
    run.refresh_from_db()
    assert run.status["seq"] == 6  # the first save: 5 sources + 1 line
    assert run.saved_at is not None


def test_a_run_is_saved_again_once_a_second_has_passed(alice):
    run = Run.objects.create(reader=alice, state=Run.State.RUNNING)
    clock = HandClock(0.0)
    saver = RunSaver(clock=clock)
    status = _status(run)
    saver.mark(status)
    assert saver.save_due() == 1
    status.note("later")
    saver.mark(status)
    clock.now = 0.5
    assert saver.save_due() == 0
    clock.now = 1.0
    assert saver.save_due() == 1
    run.refresh_from_db()
    assert run.status["log"][-1]["msg"] == "later"
    # Nothing changed since: nothing to save, however much time passes (below heartbeat).
    clock.now = 5.0
    assert saver.save_due() == 0
    assert saver.writes == 2


def test_the_final_flush_is_immediate_and_complete(alice):
    run = Run.objects.create(reader=alice, state=Run.State.RUNNING)
    clock = HandClock(0.0)
    saver = RunSaver(clock=clock)
    status = _status(run)
    saver.mark(status)
    saver.save_due()
    status.set_run_state("done", "Run finished")
    saver.mark(status)
    saver.flush(status, state=Run.State.DONE)  # at the same instant: no waiting
    run.refresh_from_db()
    assert run.state == "done" and run.status["run_state"] == "done"
    assert not saver.pending()
    assert saver.writes == 2


def test_a_watched_running_run_gets_a_heartbeat(alice):
    run = Run.objects.create(reader=alice, state=Run.State.RUNNING)
    clock = HandClock(0.0)
    saver = RunSaver(clock=clock, heartbeat=10)
    status = _status(run)
    saver.watch(status)
    clock.now = 9.9
    assert saver.save_due() == 0
    clock.now = 10.0
    assert saver.save_due() == 1
    run.refresh_from_db()
    assert run.saved_at is not None


def test_each_run_has_its_own_second(alice):
    first = Run.objects.create(reader=alice, state=Run.State.RUNNING)
    second = Run.objects.create(reader=alice, state=Run.State.RUNNING)
    clock = HandClock(0.0)
    saver = RunSaver(clock=clock)
    a, b = _status(first), _status(second)
    saver.mark(a)
    assert saver.save_due() == 1
    clock.now = 0.3
    saver.mark(b)
    saver.mark(a)
    assert saver.save_due() == 1  # b only: a saved 0.3 s ago
    clock.now = 1.0
    assert saver.save_due() == 1  # now a
