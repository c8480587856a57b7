"""Batched saves of run status: at most one write per run per second.

Writes to a RunStatus only mark the run unsaved. `take_due` (on the event loop,
where the status lives) snapshots each unsaved run whose last save is at least
`interval` old; `write` (in a worker thread) stores the snapshots. A running
run that has not changed is still touched every `heartbeat` seconds, so other
processes can tell a live run from one whose process died. `flush` is the
final, synchronous save when a run ends. The clock is injectable for tests.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from django.utils import timezone

from newsroom.dbretry import (
    Outage,
    drop_broken_connection,
    is_connection_error,
    retry_db,
)
from newsroom.runs.models import Run
from newsroom.runs.status import RunStatus

HEARTBEAT = 10.0


class RunSaver:
    def __init__(
        self,
        *,
        interval: float = 1.0,
        heartbeat: float = HEARTBEAT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.interval = interval
        self.heartbeat = heartbeat
        self.clock = clock
        self._dirty: dict[int, RunStatus] = {}
        self._watched: dict[int, RunStatus] = {}
        self._last_saved: dict[int, float] = {}
        self.writes = 0  # Run rows written, for tests and the benchmark

    def watch(self, status: RunStatus) -> None:
        """Track a running run (for heartbeats); its save clock starts now."""
        self._watched[status.run_id] = status
        self._last_saved.setdefault(status.run_id, self.clock())

    def forget(self, run_id: int) -> None:
        self._watched.pop(run_id, None)
        self._dirty.pop(run_id, None)
        self._last_saved.pop(run_id, None)

    def mark(self, status: RunStatus) -> None:
        self._dirty[status.run_id] = status

    def take_due(self) -> list[tuple[int, dict[str, Any]]]:
        """Snapshots of the runs due a save, marked saved as of now."""
        now = self.clock()
        due: list[tuple[int, dict[str, Any]]] = []
        for run_id, status in list(self._dirty.items()):
            if now - self._last_saved.get(run_id, float("-inf")) >= self.interval:
                due.append((run_id, status.to_json()))
                del self._dirty[run_id]
                self._last_saved[run_id] = now
        for run_id, status in self._watched.items():
            if run_id in self._dirty or any(r == run_id for r, _ in due):
                continue
            if now - self._last_saved.get(run_id, now) >= self.heartbeat:
                due.append((run_id, status.to_json()))
                self._last_saved[run_id] = now
        return due

    def write(self, due: list[tuple[int, dict[str, Any]]]) -> int:
        """Store snapshots (synchronous; call from a thread in async code)."""
        now = timezone.now()
        try:
            for run_id, snapshot in due:
                Run.objects.filter(pk=run_id).update(status=snapshot, saved_at=now)
                self.writes += 1
        except Exception as e:
            if is_connection_error(e):
                drop_broken_connection()  # the next save gets a fresh one
            raise
        return len(due)

    def save_due(self) -> int:
        """take_due + write, for synchronous callers and tests."""
        return self.write(self.take_due())

    def flush(self, status: RunStatus, **fields: Any) -> None:
        """The final save: the whole snapshot now, with any Run fields given."""
        self._dirty.pop(status.run_id, None)
        self._last_saved[status.run_id] = self.clock()
        snapshot = status.to_json()
        # The last save must land: ride out a database that is briefly away.
        retry_db(
            lambda: Run.objects.filter(pk=status.run_id).update(
                status=snapshot, saved_at=timezone.now(), **fields
            ),
            what="its final save",
            outage=Outage(f"run {status.run_id}", first=0.2, cap=5.0),
        )
        self.writes += 1

    def pending(self) -> bool:
        return bool(self._dirty)
