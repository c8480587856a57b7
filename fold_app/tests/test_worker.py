"""The fold worker, behaviour by behaviour, through the synchronous pass."""

from __future__ import annotations

import logging
import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import OperationalError

from fold_app import wake
from fold_app.models import Delivery, Item
from fold_app.tests.feeds import RSS_TYPE, rss
from fold_app.worker import FoldStep, Outcome, Worker, classify, fold_by_id
from newsroom.sources.models import Source

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
WORKER_LOG = "fold_app.worker"


@pytest.fixture
def source(alice):
    return Source.objects.create(reader=alice, url="https://ex.org/feed.xml")


def journal(source, count, *, start=T0, step=timedelta(seconds=1), status="pending"):
    """Deliveries written straight into the journal at chosen times."""
    rows = []
    for n in range(count):
        rows.append(
            Delivery.objects.create(
                source=source,
                received_at=start + n * step,
                body=rss({"guid": f"g{n}", "title": f"T{n}"}),
                content_type=RSS_TYPE,
                status=status,
            )
        )
    return rows


class Recorder:
    """An injected fold step: records the order and marks each delivery parsed,
    or returns the outcome a test scripts for it."""

    def __init__(self, scripted=None, on_fold=None):
        self.calls: list[str] = []
        self.scripted = scripted or {}
        self.on_fold = on_fold

    def __call__(self, delivery_id: str) -> Outcome:
        self.calls.append(delivery_id)
        if self.on_fold:
            self.on_fold(delivery_id)
        if delivery_id in self.scripted:
            return self.scripted[delivery_id]
        Delivery.objects.filter(pk=delivery_id).update(status="parsed")
        return Outcome(parsed=1)


def clock_at(when):
    return lambda: when


def warnings(caplog, text):
    return [
        r
        for r in caplog.records
        if r.name == WORKER_LOG
        and r.levelno == logging.WARNING
        and text in r.getMessage()
    ]


@pytest.mark.django_db
def test_a_pass_folds_in_journal_order_not_arrival_order(source):
    late = journal(source, 1, start=T0 + timedelta(minutes=1))
    early = journal(source, 2, start=T0)
    fold = Recorder()
    outcome = Worker(fold).pass_once()
    assert fold.calls == [early[0].pk, early[1].pk, late[0].pk]
    assert outcome.parsed == 3


@pytest.mark.django_db
def test_batches_follow_the_cursor_past_the_batch_size(source):
    rows = journal(source, 7)
    fold = Recorder()
    Worker(fold, batch_size=3).pass_once()
    assert fold.calls == [r.pk for r in rows]


@pytest.mark.django_db
def test_cursor_termination_when_an_outcome_cannot_be_recorded(source):
    # The fold step leaves every delivery pending (its outcome "could not be
    # recorded"): the strictly increasing cursor still ends the pass, each once.
    rows = journal(source, 5)
    fold = Recorder(scripted={r.pk: Outcome() for r in rows})
    outcome = Worker(fold, batch_size=2).pass_once()
    assert fold.calls == [r.pk for r in rows]
    assert outcome == Outcome()
    assert Delivery.objects.filter(status="pending").count() == 5


@pytest.mark.django_db
def test_barrier_on_deferred_holds_the_queue(source):
    first, busy, after = journal(source, 3)
    fold = Recorder(scripted={busy.pk: Outcome(deferred=1)})
    worker = Worker(fold)
    outcome = worker.pass_once()
    assert fold.calls == [first.pk, busy.pk]  # `after` must not be folded before `busy`
    assert outcome.deferred == 1 and outcome.parsed == 1
    assert not worker.startup_done  # the pass did not reach the end of the queue
    # Once the database is free again the next pass starts at the held delivery.
    fold.scripted.clear()
    worker.pass_once()
    assert fold.calls[2:] == [busy.pk, after.pk]
    assert worker.startup_done


@pytest.mark.django_db
def test_lag_is_silent_on_the_first_pass_then_warned_once_per_pass(source, caplog):
    caplog.set_level(logging.INFO, logger=WORKER_LOG)
    now = T0 + timedelta(hours=1)
    journal(source, 3, start=T0)  # waited about an hour: the backlog at start
    worker = Worker(Recorder(), clock=clock_at(now))
    worker.pass_once()
    assert warnings(caplog, "waited more than") == []

    lagged = journal(
        source, 3, start=now - timedelta(minutes=20), step=timedelta(minutes=5)
    )
    journal(source, 1, start=now - timedelta(seconds=30))  # fresh: not lagged
    worker.pass_once()
    (line,) = warnings(caplog, "waited more than")
    message = line.getMessage()
    assert message.startswith("3 deliveries waited more than 300 s")
    assert f"worst {lagged[0].pk} waited 1200 s" in message

    caplog.clear()
    worker.pass_once()  # nothing left: nothing to say
    assert warnings(caplog, "waited more than") == []


