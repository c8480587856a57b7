"""The table of browser sessions: records, kept pages, reservations.

Backed by the database so every process sees the same sessions. A record
without a page (never opened, or closed with its reason) is bounded by bytes in
total, oldest evicted first; a record with an open page is never evicted (the
reaper's memory limits bound those). Never-opened records expire at the TTL.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Q, Sum
from django.utils import timezone

from sessions_app.models import BrowserHost, BrowserSession, SessionReservation

State = BrowserSession.State

# A reservation left by a process that died while opening stops counting after this.
RESERVATION_TIMEOUT = timedelta(minutes=2)
# Likewise a busy mark left by a process that died mid-action.
BUSY_TIMEOUT = timedelta(minutes=2)
# Per-record overhead on top of its strings: the row, its indexes, its dates.
RECORD_OVERHEAD = 400


class SessionError(Exception):
    """An answer for the reader: `status` is the HTTP status, str() the message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def new_tag() -> str:
    return secrets.token_hex(4)


def session_id(tag: str) -> str:
    return f"{tag}-{secrets.token_urlsafe(12)}"


def tag_of(sid: str) -> str | None:
    tag, sep, rest = sid.partition("-")
    if not sep or not rest or len(tag) != 8:
        return None
    return tag


@dataclass(frozen=True)
class RegistryLimits:
    idle: float = 300.0
    ttl: float = 600.0


class Full(SessionError):
    def __init__(self, taken: int, cap: int) -> None:
        super().__init__(
            429,
            f"{taken} browser session{'s are' if taken != 1 else ' is'} open or opening "
            f"and memory admits {cap}: close one or wait for an idle one to be reclaimed",
        )
        self.taken = taken
        self.cap = cap


class Reservation:
    """Holds one slot until released (a context manager; release is idempotent)."""

    def __init__(self, pk: int) -> None:
        self.pk: int | None = pk

    def release(self) -> None:
        if self.pk is not None:
            SessionReservation.objects.filter(pk=self.pk).delete()
            self.pk = None

    def __enter__(self) -> Reservation:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


