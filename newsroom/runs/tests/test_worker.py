"""Claiming, recovery after a dead process, resume, the daily and retry schedules."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, time, timedelta

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from newsroom.fetch.tests.server import Reply, rss
from newsroom.runs.models import Run, RunSchedule
from newsroom.runs.status import RunStatus
from newsroom.runs.tests.helpers import add_source, execute, states
from newsroom.runs.worker import (
    RunAlreadyActive,
    RunWorker,
    claim_next_run,
    queue_run,
    queue_scheduled_runs,
    recover_interrupted,
    resume_run,
    worker_tag,
)


def _dead_pid() -> int:
    # A pid that surely belonged to a process that has exited.
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.mark.django_db
def test_one_active_run_per_reader(alice, bob):
    first = queue_run(alice)
    with pytest.raises(RunAlreadyActive) as info:
        queue_run(alice)
    assert info.value.run == first
    queue_run(bob)  # Bob's runs are his own


@pytest.mark.django_db
def test_a_queued_run_is_claimed_once(alice, bob):
    run = queue_run(alice)
    claimed = claim_next_run("host:1:a")
    assert (
        claimed == run and claimed.state == "running" and claimed.worker == "host:1:a"
    )
    assert claimed.started_at is not None
    assert claim_next_run("host:2:b") is None  # nothing left to claim


@pytest.mark.django_db
def test_runs_left_running_by_a_dead_process_become_interrupted(
    alice, bob, make_reader
):
    import socket

    carol = make_reader("carol")
    now = timezone.now()
    here = socket.gethostname()
    dead = Run.objects.create(
        reader=alice, state="running", worker=f"{here}:{_dead_pid()}:x", saved_at=now
    )
    alive = Run.objects.create(
        reader=bob, state="running", worker=worker_tag(), saved_at=now
    )
    stale = Run.objects.create(
        reader=carol,
        state="running",
        worker="elsewhere:1:y",
        saved_at=now - timedelta(minutes=5),
    )
    assert sorted(recover_interrupted(now)) == sorted([dead.pk, stale.pk])
    for run in (dead, alive, stale):
        run.refresh_from_db()
    assert dead.state == stale.state == "interrupted" and alive.state == "running"
    assert dead.status["log"][-1]["msg"].startswith("Interrupted")
    assert dead.worker == ""


@pytest.mark.django_db
def test_a_reused_pid_with_another_token_is_dead(alice):
    import os
    import socket

    run = Run.objects.create(
        reader=alice,
        state="running",
        worker=f"{socket.gethostname()}:{os.getpid()}:not-this-one",
        saved_at=timezone.now(),
    )
    assert recover_interrupted() == [run.pk]


@pytest.mark.django_db(transaction=True)
async def test_resuming_fetches_only_the_sources_not_done(alice, server, web):
    server.route("/feed", Reply(body=rss()))
    sources = [
        await sync_to_async(add_source)(alice, web.url(f"/feed?{n}"), f"s{n}")
        for n in range(4)
    ]

    def interrupted_run():
        # As a crashed process left it: two sources done, one mid-fetch, one queued.
        run = Run.objects.create(reader=alice, state="interrupted")
        status = RunStatus(run.pk, alice.pk)
        for source in sources:
            status.add_source(source.pk, source.title)
        status.report(sources[0].pk, "ok", message="s0: ok")
        status.report(sources[1].pk, "error", message="s1: HTTP 500", error="HTTP 500")
        status.report(sources[2].pk, "fetching", message="s2: fetching")
        status.set_run_state("interrupted", "Interrupted")
        run.status = status.to_json()
        run.save()
        return run

    run = await sync_to_async(interrupted_run)()
    assert await sync_to_async(resume_run)(run)
    await sync_to_async(run.refresh_from_db)()
    assert run.state == "queued"
    await execute(run, web)
    await sync_to_async(run.refresh_from_db)()
    fetched = sorted(r.query for r in server.requests)
    assert fetched == ["2", "3"]
    assert states(run) == {
        "s0": ("ok", ""),
        "s1": ("error", "HTTP 500"),
        "s2": ("ok", ""),
        "s3": ("ok", ""),
    }
    assert run.state == "done"
    messages = [line["msg"] for line in run.status["log"]]
    assert "Resumed: 2 of 4 sources left to fetch" in messages


@pytest.mark.django_db
def test_only_an_interrupted_run_can_be_resumed(alice):
    run = Run.objects.create(reader=alice, state="done")
    assert resume_run(run) is False


@pytest.mark.django_db
def test_the_daily_run_is_queued_once_a_day(alice, bob):
    RunSchedule.objects.create(reader=alice, run_at=time(7, 0))
    RunSchedule.objects.create(reader=bob, run_at=time(9, 0))
    morning = timezone.make_aware(datetime(2026, 3, 2, 7, 5))
    queued = queue_scheduled_runs(morning)
    assert [(r.reader, r.trigger) for r in queued] == [(alice, "daily")]
    assert queue_scheduled_runs(morning + timedelta(minutes=1)) == []
    Run.objects.filter(reader=alice).update(state="done")
    assert queue_scheduled_runs(morning + timedelta(hours=3))[0].reader == bob
    next_day = queue_scheduled_runs(morning + timedelta(days=1))
    assert [r.reader for r in next_day] == [alice]


@pytest.mark.django_db
def test_failing_sources_are_retried_when_their_backoff_ends(alice):
    now = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
    due = add_source(
        alice,
        "https://a.example/feed",
        "due",
        error_count=2,
        next_attempt_at=now - timedelta(minutes=1),
        last_status="error",
    )
    add_source(
        alice,
        "https://b.example/feed",
        "later",
        error_count=1,
        next_attempt_at=now + timedelta(hours=1),
        last_status="error",
    )
    add_source(alice, "https://c.example/feed", "healthy")
    queued = queue_scheduled_runs(now)
    assert len(queued) == 1 and queued[0].trigger == "retry"
    assert [s["id"] for s in queued[0].status["sources"]] == [due.pk]
    # While that run is queued, no second retry run piles up.
    assert queue_scheduled_runs(now + timedelta(minutes=1)) == []


@pytest.mark.django_db(transaction=True)
async def test_the_worker_step_claims_and_executes_a_run(alice, server, settings):
    settings.NEWSROOM_ALLOW_PRIVATE_NETWORKS = True  # the feeds are on 127.0.0.1
    server.route("/feed", Reply(body=rss()))
    await sync_to_async(add_source)(alice, server.url("/feed"), "local")
    run = await sync_to_async(queue_run)(alice)
    worker = RunWorker(schedule=False)
    assert await worker.step() is True
    await asyncio_wait(worker)
    assert await worker.step() is False  # nothing more to do
    await sync_to_async(run.refresh_from_db)()
    assert run.state == "done" and states(run) == {"local": ("ok", "")}
    assert worker.finished == 1


async def asyncio_wait(worker):
    import asyncio

    await asyncio.wait(list(worker.tasks))


@pytest.mark.django_db(transaction=True)
async def test_a_run_queued_for_chosen_sources_fetches_only_those(alice, server, web):
    server.route("/feed", Reply(body=rss()))
    chosen = await sync_to_async(add_source)(alice, web.url("/feed?a"), "chosen")
    await sync_to_async(add_source)(alice, web.url("/feed?b"), "other")
    run = await sync_to_async(queue_run)(alice, Run.Trigger.RETRY, [chosen.pk])
    await execute(run, web)
    await sync_to_async(run.refresh_from_db)()
    assert states(run) == {"chosen": ("ok", "")}
    assert [r.query for r in server.requests] == ["a"]
    assert run.status["log"][0]["msg"] == "Run started: 1 source"


def test_serve_runs_the_worker_unless_it_is_external(settings):
    from newsroom.runs.worker import service

    settings.NEWSROOM_RUN_WORKER = "inprocess"
    assert isinstance(service(), RunWorker)
    settings.NEWSROOM_RUN_WORKER = "external"
    assert service() is None


@pytest.mark.django_db
def test_a_run_created_claimed_is_never_taken_by_a_worker(alice):
    run = queue_run(alice, Run.Trigger.TERMINAL, claim_for="terminal:1:t")
    assert run.state == "running" and run.worker == "terminal:1:t"
    assert claim_next_run("host:2:b") is None
