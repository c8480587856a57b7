"""The briefing written after a run: it waits for the fold, then writes."""

from __future__ import annotations

import pytest
from django.utils import timezone

from fold_app.journal import record_delivery
from fold_app.tests.feeds import RSS_TYPE, rss
from fold_app.worker import Worker
from newsroom.briefing.after_run import brief_after_run
from newsroom.briefing.models import Briefing
from newsroom.runs.models import Run
from newsroom.sources.models import Source

pytestmark = pytest.mark.django_db


def journal_run(reader) -> Run:
    run = Run.objects.create(reader=reader, state=Run.State.DONE)
    source = Source.objects.create(reader=reader, url="https://wire.example/feed")
    now = timezone.now().strftime("%a, %d %b %Y %H:%M:%S +0000")
    body = rss(
        {"guid": "a", "title": "Parliament passes the budget after a long night",
         "link": "https://wire.example/a", "date": now,
         "html": "<p>The budget passed by 212 votes to 190.</p>"},
        {"guid": "b", "title": "Storm closes ports along the northern coast",
         "link": "https://wire.example/b", "date": now,
         "html": "<p>Ferries stayed in harbour as winds reached 120 km/h.</p>"},
    )
    record_delivery(source=source, body=body, content_type=RSS_TYPE, run=run)
    return run


def test_it_waits_for_the_fold_then_writes_the_days_briefing(alice):
    run = journal_run(alice)
    slept = []

    def fold_while_waiting(seconds):
        # Stands in for time passing while the fold worker works: a real pass.
        slept.append(seconds)
        Worker().pass_once()

    briefing = brief_after_run(run, wait_seconds=60, sleep=fold_while_waiting)
    assert slept, "it should have waited for the pending delivery"
    assert briefing is not None and briefing.run_id == run.pk
    assert briefing.day == timezone.localdate()
    assert "Parliament passes the budget" in str(briefing.sections)


def test_it_writes_anyway_when_the_fold_does_not_finish_in_time(alice):
    run = journal_run(alice)
    ticks = iter(range(100))
    briefing = brief_after_run(
        run, wait_seconds=3, sleep=lambda s: None, clock=lambda: next(ticks)
    )
    assert briefing is not None  # written from what was folded (nothing yet)


def test_a_run_with_nothing_new_leaves_todays_briefing_alone(alice):
    first = journal_run(alice)
    Worker().pass_once()
    assert brief_after_run(first, wait_seconds=0) is not None
    quiet = Run.objects.create(reader=alice, state=Run.State.DONE)
    assert brief_after_run(quiet, wait_seconds=0) is None
    assert Briefing.objects.filter(reader=alice).count() == 1
