"""The fold worker as a background role of `manage.py serve`.

The worker loop is synchronous Django ORM work, so it runs on a thread of its
own and the event loop only waits for it: nothing here blocks daphne.
"""

from __future__ import annotations

import asyncio
import threading

from django.conf import settings

from fold_app import wake
from fold_app.worker import Worker, run_in_thread


class FoldService:
    name = "fold worker"
    role = "fold"  # its heartbeat role (newsroom/ops)

    def __init__(self, worker: Worker | None = None) -> None:
        self.worker = worker

    async def run(self, stop: asyncio.Event) -> None:
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
