"""kill -9 of a real `fold_worker` in the middle of a pass, ten times.

After the last restart every delivery is parsed or failed exactly once, no item
is half-written, and `reindex --check` passes. Runs on whichever database the
suite runs on (SQLite or PostgreSQL): the worker subprocess gets the test
database's URL.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import quote

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection

from fold_app.models import Delivery, Item
from fold_app.tests.feeds import RSS_TYPE, rss
from newsroom.sources.models import Source

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

DELIVERIES = 2000
KILLS = 10
T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def database_url() -> str:
    s = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{s['NAME']}"
    auth = quote(s["USER"] or "", safe="") + (
        ":" + quote(s["PASSWORD"], safe="") if s.get("PASSWORD") else ""
    )
    return (
        f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"
    )


def start_worker(*extra: str, log: Path) -> subprocess.Popen:
    env = {**os.environ, "DATABASE_URL": database_url(), "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "fold_worker",
            "-v",
            "2",
            "--tick",
            "3600",
            *extra,
        ],
        cwd=settings.BASE_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=log.open("ab"),
        text=True,
    )


def make_journal(reader, rng: random.Random) -> None:
    sources = Source.objects.bulk_create(
        Source(reader=reader, url=f"https://ex.org/{n}.xml") for n in range(40)
    )
    rows = []
    for n in range(DELIVERIES):
        source = sources[n % len(sources)]
        if n % 97 == 0:
            body, content_type = (
                b"<!doctype html><html><body>moved</body></html>",
                "text/html",
            )
        else:
            entries = [
                {
                    "guid": f"g{g}",
                    "title": f"Story {g} v{n}",
                    "html": "<p>" + "word " * rng.randrange(1, 90) + "</p>",
                    **(
                        {"date": "Mon, 01 Jun 2026 10:00:00 GMT"}
                        if rng.random() < 0.4
                        else {}
                    ),
                }
                for g in rng.sample(range(12), 3)
            ]
            body, content_type = rss(*entries), RSS_TYPE
        rows.append(
            Delivery(
                source=source,
                received_at=T0 + timedelta(milliseconds=10 * n),
                body=body,
                content_type=content_type,
            )
        )
    Delivery.objects.bulk_create(rows, batch_size=500)


def test_kill_9_mid_pass_loses_nothing_and_writes_nothing_twice(alice, tmp_path):
    rng = random.Random(9)
    make_journal(alice, rng)
    log = tmp_path / "worker.log"
    reported: Counter[str] = Counter()
    kills_mid_pass = 0
    for _ in range(KILLS):
        worker = start_worker(log=log)
        kill_after = rng.randrange(5, 150)
        seen = 0
        for line in worker.stdout:
            if line.startswith("folded "):
                _, delivery_id, state, *_ = line.split()
                if state in ("parsed", "failed"):
                    reported[delivery_id] += 1
                seen += 1
                if seen >= kill_after:
                    break
        time.sleep(rng.uniform(0, 0.01))  # land anywhere in the next fold
        worker.send_signal(signal.SIGKILL)
        rest, _ = worker.communicate()
        reported.update(
            line.split()[1]
            for line in rest.splitlines()
            if line.startswith("folded ") and line.split()[2] in ("parsed", "failed")
        )
        if Delivery.objects.filter(status="pending").exists():
            kills_mid_pass += 1
    assert kills_mid_pass == KILLS, (
        "a kill came after the queue was empty: not mid-pass"
    )

    worker = start_worker("--once", log=log)
    rest, _ = worker.communicate(timeout=120)
    assert worker.returncode == 0, log.read_text()[-3000:]
    reported.update(
        line.split()[1]
        for line in rest.splitlines()
        if line.startswith("folded ") and line.split()[2] in ("parsed", "failed")
    )

    # Every delivery parsed or failed, and none reported folded twice.
    statuses = Counter(Delivery.objects.values_list("status", flat=True))
    assert (
        set(statuses) <= {"parsed", "failed"} and sum(statuses.values()) == DELIVERIES
    )
    assert statuses["failed"] == len(range(0, DELIVERIES, 97))
    assert [d for d, n in reported.items() if n > 1] == []

    # No item half-written: each item's counts and content match its delivery.
    parsed = Delivery.objects.filter(status="parsed")
    assert set(parsed.values_list("items_count", flat=True)) == {3}  # 3 entries each
    new_total = sum(parsed.values_list("new_items_count", flat=True))
    assert new_total == Item.objects.count()  # each item created by exactly one fold
    assert not Item.objects.filter(delivery=None).exists()
    assert not Item.objects.exclude(delivery__status="parsed").exists()
    assert not Item.objects.filter(html="").exists()
    call_command("reindex", "--check")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_and_sigint_stop_the_worker_between_deliveries(alice, tmp_path, signum):
    rng = random.Random(3)
    make_journal(alice, rng)
    worker = start_worker(log=tmp_path / "worker.log")
    folded = 0
    for line in worker.stdout:
        if line.startswith("folded "):
            folded += 1
            if folded == 20:
                break
    worker.send_signal(signum)
    rest, _ = worker.communicate(timeout=60)
    assert worker.returncode == 0
    assert rest.rstrip().endswith("Fold worker stopped.")
    # It stopped mid-queue, and every delivery it touched is whole.
    assert Delivery.objects.filter(status="pending").exists()
    parsed = Delivery.objects.filter(status="parsed")
    assert set(parsed.values_list("items_count", flat=True)) <= {3}
    assert sum(parsed.values_list("new_items_count", flat=True)) == Item.objects.count()
