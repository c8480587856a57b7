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
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import OperationalError, connection, connections
from django.db.models import Max, Q
from django.utils import timezone

from fold_app import wake
from fold_app.claims import SourceClaims
from fold_app.deadline import Deadline, FoldTimeout, describe_seconds
from fold_app.fold import (
    QUEUED,
    FoldResult,
    fold_delivery,
    load_delivery,
    mark_deferred,
    record_failure,
)
from fold_app.models import Delivery
from newsroom.dbretry import (
    Outage,
    describe,
    drop_broken_connection,
    is_connection_error,
    refresh_connection,
)

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


# PostgreSQL SQLSTATEs that mean "busy or gone for now, try again later".
_TRANSIENT_SQLSTATES = {"40001", "40P01", "55P03", "57P01", "57P02", "57P03", "53300"}


def classify(exc: BaseException) -> str:
    """What a fold's exception means: "deferred" (database busy, or cancelled
    from outside: the delivery stays queued), "deadline" (our own statement
    timeout) or "error" (anything else: the delivery fails)."""
    seen = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, FoldTimeout):
            return "deadline"
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
    delivery = load_delivery(delivery_id)
    return fold_delivery(delivery, deadline=deadline)


class FoldStep:
    """The worker's default fold step: one delivery, inline, under its deadline.

    The fold checks its deadline at safe points (after parsing, between entries,
    before commit) and PostgreSQL cancels a statement that outlives it. A fold
    stuck in between (a parse that never returns) is the supervisor's job: see
    Worker.supervised_pass. `current` tells the supervisor what is folding.
    """

    def __init__(
        self,
        seconds: float = FOLD_DEADLINE_S,
        fold: Callable[[str, Deadline], FoldResult] = fold_by_id,
    ) -> None:
        self.seconds = seconds
        self._fold = fold
        self.current: tuple[str, Deadline] | None = None

    def __call__(self, delivery_id: str) -> Outcome:
        deadline = Deadline(self.seconds)
        mine = self.current = (delivery_id, deadline)
        try:
            return Outcome.of(self._fold(delivery_id, deadline))
        except Exception as e:  # noqa: BLE001 - one delivery's error never ends a pass
            if deadline.abandoned:
                return Outcome(skipped=1)  # the supervisor has recorded it failed
            return self._outcome_of_error(delivery_id, e)
        finally:
            if self.current is mine:  # an abandoned fold must not clear its successor
                self.current = None

    def _outcome_of_error(self, delivery_id: str, error: Exception) -> Outcome:
        if not connection.in_atomic_block:
            connection.close_if_unusable_or_obsolete()  # a broken connection goes
        kind = classify(error)
        if kind == "deferred":
            log.info("delivery %s deferred: %s", delivery_id, describe(error))
            mark_deferred(delivery_id)
            return Outcome(deferred=1)
        if kind == "deadline":
            return self.fail(delivery_id, self.timeout_message())
        log.error("delivery %s could not be folded", delivery_id, exc_info=error)
        return self.fail(
            delivery_id,
            f"Internal error while folding: {type(error).__name__}: {error}",
        )

    def timeout_message(self) -> str:
        return f"Folding took longer than {describe_seconds(self.seconds)}; it was given up."

    def fail(self, delivery_id: str, message: str) -> Outcome:
        try:
            if record_failure(delivery_id, message):
                return Outcome(failed=1)
            return Outcome(skipped=1)
        except Exception:  # noqa: BLE001 - it stays pending; the cursor moves on
            log.exception(
                "the failure of delivery %s could not be recorded", delivery_id
            )
            return Outcome()