@pytest.mark.django_db
def test_lag_is_warned_when_a_deferred_delivery_stops_the_pass(source, caplog):
    caplog.set_level(logging.INFO, logger=WORKER_LOG)
    now = T0 + timedelta(hours=2)
    worker = Worker(Recorder(), clock=clock_at(now))
    worker.pass_once()  # empty queue: startup done
    (stuck,) = journal(source, 1, start=T0)
    worker.fold = Recorder(scripted={stuck.pk: Outcome(deferred=1)})
    for _ in range(2):
        worker.pass_once()
    # Once per pass, even though no pass gets past the stuck head of the queue.
    assert len(warnings(caplog, "waited more than")) == 2
    assert (
        f"worst {stuck.pk} waited 7200 s"
        in warnings(caplog, "waited more than")[0].getMessage()
    )


@pytest.mark.django_db
def test_lag_counts_a_delivery_when_selected_not_when_folded(source, caplog):
    caplog.set_level(logging.INFO, logger=WORKER_LOG)
    now = T0 + timedelta(hours=1)
    worker = Worker(Recorder(), clock=clock_at(now))
    worker.pass_once()
    rows = journal(source, 2, start=T0)
    worker.fold = Recorder(scripted={r.pk: Outcome() for r in rows})  # never folds
    worker.pass_once()
    assert "2 deliveries waited" in warnings(caplog, "waited more than")[0].getMessage()


@pytest.mark.django_db
def test_out_of_order_warning_once_per_delivery_and_not_when_deferred(source, caplog):
    caplog.set_level(logging.INFO, logger=WORKER_LOG)
    (later,) = journal(source, 1, start=T0 + timedelta(minutes=1), status="parsed")
    (late_arrival,) = journal(source, 1, start=T0)  # stamped earlier, arrived after
    other = Source.objects.create(
        reader=source.reader, url="https://other.example/feed"
    )
    journal(other, 1, start=T0 - timedelta(minutes=1))  # another source: in order
    worker = Worker(Recorder(scripted={late_arrival.pk: Outcome(deferred=1)}))
    worker.pass_once()
    assert warnings(caplog, "out of journal order") == []  # deferred: no fold happened
    worker.fold = Recorder()
    worker.pass_once()
    (line,) = warnings(caplog, "out of journal order")
    assert late_arrival.pk in line.getMessage() and "reindex" in line.getMessage()
    assert later.status == "parsed"


@pytest.mark.django_db
def test_shutdown_is_checked_between_deliveries(source):
    rows = journal(source, 3)
    stop = threading.Event()
    # Stop is requested while the first delivery folds: it still completes.
    fold = Recorder(on_fold=lambda _id: stop.set())
    outcome = Worker(fold).pass_once(stop)
    assert fold.calls == [rows[0].pk] and outcome.parsed == 1
    assert Delivery.objects.get(pk=rows[0].pk).status == "parsed"


@pytest.mark.django_db(transaction=True)  # run() folds on a pass thread
def test_backlog_at_start_is_logged_once(source, caplog):
    caplog.set_level(logging.INFO, logger=WORKER_LOG)
    journal(source, 4)

    class OneRound:
        """A wake signal whose first wait ends the run (no wall clock)."""

        def __init__(self, stop):
            self.stop, self.timeouts = stop, []

        def wait(self, timeout):
            self.timeouts.append(timeout)
            self.stop.set()
            return False

    stop = threading.Event()
    signal = OneRound(stop)
    worker = Worker(Recorder())
    worker.run(stop, signal=signal)
    lines = [r.getMessage() for r in caplog.records if "backlog" in r.getMessage()]
    assert lines == ["pending backlog at start: 4 deliveries"]
    assert Delivery.objects.filter(status="parsed").count() == 4  # first pass at start
    assert signal.timeouts == [60.0]  # then the tick


def test_signal_coalescing_capacity_one_and_lossy():
    signal = wake.WakeSignal()
    for _ in range(100):
        signal.notify()  # never blocks, however many
    assert signal.wait(0) is True
    assert signal.wait(0) is False  # a hundred notifies were one signal


@pytest.mark.django_db
def test_record_delivery_wakes_the_worker_after_commit(
    source, django_capture_on_commit_callbacks
):
    from fold_app.journal import record_delivery

    wake.signal.wait(0)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        record_delivery(source=source, body=rss(), content_type=RSS_TYPE)
    assert not wake.signal.pending()  # not before the row is committed
    for callback in callbacks:
        callback()
    assert wake.signal.wait(0) is True


