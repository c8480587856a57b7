"""Sweep browser sessions on an interval (the scale-out role of the reaper)."""

from __future__ import annotations

import signal
import threading

from django.core.management.base import BaseCommand

from newsroom.dbretry import refresh_connection
from newsroom.ops.heartbeat import REAPER, heartbeats
from sessions_app.reaper import SHUTDOWN_REASON, Reaper, sweep_interval


class Command(BaseCommand):
    help = "Close idle, expired and orphaned browser sessions, logging each reason."

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="One sweep, then exit.")

    def handle(self, *args, once: bool, **options):
        reaper = Reaper()
        stop = threading.Event()
        beats = heartbeats()
        last: dict = {}
        if not once:
            # Beats from its own thread: a sweep may take a browser launch long.
            beats.add(REAPER, detail=lambda: dict(last))
            beats.start()
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, lambda *_: stop.set())
            self.stdout.write(
                f"Sweeping browser sessions every {sweep_interval():.0f} s"
            )
        while True:
            if once:
                result, wait = reaper.sweep(), 0.0  # errors end the command
            else:
                # Long-running: an outage or a bug costs a sweep, not the reaper.
                result, wait = reaper.round(sweep_interval())
            if result is not None:
                last.update(open_pages=result.open_pages, cap=result.cap)
                for sid, reason in result.closed:
                    self.stdout.write(f"closed {sid}: {reason}")
                self.stdout.write(
                    f"sweep: {result.open_pages} open, memory admits {result.cap}, "
                    f"{len(result.closed)} closed"
                )
                self.stdout.flush()
            if once or stop.wait(wait):
                break
            refresh_connection()  # a long-lived loop: drop broken connections
        if not once:
            closed = reaper.shutdown()
            self.stdout.write(f"closed {len(closed)} sessions: {SHUTDOWN_REASON}")
            beats.stop()