class Registry:
    def __init__(
        self,
        tag: str,
        *,
        limits: RegistryLimits | None = None,
        max_record_bytes: int = 64 * 1024 * 1024,
        clock: Callable[[], datetime] = timezone.now,
    ) -> None:
        self.tag = tag
        self.limits = limits or RegistryLimits()
        self.max_record_bytes = max_record_bytes
        self.clock = clock

    # --- records ---

    def insert(
        self,
        owner,
        url: str,
        options: dict | None = None,
        *,
        opened: dict | None = None,
    ) -> BrowserSession:
        """A new record. `opened` (context_id, target_id, ...) registers it as open."""
        options = options or {}
        sid = session_id(self.tag)
        now = self.clock()
        size = len(json.dumps(options)) + len(url) + len(sid) + RECORD_OVERHEAD
        record = BrowserSession(
            id=sid,
            tag=self.tag,
            owner=owner,
            url=url,
            options=options,
            created_at=now,
            size_bytes=size,
            queued_ns=time.time_ns(),
        )
        if opened is not None:
            record.state = State.OPEN
            record.opened_at = record.last_used_at = now
            for key, value in opened.items():
                setattr(record, key, value)
        record.save(force_insert=True)
        self.expire()
        self.evict()
        return record

    def get(self, sid: str, owner) -> BrowserSession:
        """The record, or SessionError 404 (unknown), 403 (another reader's),
        410 (issued by another browser generation, or closed)."""
        record = BrowserSession.objects.filter(pk=sid).first()
        tag = tag_of(sid)
        if record is None:
            if tag is not None and tag != self.tag:
                raise SessionError(
                    410,
                    f"browser session {sid} was not issued by the running browser: the "
                    "server or its browser restarted since, so its page is gone; "
                    "scrape the page again",
                )
            raise SessionError(
                404, f"no browser session {sid}: it never existed or its record expired"
            )
        if record.owner_id != getattr(owner, "pk", owner):
            raise SessionError(403, f"browser session {sid} belongs to another reader")
        if record.state == State.GONE:
            raise SessionError(
                410,
                f"browser session {sid} is closed: {record.reason}; scrape the page again",
            )
        if record.tag != self.tag:
            raise SessionError(
                410,
                f"browser session {sid} was issued before the browser restarted, so its "
                "page is gone; scrape the page again",
            )
        return record

    def mark_open(self, record: BrowserSession, **where: str) -> BrowserSession:
        """The record now has a page. It may have been evicted in the seconds the
        page took to open: put it back, or its slot could never be given back."""
        now = self.clock()
        record.state = State.OPEN
        record.opened_at = record.last_used_at = now
        record.reason = ""
        for key, value in where.items():
            setattr(record, key, value)
        with transaction.atomic():
            if BrowserSession.objects.filter(pk=record.pk).exists():
                record.save()
            else:
                record.save(force_insert=True)
        return record

    def mark_closed(
        self, sid: str, reason: str, *, expect_used: datetime | None = None
    ) -> bool:
        """Open -> gone with `reason`. With `expect_used`, only if the page was not
        used since and is not in use (the reaper's decision is stale otherwise).
        True if it closed."""
        now = self.clock()
        rows = BrowserSession.objects.filter(pk=sid).exclude(state=State.GONE)
        if expect_used is not None:
            rows = rows.filter(state=State.OPEN, last_used_at=expect_used).filter(
                Q(busy_since__isnull=True) | Q(busy_since__lte=now - BUSY_TIMEOUT)
            )
        changed = rows.update(
            state=State.GONE,
            reason=reason,
            closed_at=now,
            busy_since=None,
            queued_ns=time.time_ns(),
        )
        self.evict()
        return changed == 1

    def touch(self, record: BrowserSession, *, busy: bool = False, **fields) -> None:
        """The page was used now; `busy` marks an action starting (False ends it)."""
        record.last_used_at = self.clock()
        record.busy_since = record.last_used_at if busy else None
        for key, value in fields.items():
            setattr(record, key, value)
        BrowserSession.objects.filter(pk=record.pk, state=State.OPEN).update(
            last_used_at=record.last_used_at, busy_since=record.busy_since, **fields
        )

    def is_busy(self, record: BrowserSession) -> bool:
        return (
            record.busy_since is not None
            and record.busy_since > self.clock() - BUSY_TIMEOUT
        )

    def open_records(self) -> list[BrowserSession]:
        return list(
            BrowserSession.objects.filter(state=State.OPEN).order_by("last_used_at")
        )

    def open_count(self) -> int:
        return BrowserSession.objects.filter(state=State.OPEN).count()

    # --- bounds ---

    def expire(self) -> int:
        """Drop never-opened records past the TTL: what they replay is stale by then."""
        cutoff = self.clock() - timedelta(seconds=self.limits.ttl)
        deleted, _ = BrowserSession.objects.filter(
            state=State.NOT_OPENED, created_at__lte=cutoff
        ).delete()
        return deleted

    def evict(self) -> int:
        """Oldest records without a page go until the rest fit in max_record_bytes."""
        idle = BrowserSession.objects.exclude(state=State.OPEN)
        total = idle.aggregate(total=Sum("size_bytes"))["total"] or 0
        if total <= self.max_record_bytes:
            return 0
        doomed: list[str] = []
        for sid, size in (
            idle.order_by("queued_ns", "pk").values_list("pk", "size_bytes").iterator()
        ):
            if total <= self.max_record_bytes:
                break
            doomed.append(sid)
            total -= size
        for start in range(0, len(doomed), 500):
            # Re-check the state: a record that got its page meanwhile stays.
            BrowserSession.objects.filter(pk__in=doomed[start : start + 500]).exclude(
                state=State.OPEN
            ).delete()
        return len(doomed)

    def record_bytes(self) -> int:
        idle = BrowserSession.objects.exclude(state=State.OPEN)
        return idle.aggregate(total=Sum("size_bytes"))["total"] or 0

    # --- slots ---

    def pending(self) -> int:
        cutoff = self.clock() - RESERVATION_TIMEOUT
        return SessionReservation.objects.filter(created_at__gt=cutoff).count()

    def reserve(self, cap: int) -> Reservation:
        """Take a slot for a page about to open, or raise Full (429)."""
        with transaction.atomic():
            # The host row serialises reservations across processes (PostgreSQL);
            # SQLite's IMMEDIATE transactions already do.
            BrowserHost.objects.get_or_create(pk=1)
            BrowserHost.objects.select_for_update().filter(pk=1).first()
            now = self.clock()
            SessionReservation.objects.filter(
                created_at__lte=now - RESERVATION_TIMEOUT
            ).delete()
            taken = self.open_count() + SessionReservation.objects.count()
            if taken >= cap:
                raise Full(taken, cap)
            slot = SessionReservation.objects.create(tag=self.tag, created_at=now)
        return Reservation(slot.pk)
