"""Benchmark of the live pages, naive strategies measured beside ours.

    .venv/bin/python bench/live.py

- burst: 10 streams on one run, 100 writes in a burst: renders and frames when
  every write renders every stream (naive) and with the 200 ms tick;
- board: 100 streams on one 300-row board, one row changing per tick: median tick
  ms with no cache and full frames, with the cache and full frames, with the cache
  and patches;
- bytes: frame bytes for a one-row change on 50- and 300-row boards;
- latency: write to frame received by a real WebSocket client (daphne in its own
  process, 200 ms ticks), p50 and p95;
- memory: server RSS growth per open idle stream, 1,000 streams.

The last line holds the figures as key=value. The server part runs on a
throwaway SQLite database with the in-memory channel layer, whatever the
environment says, so it never touches a real database.
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "newsroom.settings")

RUN_ID, READER_ID = 1, 1


def setup_django() -> None:
    import django

    django.setup()


# -- in-process parts ----------------------------------------------------------------


class Sink:
    """The far end of a socket: encodes frames as a socket would; acks on demand."""

    def __init__(self) -> None:
        self.frames = 0
        self.bytes: list[int] = []
        self.last = ""

    async def send(self, text: str) -> None:
        data = text.encode()
        self.frames += 1
        self.bytes.append(len(data))
        self.last = text


def make_replica(rows: int):
    from newsroom.live.replica import RunReplica
    from newsroom.runs.status import RunStatus

    origin = RunStatus(RUN_ID, READER_ID, "running")
    categories = ["World", "Science", "Business", "Technology", "Culture"]
    for i in range(1, rows + 1):
        origin.add_source(i, f"Source {i:03d}", categories[i % len(categories)])
    replica = RunReplica(RunStatus.from_json(origin.to_json(), RUN_ID, READER_ID))
    return origin, replica


def row_change(replica, n: int) -> dict:
    """One row changing: a source's count and timing, nothing else."""
    sid = n % len(replica.status.sources) + 1
    return {
        "run": RUN_ID,
        "reader": READER_ID,
        "seq": replica.seq + 1,
        "source": {"id": sid, "count": n % 97, "ms": 100 + n % 900},
    }


async def open_streams(scheduler, region, args, count, *, patches=True):
    from newsroom.live.stream import Stream

    streams = []
    for _ in range(count):
        sink = Sink()
        stream = Stream(region, args, sink.send, scheduler, patches=patches)
        stream.start()
        streams.append((stream, sink))
    return streams


async def ack_all(streams) -> None:
    for stream, _ in streams:
        if stream.in_flight is not None:
            await stream.ack(stream.in_flight[0])


async def bench_burst() -> dict[str, float]:
    from newsroom.live.components import run_sidebar
    from newsroom.live.render import using_cache
    from newsroom.live.tick import Scheduler

    # Naive: every write renders every stream at once (no tick, no cache).
    origin, replica = make_replica(100)
    scheduler = Scheduler(200, cache=False)
    streams = await open_streams(scheduler, run_sidebar, (replica,), 10)
    await scheduler.tick()
    await ack_all(streams)
    scheduler.dirty.clear()
    renders = 0
    before = sum(s.frames for _, s in streams)
    for n in range(100):
        replica.apply(origin.report(n % 100 + 1, "ok", message=f"S{n}: ok", count=n))
        for stream, _ in streams:
            with using_cache(None):
                stream.render()
            renders += 1
            await stream.flush()
        await ack_all(streams)  # a fast client: every frame acknowledged at once
    scheduler.dirty.clear()
    naive = {"renders": renders, "frames": sum(s.frames for _, s in streams) - before}

    # The tick: writes arrive as fast as they can; the loop renders every 200 ms.
    origin, replica = make_replica(100)
    scheduler = Scheduler(200)
    streams = await open_streams(scheduler, run_sidebar, (replica,), 10)
    await scheduler.tick()
    await ack_all(streams)
    scheduler.renders = 0
    before = sum(s.frames for _, s in streams)
    scheduler.start()
    for n in range(100):
        replica.apply(origin.report(n % 100 + 1, "ok", message=f"S{n}: ok", count=n))
        await asyncio.sleep(0)  # writes arrive one by one, as from the network
        await ack_all(streams)
    deadline = time.monotonic() + 3
    while (
        scheduler.dirty or any(s.in_flight for s, _ in streams)
    ) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        await ack_all(streams)
    await scheduler.stop()
    tick = {
        "renders": scheduler.renders,
        "frames": sum(s.frames for _, s in streams) - before,
    }
    print(f"burst  naive: renders={naive['renders']} frames={naive['frames']}")
    print(f"burst  tick:  renders={tick['renders']} frames={tick['frames']}")
    return {
        "burst_renders_naive": naive["renders"],
        "burst_frames_naive": naive["frames"],
        "burst_renders": tick["renders"],
        "burst_frames": tick["frames"],
    }


