"""The live hub of one process: streams, replicas, and what the channel layer says.

One hub per process (per event loop). It owns the tick scheduler and the
component cache, the replicas of the runs its streams show, and one channel on
the channel layer through which it hears:

- `run.<id>`: {"type": "run.changes", "run": id, "changes": [...]}, the status
  writes the runs area made since its previous send (or {"type": "run.change",
  "change": ...}, one write). Applied to the local replica at the start of the
  next tick (through `tx`, one per message), in seq order; a gap reloads the
  snapshot (Run.status).
- `live.reader.<id>`: "live.logout" (close that reader's streams with 4401),
  "live.article" (a briefing was stored: reload it and bump the article cell),
  "live.run" (a run was created: the dashboard follows it).

The hub joins a run's group only while one of its streams shows that run, and a
reader's group only while that reader has a stream open. With the in-memory
layer all of this runs in one process; with Redis each process keeps its own,
and receives on a thread of its own (see `_receiving_layer`): messages are
handled on the hub's loop in the order they came.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings

from newsroom.live import loaders
from newsroom.live.components import (
    ReaderView,
    article_region,
    dashboard_sidebar,
    run_sidebar,
)
from newsroom.live.render import ComponentCache
from newsroom.live.replica import RunReplica
from newsroom.live.stream import SENT, Stream
from newsroom.live.tick import Scheduler

log = logging.getLogger(__name__)

# Changes held while a snapshot is loading or a gap waits for a newer snapshot.
BUFFER_LIMIT = 5000
# The runs area saves a snapshot at most once a second: retry a gap's reload so.
RELOAD_RETRY_S = 0.5
# Channel-layer group memberships expire (a day by default): renew well before.
GROUP_RENEW_S = 3600.0

# The listener's retry while the channel layer is unreachable.
RETRY_BASE_S = 0.1
RETRY_MAX_S = 2.0

try:  # what a channel layer that lost its Redis raises
    from redis.exceptions import ConnectionError as _RedisDown
    from redis.exceptions import TimeoutError as _RedisSlow

    LAYER_DOWN: tuple[type[BaseException], ...] = (OSError, _RedisDown, _RedisSlow)
except ImportError:  # pragma: no cover - the in-memory layer only
    LAYER_DOWN = (OSError,)

CLOSE_LOGGED_OUT = 4401
CLOSE_NOT_FOUND = 4404


class NotFound(Exception):
    """The run does not exist or belongs to another reader."""


def reader_group(reader_id: int) -> str:
    return f"live.reader.{reader_id}"


def run_group(run_id: int) -> str:
    return f"run.{run_id}"


@dataclass(eq=False)
class RunHandle:
    run_id: int
    ready: asyncio.Future
    replica: RunReplica | None = None
    pins: int = 0
    buffer: dict[int, dict] = field(default_factory=dict)
    reloading: bool = False


@dataclass(eq=False)
class ReaderHandle:
    reader_id: int
    ready: asyncio.Future
    view: ReaderView | None = None
    run_id: int | None = None
    pins: int = 0


class Hub:
    def __init__(
        self,
        scheduler: Scheduler | None = None,
        layer: Any = None,
        *,
        autostart: bool = True,
    ) -> None:
        self.loop = asyncio.get_running_loop()
        self.scheduler = scheduler or Scheduler(
            settings.NEWSROOM_LIVE_TICK_MS,
            cache=ComponentCache(settings.NEWSROOM_LIVE_CACHE_SIZE),
            pace=True,
        )
        self.layer = layer if layer is not None else get_channel_layer()
        self.autostart = autostart
        self.channel: str | None = None
        self.runs: dict[int, RunHandle] = {}
        self.readers: dict[int, ReaderHandle] = {}
        self.closers: dict[Stream, Callable[[int], Awaitable[None]]] = {}
        self.by_reader: dict[int, set[Stream]] = {}
        self.received = 0
        self._waiters: list[tuple[int, asyncio.Future]] = []
        self._tasks: set[asyncio.Task] = set()
        self._listener: asyncio.Task | None = None
        self._listen_lock = asyncio.Lock()
        if autostart:
            self.scheduler.start()

    # -- streams -------------------------------------------------------------------

    async def open(
        self,
        region: str,
        reader_id: int,
        *,
        send: Callable[[str], Awaitable[None]],
        close: Callable[[int], Awaitable[None]],
        run_id: int | None = None,
        have: str = "",
    ) -> Stream:
        """Open a stream of `region` ("sidebar", "run" or "article") for a reader;
        `stream.start()` asks for its first frame once the socket is accepted.

        Raises NotFound for a run that is not the reader's."""
        await self._ensure_listening()
        reader = await self._acquire_reader(reader_id)
        assert reader.view is not None
        try:
            if region == "sidebar":
                fn, args = dashboard_sidebar, (reader.view,)
            elif region == "article":
                fn, args = article_region, (reader.view,)
            elif region == "run":
                if run_id is None:
                    raise NotFound("no run")
                handle = await self._acquire_run(run_id, reader_id)
                fn, args = run_sidebar, (handle.replica,)
            else:
                raise ValueError(f"unknown live region {region!r}")
        except BaseException:
            self._unpin_reader(reader_id)
            raise
        stream = Stream(
            fn, args, send, self.scheduler, reader_id=reader_id, have=have, name=region
        )
        stream.run_pin = run_id if region == "run" else None  # type: ignore[attr-defined]
        self.closers[stream] = close
        self.by_reader.setdefault(reader_id, set()).add(stream)
        return stream

    def release(self, stream: Stream) -> None:
        """The socket closed: drop the stream's watches and what it pinned."""
        if self.closers.pop(stream, None) is None:
            return
        stream.release()
        streams = self.by_reader.get(stream.reader_id)  # type: ignore[arg-type]
        if streams is not None:
            streams.discard(stream)
            if not streams:
                del self.by_reader[stream.reader_id]  # type: ignore[arg-type]
        run_pin = getattr(stream, "run_pin", None)
        if run_pin is not None:
            self._unpin_run(run_pin)
        self._unpin_reader(stream.reader_id)  # type: ignore[arg-type]

    def streams(self) -> list[Stream]:
        return list(self.closers)

    async def logout(self, reader_id: int) -> None:
        """Close every stream of the reader with 4401 (the page goes to login)."""
        for stream in list(self.by_reader.get(reader_id, ())):
            close = self.closers.get(stream)
            self.release(stream)
            if close is not None:
                try:
                    await close(CLOSE_LOGGED_OUT)
                except Exception:
                    log.exception("closing a live stream failed")

    async def tick(self) -> int:
        return await self.scheduler.tick()

    # -- readers and runs ------------------------------------------------------------

    async def _acquire_reader(self, reader_id: int) -> ReaderHandle:
        handle = self.readers.get(reader_id)
        if handle is not None:
            handle.pins += 1
            await asyncio.shield(handle.ready)
            return handle
        handle = ReaderHandle(reader_id, self.loop.create_future(), pins=1)
        self.readers[reader_id] = handle
        try:
            await self._group_add(reader_group(reader_id))
            run_id, briefing = await database_sync_to_async(_reader_start)(reader_id)
            replica = None
            if run_id is not None:
                run = await self._acquire_run(run_id, reader_id)
                handle.run_id, replica = run_id, run.replica
            handle.view = ReaderView(reader_id, replica, briefing)
        except BaseException as e:
            if self.readers.get(reader_id) is handle:
                del self.readers[reader_id]
            self._spawn(self._group_discard(reader_group(reader_id)))
            handle.ready.set_exception(e)
            handle.ready.exception()  # retrieved: waiters re-raise it themselves
            raise
        handle.ready.set_result(None)
        return handle

    def _unpin_reader(self, reader_id: int) -> None:
        handle = self.readers.get(reader_id)
        if handle is None:
            return
        handle.pins -= 1
        if handle.pins <= 0:
            del self.readers[reader_id]
            self._spawn(self._group_discard(reader_group(reader_id)))
            if handle.run_id is not None:
                self._unpin_run(handle.run_id)

    async def _acquire_run(self, run_id: int, reader_id: int) -> RunHandle:
        handle = self.runs.get(run_id)
        if handle is None:
            handle = RunHandle(run_id, self.loop.create_future())
            self.runs[run_id] = handle
            self._spawn(self._load_run(handle))
        await asyncio.shield(handle.ready)
        assert handle.replica is not None
        if handle.replica.reader_id != reader_id:
            if handle.pins <= 0:
                self._drop_run(handle)
            raise NotFound(f"run {run_id}")
        handle.pins += 1
        return handle

    async def _load_run(self, handle: RunHandle) -> None:
        try:
            # Join first, then read the snapshot: a change published in between is
            # buffered, and those the snapshot already holds are skipped by seq.
            await self._group_add(run_group(handle.run_id))
            status = await database_sync_to_async(loaders.run_status)(handle.run_id)
            if status is None:
                raise NotFound(f"run {handle.run_id}")
            order = await database_sync_to_async(loaders.category_order)(status.reader_id)
            handle.replica = RunReplica(status, order)
            self._catch_up(handle)
        except BaseException as e:
            self._drop_run(handle)
            handle.ready.set_exception(e)
            handle.ready.exception()
            return
        handle.ready.set_result(None)

    def _unpin_run(self, run_id: int) -> None:
        handle = self.runs.get(run_id)
        if handle is None:
            return
        handle.pins -= 1
        if handle.pins <= 0:
            self._drop_run(handle)

    def _drop_run(self, handle: RunHandle) -> None:
        if self.runs.get(handle.run_id) is handle:
            del self.runs[handle.run_id]
            handle.buffer.clear()
            if handle.replica is not None and self.scheduler.cache is not None:
                self.scheduler.cache.forget(handle.replica)
            self._spawn(self._group_discard(run_group(handle.run_id)))

    # -- run changes -----------------------------------------------------------------

    def _run_changes(self, run_id: Any, changes: list[dict]) -> None:
        handle = self.runs.get(run_id)
        if handle is None or not changes:
            return
        if handle.replica is None:
            for change in changes:
                self._hold(handle, change)
            return
        self.scheduler.tx(lambda: self._apply(handle, changes))

    def _apply(self, handle: RunHandle, changes: list[dict]) -> None:
        """At the start of a tick: changes into the replica, touching their cells."""
        replica = handle.replica
        if replica is None or self.runs.get(handle.run_id) is not handle:
            return
        gap = False
        for change in changes:
            if change.get("reader") != replica.reader_id:
                # A change names its reader; one that does not match is never shown.
                log.warning(
                    "run %s change for reader %s ignored",
                    handle.run_id,
                    change.get("reader"),
                )
                continue
            if gap or handle.buffer or not replica.apply(change):
                self._hold(handle, change)
                gap = True
        if gap:
            self._catch_up(handle)

    def _hold(self, handle: RunHandle, change: dict) -> None:
        if len(handle.buffer) >= BUFFER_LIMIT:
            # Too far behind to replay: the next snapshot will carry it all.
            handle.buffer.clear()
        handle.buffer[change["seq"]] = change

    def _catch_up(self, handle: RunHandle) -> None:
        replica = handle.replica
        if replica is None:
            return
        buffer = handle.buffer
        while replica.seq + 1 in buffer:
            replica.apply(buffer.pop(replica.seq + 1))
        for seq in [s for s in buffer if s <= replica.seq]:
            del buffer[seq]
        if buffer and not handle.reloading:
            handle.reloading = True
            self._spawn(self._reload(handle))

    async def _reload(self, handle: RunHandle) -> None:
        """A gap: reload Run.status until its snapshot covers the missing changes."""
        try:
            delay = 0.0
            while handle.buffer and self.runs.get(handle.run_id) is handle:
                if delay:
                    await asyncio.sleep(delay)
                status = await database_sync_to_async(loaders.run_status)(handle.run_id)
                delay = min(max(delay * 2, RELOAD_RETRY_S), 4.0)
                if status is None or handle.replica is None:
                    return
                if status.seq > handle.replica.seq:
                    await self.scheduler.tx(
                        lambda s=status: self._load_snapshot(handle, s)
                    )
        finally:
            handle.reloading = False

    def _load_snapshot(self, handle: RunHandle, status: Any) -> None:
        if handle.replica is None or status.seq <= handle.replica.seq:
            return
        log.info("run %s: reloaded snapshot at seq %s", handle.run_id, status.seq)
        handle.replica.load(status)
        buffer = handle.buffer
        while handle.replica.seq + 1 in buffer:
            handle.replica.apply(buffer.pop(handle.replica.seq + 1))
        for seq in [s for s in buffer if s <= handle.replica.seq]:
            del buffer[seq]

    # -- reader events ----------------------------------------------------------------

    async def _article_stored(self, reader_id: int) -> None:
        handle = self.readers.get(reader_id)
        if handle is None:
            return
        await asyncio.shield(handle.ready)
        briefing = await database_sync_to_async(loaders.latest_briefing)(reader_id)
        view = handle.view
        if view is not None:
            await self.scheduler.tx(lambda: view.article.set(briefing))

    async def _run_created(self, reader_id: int, run_id: int) -> None:
        handle = self.readers.get(reader_id)
        if handle is None:
            return
        await asyncio.shield(handle.ready)
        if handle.run_id is not None and run_id <= handle.run_id:
            return
        try:
            run = await self._acquire_run(run_id, reader_id)
        except NotFound:
            return
        if self.readers.get(reader_id) is not handle or (
            handle.run_id is not None and run_id <= handle.run_id
        ):
            self._unpin_run(run_id)
            return
        old, handle.run_id = handle.run_id, run_id
        view = handle.view
        assert view is not None
        await self.scheduler.tx(lambda: view.latest_run.set(run.replica))
        if old is not None:
            self._unpin_run(old)

    # -- the channel layer ---------------------------------------------------------------

    async def _ensure_listening(self) -> None:
        if self._listener is not None or self.layer is None:
            return
        async with self._listen_lock:
            if self._listener is None:
                own = _receiving_layer(self.layer)
                if own is None:
                    self.channel = await self.layer.new_channel()
                    self._listener = self.loop.create_task(
                        self._receive_loop(self.layer, self._handle, self._rejoin),
                        name="live-listen",
                    )
                else:
                    self.channel = await own.new_channel()
                    self._listener = _ReceiverThread(self, own, self.channel)
                    self._listener.start()
                self._spawn(self._renew_groups())

    async def _receive_loop(
        self,
        layer: Any,
        handle: Callable[[dict], None],
        rejoin: Callable[[], Awaitable[bool]],
    ) -> None:
        """Receive from our channel until cancelled; `handle` each message."""
        assert self.channel is not None
        failures = 0
        while True:
            try:
                message = await layer.receive(self.channel)
            except asyncio.CancelledError:
                raise
            except LAYER_DOWN as e:
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    raise asyncio.CancelledError from e  # stopping, not an outage
                # The channel layer went away (Redis restarted or unreachable).
                # Keep listening: a dead listener would freeze every viewer of
                # this process for good. A restarted Redis has forgotten our
                # group memberships and the changes sent meanwhile are lost, so
                # once it answers, rejoin the groups and reload every run.
                failures += 1
                if failures == 1:
                    log.warning("live: channel layer unreachable (%s); retrying", e)
                await asyncio.sleep(min(RETRY_BASE_S * 2**failures, RETRY_MAX_S))
                if await rejoin():
                    log.warning(
                        "live: channel layer back after %d failed receives; "
                        "groups rejoined, runs reloaded",
                        failures,
                    )
                    failures = 0
                continue
            handle(message)

    def _handle(self, message: dict) -> None:
        """One message from our channel, on the hub's loop."""
        try:
            self.dispatch(message)
        except Exception:
            log.exception("live: bad message %r", message)
        self.received += 1
        if self._waiters:
            still = []
            for target, future in self._waiters:
                if self.received >= target:
                    if not future.done():
                        future.set_result(None)
                else:
                    still.append((target, future))
            self._waiters = still

    def dispatch(self, message: dict) -> None:
        kind = message.get("type")
        if kind == "run.changes":
            self._run_changes(message.get("run"), message["changes"])
        elif kind == "run.change":
            change = message["change"]
            self._run_changes(change.get("run"), [change])
        elif kind == "live.logout":
            self._spawn(self.logout(int(message["reader"])))
        elif kind == "live.article":
            self._spawn(self._article_stored(int(message["reader"])))
        elif kind == "live.run":
            self._spawn(self._run_created(int(message["reader"]), int(message["run"])))

    async def until_received(self, count: int, timeout: float = 10.0) -> None:
        """Wait until the listener has handled `count` messages (for tests)."""
        if self.received >= count:
            return
        future = self.loop.create_future()
        self._waiters.append((count, future))
        await asyncio.wait_for(future, timeout)

    async def _group_add(self, group: str) -> None:
        if self.layer is not None and self.channel is not None:
            await self.layer.group_add(group, self.channel)

    async def _group_discard(self, group: str) -> None:
        if self.layer is not None and self.channel is not None:
            await self.layer.group_discard(group, self.channel)

    async def _rejoin(self) -> bool:
        """Join every group again and reload each run's snapshot; False while
        the channel layer still fails."""
        try:
            for run_id in list(self.runs):
                await self._group_add(run_group(run_id))
            for reader_id in list(self.readers):
                await self._group_add(reader_group(reader_id))
        except Exception:  # noqa: BLE001 - still down: the listener retries
            return False
        for handle in list(self.runs.values()):
            if handle.replica is None:
                continue
            status = await database_sync_to_async(loaders.run_status)(handle.run_id)
            if status is not None and status.seq > handle.replica.seq:
                await self.scheduler.tx(lambda h=handle, s=status: self._load_snapshot(h, s))
        return True

    async def _renew_groups(self) -> None:
        while True:
            await asyncio.sleep(GROUP_RENEW_S)
            try:
                for run_id in list(self.runs):
                    await self._group_add(run_group(run_id))
                for reader_id in list(self.readers):
                    await self._group_add(reader_group(reader_id))
            except Exception as e:  # noqa: BLE001 - the listener notices outages
                log.warning("live: renewing channel groups failed: %s", e)

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task = self.loop.create_task(coro)  # type: ignore[arg-type]
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("live task failed", exc_info=task.exception())

    async def shutdown(self) -> None:
        await self.scheduler.stop()
        listener, self._listener = self._listener, None
        if isinstance(listener, _ReceiverThread):
            listener.stop()
            await asyncio.to_thread(listener.join, 5.0)
        elif listener is not None:
            listener.cancel()
        for task in list(self._tasks):
            task.cancel()


