"""Journal writes and source health, batched into few transactions.

Fetch tasks submit their outcome and wait for its commit; the writer gathers
what has finished (a few milliseconds' worth) and writes it in one transaction
on a worker thread, so hundreds of fetches cost a handful of commits while the
event loop keeps fetching. PostgreSQL takes several batches at once (one
connection per lane); SQLite has one writer anyway, so it gets one lane. Each
lane is a thread of its own that keeps its connection for the whole run (opening
one per batch cost more than the batch) and closes it when the writer closes.
A batch that fails is retried one write per transaction, so one bad row never
loses its neighbours; the write that still fails gets its own error.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import math
import time
from dataclasses import dataclass, field
from typing import Any

from django.db import connection, connections, transaction

from fold_app.journal import record_delivery
from newsroom.dbretry import Outage, is_connection_error, retry_db
from newsroom.sources.models import Source

BATCH_TARGET = 64  # rows worth writing at once without waiting for more
GATHER_FOR = 0.02  # seconds to let more finish before writing a small batch
POSTGRES_LANES = 2


@dataclass
class Write:
    source: Source
    health: dict[str, Any]
    delivery: dict[str, Any] | None = None  # record_delivery kwargs
    future: asyncio.Future | None = field(default=None, repr=False)


class JournalWriter:
    def __init__(
        self, run=None, lanes: int | None = None, outage: Outage | None = None
    ) -> None:
        self.run = run
        if lanes is None:
            lanes = 1 if connection.vendor == "sqlite" else POSTGRES_LANES
        self.lanes = lanes
        # Shared by the lanes (and with the run's saves, when the executor
        # passes its own): an outage is said once per run, not per batch.
        self.outage = outage or Outage(
            f"run {run.pk}" if run is not None else "journal writer",
            first=0.2,
            cap=5.0,
        )
        self._pending: list[Write] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._lane_pools: list[concurrent.futures.ThreadPoolExecutor] = []
        self._free_lanes: list[int] = []
        self._in_flight: set[asyncio.Future] = set()
        self.batches = 0
        self.rows = 0
        self.seconds = 0.0  # time spent writing, for the benchmark

    def start(self) -> None:
        self._lane_pools = [
            concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix=f"journal{n}"
            )
            for n in range(self.lanes)
        ]
        self._free_lanes = list(range(self.lanes))
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
        loop = asyncio.get_running_loop()
        while True:
            await self._wake.wait()
            self._wake.clear()
            if len(self._pending) < BATCH_TARGET:
                # Let a few more finish: one commit for many rows costs less than
                # many commits, and the fetch slots are already free meanwhile.
                await asyncio.sleep(GATHER_FOR)
            free = len(self._free_lanes)
            if not self._pending or free <= 0:
                continue  # a lane finishing wakes us again
            size = math.ceil(len(self._pending) / free)
            while self._pending and self._free_lanes:
                lane = self._free_lanes.pop()
                batch, self._pending = self._pending[:size], self._pending[size:]
                job = loop.run_in_executor(
                    self._lane_pools[lane], self._write_batch, batch
                )
                self._in_flight.add(job)
                job.add_done_callback(
                    lambda job, batch=batch, lane=lane: self._done(job, batch, lane)
                )

    def _done(self, job: asyncio.Future, batch: list[Write], lane: int) -> None:
        self._in_flight.discard(job)
        self._free_lanes.append(lane)
        self._wake.set()
        if job.cancelled():
            errors: list[Exception | None] = [RuntimeError("stopped")] * len(batch)
        elif job.exception() is not None:
            errors = [job.exception()] * len(batch)
        else:
            errors = job.result()
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
            # A database that is briefly unreachable delays the batch, it does
            # not fail the sources: their bodies are fetched and must be kept.
            return retry_db(
                lambda: self._write_batch_now(batch),
                what="a journal write",
                outage=self.outage,
            )
        finally:
            self.batches += 1
            self.rows += len(batch)
            self.seconds += time.perf_counter() - started

    def _write_batch_now(self, batch: list[Write]) -> list[Exception | None]:
        try:
            with transaction.atomic():
                for write in batch:
                    self._write_one(write)
            return [None] * len(batch)
        except Exception as e:
            if is_connection_error(e):
                raise  # retried whole (retry_db)
        errors: list[Exception | None] = []
        for write in batch:
            try:
                with transaction.atomic():
                    self._write_one(write)
                errors.append(None)
            except Exception as e:
                if is_connection_error(e):
                    raise
                errors.append(e)
        return errors

    def _write_one(self, write: Write) -> None:
        if write.delivery is not None:
            record_delivery(source=write.source, run=self.run, **write.delivery)
        Source.objects.filter(pk=write.source.pk).update(**write.health)

    async def close(self) -> None:
        if self._in_flight:
            await asyncio.wait(list(self._in_flight))
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None
        # Lane threads outlive no run: each closes its connection, then ends.
        pools, self._lane_pools = self._lane_pools, []
        self._free_lanes = []
        for pool in pools:
            pool.submit(connections.close_all)
            pool.shutdown(wait=True)
