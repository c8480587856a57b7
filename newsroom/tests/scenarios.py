"""Fault scenarios shared by the suite (small) and `bench/faults.py` (full size).

Each takes its sizes as arguments, does the real thing with real processes and
returns the figures it measured; the caller asserts on them (tests) or prints
them (bench).
"""

from __future__ import annotations

import random
import threading
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
                saved_done = {
                    path_of[s] for s, st in states.items() if st in DONE_STATES
                }
                saved_at_kill.append((moment, saved_done))
                asked = set(feeds.counts())
                result.at_risk.append(len(asked - saved_done))
                # Answers given to the process just killed that its saved
                # state lacks (an answer lost at an earlier kill and not asked
                # for again yet is not this process's loss).
                ages = [
                    moment - a.answered
                    for a in feeds.answers()
                    if a.started > previous
                    and a.answered is not None
                    and a.answered < moment
                    and a.path not in saved_done
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
                # The next kill lands on a run at work, not on one still queued.
                wait_for(
                    lambda: _saved(run.pk)[0] in (Run.State.RUNNING, "done"),
                    60,
                    "the resumed run to be claimed",
                )
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


# -- fold workers ----------------------------------------------------------------


@dataclass
class FoldKills:
    deliveries: int = 0
    kills: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    folded_twice: list[str] = field(default_factory=list)
    out_of_order_sources: list[int] = field(default_factory=list)
    per_worker: list[int] = field(default_factory=list)  # folds reported by slot
    reindex_ok: bool = False
    reindex_output: str = ""
    seconds: float = 0.0


def make_fold_backlog(reader, count: int, sources: int, seed: int = 9) -> None:
    """`count` pending deliveries over `sources` sources; every 97th is not a feed
    (it fails); the rest rewrite a few of twelve stories per source."""
    from datetime import UTC, datetime, timedelta

    from fold_app.models import Delivery
    from fold_app.tests.feeds import RSS_TYPE, rss

    rng = random.Random(seed)
    t0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
    made = Source.objects.bulk_create(
        Source(reader=reader, url=f"https://ex.org/{n}.xml") for n in range(sources)
    )
    rows = []
    for n in range(count):
        if n % 97 == 0:
            body, kind = b"<!doctype html><html><body>moved</body></html>", "text/html"
        else:
            entries = [
                {
                    "guid": f"g{g}",
                    "title": f"Story {g} v{n}",
                    "html": "<p>" + "word " * rng.randrange(1, 60) + "</p>",
                }
                for g in rng.sample(range(12), 3)
            ]
            body, kind = rss(*entries), RSS_TYPE
        rows.append(
            Delivery(
                source=made[n % sources],
                received_at=t0 + timedelta(milliseconds=10 * n),
                body=body,
                content_type=kind,
            )
        )
    Delivery.objects.bulk_create(rows, batch_size=500)


class _Reader:
    """Reads a fold_worker's `-v 2` lines on a thread: "folded <id> <state> ..."."""

    def __init__(self, process) -> None:
        self.folded: list[str] = []
        self.thread = threading.Thread(target=self._read, args=(process,), daemon=True)
        self.thread.start()

    def _read(self, process) -> None:
        for line in process.stdout:
            parts = line.split()
            if (
                len(parts) >= 3
                and parts[0] == "folded"
                and parts[2]
                in (
                    "parsed",
                    "failed",
                )
            ):
                self.folded.append(parts[1])


def kill_fold_workers(
    reader, count: int, kills: int, tmp: Path, *, sources: int = 40, seed: int = 9
) -> FoldKills:
    """Two `fold_worker` processes on a backlog of `count` deliveries; one of
    them (alternately) is SIGKILLed `kills` times at random moments and started
    again. Then both finish the queue and `reindex --check` runs."""
    import subprocess
    import sys
    import time
    from collections import Counter

    from django.core.management import call_command

    from fold_app.models import Delivery
    from newsroom.live.testing import ROOT

    rng = random.Random(seed)
    make_fold_backlog(reader, count, sources, seed)
    connections.close_all()
    env = {**__import__("os").environ, **role_env(LOG_LEVEL="WARNING")}
    log = open(tmp / "fold_workers.log", "ab")

    def start():
        process = subprocess.Popen(
            [sys.executable, "manage.py", "fold_worker", "-v", "2", "--tick", "1"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
        return process, _Reader(process)

    result = FoldKills(deliveries=count)
    began = time.monotonic()
    slots = [start(), start()]
    finished: list[_Reader] = []
    try:
        for k in range(kills):
            victim = k % 2
            process, reader_ = slots[victim]
            target = len(reader_.folded) + rng.randrange(5, 60)
            wait_for(
                lambda r=reader_, t=target: (
                    len(r.folded) >= t
                    or not Delivery.objects.filter(
                        status__in=("pending", "deferred")
                    ).exists()
                ),
                120,
                "folds before the kill",
                every=0.005,
            )
            if not Delivery.objects.filter(status__in=("pending", "deferred")).exists():
                break
            process.kill()
            process.wait(10)
            reader_.thread.join(10)
            finished.append(reader_)
            result.kills += 1
            slots[victim] = start()
        wait_for(
            lambda: (
                not Delivery.objects.filter(status__in=("pending", "deferred")).exists()
            ),
            600,
            "the queue to empty",
            every=0.2,
        )
    finally:
        for process, reader_ in slots:
            process.terminate()
            process.wait(30)
            reader_.thread.join(10)
            finished.append(reader_)
        log.close()
    result.seconds = round(time.monotonic() - began, 1)
    reported: Counter[str] = Counter()
    for reader_ in finished:
        reported.update(reader_.folded)
    result.per_worker = [len(r.folded) for r in finished]
    result.folded_twice = [d for d, n in reported.items() if n > 1]
    result.statuses = dict(Counter(Delivery.objects.values_list("status", flat=True)))
    # Journal order within each source: fold times follow (received_at, id).
    times: dict[int, list] = {}
    for source_id, folded_at in Delivery.objects.order_by(
        "source_id", "received_at", "id"
    ).values_list("source_id", "folded_at"):
        times.setdefault(source_id, []).append(folded_at)
    result.out_of_order_sources = [
        s for s, t in times.items() if None in t or t != sorted(t)
    ]
    import io

    out = io.StringIO()
    try:
        call_command("reindex", "--check", stdout=out)
        result.reindex_ok = True
    except SystemExit as e:
        result.reindex_ok = e.code in (0, None)
    except Exception as e:  # noqa: BLE001 - reported, the caller asserts
        out.write(f"{type(e).__name__}: {e}")
    result.reindex_output = out.getvalue()[-2000:]
    connections.close_all()
    return result


# -- viewers through faults --------------------------------------------------------


@dataclass
class LiveFaults:
    viewers: int = 0
    fault: str = ""
    fault_at_done: int = 0  # sources done (saved) when the fault struck
    final_state: str = ""
    matching: int = 0  # viewers whose final view equals the database
    mismatches: list[str] = field(default_factory=list)
    reconnects: int = 0
    reconnected_viewers: int = 0
    first_frames_full: bool = True  # every reconnect began with the whole region
    seconds: float = 0.0


async def _db(fn, *args):
    import asyncio

    def call():
        try:
            return fn(*args)
        finally:
            connections.close_all()

    return await asyncio.to_thread(call)


def watch_a_run_through_a_fault(
    reader,
    *,
    sources: int,
    viewers: int,
    fault: str,
    tmp: Path,
    redis_url: str = "",
    restart_redis=None,
    per_host: int = 4,
    delay: float = 0.3,
) -> LiveFaults:
    """`viewers` real WebSocket viewers of a run, spread over two daphne
    (`serve`) processes; a separate run_worker executes it. At a third of the run
    the fault strikes: "kill_daphne" SIGKILLs the first server (its viewers
    reconnect to the other), "restart_redis" calls `restart_redis()`. At the end
    every viewer must show what the database holds."""
    import asyncio
    import time

    from newsroom.live.testing import ServerProcess
    from newsroom.tests.faultkit import session_cookie

    feeds = CountingFeeds(sources, delay=delay)
    try:
        for i in range(sources):
            Source.objects.create(
                reader=reader, url=feeds.url(f"/feed/{i}"), title=f"Feed {i}"
            )
        run = queue_run(reader)
        cookie = session_cookie(reader)
        connections.close_all()
        extra = {
            "NEWSROOM_RUN_WORKER": "external",
            "NEWSROOM_FOLD_IN_SERVE": "0",
            "NEWSROOM_RUN_PER_HOST": str(per_host),
            "LOG_LEVEL": "WARNING",
        }
        if redis_url:
            extra["REDIS_URL"] = redis_url
        env = role_env(**extra)
        servers = [ServerProcess(env, log=tmp / f"serve{n}.log") for n in range(2)]
        worker = Role(["run_worker", "--no-schedule"], env, tmp / "run_worker.log")
        result = LiveFaults(viewers=viewers, fault=fault)
        began = time.monotonic()
        try:
            for server in servers:
                server.start()
            asyncio.run(_watch(run.pk, servers, worker, cookie, result, restart_redis))
        finally:
            worker.stop()
            for server in servers:
                server.stop()
        result.seconds = round(time.monotonic() - began, 1)
        return result
    finally:
        feeds.close()


async def _watch(run_id, servers, worker, cookie, result, restart_redis) -> None:
    import asyncio

    from newsroom.tests.faultkit import Viewer, expected_view

    addresses = [f"127.0.0.1:{s.port}" for s in servers]
    crowd = [
        Viewer(addresses, f"/ws/live/run/{run_id}/", cookie, seed=n)
        for n in range(result.viewers)
    ]
    tasks = [asyncio.create_task(v.run()) for v in crowd]
    try:
        await _until(lambda: all(v.frames for v in crowd), 60, "every first frame")
        worker.start()

        def saved():
            run = Run.objects.get(pk=run_id)
            states = [s["state"] for s in (run.status or {}).get("sources", [])]
            return run.state, sum(1 for s in states if s in DONE_STATES), len(states)

        async def third_done():
            state, done, total = await _db(saved)
            return state == "done" or (total and done >= total // 3)

        await _until_async(third_done, 120, "a third of the run")
        result.fault_at_done = (await _db(saved))[1]
        if result.fault == "kill_daphne":
            servers[0].process.kill()
            servers[0].process.wait(10)
        elif result.fault == "restart_redis":
            await asyncio.to_thread(restart_redis)

        async def finished():
            return (await _db(saved))[0] in ("done", "failed", "interrupted")

        await _until_async(finished, 180, "the run to finish")
        run = await _db(lambda: Run.objects.get(pk=run_id))
        result.final_state = run.state
        want = expected_view(run.status)
        try:
            await _until(
                lambda: all(v.view() == want for v in crowd), 30, "viewers to settle"
            )
        except AssertionError:
            pass  # counted below
        for n, v in enumerate(crowd):
            if v.view() == want:
                result.matching += 1
            elif len(result.mismatches) < 3:
                diff = {
                    sid: (st, want["rows"].get(sid))
                    for sid, st in v.view()["rows"].items()
                    if want["rows"].get(sid) != st
                }
                result.mismatches.append(
                    f"viewer {n}: state {v.state!r} vs {want['state']!r}, "
                    f"stats {v.stats} vs {want['stats']}, rows differing {len(diff)}"
                    f" (of {len(v.rows)}), reconnects {v.reconnects}"
                )
        result.reconnects = sum(v.reconnects for v in crowd)
        result.reconnected_viewers = sum(1 for v in crowd if v.reconnects)
        result.first_frames_full = all(all(v.first_after_reconnect) for v in crowd)
    finally:
        for v in crowd:
            v.stop()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _until(predicate, timeout: float, what: str) -> None:
    import asyncio

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)  # other processes and sockets do the work


async def _until_async(predicate, timeout: float, what: str) -> None:
    import asyncio

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.1)


# -- PostgreSQL refusing connections ------------------------------------------------


@dataclass
class DatabaseOutage:
    sources: int = 0
    outage_s: float = 0.0
    refused: int = 0
    outage_at_done: int = 0
    final_state: str = ""
    sources_done: int = 0
    sources_ok: int = 0
    deliveries: dict[str, int] = field(default_factory=dict)
    sources_without_delivery: int = 0
    workers_alive: bool = False
    logged: list[str] = field(default_factory=list)
    # Per role log: outages it warned of, outages it said were over, tracebacks.
    outages_said: dict[str, int] = field(default_factory=dict)
    backs_said: dict[str, int] = field(default_factory=dict)
    tracebacks: int = 0
    reindex_ok: bool = False
    reindex_output: str = ""


def database_outage(
    reader, *, sources: int, outage_s: float, tmp: Path, delay: float = 0.2
) -> DatabaseOutage:
    """A run_worker and two fold_workers reach PostgreSQL through a proxy that,
    a third into the run, refuses and cuts every connection for `outage_s`.
    The run must complete, every fetched body be journaled and folded."""
    import io

    from django.core.management import call_command

    from fold_app.models import Delivery
    from newsroom.tests.faultkit import FlakyProxy, database_url

    db = connections["default"].settings_dict
    proxy = FlakyProxy(int(db["PORT"] or 5432), db["HOST"] or "127.0.0.1")
    feeds = CountingFeeds(sources, delay=delay)
    result = DatabaseOutage(sources=sources, outage_s=outage_s)
    try:
        for i in range(sources):
            Source.objects.create(
                reader=reader, url=feeds.url(f"/feed/{i}"), title=f"Feed {i}"
            )
        run = queue_run(reader)
        connections.close_all()
        env = role_env(
            DATABASE_URL=database_url(proxy.port),
            NEWSROOM_RUN_PER_HOST="2",
            LOG_LEVEL="INFO",
        )
        roles = [
            Role(["run_worker", "--no-schedule"], env, tmp / "run_worker.log"),
            Role(["fold_worker", "--tick", "1"], env, tmp / "fold_worker_a.log"),
            Role(["fold_worker", "--tick", "1"], env, tmp / "fold_worker_b.log"),
        ]
        try:
            for role in roles:
                role.start()

            def done_count():
                state, states = _saved(run.pk)
                return state, sum(1 for s in states.values() if s in DONE_STATES)

            wait_for(
                lambda: done_count()[1] >= sources // 3 or done_count()[0] == "done",
                120,
                "a third of the run",
            )
            result.outage_at_done = done_count()[1]
            proxy.outage(outage_s)
            result.refused = proxy.refused
            wait_for(lambda: _saved(run.pk)[0] != "running", 180, "the run to end")
            wait_for(
                lambda: (
                    not Delivery.objects.filter(
                        status__in=("pending", "deferred")
                    ).exists()
                ),
                120,
                "the fold queue to empty",
            )
            result.workers_alive = all(role.alive() for role in roles)
        finally:
            for role in roles:
                role.stop()
        state, states = _saved(run.pk)
        result.final_state = state
        result.sources_done = sum(1 for s in states.values() if s in DONE_STATES)
        result.sources_ok = sum(1 for s in states.values() if s == "ok")
        from collections import Counter

        result.deliveries = dict(
            Counter(Delivery.objects.values_list("status", flat=True))
        )
        with_delivery = set(Delivery.objects.values_list("source_id", flat=True))
        ok_ids = {sid for sid, s in states.items() if s == "ok"}
        result.sources_without_delivery = len(ok_ids - with_delivery)
        for log in sorted(tmp.glob("*.log")):
            text = log.read_text(errors="replace")
            result.tracebacks += text.count("Traceback (most recent call last)")
            result.outages_said[log.stem] = text.count(": database unreachable during")
            result.backs_said[log.stem] = text.count(": database reachable again")
            for line in text.splitlines():
                if " WARNING " in line or " ERROR " in line:
                    result.logged.append(f"{log.stem}: {line[24:200]}")
        out = io.StringIO()
        try:
            call_command("reindex", "--check", stdout=out)
            result.reindex_ok = True
        except SystemExit as e:
            result.reindex_ok = e.code in (0, None)
        result.reindex_output = out.getvalue()[-1500:]
        connections.close_all()
        return result
    finally:
        feeds.close()
        proxy.close()
