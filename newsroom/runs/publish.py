"""Publishing run-status changes to the channel layer, in order, off the hot path.

The executor hands every change to `publish` (no await, no I/O); one task per
process sends them to the group `run.<id>` in the order they were made, at
most once per SEND_INTERVAL: what queued up meanwhile goes out together, as one
message per run: {"type": "run.changes", "run": id, "changes": [...]} (at most
BATCH_LIMIT changes each). A group send costs several Redis round trips and
each receiving process several more per message, so one message per change
capped a run at a few hundred changes a second and let receivers fall behind
(and, past the channel's capacity, lose changes). A channel layer that fails is
logged once and skipped: live viewers then see a gap in `seq` and reload the
saved snapshot, so nothing is lost for good.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from channels.layers import get_channel_layer

log = logging.getLogger(__name__)

# A backlog beyond this means the layer cannot keep up: drop rather than grow.
MAX_BACKLOG = 50_000
# Changes per channel-layer message (a run's 500 "add" changes are ~100 KB).
BATCH_LIMIT = 500
# At most one send per this many seconds: a burst's changes wait for the next
# send and go out together. Receiving a message costs every web process several
# Redis round trips; viewers see changes once per tick (200 ms) anyway.
SEND_INTERVAL = 0.1


_home: asyncio.AbstractEventLoop | None = None


def set_home_loop(loop: asyncio.AbstractEventLoop | None) -> None:
    """The loop this process serves on (serve, run_worker), for sends from threads."""
    global _home
    _home = loop


def home_loop() -> asyncio.AbstractEventLoop | None:
    loop = _home
    if loop is None or loop.is_closed() or not loop.is_running():
        return None
    return loop


def group_for(run_id: int) -> str:
    return f"run.{run_id}"


def exec_group_for(run_id: int) -> str:
    """The group the process executing a run listens on for fold/model updates."""
    return f"run.{run_id}.exec"


class Publisher:
    def __init__(self, layer: Any = None, *, interval: float = SEND_INTERVAL) -> None:
        self.layer = layer if layer is not None else get_channel_layer()
        self.interval = interval
        self._queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._task: asyncio.Task | None = None
        self._failed = False
        self.sent = 0  # changes
        self.messages = 0  # channel-layer messages they went out in
        self.dropped = 0

    def start(self) -> None:
        if self.layer is not None and self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._send_loop(), name="runs:publisher"
            )

    def publish(self, change: dict[str, Any]) -> None:
        if self.layer is None:
            return
        if self._queue.qsize() >= MAX_BACKLOG:
            self.dropped += 1
            return
        self._queue.put_nowait(change)

    async def _send_loop(self) -> None:
        queue = self._queue
        loop = asyncio.get_running_loop()
        last = float("-inf")
        while True:
            first = await queue.get()
            # After a quiet spell the first change goes at once; in a burst,
            # what arrives until the interval is up joins it.
            wait = last + self.interval - loop.time()
            if wait > 0 and first is not None:
                await asyncio.sleep(wait)
            last = loop.time()
            batch = [first]
            while batch[-1] is not None and not queue.empty():
                batch.append(queue.get_nowait())
            stop = batch[-1] is None
            if stop:
                batch.pop()
            by_run: dict[int, list[dict[str, Any]]] = {}
            for change in batch:  # queue order is seq order within each run
                by_run.setdefault(change["run"], []).append(change)
            for run_id, changes in by_run.items():
                for start in range(0, len(changes), BATCH_LIMIT):
                    await self._send(run_id, changes[start : start + BATCH_LIMIT])
            if stop:
                return

    async def _send(self, run_id: int, changes: list[dict[str, Any]]) -> None:
        try:
            await self.layer.group_send(
                group_for(run_id),
                {"type": "run.changes", "run": run_id, "changes": changes},
            )
            self.sent += len(changes)
            self.messages += 1
        except Exception:
            self.dropped += len(changes)
            if not self._failed:
                self._failed = True
                log.exception("publishing run changes failed; live views will reload")

    async def close(self, timeout: float = 5.0) -> None:
        """Send what is queued (up to `timeout`), then stop."""
        if self._task is None:
            return
        self._queue.put_nowait(None)
        try:
            await asyncio.wait_for(asyncio.shield(self._task), timeout)
        except TimeoutError:
            self._task.cancel()
        self._task = None
