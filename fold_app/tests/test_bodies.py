"""Delivery bodies in a table of their own: written with the delivery, read by
the fold, pruned without touching the row, and moved there by a migration that
keeps every delivery as it was."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test.utils import CaptureQueriesContext

from fold_app.fold import fold_delivery, load_delivery
from fold_app.journal import record_delivery
from fold_app.models import Delivery, DeliveryBody, Item
from fold_app.retention import prune_bodies
from fold_app.tests.feeds import RSS_TYPE, rss
from newsroom.sources.models import Source

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def source(alice):
    return Source.objects.create(reader=alice, url="https://ex.org/feed.xml")


@pytest.mark.django_db
def test_every_creation_path_writes_the_body_row(source):
    created = Delivery.objects.create(source=source, received_at=T0, body=b"<rss/>")
    journaled = record_delivery(source=source, body=b"<rss>2</rss>")
    bulk = [
        Delivery(source=source, received_at=T0 + timedelta(seconds=n), body=b"b%d" % n)
        for n in range(3)
    ]
    Delivery.objects.bulk_create(bulk)
    bodiless = Delivery.objects.create(source=source, received_at=T0, body=None)

    stored = dict(DeliveryBody.objects.values_list("delivery_id", "body"))
    assert {k: bytes(v) for k, v in stored.items()} == {
        created.pk: b"<rss/>",
        journaled.pk: b"<rss>2</rss>",
        **{d.pk: b"b%d" % n for n, d in enumerate(bulk)},
    }
    assert bodiless.pk not in stored
    assert Delivery.objects.get(pk=bodiless.pk).body is None
    assert bytes(Delivery.objects.get(pk=journaled.pk).body) == b"<rss>2</rss>"


@pytest.mark.django_db
def test_a_journaled_body_cannot_be_edited(source):
    delivery = Delivery.objects.create(source=source, received_at=T0, body=b"x")
    with pytest.raises(ValueError, match="never edited"):
        delivery.body = b"y"
    with pytest.raises(ValueError, match="never edited"):
        Delivery.objects.get(pk=delivery.pk).body = b"y"


@pytest.mark.django_db
def test_load_delivery_reads_the_body_with_the_row_in_one_query(source):
    delivery = Delivery.objects.create(
        source=source,
        received_at=T0,
        body=rss({"guid": "g", "title": "T"}),
        content_type=RSS_TYPE,
    )
    pruned = Delivery.objects.create(source=source, received_at=T0, body=None)
    with CaptureQueriesContext(connection) as queries:
        loaded = load_delivery(delivery.pk)
        assert bytes(loaded.body) == rss({"guid": "g", "title": "T"})
        assert loaded.source.url == source.url
        assert load_delivery(pruned.pk).body is None
    assert len(queries) == 2
    assert fold_delivery(loaded).items == 1


@pytest.mark.django_db
def test_a_fold_updates_the_delivery_row_but_never_its_body(source):
    delivery = record_delivery(
        source=source, body=rss({"guid": "g", "title": "T"}), content_type=RSS_TYPE
    )
    with CaptureQueriesContext(connection) as queries:
        assert fold_delivery(load_delivery(delivery.pk)).status == "parsed"
    writes = [
        q["sql"]
        for q in queries
        if q["sql"].lstrip().upper().startswith(("UPDATE", "INSERT", "DELETE"))
    ]
    assert writes and not any(DeliveryBody._meta.db_table in sql for sql in writes)
    assert Item.objects.get().title == "T"


@pytest.mark.django_db
def test_pruning_deletes_the_body_row_and_keeps_the_delivery(source):
    old = Delivery.objects.create(
        source=source, received_at=T0, body=b"x", status="parsed", items_count=4
    )
    queued = Delivery.objects.create(source=source, received_at=T0, body=b"y")
    assert prune_bodies(T0 + timedelta(days=1)) == 1
    assert prune_bodies(T0 + timedelta(days=1)) == 0  # nothing left to prune
    old.refresh_from_db()
    assert old.body is None and old.body_pruned_at is not None and old.items_count == 4
    assert list(DeliveryBody.objects.values_list("delivery_id", flat=True)) == [
        queued.pk
    ]


@pytest.mark.django_db(transaction=True)
def test_migration_moves_bodies_and_keeps_the_journal(alice):
    before, after = (
        ("fold_app", "0002_fewer_item_indexes"),
        ("fold_app", "0003_delivery_body_table"),
    )
    executor = MigrationExecutor(connection)
    executor.migrate([before])
    try:
        apps = executor.loader.project_state([before]).apps
        OldDelivery = apps.get_model("fold_app", "Delivery")
        OldSource = apps.get_model("newsroom", "Source")
        source = OldSource.objects.create(
            reader_id=alice.pk, url="https://ex.org/m.xml"
        )
        rows = [
            OldDelivery.objects.create(
                id=f"01J{n:023d}",
                source=source,
                received_at=T0 + timedelta(seconds=n % 3),
                body=None if n == 4 else b"body %d" % n,
                body_pruned_at=T0 if n == 4 else None,
                status="parsed" if n < 5 else "pending",
                items_count=n,
            )
            for n in range(8)
        ]
        journal = [(d.id, d.received_at, d.status, d.items_count) for d in rows]
        journal.sort(key=lambda row: (row[1], row[0]))

        executor = MigrationExecutor(connection)
        executor.migrate([after])
        apps = executor.loader.project_state([after]).apps
        NewDelivery = apps.get_model("fold_app", "Delivery")
        NewBody = apps.get_model("fold_app", "DeliveryBody")
        moved = NewDelivery.objects.order_by("received_at", "id").values_list(
            "id", "received_at", "status", "items_count"
        )
        assert list(moved) == journal
        bodies = {
            k: bytes(v) for k, v in NewBody.objects.values_list("delivery_id", "body")
        }
        assert bodies == {d.id: b"body %d" % n for n, d in enumerate(rows) if n != 4}

        executor = MigrationExecutor(connection)
        executor.migrate([before])  # and back: the bodies return to their column
        apps = executor.loader.project_state([before]).apps
        back = apps.get_model("fold_app", "Delivery").objects.values_list("id", "body")
        assert {k: (bytes(v) if v is not None else None) for k, v in back} == {
            d.id: (None if n == 4 else b"body %d" % n) for n, d in enumerate(rows)
        }
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