class _PassStop:
    """Stops a pass thread when the caller stops, or when the supervisor gives
    up on it."""

    def __init__(self, outer: threading.Event | None) -> None:
        self.outer = outer
        self.abandoned = False

    def is_set(self) -> bool:
        return self.abandoned or (self.outer is not None and self.outer.is_set())


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
    """Folds the queue. `pass_once` is the synchronous one-pass entry point
    (tests call it); `supervised_pass` runs it on a thread held to the fold
    deadline; `run` repeats that on the wake signal and the tick."""

    def __init__(
        self,
        fold: Callable[[str], Outcome] | None = None,
        *,
        clock: Callable[[], datetime] = timezone.now,
        batch_size: int = BATCH_SIZE,
        lag_threshold: timedelta = LAG_THRESHOLD,
        report: Callable[[str, Outcome], None] | None = None,
    ) -> None:
        self.fold = fold if fold is not None else FoldStep()
        self.clock = clock
        self.batch_size = batch_size
        self.lag_threshold = lag_threshold
        self.report = report
        # Until the first pass reaches the end of the queue, lag is not
        # reported: a backlog from before the start waited for the worker to
        # exist, not for it to keep up, and a hundred WARNs at boot say nothing.
        self.startup_done = False
        # Sources whose claim an abandoned (stuck) fold of this process still
        # holds: the queue moves on past a stuck fold, so this worker's next
        # pass may fold them; other workers still see them claimed.
        self._stuck_sources: set[int] = set()
        self._stuck_lock = threading.Lock()
        self.outage = Outage("fold worker", logger=log)

    def _stuck(self, source_id: int) -> bool:
        with self._stuck_lock:
            return source_id in self._stuck_sources

    def backlog(self) -> int:
        return Delivery.objects.filter(status__in=QUEUED).count()

    def log_backlog(self) -> int:
        count = self.backlog()
        if count:
            log.info("pending backlog at start: %d deliveries", count)
        return count

    def pass_once(self, stop=None, total: Outcome | None = None) -> Outcome:
        """Fold the queue once, in journal order, on this thread, until it is
        empty, a delivery is deferred, or `stop` is set (checked between
        deliveries, never mid-fold). Counts go into `total` as they happen."""
        total = Outcome() if total is None else total
        cursor: tuple[datetime, str] | None = None
        lag = _Lag(self.lag_threshold)
        busy: set[int] = set()
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
            newest = self._newest_parsed({source_id for _, _, source_id in batch})
            # Sources are claimed for the length of a batch (see claims.py); a
            # source another worker holds is theirs for the rest of this pass.
            claims = SourceClaims()
            try:
                outcome = self._fold_batch(
                    batch, cursor, newest, claims, busy, stop, total, lag
                )
            finally:
                # An abandoned pass (see supervised_pass) gives its stuck
                # source back here, before the claim goes.
                with self._stuck_lock:
                    self._stuck_sources.difference_update(claims.held)
                for source_id in list(claims.held):
                    claims.release(source_id)
            if outcome is None:
                return total
            cursor = outcome

    def _fold_batch(
        self,
        batch: list[tuple[str, datetime, int]],
        cursor: tuple[datetime, str] | None,
        newest: dict[int, datetime] | None,
        claims: SourceClaims,
        busy: set[int],
        stop,
        total: Outcome,
        lag: _Lag,
    ) -> tuple[datetime, str] | None:
        """Fold one batch; the new cursor, or None when the pass must end."""
        for delivery_id, received_at, source_id in batch:
            if stop is not None and stop.is_set():
                return None
            if connection.connection is None:
                claims.held.clear()  # the connection went, and its claims
            if source_id in busy or not (
                claims.claim(source_id) or self._stuck(source_id)
            ):
                busy.add(source_id)  # another worker folds it, in order
                cursor = (received_at, delivery_id)
                continue
            lag.add(delivery_id, received_at, self.clock())
            # Asked before folding (afterwards the delivery itself is parsed)
            # and said only after a fold that happened.
            out_of_order = self._later_already_parsed(
                delivery_id, received_at, source_id, newest
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
                return None
            cursor = (received_at, delivery_id)
        return cursor

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

    def _newest_parsed(self, source_ids: set[int]) -> dict[int, datetime] | None:
        """Per source, the latest journal time of a parsed delivery. Asked once per
        batch: this pass folds in journal order, so its own folds never come after
        a delivery still ahead of it in the batch, and the answer holds for the
        whole batch (with one worker, as DESIGN.md has it)."""
        try:
            rows = (
                Delivery.objects.filter(
                    source_id__in=source_ids, status=Delivery.Status.PARSED
                )
                .values("source_id")
                .annotate(newest=Max("received_at"))
                .values_list("source_id", "newest")
            )
            return dict(rows)
        except Exception as e:  # noqa: BLE001 - an observation must not cost the delivery
            if is_connection_error(e):
                raise  # no fold can happen either: the pass ends here
            log.exception("journal order check failed")
            return None

    def _later_already_parsed(
        self,
        delivery_id: str,
        received_at: datetime,
        source_id: int,
        newest: dict[int, datetime] | None,
    ) -> bool:
        # Per source: items are per source, so only a later delivery of the same
        # source can have decided a merge this one should have come before.
        if newest is not None:
            latest = newest.get(source_id)
            if latest is None or latest < received_at:
                return False
            if latest > received_at:
                return True
            # Same journal time: the ids decide, and only a query knows them.
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
        except Exception as e:  # noqa: BLE001 - an observation must not cost the delivery
            if is_connection_error(e):
                raise  # no fold can happen either: the pass ends here
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

    def supervised_pass(self, stop: threading.Event | None = None) -> Outcome:
        """One pass, run on a pass thread this thread supervises.

        Python cannot stop a running thread, so a fold stuck past its deadline
        is given up: the supervisor records the delivery failed, marks the fold
        abandoned and starts a fresh pass thread, which carries on with the rest
        of the queue. The abandoned fold keeps its thread (and CPU) until its
        current step returns; then it fails its next deadline check and rolls
        back, and since its outcome write is conditional on the delivery still
        being queued, it can never commit over the failure. Guaranteed: the
        queue moves on, and no delivery is both failed and folded. Not: the CPU
        a stuck parse burns until it returns.
        """
        total = Outcome()
        step = self.fold
        while True:
            pass_stop = _PassStop(stop)
            outcome, done, errors = Outcome(), threading.Event(), []

            def body(pass_stop=pass_stop, outcome=outcome, done=done, errors=errors):
                try:
                    self.pass_once(pass_stop, total=outcome)
                except BaseException as e:  # noqa: BLE001 - raised on the caller's thread
                    errors.append(e)
                finally:
                    connections.close_all()
                    done.set()

            threading.Thread(target=body, name="fold-pass", daemon=True).start()
            stuck = self._watch(step, done)
            if stuck is None:
                if errors:
                    raise errors[0]
                total.add(outcome)
                return total
            delivery_id, deadline = stuck
            source_id = (
                Delivery.objects.filter(pk=delivery_id)
                .values_list("source_id", flat=True)
                .first()
            )
            if source_id is not None:
                with self._stuck_lock:
                    self._stuck_sources.add(source_id)
            deadline.abandoned = True
            pass_stop.abandoned = True
            total.add(outcome)  # what the pass folded before it got stuck
            log.error("delivery %s: %s", delivery_id, step.timeout_message())
            total.add(step.fail(delivery_id, step.timeout_message()))

    @staticmethod
    def _watch(step, done: threading.Event) -> tuple[str, Deadline] | None:
        """Wait for the pass to end; the fold it is stuck in, if it passes its
        deadline first. Wakes only at deadlines, never per delivery."""
        seconds = getattr(step, "seconds", FOLD_DEADLINE_S)
        while True:
            current = getattr(step, "current", None)
            if current is not None and current[1].abandoned:
                current = None  # already given up; its successor has not begun
            timeout = current[1].remaining() if current else seconds
            if done.wait(max(timeout, 0.0)):
                return None
            if current is not None and step.current is current:
                if current[1].remaining() <= 0:
                    return current

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
        except Exception as e:  # noqa: BLE001
            if is_connection_error(e):
                drop_broken_connection()
                self.outage.failed(e, "counting the backlog")
            else:
                log.exception("pending backlog not counted")
        while not stop.is_set():
            wait = self.step(stop, tick)
            if stop.is_set():
                break
            # A wake signal ends the wait early: someone committed a delivery.
            signal.wait(wait)

    def step(self, stop: threading.Event | None = None, tick: float = TICK_S) -> float:
        """One supervised pass with its errors handled; the seconds to wait
        before the next: the tick, or the backoff while the database is away."""
        try:
            refresh_connection()
            outcome = self.supervised_pass(stop)
        except Exception as e:  # noqa: BLE001 - a worker that died here would stop folding for good
            if stop is not None and stop.is_set():
                return 0.0
            if is_connection_error(e):
                drop_broken_connection()
                return self.outage.failed(e, "a fold pass")
            log.exception("fold pass failed")
            return tick
        if not outcome.deferred:  # a deferral may be the outage itself
            self.outage.recovered()
        return tick


def run_in_thread(worker: Worker, stop: threading.Event, **kwargs) -> None:
    """Thread target for the worker loop; the thread's connection closes with it."""
    try:
        worker.run(stop, **kwargs)
    finally:
        connections.close_all()
