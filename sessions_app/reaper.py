"""Closes kept pages: dead browser, past the TTL, or idle past what memory admits.

`Reaper.sweep()` is one synchronous pass (the command, the serve role and the
tests call it); `decide()` and `carry_out()` are its two halves, so a page used
between the decision and the close is seen to have been used and stays open.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from asgiref.sync import sync_to_async
from django.conf import settings

from newsroom.dbretry import (
    Outage,
    drop_broken_connection,
    is_connection_error,
    refresh_connection,
)
from sessions_app import browser as host_mod
from sessions_app.limits import reclaim_count, session_cap
from sessions_app.models import BrowserSession
from sessions_app.pool import PoolUser

log = logging.getLogger(__name__)
SHUTDOWN_REASON = "the server shut down"


@dataclass
class Closing:
    record: BrowserSession
    reason: str
    expect_used: datetime | None = None


@dataclass
class SweepResult:
    cap: int
    open_pages: int = 0
    closed: list[tuple[str, str]] = field(default_factory=list)  # (id, reason)


class Reaper(PoolUser):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.outage = Outage("session reaper", logger=log)

    def sessions(self):
        from sessions_app.sessions import Sessions

        return Sessions(self.pool, self.clock, self.available)

    def decide(self, extra: int = 0) -> tuple[list[Closing], SweepResult]:
        from sessions_app.sessions import registry_for

        host = host_mod.current_host()
        reg = registry_for(host, self.clock)
        records = reg.open_records()
        alive = host_mod.probe(host)
        closings: list[Closing] = []
        idle: list[BrowserSession] = []
        targets: set[str] | None = None
        if alive and records:
            try:
                targets = self.pool.run(self.pool.targets(host.ws_url))
            except Exception as e:
                log.warning("cannot list the browser's pages: %s", e)
        now = self.clock()
        ttl = settings.NEWSROOM_SESSION_TTL
        busy = 0
        for record in records:
            if reg.is_busy(record):
                busy += 1  # an action is running on it: holds a slot, not closed
            elif not alive or record.tag != host.tag:
                closings.append(Closing(record, "the browser exited"))
            elif targets is not None and record.target_id not in targets:
                closings.append(Closing(record, "its page was closed in the browser"))
            elif (now - (record.opened_at or now)).total_seconds() >= ttl:
                closings.append(
                    Closing(record, f"it reached the session limit of {ttl:.0f} s")
                )
            else:
                idle.append(record)
        if host is None or not alive:
            return closings, SweepResult(cap=0)
        room = host_mod.measure_room(host, len(idle) + busy, self.available())
        cap = session_cap(room, len(idle) + busy)
        idle.sort(key=lambda r: r.last_used_at or now)
        waits = [(now - (r.last_used_at or now)).total_seconds() for r in idle]
        others = busy + extra + reg.pending()
        count = reclaim_count(waits, others, settings.NEWSROOM_SESSION_IDLE, cap)
        # How many close follows from idle times; which ones, from accounts: the
        # reader holding the most pages yields first, so one reader opening many
        # cannot push out everyone else's.
        held = Counter(r.owner_id for r in idle)
        idle.sort(key=lambda r: (-held[r.owner_id], r.last_used_at or now))
        open_pages = len(idle) + busy
        for record in idle[:count]:
            waited = (now - (record.last_used_at or now)).total_seconds()
            closings.append(
                Closing(
                    record,
                    f"it was idle for {waited:.0f} s; {open_pages} sessions were open "
                    f"and memory admits {cap}",
                    expect_used=record.last_used_at,
                )
            )
        return closings, SweepResult(cap=cap, open_pages=open_pages)

    def carry_out(self, closings: list[Closing], result: SweepResult) -> SweepResult:
        sessions = self.sessions()
        for closing in closings:
            if sessions.close_record(
                closing.record, closing.reason, expect_used=closing.expect_used
            ):
                result.closed.append((closing.record.pk, closing.reason))
        return result

    def sweep(self, extra: int = 0) -> SweepResult:
        closings, result = self.decide(extra)
        return self.carry_out(closings, result)

    def round(self, every: float) -> tuple[SweepResult | None, float]:
        """One sweep for the long-running loops, never raising: its result (None
        when it failed) and the seconds until the next sweep: `every`, or the
        backoff while the database is unreachable (said once, and when it is
        back), so pages are reaped soon after it returns. Other errors are
        logged with their traceback."""
        try:
            result = self.sweep()
        except Exception as e:  # noqa: BLE001 - the reaper must go on sweeping
            if not is_connection_error(e):
                log.exception("session sweep failed")
                return None, every
            drop_broken_connection()
            return None, min(self.outage.failed(e, "a session sweep"), every)
        self.outage.recovered()
        return result, every

    def shutdown(self) -> list[str]:
        """Close every page with the shutdown reason, then stop the browser."""
        sessions = self.sessions()
        closed = []
        for record in BrowserSession.objects.filter(state=BrowserSession.State.OPEN):
            if sessions.close_record(record, SHUTDOWN_REASON):
                closed.append(record.pk)
        host_mod.stop_browser()
        try:
            self.pool.run(self.pool.stop(), timeout=10)
        except Exception:
            pass
        return closed


def sweep_interval() -> float:
    return settings.NEWSROOM_SESSION_IDLE * settings.NEWSROOM_SESSION_SWEEP_FRACTION


class ReaperService:
    """The reaper as a background role of `manage.py serve`."""

    name = "session reaper"
    role = "reaper"  # its heartbeat role (newsroom/ops)

    def __init__(self, reaper: Reaper | None = None) -> None:
        self.reaper = reaper or Reaper()

    def _sweep(self, every: float) -> float:
        refresh_connection()
        return self.reaper.round(every)[1]

    async def run(self, stop: asyncio.Event) -> None:
        every = sweep_interval()
        try:
            while True:  # the first sweep at start: pages a restart orphaned
                wait = await sync_to_async(self._sweep, thread_sensitive=False)(every)
                try:
                    await asyncio.wait_for(stop.wait(), timeout=wait)
                    break
                except TimeoutError:
                    pass
        finally:
            closed = await sync_to_async(self.reaper.shutdown, thread_sensitive=False)()
            log.info("closed %d browser sessions: %s", len(closed), SHUTDOWN_REASON)


def service() -> ReaperService | None:
    """The `serve` role; None when a `reap_sessions` process does the sweeping."""
    if not getattr(settings, "NEWSROOM_REAPER_IN_SERVE", True):
        return None
    return ReaperService()
