"""After a run: wait for its deliveries to be folded, then write the day's briefing.

The run worker calls `brief_after_run` once a run has ended. The items a
briefing reads appear only after the fold worker has folded the run's
deliveries, so this waits (bounded) for the run's journal to drain first; a
briefing written from half-folded items would miss the run's news.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from django.conf import settings
from django.utils import timezone

from fold_app.models import Delivery
from newsroom.briefing.models import Briefing
from newsroom.briefing.progress import Progress
from newsroom.briefing.service import write_briefing
from newsroom.runs.models import Run

log = logging.getLogger(__name__)

POLL_SECONDS = 1.0


def pending_deliveries(run: Run) -> int:
    return Delivery.objects.filter(
        run=run, status__in=[Delivery.Status.PENDING, Delivery.Status.DEFERRED]
    ).count()


def new_items_of(run: Run) -> int:
    counts = Delivery.objects.filter(run=run).values_list("new_items_count", flat=True)
    return sum(n or 0 for n in counts)


def brief_after_run(
    run: Run,
    *,
    wait_seconds: float | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> Briefing | None:
    """Write the reader's briefing for today after `run`.

    Returns the stored briefing, or None when there was nothing to write about:
    the run brought no new items and today already has a briefing.
    """
    wait_seconds = (
        settings.NEWSROOM_BRIEF_AFTER_RUN_WAIT if wait_seconds is None else wait_seconds
    )
    progress = Progress(run.pk, "analyst")
    deadline = clock() + wait_seconds
    pending = pending_deliveries(run)
    if pending:
        progress.stage("waiting", f"Briefing waits for {pending} deliveries to be folded")
    while pending and clock() < deadline:
        sleep(POLL_SECONDS)
        pending = pending_deliveries(run)
    if pending:
        # Writing late beats not writing: the next run's briefing catches up.
        log.warning(
            "run %s: %d deliveries still unfolded after %.0f s; briefing anyway",
            run.pk,
            pending,
            wait_seconds,
        )
    day = timezone.localdate()
    if not new_items_of(run) and Briefing.objects.filter(reader=run.reader, day=day).exists():
        progress.stage("skipped", "No new items since the last briefing: none written")
        return None
    return write_briefing(run.reader, day, run=run)
