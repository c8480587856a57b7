"""The fold worker: the Delivery table is the queue, a wake signal says "there is
work", and a pass folds pending deliveries in journal order.

Why it is built this way (after the reference design in DESIGN.md):
- Nothing to overflow and nothing lost on a crash: a delivery waits as a pending
  row, and picking up the backlog after a restart is just the first pass.
- A pass reads batches of 256 with a strictly increasing cursor, so a delivery
  whose outcome cannot even be recorded is passed over instead of being picked
  again forever.
- A deferred delivery (database busy, outside cancellation) holds the queue:
  folding its successors first would make the merge depend on fold order, not
  journal order. Deferral is only ever transient; a fold past its own deadline
  is failed and frees the queue.
"""

from __future__ import annotations

import logging
import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import OperationalError, close_old_connections, connection, connections
from django.db.models import Q
from django.utils import timezone

from fold_app import wake
from fold_app.deadline import Deadline, FoldTimeout, describe_seconds
from fold_app.fold import (
    QUEUED,
    FoldResult,
    fold_delivery,
    mark_deferred,
    record_failure,
)
from fold_app.models import Delivery

log = logging.getLogger("fold_app.worker")

BATCH_SIZE = 256
FOLD_DEADLINE_S = 120.0
TICK_S = 60.0
LAG_THRESHOLD = timedelta(minutes=5)


@dataclass
class Outcome:
    """What a fold step (or a whole pass) did. Deferred > 0 stops the pass."""

    parsed: int = 0
    failed: int = 0
    deferred: int = 0
    skipped: int = 0
    items: int = 0
    new_items: int = 0

    def add(self, other: Outcome) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    @classmethod
    def of(cls, result: FoldResult) -> Outcome:
        if result.status == Delivery.Status.PARSED:
            return cls(parsed=1, items=result.items, new_items=result.new_items)
        if result.status == Delivery.Status.FAILED:
            return cls(failed=1)
        return cls(skipped=1)


class FoldCancelled(Exception):
    """The fold was cancelled from outside; the delivery stays queued."""


# PostgreSQL SQLSTATEs that mean "busy or gone for now, try again later".
_TRANSIENT_SQLSTATES = {"40001", "40P01", "55P03", "57P01", "57P02", "57P03", "53300"}


def classify(exc: BaseException) -> str:
    """ "deferred" (database busy, outside cancellation), "deadline" (our own
    statement timeout), or "error" (anything else: the delivery fails)."""
    seen = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, FoldTimeout):
            return "deadline"
        if isinstance(current, FoldCancelled):
            return "deferred"
        if isinstance(current, (sqlite3.OperationalError, OperationalError)):
            message = str(current).lower()
            if (
                "database is locked" in message
                or "table is locked" in message
                or "busy" in message
            ):
                return "deferred"
        sqlstate = getattr(current, "sqlstate", None)
        if sqlstate == "57014":  # query_canceled
            return "deadline" if "statement timeout" in str(current) else "deferred"
        if sqlstate in _TRANSIENT_SQLSTATES or (sqlstate or "").startswith("08"):
            return "deferred"
        if (
            type(current).__module__.startswith("psycopg")
            and type(current).__name__
            in (
                "OperationalError",
                "InterfaceError",
            )
            and not sqlstate
        ):
            return "deferred"  # the connection went away
        current = current.__cause__ or current.__context__
    return "error"


def fold_by_id(delivery_id: str, deadline: Deadline | None = None) -> FoldResult:
    delivery = Delivery.objects.select_related("source").get(pk=delivery_id)
    return fold_delivery(delivery, deadline=deadline)


class _Job:
    def __init__(self, delivery_id: str, deadline: Deadline) -> None:
        self.delivery_id = delivery_id
        self.deadline = deadline
        self.result: FoldResult | None = None
        self.error: BaseException | None = None
        self.done = threading.Event()


class _FoldThread(threading.Thread):
    """Runs folds one at a time. A daemon, so a fold that never returns cannot
    keep the process alive at exit; its transaction dies with the connection."""

    _REFRESH_S = 60.0

    def __init__(self, fold: Callable[[str, Deadline], FoldResult]) -> None:
        super().__init__(name="fold", daemon=True)
        self._fold = fold
        self._jobs: queue.Queue[_Job | None] = queue.Queue()
        self._refreshed = time.monotonic()

    def submit(self, job: _Job) -> None:
        self._jobs.put(job)

    def retire(self) -> None:
        self._jobs.put(None)

    def run(self) -> None:
        try:
            while (job := self._jobs.get()) is not None:
                if time.monotonic() - self._refreshed > self._REFRESH_S:
                    close_old_connections()  # honour CONN_MAX_AGE in a long-lived thread
                    self._refreshed = time.monotonic()
                try:
                    job.result = self._fold(job.delivery_id, job.deadline)
                except BaseException as e:  # noqa: BLE001 - handed to the waiting pass
                    job.error = e
                    connection.close_if_unusable_or_obsolete()
                finally:
                    job.done.set()
        finally:
            connections.close_all()


