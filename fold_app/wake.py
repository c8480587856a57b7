"""The fold worker's wake signal: capacity one, lossy, coalescing.

It carries only "there is work". Losing one is harmless: the delivery stays
pending and the next signal, the tick or a restart picks it up.

In one process (`serve` on the embedded default) a notify sets a flag the
worker's wait sees. With a cross-process channel layer (Redis) a notify is also
published to the group `fold.wake`, and a fold worker in another process runs a
WakeListener that turns those messages back into a local notify. Publishing has
capacity one as well: a background thread sends one message for any number of
notifies that arrive while it is busy, so record_delivery never waits on Redis.
"""

from __future__ import annotations

import asyncio
import logging
import threading

log = logging.getLogger(__name__)

GROUP = "fold.wake"
MESSAGE_TYPE = "fold.wake"


class WakeSignal:
    def __init__(self) -> None:
        self._event = threading.Event()

    def notify(self) -> None:
        # Setting a set event is a no-op: any number of notifies coalesce into
        # one, and it never blocks the sender.
        self._event.set()

    def wait(self, timeout: float | None) -> bool:
        """Wait for a signal; True if one came (and consume it), False on timeout."""
        fired = self._event.wait(timeout)
        self._event.clear()
        return fired

    def pending(self) -> bool:
        return self._event.is_set()


signal = WakeSignal()


def notify() -> None:
    """Wake the fold worker: in this process, and in others over the channel layer."""
    signal.notify()
    publisher = _publisher()
    if publisher is not None:
        publisher.notify()


def _cross_process_layer():
    """A channel layer instance of this thread's own, or None in one process.

    Its own instance: the publisher and the listener run event loops of their
    own, and channels_redis lets only one loop receive on a layer instance. On
    the shared one, a listener inside `serve` would take the receive lock from
    the live pages' hub on daphne's loop (and fail, or starve it).
    """
    from channels.layers import DEFAULT_CHANNEL_LAYER, InMemoryChannelLayer
    from channels.layers import channel_layers

    if DEFAULT_CHANNEL_LAYER not in channel_layers.configs:
        return None
    layer = channel_layers.make_backend(DEFAULT_CHANNEL_LAYER)
    if isinstance(layer, InMemoryChannelLayer):
        return None  # one process: the local flag is all there is
    return layer


_publisher_lock = threading.Lock()
_publisher_instance: _Publisher | None = None
_publisher_checked = False


def _publisher() -> _Publisher | None:
    global _publisher_instance, _publisher_checked
    if _publisher_checked:
        return _publisher_instance
    with _publisher_lock:
        if not _publisher_checked:
            layer = _cross_process_layer()
            if layer is not None:
                _publisher_instance = _Publisher(layer)
                _publisher_instance.start()
            _publisher_checked = True
    return _publisher_instance


def flush(timeout: float = 5.0) -> bool:
    """Wait until every notify so far has been published (for short-lived
    processes and tests). True when done, or when there is nothing to publish."""
    publisher = _publisher()
    return True if publisher is None else publisher.flush(timeout)


class _Publisher(threading.Thread):
    def __init__(self, layer) -> None:
        super().__init__(name="fold-wake-publisher", daemon=True)
        self.layer = layer
        self._outbox = WakeSignal()
        self._progress = threading.Condition()
        self._requested = 0
        self._published = 0  # notifies covered by a finished send

    def notify(self) -> None:
        with self._progress:
            self._requested += 1
        self._outbox.notify()

    def flush(self, timeout: float) -> bool:
        with self._progress:
            target = self._requested
            return self._progress.wait_for(lambda: self._published >= target, timeout)

    def run(self) -> None:
        # A plain blocking wait on this thread, and a loop of its own for the
        # channel layer: no executor thread that would hold up interpreter exit.
        loop = asyncio.new_event_loop()
        while True:
            self._outbox.wait(None)
            with self._progress:
                covered = self._requested
            try:
                loop.run_until_complete(
                    self.layer.group_send(GROUP, {"type": MESSAGE_TYPE})
                )
            except Exception as e:  # noqa: BLE001 - lossy by design; the tick covers it
                log.warning("fold wake signal not published: %s", e)
            with self._progress:
                self._published = covered
                self._progress.notify_all()


class WakeListener(threading.Thread):
    """Turns `fold.wake` messages from other processes into local notifies."""

    # channels_redis forgets group members after a day; rejoining often is cheap.
    REJOIN_S = 600.0

    def __init__(self, target: WakeSignal | None = None, layer=None) -> None:
        super().__init__(name="fold-wake-listener", daemon=True)
        self.target = target or signal
        self.layer = layer if layer is not None else _cross_process_layer()
        self.ready = threading.Event()
        self._stop = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task | None = None
        self.received = 0

    @property
    def enabled(self) -> bool:
        return self.layer is not None

    def start(self) -> None:
        if self.enabled:
            super().start()
        else:
            self.ready.set()

    def stop(self) -> None:
        self._stop.set()
        loop, task = self._loop, self._task
        if loop is not None and task is not None:
            loop.call_soon_threadsafe(task.cancel)

    def run(self) -> None:
        try:
            asyncio.run(self._main())
        except asyncio.CancelledError:
            pass

    async def _main(self) -> None:
        self._loop, self._task = asyncio.get_running_loop(), asyncio.current_task()
        if self._stop.is_set():
            return
        while not self._stop.is_set():
            try:
                channel = await self.layer.new_channel()
                await self.layer.group_add(GROUP, channel)
                self.ready.set()
                rejoin = asyncio.ensure_future(self._rejoin(channel))
                try:
                    await self._listen(channel)
                finally:
                    rejoin.cancel()
            except asyncio.CancelledError:
                return
            except Exception as e:  # noqa: BLE001 - the tick still folds; retry soon
                log.warning("fold wake listener: %s; retrying in 5 s", e)
                await asyncio.sleep(5)

    async def _rejoin(self, channel: str) -> None:
        while True:
            await asyncio.sleep(self.REJOIN_S)
            await self.layer.group_add(GROUP, channel)

    async def _listen(self, channel: str) -> None:
        # Never cancelled on a timeout: channels_redis does not take a cancelled
        # receive() well. Only stop() cancels it, once, at the end.
        while True:
            message = await self.layer.receive(channel)
            if message.get("type") == MESSAGE_TYPE:
                self.received += 1
                self.target.notify()
