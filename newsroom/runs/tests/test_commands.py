"""run_sources (progress bar and summary) and run_worker --once, end to end."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from newsroom.fetch.tests.server import Reply, rss
from newsroom.runs.models import Run
from newsroom.runs.tests.helpers import add_source

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def local_feeds(server, settings, alice):
    settings.NEWSROOM_ALLOW_PRIVATE_NETWORKS = True  # the feeds are on 127.0.0.1
    server.route("/feed", Reply(body=rss()))
    server.route("/missing", Reply(404))
    for n in range(3):
        add_source(alice, server.url(f"/feed?{n}"), f"feed {n}")
    add_source(alice, server.url("/missing"), "missing feed")
    return server


def test_run_sources_prints_progress_and_a_summary(local_feeds, alice):
    out = StringIO()
    call_command("run_sources", reader="alice", stdout=out)
    text = out.getvalue()
    assert "[" in text and "4/4, 1 failed" in text
    assert "missing feed" in text and "HTTP 404 Not Found" in text
    assert "4 sources in" in text and "3 ok, 0 not modified, 1 failed" in text
    run = Run.objects.get(reader=alice)
    assert run.state == "done" and run.trigger == "terminal"


def test_run_sources_names_an_unknown_reader(db):
    with pytest.raises(CommandError, match="no reader called 'nobody'"):
        call_command("run_sources", reader="nobody", stdout=StringIO())


def test_run_sources_resumes_an_interrupted_run(local_feeds, alice):
    call_command("run_sources", reader="alice", stdout=StringIO())
    run = Run.objects.get(reader=alice)
    Run.objects.filter(pk=run.pk).update(state="interrupted")
    requests = len(local_feeds.requests)
    out = StringIO()
    call_command("run_sources", reader="alice", resume=run.pk, stdout=out)
    assert len(local_feeds.requests) == requests  # everything was done already
    assert "4 sources in" in out.getvalue()


def test_run_worker_once_executes_queued_runs(local_feeds, alice, bob):
    from newsroom.runs.worker import queue_run

    queue_run(alice)
    queue_run(bob)  # Bob has no sources: an empty run still completes
    out = StringIO()
    call_command("run_worker", once=True, no_schedule=True, stdout=out)
    assert "stopped after 2 run(s)" in out.getvalue()
    assert set(Run.objects.values_list("state", flat=True)) == {"done"}
