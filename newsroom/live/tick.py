"""The tick: writes mark streams dirty; one loop renders each dirty stream once.

`mark_dirty` only records the stream and wakes the loop. The loop waits until a
tick (200 ms by default) has passed since the previous one ended, so everything
that arrives meanwhile lands in the same batch, then runs `tick()`: first the
writes queued with `tx()` (all of them, in one `batch` call when one is given,
for one transaction per tick), then it renders every dirty stream once, then it
sends. No render can see half of a tx. An idle loop waits on an event and costs
nothing. A pacing scheduler (the hub's) sends frames only from ticks, so no
stream gets more than one frame per tick.

Tests and benchmarks call `tick()` directly: no clock is involved.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from newsroom.live.render import ComponentCache, using_cache

log = logging.getLogger(__name__)

Thunk = Callable[[], Any]
Batch = Callable[[list[Thunk]], "list[Any] | Awaitable[list[Any]]"]


class Renderable(Protocol):
    closed: bool

    def render(self) -> None: ...

    async def flush(self) -> None: ...


class Scheduler:
    def __init__(
        self,
        tick_ms: float = 200,
        *,
        cache: ComponentCache | None | bool = None,
        batch: Batch | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        pace: bool = False,
    ) -> None:
        if tick_ms <= 0:
            raise ValueError("tick_ms must be positive")
        self.tick_ms = tick_ms
        # cache=False renders every component every time (the benchmark's baseline).
        self.cache: ComponentCache | None = (
            None
            if cache is False
            else cache
            if isinstance(cache, ComponentCache)
            else ComponentCache()
        )
        self.batch = batch
        self.clock = clock
        self.sleep = sleep
        self.dirty: dict[Renderable, None] = {}
        self.txs: list[tuple[Thunk, asyncio.Future]] = []
        self.after_tick: list[Callable[[], Any]] = []
        self._wake: asyncio.Event | None = None
        self._last_tick = float("-inf")
        self._task: asyncio.Task | None = None
        self.ticks = 0
        self.renders = 0
        # pace: frames leave only inside a tick, so each stream sends at most
        # one per tick. Without it a frame held while one was in flight goes
        # out as soon as the client acks (tests and benches that tick by hand
        # rely on that). See `hold`.
        self.pace = pace
        self.held: dict[Renderable, None] = {}
        self._flushing: Renderable | None = None  # the stream the tick flushes

    # -- writes ------------------------------------------------------------------

    def mark_dirty(self, stream: Renderable) -> None:
        self.dirty[stream] = None
        self._poke()

    def tx(self, fn: Thunk) -> asyncio.Future:
        """Queue fn to run at the start of the next tick, before rendering.

        Returns a future of fn's result (or its exception)."""
        future = asyncio.get_running_loop().create_future()
        self.txs.append((fn, future))
        self._poke()
        return future

    def hold(self, stream: Renderable) -> bool:
        """Asked by a stream about to send: True when it must wait for the next
        tick (pacing, outside a tick's sends), which then flushes it."""
        if not self.pace or stream is self._flushing:
            return False
        self.held[stream] = None
        self._poke()
        return True

    def _poke(self) -> None:
        if self._wake is not None:
            self._wake.set()

    # -- the loop ----------------------------------------------------------------

    def start(self) -> None:
        """Run the loop on the running event loop (once)."""
        if self._task is None or self._task.done():
            self._wake = asyncio.Event()
            if self.dirty or self.txs or self.held:
                self._wake.set()
            self._task = asyncio.get_running_loop().create_task(
                self.run(), name="live-tick"
            )

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None

    async def run(self) -> None:
        assert self._wake is not None
        while True:
            await self._wake.wait()
            # Sleep the rest of the tick so a burst lands in one batch; after a
            # quiet spell the first write renders at once. Counted from the end
            # of the previous tick: its frames leave the sockets only once it
            # has run (the server writes them when the loop is next free), so
            # a long tick followed by a short one would otherwise put a
            # stream's two frames less than a tick apart.
            wait = self._last_tick + self.tick_ms / 1000 - self.clock()
            if wait > 0:
                await self.sleep(wait)
            self._wake.clear()
            try:
                await self.tick()
            except Exception:
                log.exception("live tick failed")
            self._last_tick = self.clock()

    async def tick(self) -> int:
        """Apply queued writes, render each dirty stream once, send. Returns the
        number of streams rendered."""
        txs, self.txs = self.txs, []
        if txs:
            await self._run_txs(txs)
        dirty, self.dirty = self.dirty, {}
        streams = [s for s in dirty if not s.closed]
        with using_cache(self.cache):
            for stream in streams:
                try:
                    stream.render()
                except Exception:
                    log.exception("live render failed for %r", stream)
        self.renders += len(streams)
        flush = streams
        if self.held:
            # Paced streams whose frame waited for this tick (acked meanwhile).
            held, self.held = self.held, {}
            flush = streams + [s for s in held if s not in dirty and not s.closed]
        try:
            for stream in flush:
                self._flushing = stream
                try:
                    await stream.flush()
                except Exception:
                    log.exception("live send failed for %r", stream)
        finally:
            self._flushing = None
        self.ticks += 1
        if self.after_tick:
            hooks, self.after_tick = self.after_tick, []
            for hook in hooks:
                hook()
        return len(streams)

    async def _run_txs(self, txs: list[tuple[Thunk, asyncio.Future]]) -> None:
        thunks = [fn for fn, _ in txs]
        if self.batch is not None:
            try:
                results = self.batch(thunks)
                if inspect.isawaitable(results):
                    results = await results
                results = list(results)  # type: ignore[arg-type]
                if len(results) != len(txs):
                    raise RuntimeError(
                        f"batch returned {len(results)} results for {len(txs)} writes"
                    )
            except Exception as e:
                for _, future in txs:
                    if not future.done():
                        future.set_exception(e)
                return
            for (_, future), result in zip(txs, results, strict=True):
                if not future.done():
                    future.set_result(result)
            return
        for fn, future in txs:
            try:
                result = fn()
            except Exception as e:
                if not future.done():
                    future.set_exception(e)
            else:
                if not future.done():
                    future.set_result(result)
