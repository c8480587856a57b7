"""Replay equality: reindex rebuilds exactly what live folding produced, even when
concurrent deliveries arrived out of journal order."""

from __future__ import annotations

import logging
import random
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import CommandError, call_command

from fold_app.fold import state_of
from fold_app.models import Delivery, Item
from fold_app.retention import prune_bodies
from fold_app.tests.feeds import RSS_TYPE, rss
from fold_app.worker import Worker
from newsroom.sources.models import Source

pytestmark = pytest.mark.django_db
T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def entry(rng: random.Random, guid: str, n: int) -> dict:
    """Versions of one story that differ in completeness, or only in wording."""
    e = {"guid": guid, "title": f"{guid} take {n}"}
    if rng.random() < 0.5:
        e["date"] = f"Mon, 0{1 + rng.randrange(9)} Jun 2026 10:00:00 GMT"
    if rng.random() < 0.5:
        e["html"] = "<p>" + "word " * rng.choice([10, 30, 80]) + "</p>"
    if rng.random() < 0.3:
        e["author"] = "desk@ex.org (Desk)"
    return e


def snapshot() -> dict:
    return {(i.source_id, i.key): state_of(i) for i in Item.objects.all()}


def test_replay_equality_on_a_shuffled_arrival_of_concurrent_deliveries(alice, caplog):
    caplog.set_level(logging.WARNING, logger="fold_app.worker")
    rng = random.Random(4)
    sources = [
        Source.objects.create(reader=alice, url=f"https://ex.org/{s}.xml")
        for s in range(3)
    ]
    # Fetched concurrently: journal times are when each fetch was stamped...
    planned = []
    for n in range(60):
        source = sources[n % 3]
        guids = rng.sample([f"s{source.pk}-g{g}" for g in range(12)], 4)
        planned.append(
            (
                T0 + timedelta(milliseconds=250 * n),
                source,
                rss(*(entry(rng, g, n) for g in guids)),
            )
        )
    # ...but rows become visible in another order, and the worker folds in between.
    rng.shuffle(planned)
    worker = Worker()
    for start in range(0, len(planned), 7):
        for received_at, source, body in planned[start : start + 7]:
            Delivery.objects.create(
                source=source, received_at=received_at, body=body, content_type=RSS_TYPE
            )
        worker.pass_once()
    assert Delivery.objects.filter(status="parsed").count() == 60
    assert any("out of journal order" in r.getMessage() for r in caplog.records), (
        "no late arrival happened"
    )

    live = snapshot()
    call_command("reindex", "--check")  # raises CommandError when it differs
    call_command("reindex")
    assert snapshot() == live


def test_check_reports_differences_and_reindex_repairs_them(alice):
    source = Source.objects.create(reader=alice, url="https://ex.org/feed.xml")
    for n in range(3):
        Delivery.objects.create(
            source=source,
            received_at=T0 + timedelta(seconds=n),
            content_type=RSS_TYPE,
            body=rss(
                {"guid": f"g{n}", "title": f"T{n}"},
                {"guid": "shared", "title": f"S{n}"},
            ),
        )
    Worker().pass_once()
    live = snapshot()
    Item.objects.filter(title="T0").update(title="tampered")
    Item.objects.filter(title="T1").delete()
    Item.objects.create(
        source=source, key="stray", title="stray", first_seen_at=T0, updated_at=T0
    )

    with pytest.raises(CommandError) as failure:
        call_command("reindex", "--check")
    message = str(failure.value)
    assert "1 missing, 1 extra, 1 changed (title)" in message

    call_command("reindex")
    assert snapshot() == live
    call_command("reindex", "--check")


def test_pruned_bodies_keep_the_row_and_reindex_names_the_source(alice, capsys):
    kept = Source.objects.create(
        reader=alice, url="https://ex.org/kept.xml", title="Kept"
    )
    pruned = Source.objects.create(
        reader=alice, url="https://ex.org/old.xml", title="Old"
    )
    old = T0 - timedelta(days=40)
    for source, at in ((kept, T0), (pruned, old)):
        Delivery.objects.create(
            source=source,
            received_at=at,
            body=rss({"guid": "g", "title": "t"}),
            content_type=RSS_TYPE,
        )
    Worker().pass_once()
    waiting = Delivery.objects.create(
        source=pruned, received_at=old, body=rss(), content_type=RSS_TYPE
    )

    assert prune_bodies(T0 - timedelta(days=30)) == 1  # the old folded one
    old_delivery = Delivery.objects.get(source=pruned, status="parsed")
    assert old_delivery.body is None and old_delivery.body_pruned_at is not None
    assert old_delivery.items_count == 1  # the outcome stays
    assert Delivery.objects.get(pk=waiting.pk).body is not None  # not folded yet: kept

    before = snapshot()
    call_command("reindex")
    out = capsys.readouterr().out
    assert f"Could not rebuild source {pruned.pk} (Old)" in out
    assert snapshot() == before  # its items were left as they are


def test_prune_command_uses_the_configured_age(alice, settings, capsys):
    from django.utils import timezone

    source = Source.objects.create(reader=alice, url="https://ex.org/feed.xml")
    now = timezone.now()
    young = Delivery.objects.create(
        source=source, received_at=now - timedelta(days=5), body=b"x", status="parsed"
    )
    aged = Delivery.objects.create(
        source=source, received_at=now - timedelta(days=12), body=b"x", status="failed"
    )
    settings.NEWSROOM_DELIVERY_RETENTION_DAYS = 10
    call_command("prune_deliveries")
    assert "Pruned 1 delivery bodies" in capsys.readouterr().out
    assert (
        Delivery.objects.get(pk=aged.pk).body is None
        and Delivery.objects.get(pk=aged.pk).status == "failed"
    )
    assert Delivery.objects.get(pk=young.pk).body is not None
    with pytest.raises(CommandError):
        call_command("prune_deliveries", "--days", "0")
