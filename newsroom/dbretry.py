"""Riding out a database that is briefly unreachable (restart, failover, network).

Every long-running worker (fold worker, run worker and its runs, session reaper,
heartbeat thread) treats an outage the same way: one WARNING when it starts
(what failed, and that it will retry), no traceback (it is not a bug), attempts
spaced by a capped backoff while it lasts, and one INFO when the database
answers again. Other errors keep their tracebacks: those are bugs.

- `Outage` is one worker's view of that: `failed()` on each connection error
  (logs the first, returns how long to wait), `recovered()` on the next success.
- `retry_db(fn)` wraps a write that must not be lost (a fetched body's journal
  write, a run's final save): it retries `fn` through an outage, up to `budget`
  seconds.
- `drop_broken_connection()`: Django does not reconnect a broken connection
  outside a request; a worker drops it so its next query opens a fresh one.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from django.db import (
    InterfaceError,
    OperationalError,
    close_old_connections,
    connection,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

BUDGET_S = 120.0

# PostgreSQL SQLSTATEs of a server that is gone or not taking connections:
# admin_shutdown, crash_shutdown, cannot_connect_now (class 08 is checked whole).
_DOWN_SQLSTATES = {"57P01", "57P02", "57P03"}
_DOWN_WORDS = (
    "connection",
    "server closed",
    "could not connect",
    "terminating",
    "the database system is",
)


def is_connection_error(error: BaseException) -> bool:
    """True when `error` means the database could not be reached (as opposed to
    a query it refused, or a bug)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, InterfaceError):
            return True
        sqlstate = getattr(current, "sqlstate", None) or ""
        if sqlstate.startswith("08") or sqlstate in _DOWN_SQLSTATES:
            return True
        if isinstance(current, OperationalError):
            text = str(current).lower()
            if any(words in text for words in _DOWN_WORDS):
                return True
        current = current.__cause__ or current.__context__
    return False


def describe(error: BaseException) -> str:
    """The error on one line (psycopg's messages run over several)."""
    lines = str(error).strip().splitlines()
    return lines[0].strip() if lines else type(error).__name__


def refresh_connection() -> None:
    """What Django does per request, for long-running loops: drop this thread's
    connection if it is broken or past CONN_MAX_AGE. Inside a transaction (a
    test's) the connection is not ours to close."""
    if not connection.in_atomic_block:
        close_old_connections()


def drop_broken_connection() -> None:
    """Close this thread's connection unless a transaction (a test's) holds it."""
    try:
        if connection.in_atomic_block:
            return
        connection.close()
    except Exception:  # noqa: BLE001 - it is broken; a new one comes on next use
        pass


class Outage:
    """One worker's view of the database being away.

    `failed(error, what)` after a connection error: the first of an outage logs
    one WARNING; returns the seconds to wait before trying again (doubling from
    `first` up to `cap`). `recovered()` after the next success: one INFO saying
    how long it lasted; a no-op when there was no outage. Thread-safe: the
    lanes of one journal writer share theirs.
    """

    def __init__(
        self,
        who: str,
        *,
        first: float = 0.5,
        cap: float = 10.0,
        logger: logging.Logger = log,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.who = who
        self.first = first
        self.cap = cap
        self.logger = logger
        self.clock = clock
        self.failures = 0
        self.started: float | None = None
        self._lock = threading.Lock()

    @property
    def down(self) -> bool:
        return self.started is not None

    def failed(self, error: BaseException, what: str) -> float:
        with self._lock:
            if self.started is None:
                self.started = self.clock()
                self.logger.warning(
                    "%s: database unreachable during %s (%s); retrying until it "
                    "is back",
                    self.who,
                    what,
                    describe(error),
                )
            self.failures += 1
            return min(self.first * 2 ** (self.failures - 1), self.cap)

    def recovered(self) -> None:
        with self._lock:
            if self.started is None:
                return
            self.logger.info(
                "%s: database reachable again after %.1f s (%d failed attempt%s)",
                self.who,
                self.clock() - self.started,
                self.failures,
                "" if self.failures == 1 else "s",
            )
            self.started = None
            self.failures = 0


def retry_db(
    fn: Callable[[], T],
    *,
    what: str,
    outage: Outage,
    budget: float = BUDGET_S,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """`fn()`, retried through an outage (`outage` logs it) for up to `budget`
    seconds; other errors, and a connection error past the budget, are raised."""
    deadline = clock() + budget
    while True:
        try:
            result = fn()
        except Exception as e:
            if not is_connection_error(e):
                raise
            drop_broken_connection()
            delay = outage.failed(e, what)
            if clock() + delay > deadline:
                raise
            sleep(delay)
            continue
        outage.recovered()
        return result
