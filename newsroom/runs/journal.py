"""Journal writes and source health, batched into few transactions.

Fetch tasks submit their outcome and wait; one task writes whatever has
gathered in a single transaction in a worker thread, so hundreds of fetches
finishing together cost a handful of commits while the loop keeps fetching.
A batch that fails is retried one write per transaction, so one bad row never
loses its neighbours; the write that still fails gets its own error.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import sync_to_async
from django.db import transaction

from fold_app.journal import record_delivery
from newsroom.sources.models import Source


@dataclass
class Write:
    source: Source
    health: dict[str, Any]
    delivery: dict[str, Any] | None = None  # record_delivery kwargs
    future: asyncio.Future | None = field(default=None, repr=False)


BATCH_TARGET = 64
GATHER_FOR = 0.02


class JournalWriter:
    def __init__(self, run=None) -> None:
        self.run = run
        self._pending: list[Write] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self.batches = 0
        self.rows = 0
        self.seconds = 0.0  # time spent writing, for the benchmark

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(
            self._loop(), name="runs:journal"
        )

    async def submit(self, write: Write) -> None:
        """Write and wait for the commit; raises what the write raised."""
        write.future = asyncio.get_running_loop().create_future()
        self._pending.append(write)
        self._wake.set()
        await write.future

    async def _loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            if len(self._pending) < BATCH_TARGET:
                # Let a few more finish: one commit for many rows costs less than
                # many commits, and the fetch slots are already free meanwhile.
                await asyncio.sleep(GATHER_FOR)
            batch, self._pending = self._pending, []
            if not batch:
                continue
            try:
                errors = await sync_to_async(self._write_batch)(batch)
            except BaseException as e:  # noqa: BLE001  cancelled mid-write
                for write in batch:
                    if not write.future.done():
                        write.future.set_exception(
                            e if isinstance(e, Exception) else RuntimeError("stopped")
                        )
                raise
            for write, error in zip(batch, errors, strict=True):
                if write.future.done():
                    continue
                if error is None:
                    write.future.set_result(None)
                else:
                    write.future.set_exception(error)

    def _write_batch(self, batch: list[Write]) -> list[Exception | None]:
        started = time.perf_counter()
        try:
            return self._write_batch_now(batch)
        finally:
            self.batches += 1
            self.rows += len(batch)
            self.seconds += time.perf_counter() - started

    def _write_batch_now(self, batch: list[Write]) -> list[Exception | None]:
        try:
            with transaction.atomic():
                for write in batch:
                    if write.delivery is not None:
                        record_delivery(
                            source=write.source, run=self.run, **write.delivery
                        )
                self._update_health(batch)
            return [None] * len(batch)
        except Exception:
            pass
        errors: list[Exception | None] = []
        for write in batch:
            try:
                with transaction.atomic():
                    self._write_one(write)
                errors.append(None)
            except Exception as e:
                errors.append(e)
        return errors

    def _update_health(self, batch: list[Write]) -> None:
        # Row by row: Django's bulk_update builds CASE expressions that cost
        # more CPU than they save here (measured with bench/fetch.py).
        for write in batch:
            Source.objects.filter(pk=write.source.pk).update(**write.health)

    def _write_one(self, write: Write) -> None:
        if write.delivery is not None:
            record_delivery(source=write.source, run=self.run, **write.delivery)
        Source.objects.filter(pk=write.source.pk).update(**write.health)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None
