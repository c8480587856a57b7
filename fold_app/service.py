"""The fold worker as a background role of `manage.py serve`.

The worker loop is synchronous Django ORM work, so it runs on a thread of its
own and the event loop only waits for it: nothing here blocks daphne.
"""

from __future__ import annotations

import asyncio
import logging
import threading

from django.conf import settings

from fold_app import wake
from fold_app.claims import AnotherFoldWorker, SingleWorkerLock
from fold_app.worker import Worker, run_in_thread


log = logging.getLogger(__name__)


class FoldService:
    name = "fold worker"
    role = "fold"  # its heartbeat role (newsroom/ops)

    def __init__(self, worker: Worker | None = None) -> None:
        self.worker = worker

    async def run(self, stop: asyncio.Event) -> None:
        # SQLite: one fold worker per database. If a `fold_worker` process holds
        # it, say so once and take over when that process is gone.
        lock = SingleWorkerLock()
        told = False
        while not stop.is_set():
            try:
                lock.acquire()
                break
            except AnotherFoldWorker as e:
                if not told:
                    log.error("%s This process folds nothing until it stops.", e)
                    told = True
                try:
                    await asyncio.wait_for(stop.wait(), 5)
                except TimeoutError:
                    pass
        if stop.is_set():
            lock.release()
            return
        try:
            await self._run(stop)
        finally:
            lock.release()

    async def _run(self, stop: asyncio.Event) -> None:
        loop = asyncio.get_running_loop()
        finished: asyncio.Future[BaseException | None] = loop.create_future()
        thread_stop = threading.Event()
        worker = self.worker or Worker()
        listener = wake.WakeListener()
        listener.start()

        def main() -> None:
            error: BaseException | None = None
            try:
                run_in_thread(worker, thread_stop)
            except BaseException as e:  # noqa: BLE001 - handed to the event loop
                error = e
            loop.call_soon_threadsafe(
                lambda: finished.done() or finished.set_result(error)
            )

        thread = threading.Thread(target=main, name="fold-worker", daemon=True)
        thread.start()
        stopping = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait(
                [stopping, finished], return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            stopping.cancel()
            thread_stop.set()
            wake.signal.notify()
            listener.stop()
        # Shutdown is checked between deliveries: wait for the fold in hand.
        error = await finished
        await asyncio.to_thread(thread.join, 5)
        if error is not None and not stop.is_set():
            raise error


def fold_service() -> FoldService | None:
    """Factory for NEWSROOM_SERVICES; None when a separate `fold_worker` runs."""
    if not settings.NEWSROOM_FOLD_IN_SERVE:
        return None
    return FoldService()