async def board_tick_ms(
    rows: int, viewers: int, *, cache: bool, patches: bool, ticks: int
) -> float:
    from newsroom.live.components import run_sidebar
    from newsroom.live.render import ComponentCache
    from newsroom.live.tick import Scheduler

    _, replica = make_replica(rows)
    scheduler = Scheduler(200, cache=ComponentCache() if cache else False)
    streams = await open_streams(
        scheduler, run_sidebar, (replica,), viewers, patches=patches
    )
    for n in range(3):  # first frames, cache admission
        replica.apply(row_change(replica, n))
        await scheduler.tick()
        await ack_all(streams)
    times = []
    for n in range(ticks):
        replica.apply(row_change(replica, 1000 + n * 7))
        start = time.perf_counter()
        await scheduler.tick()
        times.append((time.perf_counter() - start) * 1000)
        await ack_all(streams)
    return statistics.median(times)


async def frame_bytes(rows: int, *, patches: bool) -> int:
    from newsroom.live.components import run_sidebar
    from newsroom.live.tick import Scheduler

    _, replica = make_replica(rows)
    scheduler = Scheduler(200)
    streams = await open_streams(scheduler, run_sidebar, (replica,), 1, patches=patches)
    for n in range(3):
        replica.apply(row_change(replica, n))
        await scheduler.tick()
        await ack_all(streams)
    replica.apply(row_change(replica, 4242))
    await scheduler.tick()
    return streams[0][1].bytes[-1]


async def bench_board() -> dict[str, float]:
    nocache = await board_tick_ms(300, 100, cache=False, patches=False, ticks=5)
    cache = await board_tick_ms(300, 100, cache=True, patches=False, ticks=40)
    patch = await board_tick_ms(300, 100, cache=True, patches=True, ticks=40)
    print(
        f"board  100 streams x 300 rows, median tick: no cache + full frames {nocache:.1f} ms, "
        f"cache + full frames {cache:.2f} ms, cache + patches {patch:.2f} ms "
        f"({nocache / patch:.0f}x)"
    )
    p50 = await frame_bytes(50, patches=True)
    p300 = await frame_bytes(300, patches=True)
    f300 = await frame_bytes(300, patches=False)
    print(
        f"bytes  one-row change: patch 50 rows {p50} B, patch 300 rows {p300} B, "
        f"full 300 rows {f300} B"
    )
    return {
        "tick_ms_nocache": round(nocache, 2),
        "tick_ms_cache": round(cache, 2),
        "tick_ms_patch": round(patch, 2),
        "patch_bytes_50": p50,
        "patch_bytes_300": p300,
        "full_bytes_300": f300,
    }


# -- the server part -----------------------------------------------------------------

LATENCY_WRITES = 60


def serve(port: int) -> None:
    """In the child process: a throwaway database, a reader, a 300-source run,
    daphne, and a writer that publishes timestamped changes to the run's group."""
    setup_django()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from newsroom.runs.models import Run

    call_command("migrate", interactive=False, verbosity=0)
    user = get_user_model().objects.create_user("bench", password="bench bench bench")
    from django.contrib.sessions.backends.db import SessionStore

    session = SessionStore()
    session["_auth_user_id"] = str(user.pk)
    session["_auth_user_backend"] = "django.contrib.auth.backends.ModelBackend"
    session["_auth_user_hash"] = user.get_session_auth_hash()
    session.create()
    origin, _ = make_replica(300)
    run = Run.objects.create(reader=user, state="running")
    from newsroom.runs.status import RunStatus

    origin = RunStatus.from_json(origin.to_json(), run.pk, user.pk)
    Run.objects.filter(pk=run.pk).update(status=origin.to_json())

    import daphne.server  # noqa: F401  (asyncio reactor first)
    from daphne.endpoints import build_endpoint_description_strings
    from daphne.server import Server

    from newsroom.asgi import application

    async def writer() -> None:
        from channels.layers import get_channel_layer

        from newsroom.live.hub import get_hub

        while not any(s.name == "run" for s in get_hub().streams()):
            await asyncio.sleep(0.05)
        layer = get_channel_layer()
        rng = random.Random(5)
        for _ in range(LATENCY_WRITES):
            await asyncio.sleep(rng.uniform(0.05, 0.35))
            change = origin.note(f"bench t={time.time():.6f}")
            await layer.group_send(
                f"run.{run.pk}", {"type": "run.change", "change": change}
            )

    def ready() -> None:
        asyncio.ensure_future(writer())
        print(f"READY {session.session_key} {run.pk}", flush=True)

    Server(
        application=application,
        endpoints=build_endpoint_description_strings(host="127.0.0.1", port=port),
        ready_callable=ready,
        verbosity=0,
    ).run()