# --- The real fold step ---


@pytest.mark.django_db(transaction=True)
def test_deadline_to_failed_and_the_queue_moves_on(source):
    stuck, fine = journal(source, 2)
    release = threading.Event()

    def fold(delivery_id, deadline):
        if delivery_id == stuck.pk:
            release.wait(10)  # a parse that hangs past its deadline
        return fold_by_id(delivery_id, deadline)

    outcome = Worker(FoldStep(seconds=0.2, fold=fold)).supervised_pass()
    # The pass returned while the stuck fold still hangs: it did not wait for it,
    # and gave it up once (a second give-up would count as skipped).
    abandoned = [t for t in threading.enumerate() if t.name == "fold-pass"]
    assert len(abandoned) == 1 and abandoned[0].is_alive()
    assert (outcome.failed, outcome.parsed, outcome.skipped) == (1, 1, 0)
    stuck.refresh_from_db()
    assert stuck.status == "failed" and "took longer than 0.2 s" in stuck.parse_error
    assert Delivery.objects.get(pk=fine.pk).status == "parsed"

    # The abandoned fold wakes up later: it must not write anything.
    release.set()
    for thread in abandoned:
        thread.join(5)
    stuck.refresh_from_db()
    assert stuck.status == "failed"
    assert not Item.objects.filter(delivery_id=stuck.pk).exists()


@pytest.mark.django_db
def test_a_fold_that_notices_its_own_deadline_fails_without_writing(source):
    (slow,) = journal(source, 1)

    def fold(delivery_id, deadline):
        deadline.expires_at = 0  # the budget ran out while it parsed
        return fold_by_id(delivery_id, deadline)

    outcome = Worker(FoldStep(seconds=5, fold=fold)).pass_once()
    assert outcome.failed == 1
    slow.refresh_from_db()
    assert slow.status == "failed" and "took longer than 5 s" in slow.parse_error
    assert not Item.objects.exists()


@pytest.mark.django_db
def test_a_pass_never_dies_from_one_deliverys_error(source):
    broken, fine = journal(source, 2)

    def fold(delivery_id, deadline):
        if delivery_id == broken.pk:
            raise RuntimeError("a bug")
        return fold_by_id(delivery_id, deadline)

    outcome = Worker(FoldStep(fold=fold)).pass_once()
    assert (outcome.failed, outcome.parsed) == (1, 1)
    broken.refresh_from_db()
    assert broken.status == "failed" and "RuntimeError: a bug" in broken.parse_error


@pytest.mark.django_db
def test_database_busy_defers_and_holds_the_queue(source):
    busy, after = journal(source, 2)

    def fold(delivery_id, deadline):
        if delivery_id == busy.pk:
            raise OperationalError("database is locked")
        return fold_by_id(delivery_id, deadline)

    outcome = Worker(FoldStep(fold=fold)).pass_once()
    assert outcome == Outcome(deferred=1)
    assert Delivery.objects.get(pk=busy.pk).status == "deferred"
    assert Delivery.objects.get(pk=after.pk).status == "pending"
    # Deferred deliveries are still the queue.
    assert Worker().pass_once().parsed == 2


@pytest.mark.django_db(transaction=True)
def test_the_supervised_pass_folds_everything_on_its_own_thread(source):
    journal(source, 5)
    outcome = Worker().supervised_pass()
    assert (outcome.parsed, outcome.items, outcome.new_items) == (5, 5, 5)
    assert Item.objects.count() == 5
    assert not [
        t for t in threading.enumerate() if t.name == "fold-pass" and t.is_alive()
    ]


def test_classify_database_errors():
    import sqlite3

    import psycopg.errors as pg

    def wrapped(cause):
        try:
            raise OperationalError(str(cause)) from cause
        except OperationalError as e:
            return e

    assert (
        classify(wrapped(sqlite3.OperationalError("database is locked"))) == "deferred"
    )
    assert (
        classify(wrapped(pg.SerializationFailure("could not serialize"))) == "deferred"
    )
    assert (
        classify(
            wrapped(pg.LockNotAvailable("canceling statement due to lock timeout"))
        )
        == "deferred"
    )
    assert (
        classify(wrapped(pg.QueryCanceled("canceling statement due to user request")))
        == "deferred"
    )
    assert (
        classify(
            wrapped(pg.QueryCanceled("canceling statement due to statement timeout"))
        )
        == "deadline"
    )
    assert classify(wrapped(sqlite3.OperationalError("no such table: x"))) == "error"
    assert classify(ValueError("x")) == "error"
