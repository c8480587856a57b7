"""Worker heartbeats: every long-running role writes when it last beat.

One `Heartbeats` per process holds the roles that process runs (the web server,
the run worker, the fold worker, the session reaper; `serve` holds several).
`beat()` upserts one row per role in a single statement; a daemon thread calls
it every NEWSROOM_HEARTBEAT_INTERVAL seconds, so the event loop never waits on
the database. When the process serves an event loop, the thread first asks the
loop to answer: a loop blocked for a whole interval withholds the beat, so its
rows go stale, which is what an operator needs to see.

`stop()` marks the rows stopped (a clean exit); a killed process leaves them to
go stale after NEWSROOM_HEARTBEAT_INTERVAL x STALE_FACTOR.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from newsroom.dbretry import (
    Outage,
    describe,
    drop_broken_connection,
    is_connection_error,
    refresh_connection,
)
from newsroom.ops.models import Heartbeat

log = logging.getLogger(__name__)

# Role names shared by `serve`'s services, the commands and /healthz.
WEB = "web"
RUNS = "runs"
FOLD = "fold"
REAPER = "reaper"
ROLES = (WEB, RUNS, FOLD, REAPER)

# Three missed beats make a row stale: one slow beat is not an outage.
STALE_FACTOR = 3


def interval() -> float:
    return settings.NEWSROOM_HEARTBEAT_INTERVAL


def stale_after() -> timedelta:
    return timedelta(seconds=interval() * STALE_FACTOR)


def process_tag() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass
class _Role:
    started_at: datetime
    detail: Callable[[], dict] | None = None
    notes: dict[str, Any] = field(default_factory=dict)

    def detail_json(self) -> dict:
        data = dict(self.notes)
        if self.detail is not None:
            try:
                data.update(self.detail())
            except Exception as e:  # a detail must never cost the beat
                data["detail_error"] = str(e)
        return data


class Heartbeats:
    """The heartbeat rows of this process (one per role it runs)."""

    def __init__(
        self,
        process: str | None = None,
        clock: Callable[[], datetime] = timezone.now,
    ) -> None:
        self.process = process or process_tag()
        self.clock = clock
        self.loop: asyncio.AbstractEventLoop | None = None
        self.loop_lag_ms: float | None = None
        self._roles: dict[str, _Role] = {}
        self._stopping: dict[str, _Role] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._stopped = False
        self.outage = Outage("heartbeat", logger=log)

    # -- roles ----------------------------------------------------------------------

    def add(self, role: str, detail: Callable[[], dict] | None = None) -> None:
        """This process now runs `role`; `detail()` adds figures to each beat."""
        with self._lock:
            self._stopping.pop(role, None)
            self._roles[role] = _Role(self.clock(), detail)

    def note(self, role: str, **values: Any) -> None:
        """Values shown with the role's next beats (e.g. the last crash)."""
        with self._lock:
            entry = self._roles.get(role)
            if entry is not None:
                entry.notes.update(values)

    def remove(self, role: str) -> None:
        """The role ended in this process: its row is marked stopped next beat."""
        with self._lock:
            entry = self._roles.pop(role, None)
            if entry is not None:
                self._stopping[role] = entry

    def roles(self) -> list[str]:
        with self._lock:
            return list(self._roles)

    # -- writing ---------------------------------------------------------------------

    def beat(self) -> int:
        """Upsert this process's rows in one statement; returns how many."""
        now = self.clock()
        with self._lock:
            running = list(self._roles.items())
            stopping = list(self._stopping.items())
            self._stopping.clear()
        rows = [self._row(role, entry, now, None) for role, entry in running]
        rows += [self._row(role, entry, now, now) for role, entry in stopping]
        if not rows:
            return 0
        Heartbeat.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["role", "process"],
            update_fields=["started_at", "last_beat_at", "stopped_at", "detail"],
        )
        return len(rows)

    def _row(
        self, role: str, entry: _Role, now: datetime, stopped: datetime | None
    ) -> Heartbeat:
        detail = entry.detail_json()
        if self.loop_lag_ms is not None:
            detail.setdefault("loop_lag_ms", round(self.loop_lag_ms, 1))
        return Heartbeat(
            role=role,
            process=self.process,
            started_at=entry.started_at,
            last_beat_at=now,
            stopped_at=stopped,
            detail=detail,
        )

    # -- the beating thread -----------------------------------------------------------

    def start(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Beat now and every interval on a daemon thread (idempotent). With a
        loop, each beat waits for the loop to answer first."""
        if loop is not None:
            self.loop = loop
        if self._thread is not None:
            return
        self._stopped = False
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="heartbeat", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        every = interval()
        try:
            while not self._stop.is_set():
                if self._loop_answers(every):
                    self.try_beat()
                if self._stop.wait(every):
                    break
        finally:
            connection.close()

    def try_beat(self) -> bool:
        """`beat()` that never raises: a database outage is said once (and its
        end), another error is logged with its traceback. True: written."""
        try:
            refresh_connection()
            self.beat()
        except Exception as e:  # noqa: BLE001 - the thread must go on beating
            if is_connection_error(e):
                drop_broken_connection()
                # The interval is the backoff: beats are rare already.
                self.outage.failed(e, "a beat")
            else:
                log.exception("heartbeat not written")
            return False
        self.outage.recovered()
        return True

    def _loop_answers(self, timeout: float) -> bool:
        loop = self.loop
        if loop is None:
            return True
        answered = threading.Event()
        sent = time.monotonic()
        try:
            loop.call_soon_threadsafe(answered.set)
        except RuntimeError:  # the loop is closed: the process is ending
            return False
        if not answered.wait(timeout):
            log.warning(
                "event loop did not answer within %.0f s: heartbeat withheld", timeout
            )
            return False
        self.loop_lag_ms = (time.monotonic() - sent) * 1000
        return True

    def stop(self) -> None:
        """Stop beating and mark every role of this process stopped (clean exit)."""
        if self._stopped:
            return
        self._stopped = True
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)
        with self._lock:
            for role, entry in self._roles.items():
                self._stopping[role] = entry
            self._roles.clear()
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            self._final_beat()
        else:
            # Called on the event loop's thread (daphne's shutdown trigger):
            # Django refuses database work there, so the last beat gets a thread.
            writer = threading.Thread(target=self._final_beat_closing, daemon=True)
            writer.start()
            writer.join(timeout=10)

    def _final_beat(self) -> None:
        try:
            refresh_connection()
            self.beat()
        except Exception as e:
            log.warning("heartbeat stop not written: %s", describe(e))

    def _final_beat_closing(self) -> None:
        try:
            self._final_beat()
        finally:
            connection.close()


_heartbeats: Heartbeats | None = None
_heartbeats_lock = threading.Lock()


def heartbeats() -> Heartbeats:
    """This process's heartbeats (per process by nature: each writes its own rows)."""
    global _heartbeats
    with _heartbeats_lock:
        if _heartbeats is None:
            _heartbeats = Heartbeats()
        return _heartbeats


def web_detail() -> dict:
    from newsroom.live.hub import live_stats

    return {"live": live_stats()}


def beat_under_daphne() -> None:
    """Called from asgi.py: under daphne (`daphne ...` or `manage.py serve`) the
    web role beats from the moment the reactor runs until it shuts down. Daphne
    has no ASGI lifespan, so the reactor's own hooks are used."""
    if "daphne.server" not in sys.modules:
        return  # not daphne (tests, other servers): nothing installed the reactor
    from twisted.internet import reactor

    def start() -> None:
        beats = heartbeats()
        beats.add(WEB, detail=web_detail)
        beats.start(asyncio.get_event_loop())

    def stop() -> None:
        if heartbeats()._thread is not None:
            heartbeats().stop()

    reactor.callWhenRunning(start)
    reactor.addSystemEventTrigger("after", "shutdown", stop)
