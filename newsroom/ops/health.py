"""What /healthz checks: the database, the channel layer, the workers' heartbeats.

Each check returns a dict with "ok" and what it saw; `problems` lists, in plain
words, everything that is wrong. The roles part is pure given the rows and a
clock, so tests drive it without waiting.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Iterable
from datetime import datetime, timedelta

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import connection
from django.utils import timezone

from newsroom.ops import heartbeat
from newsroom.ops.models import Heartbeat, beat_state

CHANNEL_TIMEOUT_S = 2.0


def check_database() -> dict:
    started = time.monotonic()
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as e:
        return {"ok": False, "error": f"database query failed: {e}"}
    return {"ok": True, "ms": round((time.monotonic() - started) * 1000, 1)}


async def check_channel_layer(timeout: float = CHANNEL_TIMEOUT_S) -> dict:
    """Send a message to a private channel and receive it back."""
    started = time.monotonic()
    layer = get_channel_layer()
    if layer is None:
        return {"ok": False, "error": "no channel layer is configured"}
    backend = type(layer).__name__
    nonce = secrets.token_hex(8)
    try:
        async with asyncio.timeout(timeout):
            channel = await layer.new_channel()
            await layer.send(channel, {"type": "ops.ping", "nonce": nonce})
            message = await layer.receive(channel)
    except TimeoutError:
        return {
            "ok": False,
            "backend": backend,
            "error": f"channel layer round trip took longer than {timeout:g} s",
        }
    except Exception as e:
        return {"ok": False, "backend": backend, "error": f"channel layer failed: {e}"}
    if message.get("nonce") != nonce:
        return {
            "ok": False,
            "backend": backend,
            "error": "channel layer echoed a stranger",
        }
    ms = round((time.monotonic() - started) * 1000, 1)
    return {"ok": True, "backend": backend, "ms": ms}


def check_roles(
    rows: Iterable[Heartbeat],
    required: Iterable[str],
    now: datetime,
    stale_after: timedelta,
) -> tuple[dict, list[str]]:
    """Per role: each process's state and last beat age. A required role is
    healthy with at least one fresh process; stale and stopped rows are shown,
    and only count against a role that has no fresh process."""
    roles: dict[str, dict] = {}
    for row in rows:
        state = beat_state(row.last_beat_at, row.stopped_at, stale_after, now)
        entry = roles.setdefault(row.role, {"ok": False, "processes": []})
        entry["processes"].append(
            {
                "process": row.process,
                "state": state,
                "last_beat_age_s": round((now - row.last_beat_at).total_seconds(), 1),
                "last_beat_at": row.last_beat_at.isoformat(),
                "started_at": row.started_at.isoformat(),
                "detail": row.detail,
            }
        )
        if state == Heartbeat.State.FRESH:
            entry["ok"] = True
    problems = []
    for role in required:
        entry = roles.get(role)
        if entry is None:
            roles[role] = {"ok": False, "processes": []}
            problems.append(f"{role}: no process has ever sent a heartbeat")
        elif not entry["ok"]:
            latest = min(entry["processes"], key=lambda p: p["last_beat_age_s"])
            problems.append(
                f"{role}: no fresh heartbeat; the last one came "
                f"{latest['last_beat_age_s']:.0f} s ago from {latest['process']} "
                f"({latest['state']})"
            )
    return roles, problems


def heartbeat_rows() -> list[Heartbeat]:
    return list(Heartbeat.objects.all())


async def health(now: datetime | None = None) -> tuple[bool, dict]:
    """Everything /healthz reports: (healthy, the JSON body)."""
    database = await sync_to_async(check_database)()
    channel_layer = await check_channel_layer()
    problems = [c["error"] for c in (database, channel_layer) if not c["ok"]]
    roles: dict = {}
    if database["ok"]:
        rows = await sync_to_async(heartbeat_rows)()
        roles, role_problems = check_roles(
            rows,
            settings.NEWSROOM_HEALTH_ROLES,
            now or timezone.now(),
            heartbeat.stale_after(),
        )
        problems += role_problems
    else:
        problems.append("heartbeats not read: the database is down")
    body = {
        "status": "ok" if not problems else "fail",
        "problems": problems,
        "database": database,
        "channel_layer": channel_layer,
        "roles": roles,
        "stale_after_s": heartbeat.stale_after().total_seconds(),
    }
    return not problems, body