class FoldRunner:
    """The worker's default fold step: one delivery under its deadline.

    Python cannot stop a running thread, so the deadline is enforced in two
    ways. The fold checks it at safe points (after parsing, between entries,
    before commit) and PostgreSQL cancels a statement that outlives it. And the
    pass waits for the fold thread only until the deadline: then it records the
    delivery failed and moves on with a fresh thread. The abandoned fold keeps
    its thread (and CPU) until its current step returns; it then fails its next
    check and rolls back, and since its outcome write is conditional on the
    delivery still being queued, it can never commit over the failure. What is
    guaranteed: the queue moves on, and a delivery is never both failed and
    folded. What is not: the CPU of a stuck parse is wasted until it returns.
    """

    def __init__(
        self,
        seconds: float = FOLD_DEADLINE_S,
        fold: Callable[[str, Deadline], FoldResult] = fold_by_id,
    ) -> None:
        self.seconds = seconds
        self._fold = fold
        self._thread: _FoldThread | None = None

    def __call__(self, delivery_id: str) -> Outcome:
        if self._thread is None or not self._thread.is_alive():
            self._thread = _FoldThread(self._fold)
            self._thread.start()
        deadline = Deadline(self.seconds)
        job = _Job(delivery_id, deadline)
        self._thread.submit(job)
        if not job.done.wait(self.seconds):
            deadline.abandoned = True
            self._thread.retire()
            self._thread = None
            message = f"Folding took longer than {describe_seconds(self.seconds)}; it was given up."
            log.error("delivery %s: %s", delivery_id, message)
            return self._fail(delivery_id, message)
        if job.error is None:
            return Outcome.of(job.result)
        kind = classify(job.error)
        if kind == "deferred":
            log.info("delivery %s deferred: %s", delivery_id, job.error)
            mark_deferred(delivery_id)
            return Outcome(deferred=1)
        if kind == "deadline":
            message = f"Folding took longer than {describe_seconds(self.seconds)}; it was given up."
        else:
            log.error(
                "delivery %s could not be folded", delivery_id, exc_info=job.error
            )
            message = (
                f"Internal error while folding: {type(job.error).__name__}: {job.error}"
            )
        return self._fail(delivery_id, message)

    def _fail(self, delivery_id: str, message: str) -> Outcome:
        try:
            return (
                Outcome(failed=1)
                if record_failure(delivery_id, message)
                else Outcome(skipped=1)
            )
        except Exception:  # noqa: BLE001 - it stays pending; the cursor moves on
            log.exception(
                "the failure of delivery %s could not be recorded", delivery_id
            )
            return Outcome()

    def close(self) -> None:
        if self._thread is not None:
            self._thread.retire()
            self._thread.join(timeout=5)
            self._thread = None


@dataclass
class _Lag:
    threshold: timedelta
    count: int = 0
    worst: timedelta = timedelta(0)
    worst_id: str = ""

    def add(self, delivery_id: str, received_at: datetime, now: datetime) -> None:
        waited = now - received_at
        if waited < self.threshold:
            return
        self.count += 1
        if waited > self.worst:
            self.worst, self.worst_id = waited, delivery_id