def _receiving_layer(layer: Any) -> Any:
    """A channel layer instance of its own for a receiving thread, or None to
    receive on the hub's loop.

    Receiving costs several Redis round trips per message, each waiting its
    turn on the hub's loop behind ticks, frames and acks: on a busy web process
    that held a hub to a few dozen messages a second and viewers seconds
    behind. A thread with a loop of its own answers each round trip at once.
    Its own instance because channels_redis lets one loop receive on an
    instance (the in-process run executor receives on the shared one). Only
    for the configured layer, and never the in-memory one (its queues belong to
    the loop that made them).
    """
    from channels.layers import (
        DEFAULT_CHANNEL_LAYER,
        InMemoryChannelLayer,
        channel_layers,
    )

    if isinstance(layer, InMemoryChannelLayer):
        return None
    if DEFAULT_CHANNEL_LAYER not in channel_layers.configs:
        return None
    if layer is not channel_layers[DEFAULT_CHANNEL_LAYER]:
        return None
    return channel_layers.make_backend(DEFAULT_CHANNEL_LAYER)


class _ReceiverThread(threading.Thread):
    """The hub's receive loop on a thread and event loop of its own; each
    message is handed to the hub's loop in the order it came."""

    def __init__(self, hub: Hub, layer: Any, channel: str) -> None:
        super().__init__(name="live-hub-receiver", daemon=True)
        self.hub = hub
        self.layer = layer
        self.channel = channel
        self._stopping = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task | None = None

    def run(self) -> None:
        try:
            asyncio.run(self._main())
        except asyncio.CancelledError:
            pass
        except Exception:
            log.exception("live: the receiving thread failed")

    async def _main(self) -> None:
        self._loop, self._task = asyncio.get_running_loop(), asyncio.current_task()
        if self._stopping.is_set():
            return
        await self.hub._receive_loop(self.layer, self._deliver, self._rejoin)

    def _deliver(self, message: dict) -> None:
        try:
            self.hub.loop.call_soon_threadsafe(self.hub._handle, message)
        except RuntimeError:  # the hub's loop has closed: nothing left to serve
            self.stop()

    async def _rejoin(self) -> bool:
        future = asyncio.run_coroutine_threadsafe(self.hub._rejoin(), self.hub.loop)
        return await asyncio.wrap_future(future)

    def stop(self) -> None:
        self._stopping.set()
        loop, task = self._loop, self._task
        if loop is not None and task is not None:
            try:
                loop.call_soon_threadsafe(task.cancel)
            except RuntimeError:  # already finished
                pass


def _reader_start(reader_id: int) -> tuple[int | None, dict | None]:
    return loaders.latest_run_id(reader_id), loaders.latest_briefing(reader_id)


_hub: Hub | None = None


def get_hub() -> Hub:
    """This process's hub, made on first use in the running event loop."""
    global _hub
    loop = asyncio.get_running_loop()
    if _hub is None or _hub.loop is not loop:
        _hub = Hub()
    return _hub


def set_hub(hub: Hub | None) -> None:
    """Install a hub (tests: one with a manual tick)."""
    global _hub
    _hub = hub


def live_stats() -> dict[str, int]:
    """This process's open streams and what they sent (read by the heartbeat
    thread: plain reads of ints and a dict's size, no locking needed)."""
    hub = _hub
    return {
        "streams": len(hub.closers) if hub is not None else 0,
        "frames": SENT.frames,
        "full_frames": SENT.full_frames,
        "bytes": SENT.bytes,
    }
