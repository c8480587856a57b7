"""Riding out a database that is briefly unreachable (restart, failover, network).

Workers call `retry_db(fn)` around writes that must not be lost (a fetched
body's journal write, a run's final save): on a connection error it logs once,
drops the broken connection (Django does not reconnect one outside a request),
waits with capped backoff and tries again, up to `budget` seconds.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from django.db import InterfaceError, OperationalError, connection

log = logging.getLogger(__name__)
T = TypeVar("T")

BUDGET_S = 120.0


def is_connection_error(error: BaseException) -> bool:
    if isinstance(error, InterfaceError):
        return True
    if not isinstance(error, OperationalError):
        return False
    text = str(error).lower()
    return any(
        words in text
        for words in (
            "connection",
            "server closed",
            "could not connect",
            "terminating",
            "the database system is",
        )
    )


def drop_broken_connection() -> None:
    try:
        if connection.in_atomic_block:
            return
        connection.close()
    except Exception:  # noqa: BLE001 - it is broken; a new one comes on next use
        pass


def retry_db(
    fn: Callable[[], T],
    *,
    what: str,
    budget: float = BUDGET_S,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    deadline = clock() + budget
    delay = 0.2
    told = False
    while True:
        try:
            result = fn()
        except Exception as e:
            if not is_connection_error(e) or clock() + delay > deadline:
                raise
            if not told:
                log.warning("database unreachable during %s (%s); retrying", what, e)
                told = True
            drop_broken_connection()
            sleep(delay)
            delay = min(delay * 2, 5.0)
            continue
        if told:
            log.warning("database reachable again; %s done", what)
        return result
