"""Fault scenarios shared by the suite (small) and `bench/faults.py` (full size).

Each takes its sizes as arguments, does the real thing with real processes and
returns the figures it measured; the caller asserts on them (tests) or prints
them (bench).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

from django.db import connections

from newsroom.runs.models import Run
from newsroom.runs.status import DONE_STATES
from newsroom.runs.worker import queue_run, resume_run
from newsroom.sources.models import Source
from newsroom.tests.faultkit import CountingFeeds, Role, role_env, wait_for


@dataclass
class RunKills:
    kills: int = 0
    # Per kill: sources saved done at the kill but fetched again after it.
    refetched_saved: list[int] = field(default_factory=list)
    # Per kill: sources answered before the kill but missing from the saved state
    # (fetched again after the resume: the cost of the second that can be lost).
    refetched_unsaved: list[int] = field(default_factory=list)
    # Per kill: how long before the kill the oldest answer the saved state lacks
    # was complete (seconds; 0 when the saved state had every answer).
    lost_s: list[float] = field(default_factory=list)
    # Per kill: sources asked for before the kill and not saved done (in flight
    # or answered in the last second): the only ones that may be fetched again.
    at_risk: list[int] = field(default_factory=list)
    final_state: str = ""
    sources_done: int = 0
    sources: int = 0
    requests: int = 0


def _saved(run_id: int) -> tuple[str, dict[int, str]]:
    run = Run.objects.get(pk=run_id)
    states = {s["id"]: s["state"] for s in (run.status or {}).get("sources", [])}
    return run.state, states


def kill_the_run_worker(
    reader, count: int, kills: int, tmp: Path, *, seed: int = 1, delay: float = 0.08
) -> RunKills:
    """A run of `count` local feeds; its run_worker process is SIGKILLed `kills`
    times at random moments (after a random number of answers) and started
    again; each time the run must be found interrupted and be resumed."""
    rng = random.Random(seed)
    feeds = CountingFeeds(count, delay=delay, seed=seed)
    path_of: dict[int, str] = {}
    try:
        for i in range(count):
            source = Source.objects.create(
                reader=reader, url=feeds.url(f"/feed/{i}"), title=f"Feed {i}"
            )
            path_of[source.pk] = f"/feed/{i}"
        run = queue_run(reader)
        connections.close_all()
        env = role_env(NEWSROOM_RUN_PER_HOST="8", LOG_LEVEL="WARNING")
        log = tmp / "run_worker.log"
        worker = Role(["run_worker", "--no-schedule"], env, log).start()
        result = RunKills(sources=count)
        # Kill moments: after a random number of answers, spread over the run.
        targets = sorted(rng.sample(range(count // 10, count * 9 // 10), kills))
        saved_at_kill: list[tuple[float, set[str]]] = []
        previous = 0.0
        try:
            for target in targets:
                wait_for(
                    lambda t=target: len(feeds.log) >= t or _saved(run.pk)[0] == "done",
                    120,
                    f"{target} answers",
                    every=0.01,
                )
                if _saved(run.pk)[0] == "done":
                    break
                moment = worker.kill()
                result.kills += 1
                state, states = _saved(run.pk)
                assert state == Run.State.RUNNING, state
                saved_done = {path_of[s] for s, st in states.items() if st in DONE_STATES}
                saved_at_kill.append((moment, saved_done))
                asked = set(feeds.counts())
                result.at_risk.append(len(asked - saved_done))
                # Answers given to the process just killed that its saved
                # state lacks (an answer lost at an earlier kill and not asked
                # for again yet is not this process's loss).
                ages = [
                    moment - answered_at
                    for path, started, answered_at in list(feeds.log)
                    if started > previous
                    and answered_at < moment
                    and path not in saved_done
                ]
                previous = moment
                result.lost_s.append(round(max(ages, default=0.0), 3))
                # A new process finds the run interrupted (its holder is dead) ...
                worker = Role(["run_worker", "--no-schedule"], env, log).start()
                wait_for(
                    lambda: _saved(run.pk)[0] == Run.State.INTERRUPTED,
                    60,
                    "the run to be marked interrupted",
                )
                # ... and the reader resumes it.
                assert resume_run(Run.objects.get(pk=run.pk))
                connections.close_all()
            wait_for(lambda: _saved(run.pk)[0] == "done", 180, "the run to finish")
        finally:
            worker.stop()
        for moment, saved_done in saved_at_kill:
            after = feeds.requests_after(moment)
            result.refetched_saved.append(sum(1 for p in after if p in saved_done))
            answered = feeds.answered_before(moment)
            result.refetched_unsaved.append(
                sum(1 for p in after if p in answered and p not in saved_done)
            )
        state, states = _saved(run.pk)
        result.final_state = state
        result.sources_done = sum(1 for st in states.values() if st in DONE_STATES)
        result.requests = len(feeds.log)
        connections.close_all()
        return result
    finally:
        feeds.close()
