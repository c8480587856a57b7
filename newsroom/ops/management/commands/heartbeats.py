"""List every process's heartbeat with its state; --forget removes the dead ones."""

from __future__ import annotations

from django.core.management.base import BaseCommand
from django.utils import timezone

from newsroom.ops.heartbeat import stale_after
from newsroom.ops.models import Heartbeat


class Command(BaseCommand):
    help = "Show each role's processes and when they last beat (stale ones marked)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--forget",
            action="store_true",
            help="Delete the rows of stale and stopped processes (after listing them).",
        )

    def handle(self, *args, forget: bool, **options):
        now = timezone.now()
        limit = stale_after()
        dead = []
        rows = list(Heartbeat.objects.order_by("role", "process"))
        if not rows:
            self.stdout.write("No heartbeats yet: no long-running process has started.")
        for row in rows:
            state = row.state(limit, now)
            age = (now - row.last_beat_at).total_seconds()
            line = f"{row.role:8} {row.process:32} {state:8} last beat {age:7.1f} s ago"
            if state == Heartbeat.State.STALE:
                line = self.style.ERROR(line)
            self.stdout.write(line)
            if state != Heartbeat.State.FRESH:
                dead.append(row.pk)
        if forget:
            deleted, _ = Heartbeat.objects.filter(pk__in=dead).delete()
            self.stdout.write(f"Forgot {deleted} stale or stopped heartbeat(s).")