async def bench_server() -> dict[str, float]:
    import psutil

    from newsroom.live.testing import WsClient, free_port

    port = free_port()
    data = tempfile.mkdtemp(prefix="live-bench-")
    env = {
        k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")
    }
    env.update(NEWSROOM_DATA_DIR=data, NEWSROOM_LIVE_TICK_MS="200", LOG_LEVEL="WARNING")
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        "--serve",
        str(port),
        env=env,
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        line = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode().split()
        assert line and line[0] == "READY", line
        session, run_id = line[1], line[2]
        cookie, origin = f"sessionid={session}", f"http://127.0.0.1:{port}"
        base = f"ws://127.0.0.1:{port}"

        # Latency: every frame acknowledged; each write carries its own time.
        client = await WsClient(
            f"{base}/ws/live/run/{run_id}/", cookie=cookie, origin=origin
        ).connect()
        seen: set[str] = set()
        latencies: list[float] = []
        while len(seen) < LATENCY_WRITES:
            at, frame = await client.recv(timeout=20)
            if frame is None:
                raise RuntimeError("the server closed the stream")
            client.ack(frame)
            for stamp in re.findall(r"bench t=([0-9.]+)", frame):
                if stamp not in seen:
                    seen.add(stamp)
                    latencies.append((at - float(stamp)) * 1000)
        client.close()
        latencies.sort()
        p50 = statistics.median(latencies)
        p95 = latencies[int(len(latencies) * 0.95) - 1]
        print(
            f"latency write -> frame at a real client: p50 {p50:.0f} ms, p95 {p95:.0f} ms "
            f"({len(latencies)} writes, 200 ms ticks)"
        )

        # Memory: 1,000 idle streams (the article region: nothing changes).
        server = psutil.Process(proc.pid)
        await asyncio.sleep(1.0)
        before = server.memory_info().rss
        clients: list[WsClient] = []
        for _start in range(0, 1000, 50):
            batch = [
                WsClient(f"{base}/ws/live/article/", cookie=cookie, origin=origin)
                for _ in range(50)
            ]
            await asyncio.gather(*(c.connect(timeout=30) for c in batch))
            clients.extend(batch)
        for c in clients:  # each stream's first frame
            _, frame = await c.recv(timeout=30)
            c.ack(frame or "")
        await asyncio.sleep(1.0)
        after = server.memory_info().rss
        kb = (after - before) / 1024 / len(clients)
        print(
            f"memory 1000 idle streams: server RSS {before / 2**20:.1f} -> "
            f"{after / 2**20:.1f} MiB, {kb:.1f} KB per stream"
        )
        for c in clients:
            c.close()
        return {
            "latency_ms_p50": round(p50, 1),
            "latency_ms_p95": round(p95, 1),
            "kb_per_stream": round(kb, 1),
        }
    finally:
        proc.terminate()
        await proc.wait()


async def main() -> None:
    setup_django()
    figures: dict[str, float] = {}
    figures.update(await bench_burst())
    figures.update(await bench_board())
    figures.update(await bench_server())
    keys = [
        "burst_renders_naive",
        "burst_renders",
        "burst_frames",
        "tick_ms_nocache",
        "tick_ms_cache",
        "tick_ms_patch",
        "patch_bytes_50",
        "patch_bytes_300",
        "full_bytes_300",
        "latency_ms_p95",
        "kb_per_stream",
    ]
    print(" ".join(f"{k}={figures[k]}" for k in keys))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--serve":
        serve(int(sys.argv[2]))
    else:
        asyncio.run(main())
