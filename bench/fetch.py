"""Benchmark: one run of 500 feed sources against a local server.

The server (a separate process, so serving never competes with the run for
the same event loop) answers every request after 100 ms with a ~50 KB feed on
127.0.0.1. Private networks are allowed for this run only. The run is the real
one: RunExecutor with the safe fetcher, the batched journal, the batched saver
and the channel-layer publisher.

    .venv/bin/python bench/fetch.py [--sources 500] [--delay 0.1] [--concurrency 32]

Without DATABASE_URL the run uses a fresh SQLite database in a temporary
directory; with it, a throwaway reader in that database (removed afterwards).
All sources are on one host, so the per-host limit is raised to the overall
concurrency (the per-host semaphore is still in the path).

Last line: sources=… wall_s=… sources_per_s=… ideal_s=… ratio_to_ideal=…
status_db_writes=… per_write_db_writes=… peak_rss_mb=…
  ideal_s            sources x delay / concurrency
  status_db_writes   Run rows written by the batched saver (incl. the final save)
  per_write_db_writes  writes had every status change been saved
  peak_rss_mb        peak RSS of the benchmark process (not the server)
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


# -- the server (its own process) ---------------------------------------------------


def _feed(size: int) -> bytes:
    head = (
        '<?xml version="1.0" encoding="utf-8"?>\n<rss version="2.0"><channel>'
        "<title>Bench feed</title><link>http://127.0.0.1/</link>"
    )
    items = []
    n = 0
    while sum(map(len, items)) + len(head) < size - 200:
        items.append(
            f"<item><title>Story {n}</title><link>http://127.0.0.1/story/{n}</link>"
            f"<guid>bench-{n}</guid><pubDate>Mon, 01 Jun 2026 08:{n % 60:02d}:00 GMT"
            f"</pubDate><description>{'Lorem ipsum dolor sit amet. ' * 8}</description>"
            "</item>"
        )
        n += 1
    return (head + "".join(items) + "</channel></rss>").encode()


def serve(port_queue, delay: float, size: int) -> None:
    body = _feed(size)
    response = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/rss+xml; charset=utf-8\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )

    async def handle(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        try:
            while True:
                try:
                    await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                await asyncio.sleep(delay)
                writer.write(response)
                await writer.drain()
        finally:
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=1024)
        port_queue.put(server.sockets[0].getsockname()[1])
        async with server:
            await server.serve_forever()

    asyncio.run(main())


# -- the run ------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", type=int, default=500)
    parser.add_argument("--delay", type=float, default=0.1)
    parser.add_argument("--size", type=int, default=50_000)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()

    ctx = multiprocessing.get_context("spawn")
    ports = ctx.Queue()
    server = ctx.Process(target=serve, args=(ports, args.delay, args.size), daemon=True)
    server.start()
    port = ports.get(timeout=30)

    tmp = None
    if not os.environ.get("DATABASE_URL"):
        tmp = tempfile.TemporaryDirectory(prefix="newsroom-bench-")
        os.environ["NEWSROOM_DATA_DIR"] = tmp.name
    os.environ["NEWSROOM_ALLOW_PRIVATE_NETWORKS"] = "1"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "newsroom.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from newsroom.runs.executor import RunExecutor
    from newsroom.runs.saver import RunSaver
    from newsroom.runs.worker import claim_run, queue_run, worker_tag
    from newsroom.sources.models import Source

    call_command("migrate", verbosity=0, interactive=False)
    reader = get_user_model().objects.create_user(
        f"bench-{os.getpid()}-{int(time.time())}"
    )
    try:
        Source.objects.bulk_create(
            Source(
                reader=reader,
                url=f"http://127.0.0.1:{port}/feed/{n}",
                title=f"feed {n}",
            )
            for n in range(args.sources)
        )
        run = queue_run(reader)
        assert claim_run(run, worker_tag())
        saver = RunSaver()
        executor = RunExecutor(
            run, concurrency=args.concurrency, per_host=args.concurrency, saver=saver
        )
        started = time.perf_counter()
        cpu_started = time.process_time()
        status = asyncio.run(executor.execute())
        wall = time.perf_counter() - started
        cpu = time.process_time() - cpu_started
        peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        counts = status.counts
        ideal = args.sources * args.delay / args.concurrency
        print(
            f"database={settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]} "
            f"channel_layer={settings.CHANNEL_LAYERS['default']['BACKEND'].rsplit('.', 1)[-1]} "
            f"concurrency={args.concurrency} per_host={args.concurrency} "
            f"ok={counts['ok']} errors={counts['error']} "
            f"published={executor.publisher.sent} journal_batches={executor.writer.batches} "
            f"journal_rows={executor.writer.rows} journal_s={executor.writer.seconds:.2f} "
            f"cpu_s={cpu:.2f} load1={os.getloadavg()[0]:.1f}"
        )
        if counts["ok"] != args.sources:
            errors = {s["error"] for s in status.sources.values() if s["error"]}
            print(f"NOT ALL OK: {sorted(errors)[:5]}", file=sys.stderr)
        print(
            f"sources={args.sources} wall_s={wall:.2f} "
            f"sources_per_s={args.sources / wall:.1f} ideal_s={ideal:.2f} "
            f"ratio_to_ideal={wall / ideal:.2f} status_db_writes={saver.writes} "
            f"per_write_db_writes={executor.changes} peak_rss_mb={peak_rss_mb:.0f}"
        )
    finally:
        reader.delete()
        server.terminate()
        server.join(5)
        if tmp is not None:
            from django.db import connections

            connections.close_all()
            tmp.cleanup()


if __name__ == "__main__":
    main()
