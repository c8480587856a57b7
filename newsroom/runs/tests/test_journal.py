"""The batched journal: one bad write never loses its neighbours."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from fold_app.models import Delivery
from newsroom.runs.journal import JournalWriter, Write
from newsroom.runs.tests.helpers import add_source
from newsroom.sources.models import Source

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("lanes", [1, 2])
async def test_a_failing_write_gets_its_own_error_and_the_rest_commit(alice, lanes):
    import asyncio

    sources = [
        await sync_to_async(add_source)(alice, f"https://feeds.example/{n}", f"s{n}")
        for n in range(3)
    ]
    writer = JournalWriter(lanes=lanes)
    writer.start()
    feed = {"body": b"<rss/>", "content_type": "application/rss+xml", "kind": "feed"}
    writes = [
        Write(
            sources[0], {"last_status": "ok"}, dict(feed, url="https://feeds.example/0")
        ),
        # error_count must not be negative: the database refuses this row.
        Write(
            sources[1], {"error_count": -1}, dict(feed, url="https://feeds.example/1")
        ),
        Write(
            sources[2], {"last_status": "ok"}, dict(feed, url="https://feeds.example/2")
        ),
    ]
    results = await asyncio.gather(
        *(writer.submit(w) for w in writes), return_exceptions=True
    )
    await writer.close()
    assert results[0] is None and results[2] is None
    assert isinstance(results[1], Exception)
    urls = await sync_to_async(
        lambda: sorted(Delivery.objects.values_list("url", flat=True))
    )()
    assert urls == ["https://feeds.example/0", "https://feeds.example/2"]
    statuses = await sync_to_async(
        lambda: dict(Source.objects.values_list("title", "last_status"))
    )()
    assert statuses == {"s0": "ok", "s1": "", "s2": "ok"}


@pytest.mark.parametrize("lanes", [1, 2])
async def test_lanes_keep_their_connection_for_the_run_and_close_it_at_the_end(
    alice, lanes
):
    from django.db.backends.signals import connection_created

    sources = [
        await sync_to_async(add_source)(alice, f"https://feeds.example/{n}", f"s{n}")
        for n in range(6)
    ]
    opened = []

    def created(sender, connection, **kwargs):
        opened.append(connection)

    connection_created.connect(created)
    try:
        writer = JournalWriter(lanes=lanes)
        writer.start()
        for source in sources:  # one batch each: every write waits for its commit
            await writer.submit(Write(source, {"last_status": "ok"}))
        assert writer.batches == len(sources)
        assert 1 <= len(opened) <= lanes
        await writer.close()
    finally:
        connection_created.disconnect(created)
    assert all(wrapper.connection is None for wrapper in opened)
    statuses = await sync_to_async(
        lambda: set(Source.objects.values_list("last_status", flat=True))
    )()
    assert statuses == {"ok"}
