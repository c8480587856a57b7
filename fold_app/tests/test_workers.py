"""Several fold workers at once: per-source claims on PostgreSQL, one worker on SQLite."""

from __future__ import annotations

import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection, connections

from fold_app.claims import (
    AnotherFoldWorker,
    SingleWorkerLock,
    SourceClaims,
    lock_key,
)
from fold_app.models import Delivery
from fold_app.tests.feeds import RSS_TYPE, rss
from fold_app.worker import Worker
from newsroom.sources.models import Source

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
postgres_only = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="per-source claims are for PostgreSQL; SQLite runs one fold worker",
)


def journal(reader, sources: int, per_source: int) -> list[Source]:
    made = Source.objects.bulk_create(
        Source(reader=reader, url=f"https://ex.org/{n}.xml") for n in range(sources)
    )
    rows = [
        Delivery(
            source=made[n % sources],
            received_at=T0 + timedelta(milliseconds=10 * n),
            body=rss({"guid": "g", "title": f"Version {n}", "html": "<p>x</p>"}),
            content_type=RSS_TYPE,
        )
        for n in range(sources * per_source)
    ]
    Delivery.objects.bulk_create(rows)
    return made


def hold_claim(source_id: int, held: threading.Event, release: threading.Event):
    """Another worker's claim: a thread with its own database connection."""

    def body():
        claims = SourceClaims()
        try:
            assert claims.claim(source_id)
            held.set()
            release.wait(30)
            claims.release(source_id)
        finally:
            connections.close_all()

    thread = threading.Thread(target=body)
    thread.start()
    return thread


def test_lock_keys_fit_postgres_int4_for_any_source_id():
    for source_id in (1, 2**31 - 1, 2**31, 2**32 + 7, 2**63 - 1):
        assert -(2**31) <= lock_key(source_id) < 2**31
    assert lock_key(5) == 5
    assert lock_key(2**32 + 5) == 5  # shares 5's lock: folds wait, never collide


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_sources_with_ids_past_32_bits_are_claimed(alice):
    big = Source.objects.create(reader=alice, url="https://ex.org/big.xml", pk=2**40 + 3)
    held, release = threading.Event(), threading.Event()
    other = hold_claim(big.pk, held, release)
    try:
        assert held.wait(10)
        assert not SourceClaims().claim(big.pk)
    finally:
        release.set()
        other.join(10)
    claims = SourceClaims()
    assert claims.claim(big.pk)
    claims.release(big.pk)


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_source_claimed_by_another_worker_is_left_to_it(alice):
    sources = journal(alice, sources=3, per_source=4)
    taken = sources[1]
    held, release = threading.Event(), threading.Event()
    other = hold_claim(taken.pk, held, release)
    try:
        assert held.wait(10)
        assert not SourceClaims().claim(taken.pk)
        outcome = Worker().pass_once()
    finally:
        release.set()
        other.join(10)
    # Everything but the claimed source was folded; its deliveries wait, untouched.
    assert outcome.parsed == 8
    pending = Delivery.objects.filter(status="pending")
    assert set(pending.values_list("source_id", flat=True)) == {taken.pk}
    assert pending.count() == 4
    # Once the claim is released, the next pass folds them, in journal order.
    assert Worker().pass_once().parsed == 4
    folded = list(
        Delivery.objects.filter(source=taken)
        .order_by("received_at", "id")
        .values_list("folded_at", flat=True)
    )
    assert folded == sorted(folded)


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_two_workers_in_parallel_fold_each_delivery_once_in_source_order(alice):
    journal(alice, sources=12, per_source=15)
    folded: dict[str, list[str]] = {"a": [], "b": []}

    def run(name: str) -> None:
        def report(delivery_id, outcome):
            if outcome.parsed or outcome.failed:
                folded[name].append(delivery_id)

        try:
            Worker(report=report).pass_once()
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(n,)) for n in folded]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)

    everything = folded["a"] + folded["b"]
    assert len(everything) == len(set(everything)) == 180
    assert not Delivery.objects.exclude(status="parsed").exists()
    # Journal order within each source: folded_at follows (received_at, id).
    for source in Source.objects.all():
        times = list(
            Delivery.objects.filter(source=source)
            .order_by("received_at", "id")
            .values_list("folded_at", flat=True)
        )
        assert times == sorted(times)


def test_a_second_fold_worker_on_one_sqlite_database_refuses(tmp_path):
    database = tmp_path / "newsroom.sqlite3"
    first = SingleWorkerLock(database)
    first.acquire()
    try:
        with pytest.raises(AnotherFoldWorker) as refused:
            SingleWorkerLock(database).acquire()
        message = str(refused.value)
        assert "Another fold worker" in message and "only one fold worker" in message
        assert "pid " in message  # who holds it
    finally:
        first.release()
    # A holder that is gone (the kernel drops its lock) is simply taken over.
    with SingleWorkerLock(database):
        pass


@pytest.mark.skipif(
    connection.vendor != "sqlite", reason="the single-worker lock is for SQLite"
)
@pytest.mark.django_db(transaction=True)
def test_the_fold_worker_command_refuses_while_another_holds_the_database():
    database = Path(connection.settings_dict["NAME"])
    with SingleWorkerLock(database):
        done = subprocess.run(
            [sys.executable, "manage.py", "fold_worker", "--once"],
            cwd=settings.BASE_DIR,
            env={"DATABASE_URL": f"sqlite:///{database}", "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode != 0
    assert "Another fold worker already folds" in done.stderr