class Worker:
    """Folds the queue. `pass_once` is the synchronous entry point tests call;
    `run` loops it on the wake signal and the tick."""

    def __init__(
        self,
        fold: Callable[[str], Outcome] | None = None,
        *,
        clock: Callable[[], datetime] = timezone.now,
        batch_size: int = BATCH_SIZE,
        lag_threshold: timedelta = LAG_THRESHOLD,
        report: Callable[[str, Outcome], None] | None = None,
    ) -> None:
        self.fold = fold if fold is not None else FoldRunner()
        self.clock = clock
        self.batch_size = batch_size
        self.lag_threshold = lag_threshold
        self.report = report
        # Until the first pass reaches the end of the queue, lag is not
        # reported: a backlog from before the start waited for the worker to
        # exist, not for it to keep up, and a hundred WARNs at boot say nothing.
        self.startup_done = False

    def backlog(self) -> int:
        return Delivery.objects.filter(status__in=QUEUED).count()

    def log_backlog(self) -> int:
        count = self.backlog()
        if count:
            log.info("pending backlog at start: %d deliveries", count)
        return count

    def pass_once(self, stop: threading.Event | None = None) -> Outcome:
        """Fold the queue once, in journal order, until it is empty, a delivery is
        deferred, or `stop` is set (checked between deliveries, never mid-fold)."""
        total = Outcome()
        cursor: tuple[datetime, str] | None = None
        lag = _Lag(self.lag_threshold)
        while True:
            if stop is not None and stop.is_set():
                return total
            batch = self._batch(cursor)
            if not batch:
                # Only a pass that reached the end may end the startup silence:
                # the order of these two lines keeps the first pass silent.
                self._warn_lag(lag)
                self.startup_done = True
                return total
            for delivery_id, received_at, source_id in batch:
                if stop is not None and stop.is_set():
                    return total
                lag.add(delivery_id, received_at, self.clock())
                # Asked before folding (afterwards the delivery itself is parsed)
                # and said only after a fold that happened.
                out_of_order = self._later_already_parsed(
                    delivery_id, received_at, source_id
                )
                outcome = self.fold(delivery_id)
                total.add(outcome)
                if self.report is not None:
                    self.report(delivery_id, outcome)
                if out_of_order and not outcome.deferred:
                    log.warning(
                        "delivery %s folded out of journal order (waited %d s); "
                        "run `manage.py reindex` to rebuild its source's items in order",
                        delivery_id,
                        (self.clock() - received_at).total_seconds(),
                    )
                if outcome.deferred:
                    # The queue waits here; the lag line is said now, or a stuck
                    # head of the queue would silence it for good.
                    self._warn_lag(lag)
                    return total
                cursor = (received_at, delivery_id)

    def _batch(
        self, cursor: tuple[datetime, str] | None
    ) -> list[tuple[str, datetime, int]]:
        rows = Delivery.objects.filter(status__in=QUEUED)
        if cursor is not None:
            received_at, delivery_id = cursor
            rows = rows.filter(
                Q(received_at__gt=received_at)
                | Q(received_at=received_at, id__gt=delivery_id)
            )
        rows = rows.order_by("received_at", "id").values_list(
            "id", "received_at", "source_id"
        )
        return list(rows[: self.batch_size])

    def _later_already_parsed(
        self, delivery_id: str, received_at: datetime, source_id: int
    ) -> bool:
        # Per source: items are per source, so only a later delivery of the same
        # source can have decided a merge this one should have come before.
        try:
            return (
                Delivery.objects.filter(
                    source_id=source_id, status=Delivery.Status.PARSED
                )
                .filter(
                    Q(received_at__gt=received_at)
                    | Q(received_at=received_at, id__gt=delivery_id)
                )
                .exists()
            )
        except Exception:  # noqa: BLE001 - an observation must not cost the delivery
            log.exception("journal order check failed for %s", delivery_id)
            return False

    def _warn_lag(self, lag: _Lag) -> None:
        if not self.startup_done or lag.count == 0:
            return
        log.warning(
            "%d deliveries waited more than %d s to be folded; worst %s waited %d s",
            lag.count,
            self.lag_threshold.total_seconds(),
            lag.worst_id,
            lag.worst.total_seconds(),
        )

    def run(
        self,
        stop: threading.Event,
        signal: wake.WakeSignal | None = None,
        tick: float = TICK_S,
    ) -> None:
        """Pass, then wait for a wake signal or the tick, until `stop` is set. Whoever
        sets `stop` also notifies the signal so the wait ends at once."""
        signal = signal or wake.signal
        try:
            self.log_backlog()
        except Exception:  # noqa: BLE001
            log.exception("pending backlog not counted")
        while not stop.is_set():
            try:
                _refresh_connection()
                self.pass_once(stop)
            except Exception:  # noqa: BLE001 - a worker that died here would stop folding for good
                if not stop.is_set():
                    log.exception("fold pass failed")
            if stop.is_set():
                break
            signal.wait(tick)
        close = getattr(self.fold, "close", None)
        if close is not None:
            close()


def _refresh_connection() -> None:
    # A long-running loop must honour CONN_MAX_AGE and drop broken connections
    # itself, as Django does per request. Inside a transaction (a test's) the
    # connection is not ours to close.
    if not connection.in_atomic_block:
        close_old_connections()


def run_in_thread(worker: Worker, stop: threading.Event, **kwargs) -> None:
    """Thread target for the worker loop; the thread's connection closes with it."""
    try:
        worker.run(stop, **kwargs)
    finally:
        connections.close_all()
