"""Fold pending deliveries into items: long-running, or one pass with --once."""

from __future__ import annotations

import signal
import threading

from django.core.management.base import BaseCommand, CommandError

from fold_app import wake
from fold_app.claims import AnotherFoldWorker, SingleWorkerLock
from newsroom.ops.heartbeat import FOLD, heartbeats
from fold_app.worker import (
    FOLD_DEADLINE_S,
    TICK_S,
    FoldStep,
    Outcome,
    Worker,
    run_in_thread,
)


class Command(BaseCommand):
    help = "Fold pending deliveries into items (the fold worker). SIGTERM/SIGINT stop it between deliveries."

    def add_arguments(self, parser):
        parser.add_argument(
            "--once", action="store_true", help="One pass over the queue, then exit."
        )
        parser.add_argument(
            "--tick",
            type=float,
            default=TICK_S,
            help="Seconds between passes without a signal.",
        )
        parser.add_argument(
            "--deadline",
            type=float,
            default=FOLD_DEADLINE_S,
            help="Seconds one delivery may take to fold.",
        )

    def handle(
        self, *args, once: bool, tick: float, deadline: float, verbosity: int, **options
    ):
        # SQLite: one fold worker per database; a second one refuses here.
        lock = SingleWorkerLock()
        try:
            lock.acquire()
        except AnotherFoldWorker as e:
            raise CommandError(str(e)) from None
        try:
            self._handle(once, tick, deadline, verbosity)
        finally:
            lock.release()

    def _handle(self, once: bool, tick: float, deadline: float, verbosity: int) -> None:
        report = self._report if verbosity >= 2 else None
        worker = Worker(FoldStep(seconds=deadline), report=report)
        if once:
            self.stdout.write(f"Pending deliveries: {worker.log_backlog()}")
            outcome = worker.supervised_pass()
            self.stdout.write(self._summary(outcome))
            return

        stop = threading.Event()

        def request_stop(signum, frame):
            stop.set()
            wake.signal.notify()

        signal.signal(signal.SIGTERM, request_stop)
        signal.signal(signal.SIGINT, request_stop)
        listener = wake.WakeListener()
        listener.start()
        self.stdout.write(
            f"Fold worker started (tick {tick:g} s, deadline {deadline:g} s per delivery, "
            f"wake over {'the channel layer' if listener.enabled else 'this process only'})."
        )
        self.stdout.flush()
        # The loop runs on its own thread so the main thread only waits for
        # signals and never runs a handler inside the worker's locks.
        thread = threading.Thread(
            target=run_in_thread,
            args=(worker, stop),
            kwargs={"tick": tick},
            name="fold-worker",
        )
        thread.start()
        beats = heartbeats()  # from a thread of its own: operators watch it
        beats.add(FOLD)
        beats.start()
        while thread.is_alive():
            thread.join(0.5)
        listener.stop()
        beats.stop()
        self.stdout.write("Fold worker stopped.")

    def _report(self, delivery_id: str, outcome: Outcome) -> None:
        state = (
            "parsed"
            if outcome.parsed
            else "failed"
            if outcome.failed
            else "deferred"
            if outcome.deferred
            else "skipped"
        )
        self.stdout.write(
            f"folded {delivery_id} {state} items={outcome.items} new={outcome.new_items}"
        )
        self.stdout.flush()

    @staticmethod
    def _summary(outcome: Outcome) -> str:
        return (
            f"Parsed {outcome.parsed}, failed {outcome.failed}, deferred {outcome.deferred}, "
            f"skipped {outcome.skipped}; {outcome.items} items ({outcome.new_items} new)."
        )
