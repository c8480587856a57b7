"""Execute queued runs in this process (the scale-out setup), and the daily schedule."""

from __future__ import annotations

import asyncio
import signal

from django.core.management.base import BaseCommand

from newsroom.ops.heartbeat import heartbeats
from newsroom.runs.worker import RunWorker


class Command(BaseCommand):
    help = "Execute queued runs (and queue the daily and retry runs) until stopped."

    def add_arguments(self, parser):
        parser.add_argument(
            "--once",
            action="store_true",
            help="Execute the runs queued now, then exit.",
        )
        parser.add_argument(
            "--no-schedule",
            action="store_true",
            help="Do not queue daily or retry runs (another worker does).",
        )

    def handle(self, *args, once: bool, no_schedule: bool, **options):
        worker = RunWorker(schedule=not no_schedule)
        self.stdout.write(f"Run worker {worker.tag} started. Press Ctrl-C to stop.")
        self.stdout.flush()
        beats = heartbeats()
        if not once:  # a long-running role: operators watch its heartbeat
            beats.add(worker.role, detail=worker.heartbeat_detail)
        try:
            asyncio.run(self.main(worker, once))
        finally:
            beats.stop()
        self.stdout.write(f"Run worker stopped after {worker.finished} run(s).")

    async def main(self, worker: RunWorker, once: bool) -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, stop.set)
            except (NotImplementedError, RuntimeError):
                pass
        if once:
            while await worker.step() or worker.tasks:
                if worker.tasks:
                    await asyncio.wait(
                        list(worker.tasks), return_when=asyncio.FIRST_COMPLETED
                    )
            return
        heartbeats().start(loop)
        await worker.run(stop)
