"""Runs executing in THIS process, so updates about them can reach their status.

Only a lookup table of local event loops: anything that must cross a process
boundary goes over the channel layer (group `run.<id>.exec`) or the database.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Protocol


class LiveRun(Protocol):
    loop: asyncio.AbstractEventLoop

    def apply_update(self, kind: str, payload: dict[str, Any]) -> None: ...


_lock = threading.Lock()
_runs: dict[int, LiveRun] = {}


def register(run_id: int, live: LiveRun) -> None:
    with _lock:
        _runs[run_id] = live


def unregister(run_id: int) -> None:
    with _lock:
        _runs.pop(run_id, None)


def deliver_local(run_id: int, kind: str, payload: dict[str, Any]) -> bool:
    """Hand an update ("fold" or "model") to the run if it executes here. Safe
    from any thread; the update is applied on the run's own loop."""
    with _lock:
        live = _runs.get(run_id)
    if live is None:
        return False
    try:
        live.loop.call_soon_threadsafe(live.apply_update, kind, payload)
    except RuntimeError:  # its loop has closed: the run is over
        return False
    return True
