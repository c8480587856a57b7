"""Load benchmark: 500 WebSocket viewers, two daphne processes, three runs of 500.

    DATABASE_URL=postgres://... REDIS_URL=redis://... .venv/bin/python bench/load.py

On a throwaway PostgreSQL database (`<your database>_loadbench`) and the Redis
channel layer: three readers with 500 local feeds each; two `serve` processes
(daphne) and two `run_worker` processes; 500 viewers (real sockets, the live
area's RFC 6455 client, acknowledging every frame like live.js) split over the
three readers' runs and the two servers. All three runs start at once. The
viewers run in LOAD_CLIENT_PROCS client processes (4 by default): one Python
process reading 500 sockets took tens of milliseconds after each tick to get to
a frame, and that delay counted as latency.

Figures:
- frames_per_viewer_s_max: the most frames any viewer got in one second;
- latency_ms_p95: a feed's answer complete -> a viewer's frame showing that
  source done (fetch, journal write, status change, channel layer, tick, frame),
  measured on 30 probe viewers that parse every frame as it arrives;
- server_rss_mb: both daphne processes, at warm-up (viewers connected, first
  frames in) and at the end;
- lost_updates: viewers whose final view differs from the database;
- cpu_s_per_frame: daphne CPU seconds during the runs / frames received.
The last line holds them as key=value.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "newsroom.settings")

VIEWERS = int(os.environ.get("LOAD_VIEWERS", "500"))
SOURCES = int(os.environ.get("LOAD_SOURCES", "500"))  # per reader
READERS = 3
# Viewers that read every frame as it comes (latency); the rest read theirs at
# the end (final state), so the client processes keep up with 500 sockets.
PROBES = 30
CLIENT_PROCS = max(1, int(os.environ.get("LOAD_CLIENT_PROCS", "4")))


def main() -> int:
    import django

    django.setup()
    import psutil
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connections
    from django.test.utils import setup_databases, teardown_databases

    from newsroom.live.testing import ServerProcess
    from newsroom.runs.models import Run
    from newsroom.runs.worker import queue_run
    from newsroom.sources.models import Source
    from newsroom.tests.faultkit import (
        CountingFeeds,
        expected_view,
        is_postgres,
        role_env,
        session_cookie,
    )

    if not (is_postgres() and settings.REDIS_URL):
        print(
            "bench/load.py needs DATABASE_URL=postgres://... and REDIS_URL=redis://..."
        )
        return 2
    db = settings.DATABASES["default"]
    db.setdefault("TEST", {})["NAME"] = f"{db['NAME']}_loadbench"
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    old = setup_databases(verbosity=0, interactive=False)
    tmp = Path(tempfile.mkdtemp(prefix="load-bench-"))
    feeds = CountingFeeds(READERS * SOURCES, delay=0.1)
    servers: list = []
    workers: list = []
    clients: list = []
    try:
        readers, cookies, path_of = [], [], {}
        for r in range(READERS):
            user = get_user_model().objects.create_user(f"reader{r}", password="x" * 12)
            made = Source.objects.bulk_create(
                Source(
                    reader=user,
                    url=feeds.url(f"/feed/{r * SOURCES + i}"),
                    title=f"Feed {r}-{i}",
                )
                for i in range(SOURCES)
            )
            for i, source in enumerate(made):
                path_of[source.pk] = f"/feed/{r * SOURCES + i}"
            readers.append(user)
            cookies.append(session_cookie(user))
        connections.close_all()
        env = role_env(
            NEWSROOM_RUN_WORKER="external",
            NEWSROOM_FOLD_IN_SERVE="0",
            NEWSROOM_RUN_PER_HOST="8",
            LOG_LEVEL="WARNING",
        )
        servers = [
            ServerProcess(env, log=tmp / f"serve{n}.log").start() for n in range(2)
        ]
        procs = [psutil.Process(s.process.pid) for s in servers]
        runs = [queue_run(user) for user in readers]
        connections.close_all()
        addresses = [f"127.0.0.1:{s.port}" for s in servers]
        specs = [
            (
                n,
                addresses[n % 2],
                f"/ws/live/run/{runs[n % READERS].pk}/",
                cookies[n % READERS],
                n < PROBES,
            )
            for n in range(VIEWERS)
        ]
        run_of = {n: runs[n % READERS].pk for n in range(VIEWERS)}
        # Forked before any event loop runs here; the children touch no database.
        connections.close_all()
        ctx = multiprocessing.get_context("fork")
        for k in range(CLIENT_PROCS):
            parent, child = ctx.Pipe()
            process = ctx.Process(
                target=_client_process, args=(child, specs[k::CLIENT_PROCS]), daemon=True
            )
            process.start()
            clients.append((process, parent))
        result = asyncio.run(_drive(clients, servers, procs, workers, env, tmp, runs))
        crowd = result["viewers"]
        # Latency: the first frame in which a probe viewer saw a source done.
        seen_done = [v["seen"] for v in crowd if v["seen"]]
        # Final views against the database.
        lost = 0
        for v in crowd:
            run = Run.objects.get(pk=run_of[v["n"]])
            if v["view"] != expected_view(run.status):
                lost += 1
        states = Counter(
            Run.objects.filter(pk__in=[r.pk for r in runs]).values_list(
                "state", flat=True
            )
        )
        answered = {a.path: a.answered for a in feeds.answers() if a.answered}
        latencies = sorted(
            (at - answered[path_of[sid]]) * 1000
            for mine in seen_done
            for sid, at in mine.items()
            if path_of.get(sid) in answered
        )
        p95 = latencies[int(len(latencies) * 0.95) - 1] if latencies else float("nan")
        p50 = latencies[len(latencies) // 2] if latencies else float("nan")
        print(
            f"runs: {dict(states)} in {result['seconds']:.1f} s; frames {result['frames']}; "
            f"full frames {result['full']}; reconnects {result['reconnects']}"
        )
        print(
            f"latency answer -> viewer frame: p50 {p50:.0f} ms, p95 {p95:.0f} ms "
            f"({len(latencies)} observations)"
        )
        print(
            f"server RSS (two daphne): warm-up {result['rss_warm']:.0f} MiB, "
            f"end {result['rss_end']:.0f} MiB; daphne CPU {result['cpu']:.1f} s"
        )
        print(
            f"bench side: {CLIENT_PROCS} viewer processes and the feed server, CPU {result['client_cpu']:.1f} s "
            f"during the runs ({result['client_cpu'] / result['seconds']:.2f} cores)"
        )
        cpu_per_frame = result["cpu"] / max(result["frames"], 1)
        print(
            f"viewers={VIEWERS} sources={READERS * SOURCES} "
            f"frames_per_viewer_s_max={result['fps_max']} "
            f"latency_ms_p95={p95:.0f} "
            f"server_rss_mb={result['rss_warm']:.0f}->{result['rss_end']:.0f} "
            f"lost_updates={lost} cpu_s_per_frame={cpu_per_frame:.5f}"
        )
        return 0
    finally:
        for process, _ in clients:
            if process.is_alive():
                process.kill()
            process.join(5)
        for w in workers:
            w.stop()
        for s in servers:
            s.stop()
        feeds.close()
        connections.close_all()
        teardown_databases(old, verbosity=0)


def _rss(procs) -> float:
    return sum(p.memory_info().rss for p in procs) / 2**20


def _cpu(procs) -> float:
    total = 0.0
    for p in procs:
        t = p.cpu_times()
        total += t.user + t.system
    return total


def _ask(clients, command: str) -> list:
    for _, pipe in clients:
        pipe.send(command)
    return [pipe.recv() for _, pipe in clients]


async def _drive(clients, servers, procs, workers, env, tmp, runs) -> dict:
    import psutil
    from django.db import connections

    from newsroom.runs.models import Run
    from newsroom.tests.faultkit import Role

    client_procs = [psutil.Process()] + [psutil.Process(p.pid) for p, _ in clients]
    deadline = time.monotonic() + 120
    while not all(ready for ready, _ in await asyncio.to_thread(_ask, clients, "status")):
        if time.monotonic() > deadline:
            raise RuntimeError("viewers did not all get their first frame")
        await asyncio.sleep(0.1)
    await asyncio.sleep(2.0)  # settle: the warm-up figure
    rss_warm = _rss(procs)
    cpu_before = _cpu(procs)
    client_cpu_before = _cpu(client_procs)
    frames_before = sum(
        frames for _, frames in await asyncio.to_thread(_ask, clients, "status")
    )
    began = time.monotonic()
    for n in range(2):  # two run workers: three runs at once (two each at most)
        workers.append(
            Role(["run_worker", "--no-schedule"], env, tmp / f"rw{n}.log").start()
        )

    def states():
        try:
            return list(
                Run.objects.filter(pk__in=[r.pk for r in runs]).values_list(
                    "state", flat=True
                )
            )
        finally:
            connections.close_all()

    while True:
        current = await asyncio.to_thread(states)
        if all(s in ("done", "failed", "interrupted") for s in current):
            break
        if time.monotonic() - began > 600:
            raise RuntimeError(f"runs did not finish: {current}")
        await asyncio.sleep(0.5)
    seconds = time.monotonic() - began
    client_cpu = _cpu(client_procs) - client_cpu_before
    await asyncio.sleep(3.0)  # the last ticks reach every viewer
    rss_end = _rss(procs)
    cpu = _cpu(procs) - cpu_before
    viewers = [v for part in await asyncio.to_thread(_ask, clients, "stop") for v in part]
    frames = sum(v["frames"] for v in viewers) - frames_before
    fps_max = 0
    for v in viewers:
        buckets = Counter(int(t) for t in v["frame_times"])
        if buckets:
            fps_max = max(fps_max, max(buckets.values()))
    full = sum(v["full_frames"] for v in viewers)
    reconnects = sum(v["reconnects"] for v in viewers)
    return {
        "rss_warm": rss_warm,
        "rss_end": rss_end,
        "cpu": cpu,
        "client_cpu": client_cpu,
        "frames": frames,
        "fps_max": fps_max,
        "seconds": seconds,
        "full": full,
        "reconnects": reconnects,
        "viewers": viewers,
    }


def _client_process(pipe, specs) -> None:
    """A client process: its share of the viewers, real sockets, driven over `pipe`."""
    asyncio.run(_client(pipe, specs))


async def _client(pipe, specs) -> None:
    from newsroom.tests.faultkit import Viewer

    viewers: dict[int, Viewer] = {}
    seen: dict[int, dict[int, float]] = {}

    def on_frame(viewer, at, text):
        mine = seen[viewer.number]
        for sid, state in viewer.rows.items():
            if state in ("ok", "not_modified", "error") and sid not in mine:
                mine[sid] = at

    for n, server, path, cookie, eager in specs:
        viewer = Viewer([server], path, cookie, seed=n, eager=eager)
        viewer.number = n
        if eager:
            seen[n] = {}
            viewer.on_frame = on_frame
        viewers[n] = viewer
    crowd = list(viewers.values())
    tasks = []
    wave = max(1, 50 // CLIENT_PROCS)
    for start in range(0, len(crowd), wave):  # connect in waves, as a crowd does
        tasks += [
            asyncio.create_task(v.run(connect_timeout=30))
            for v in crowd[start : start + wave]
        ]
        await asyncio.sleep(0.2)
    while True:
        command = await asyncio.to_thread(pipe.recv)
        if command == "status":
            pipe.send((all(v.frames for v in crowd), sum(v.frames for v in crowd)))
        elif command == "stop":
            results = [
                {
                    "n": n,
                    "view": v.view(),
                    "frames": v.frames,
                    "frame_times": list(v.frame_times),
                    "full_frames": v.full_frames,
                    "reconnects": v.reconnects,
                    "seen": seen.get(n, {}),
                }
                for n, v in viewers.items()
            ]
            for v in crowd:
                v.stop()
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            pipe.send(results)
            return


if __name__ == "__main__":
    sys.exit(main())
