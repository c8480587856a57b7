"""Fault benchmark: the long variants of the fault tests, at full size.

    DATABASE_URL=postgres://... REDIS_URL=redis://... .venv/bin/python bench/faults.py

Runs on a throwaway PostgreSQL database (`<your database>_faultbench`, created
and dropped here) with real processes, as the tests do:
- runs: a run of 300 local feeds; its run_worker SIGKILLed at 5 random moments;
- fold: 5,000 pending deliveries, two fold_workers, one SIGKILLed 10 times;
- daphne: 50 WebSocket viewers over two daphne processes; one SIGKILLed mid-run;
- redis: the same with the channel layer's Redis (our own) restarted mid-run;
- database: PostgreSQL refusing and cutting connections for 5 s mid-run.

Each scenario prints its figures; the last line holds the summary as key=value
(ok=1 when every check held).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "newsroom.settings")


def main() -> int:
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connections
    from django.test.utils import setup_databases, teardown_databases

    from newsroom.tests.faultkit import OwnRedis, is_postgres
    from newsroom.tests.scenarios import (
        database_outage,
        kill_fold_workers,
        kill_the_run_worker,
        watch_a_run_through_a_fault,
    )

    if not (is_postgres() and settings.REDIS_URL):
        print(
            "bench/faults.py needs DATABASE_URL=postgres://... and REDIS_URL=redis://..."
        )
        return 2
    db = settings.DATABASES["default"]
    db.setdefault("TEST", {})["NAME"] = f"{db['NAME']}_faultbench"
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    old = setup_databases(verbosity=0, interactive=False)
    tmp = Path(tempfile.mkdtemp(prefix="faults-bench-"))
    figures: dict[str, object] = {}
    checks: dict[str, bool] = {}

    def fresh(name: str):
        call_command("flush", interactive=False, verbosity=0)
        connections.close_all()
        where = tmp / name
        where.mkdir()
        return get_user_model().objects.create_user("alice", password="x" * 12), where

    try:
        began = time.monotonic()
        reader, where = fresh("runs")
        r = kill_the_run_worker(reader, count=300, kills=5, tmp=where, seed=11)
        print(f"runs: {r}")
        checks["runs"] = (
            r.kills == 5
            and r.final_state == "done"
            and r.sources_done == 300
            and sum(r.refetched_saved) == 0
            and r.requests - 300 <= sum(r.at_risk)
        )
        figures["run_kills"] = r.kills
        figures["run_refetched_saved"] = sum(r.refetched_saved)
        figures["run_refetched"] = r.requests - 300
        figures["run_lost_s_max"] = max(r.lost_s, default=0)

        reader, where = fresh("fold")
        f = kill_fold_workers(reader, count=5000, kills=10, tmp=where)
        print(
            f"fold: kills={f.kills} statuses={f.statuses} twice={len(f.folded_twice)} "
            f"out_of_order={len(f.out_of_order_sources)} per_worker={f.per_worker} "
            f"reindex_ok={f.reindex_ok} seconds={f.seconds}"
        )
        checks["fold"] = (
            f.kills == 10
            and set(f.statuses) <= {"parsed", "failed"}
            and sum(f.statuses.values()) == 5000
            and not f.folded_twice
            and not f.out_of_order_sources
            and f.reindex_ok
        )
        figures["fold_kills"] = f.kills
        figures["fold_twice"] = len(f.folded_twice)
        figures["fold_s"] = f.seconds

        reader, where = fresh("daphne")
        d = watch_a_run_through_a_fault(
            reader, sources=150, viewers=50, fault="kill_daphne", tmp=where
        )
        print(f"daphne: {d}")
        checks["daphne"] = d.final_state == "done" and d.matching == 50
        figures["daphne_viewers_matching"] = d.matching
        figures["daphne_reconnects"] = d.reconnects

        reader, where = fresh("redis")
        redis = OwnRedis().start()

        def restart() -> None:
            redis.stop()
            time.sleep(2.0)  # Redis down for two seconds
            redis.start()

        try:
            x = watch_a_run_through_a_fault(
                reader,
                sources=150,
                viewers=50,
                fault="restart_redis",
                tmp=where,
                redis_url=redis.url,
                restart_redis=restart,
                per_host=2,
            )
        finally:
            redis.stop()
        print(f"redis: {x}")
        checks["redis"] = x.final_state == "done" and x.matching == 50
        figures["redis_viewers_matching"] = x.matching

        reader, where = fresh("database")
        p = database_outage(reader, sources=150, outage_s=5.0, tmp=where)
        print(
            f"database: refused={p.refused} final={p.final_state} done={p.sources_done} "
            f"deliveries={p.deliveries} alive={p.workers_alive} reindex_ok={p.reindex_ok}"
        )
        for line in p.logged[:8]:
            print(f"  logged: {line}")
        checks["database"] = (
            p.final_state == "done"
            and p.sources_done == 150
            and p.workers_alive
            and p.sources_without_delivery == 0
            and set(p.deliveries) <= {"parsed", "failed"}
            and p.reindex_ok
            and p.tracebacks == 0
        )
        figures["db_refused"] = p.refused
        figures["seconds"] = round(time.monotonic() - began)
    finally:
        connections.close_all()
        teardown_databases(old, verbosity=0)
    failed = [name for name, ok in checks.items() if not ok]
    if failed:
        print(f"FAILED: {', '.join(failed)} (logs in {tmp})")
    figures["ok"] = int(not failed and len(checks) == 5)
    print(" ".join(f"{k}={v}" for k, v in figures.items()))
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
