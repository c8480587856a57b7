"""Run one reader's sources from the terminal, with a progress bar and a summary."""

from __future__ import annotations

import asyncio
import sys

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from newsroom.runs.executor import RunExecutor
from newsroom.runs.models import Run
from newsroom.runs.status import DONE_STATES
from newsroom.runs.worker import RunAlreadyActive, claim_run, queue_run, worker_tag

BAR = 30


class Command(BaseCommand):
    help = "Fetch every source of a reader now (or resume an interrupted run)."

    def add_arguments(self, parser):
        parser.add_argument("--reader", required=True, help="The reader's user name.")
        parser.add_argument(
            "--resume", type=int, metavar="RUN", help="Resume this interrupted run."
        )

    def handle(self, *args, reader: str, resume: int | None, **options):
        try:
            user = get_user_model().objects.get(username=reader)
        except get_user_model().DoesNotExist:
            raise CommandError(f"there is no reader called {reader!r}") from None
        tag = worker_tag()
        if resume is not None:
            run = Run.objects.filter(pk=resume, reader=user).first()
            if run is None:
                raise CommandError(f"{reader} has no run {resume}")
            if not claim_run(run, tag, from_state=Run.State.INTERRUPTED):
                raise CommandError(f"run {resume} is {run.state}, not interrupted")
        else:
            try:
                # Created already claimed: a worker cannot take it first.
                run = queue_run(user, Run.Trigger.TERMINAL, claim_for=tag)
            except RunAlreadyActive as e:
                raise CommandError(
                    f"{e}; wait for it, or resume it with --resume if it was interrupted"
                ) from None
        executor = RunExecutor(run)
        progress = Progress(self.stdout, sys.stdout.isatty(), executor)
        executor.observers.append(progress.change)
        self.stdout.write(f"Run {run.pk} for {reader}")
        status = asyncio.run(executor.execute())
        progress.finish()
        self.print_summary(status, executor.summary.seconds)

    def print_summary(self, status, seconds: float) -> None:
        rows = sorted(
            status.sources.values(), key=lambda s: (s["state"] != "error", s["title"])
        )
        width = min(max((len(r["title"]) for r in rows), default=6), 40)
        self.stdout.write("")
        self.stdout.write(
            f"{'source':<{width}}  {'state':<12} {'count':>6} {'ms':>7}  error"
        )
        for row in rows:
            count = "" if row["count"] is None else str(row["count"])
            ms = "" if row["ms"] is None else str(row["ms"])
            line = (
                f"{row['title'][:width]:<{width}}  {row['state']:<12} {count:>6} {ms:>7}  "
                f"{row['error']}"
            )
            self.stdout.write(
                self.style.ERROR(line) if row["state"] == "error" else line
            )
        c = status.counts
        self.stdout.write(
            self.style.SUCCESS(
                f"\n{len(rows)} sources in {seconds:.1f} s: {c['ok']} ok, "
                f"{c['not_modified']} not modified, {c['error']} failed"
            )
        )


class Progress:
    """A bar on a terminal; a line every tenth of the way otherwise."""

    def __init__(self, out, tty: bool, executor: RunExecutor) -> None:
        self.out = out
        self.executor = executor
        self.tty = tty
        self.total = 0
        self.done = 0
        self.failed = 0
        self._last_tenth = -1

    def change(self, change) -> None:
        if change.get("run_state") == "running":
            # Start counting from the status (a resumed run has sources done).
            status = self.executor.status
            self.total = len(status.sources)
            self.done = len(status.done_ids())
            return
        part = change.get("source")
        if part and part.get("state") in DONE_STATES:
            self.done += 1
            self.failed += part["state"] == "error"
            self.draw()

    def draw(self) -> None:
        total = max(self.total, self.done, 1)
        filled = BAR * self.done // total
        text = f"[{'#' * filled}{'.' * (BAR - filled)}] {self.done}/{total}, {self.failed} failed"
        if self.tty:
            self.out.write(f"\r{text}", ending="")
            self.out.flush()
        elif (tenth := 10 * self.done // total) != self._last_tenth:
            self._last_tenth = tenth
            self.out.write(text)

    def finish(self) -> None:
        if self.tty:
            self.out.write("")
