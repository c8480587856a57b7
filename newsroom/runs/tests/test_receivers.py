"""Fold outcomes and briefing progress reach the run's status, wherever it runs."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer

from fold_app.models import Delivery
from fold_app.signals import delivery_folded
from newsroom.briefing.signals import briefing_progress
from newsroom.runs import live
from newsroom.runs.models import Run
from newsroom.runs.publish import Publisher, exec_group_for, group_for
from newsroom.runs.receivers import deliver
from newsroom.runs.status import RunStatus
from newsroom.runs.tests.helpers import add_source


def _run_with_source(reader, state: str) -> tuple[Run, object]:
    source = add_source(reader, "https://feeds.example/x", "Feed")
    run = Run.objects.create(reader=reader, state=state)
    status = RunStatus(run.pk, reader.pk)
    status.add_source(source.pk, "Feed", "World")
    status.report(source.pk, "ok", message="Feed: ok")
    run.status = status.to_json()
    run.save()
    return run, source


@pytest.mark.django_db
def test_a_fold_outcome_for_a_finished_run_goes_into_its_saved_status(alice):
    run, source = _run_with_source(alice, "done")
    delivery = Delivery.objects.create(
        source=source, run=run, received_at=run.created_at, body=b"<rss/>"
    )
    delivery_folded.send(sender=Delivery, delivery=delivery, items=12, new_items=5)
    run.refresh_from_db()
    entry = run.status["sources"][0]
    assert (entry["count"], entry["new"]) == (12, 5)
    assert (run.status["items"], run.status["new_items"]) == (12, 5)
    assert run.status["items_by_category"] == {"World": 5}


@pytest.mark.django_db
def test_a_body_the_fold_could_not_read_turns_the_source_red(alice):
    run, source = _run_with_source(alice, "done")
    delivery = Delivery.objects.create(
        source=source,
        run=run,
        received_at=run.created_at,
        body=b"<html><body>Welcome</body></html>",
        status=Delivery.Status.FAILED,
        parse_error="This is an HTML page, not a feed.",
    )
    delivery_folded.send(sender=Delivery, delivery=delivery, items=0, new_items=0)
    run.refresh_from_db()
    entry = run.status["sources"][0]
    assert entry["state"] == "error"
    assert entry["error"] == "This is an HTML page, not a feed."
    assert run.status["log"][-1]["msg"] == "Feed: This is an HTML page, not a feed."


@pytest.mark.django_db
def test_model_progress_for_a_finished_run_goes_into_its_saved_status(alice):
    run, _ = _run_with_source(alice, "done")
    progress = {
        "stage": "writing",
        "words": 120,
        "heading": "World",
        "engine": "analyst",
    }
    briefing_progress.send(
        sender=None, run_id=run.pk, progress=progress, message="Writing"
    )
    run.refresh_from_db()
    assert run.status["model"] == progress
    assert run.status["log"][-1]["msg"] == "Writing"


@pytest.mark.django_db
def test_progress_without_a_run_is_ignored(alice):
    briefing_progress.send(sender=None, run_id=None, progress={"stage": "x"})


async def test_an_update_for_a_run_in_this_process_lands_on_its_loop():
    applied = []

    class Fake:
        loop = asyncio.get_running_loop()

        def apply_update(self, kind, payload):
            applied.append((kind, payload))

    live.register(4242, Fake())
    try:
        # From another thread, as the fold worker would send it.
        where = await asyncio.to_thread(
            deliver, 4242, "fold", {"source": 1, "items": 3, "new": 1}
        )
        await asyncio.sleep(0)
    finally:
        live.unregister(4242)
    assert where == "local"
    assert applied == [("fold", {"source": 1, "items": 3, "new": 1})]


@pytest.mark.django_db(transaction=True)
async def test_an_update_for_a_run_in_another_process_goes_over_the_channel_layer(
    alice,
):
    run, source = await sync_to_async(_run_with_source)(alice, "running")
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(exec_group_for(run.pk), channel)
    where = await sync_to_async(deliver)(
        run.pk, "fold", {"source": source.pk, "items": 2, "new": 2}
    )
    assert where == "remote"
    message = await asyncio.wait_for(layer.receive(channel), 5)
    assert message == {"type": "run.fold", "source": source.pk, "items": 2, "new": 2}


@pytest.mark.django_db(transaction=True)
async def test_changes_are_published_to_the_run_group_in_order(alice):
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(group_for(77), channel)
    publisher = Publisher(layer)
    publisher.start()
    status = RunStatus(77, alice.pk)
    changes = [status.add_source(n, f"s{n}") for n in range(20)]
    for change in changes:
        publisher.publish(change)
    await publisher.close()
    # Queued while no send was on its way: they go out together, in one message.
    seqs = []
    while len(seqs) < len(changes):
        message = await asyncio.wait_for(layer.receive(channel), 5)
        assert message["type"] == "run.changes" and message["run"] == 77
        seqs += [change["seq"] for change in message["changes"]]
    assert seqs == list(range(1, 21))
    assert publisher.sent == 20 and publisher.messages < 20


@pytest.mark.django_db(transaction=True)
async def test_a_long_backlog_is_sent_in_bounded_messages_in_order(alice):
    from newsroom.runs.publish import BATCH_LIMIT

    layer = get_channel_layer()
    channels = {run: await layer.new_channel() for run in (78, 79)}
    for run, channel in channels.items():
        await layer.group_add(group_for(run), channel)
    publisher = Publisher(layer)
    publisher.start()
    statuses = {run: RunStatus(run, alice.pk) for run in channels}
    count = BATCH_LIMIT + 7
    for n in range(count):  # two runs interleaved
        for status in statuses.values():
            publisher.publish(status.add_source(n, f"s{n}"))
    await publisher.close()
    for run, channel in channels.items():
        seqs = []
        while len(seqs) < count:
            message = await asyncio.wait_for(layer.receive(channel), 5)
            assert message["run"] == run
            assert 0 < len(message["changes"]) <= BATCH_LIMIT
            assert {c["run"] for c in message["changes"]} == {run}
            seqs += [change["seq"] for change in message["changes"]]
        assert seqs == list(range(1, count + 1))


@pytest.mark.django_db(transaction=True)
async def test_a_running_executor_applies_fold_outcomes_sent_from_another_process(
    alice, server, web
):
    from newsroom.fetch.tests.server import Reply, rss
    from newsroom.runs.executor import RunExecutor
    from newsroom.runs.worker import claim_run, queue_run, worker_tag

    server.route("/slow", Reply(body=rss(), delay=1.0))
    source = await sync_to_async(add_source)(alice, web.url("/slow"), "Slow feed")
    run = await sync_to_async(queue_run)(alice)
    assert await sync_to_async(claim_run)(run, worker_tag())
    client = web.client()
    executor = RunExecutor(run, client=client)
    task = asyncio.create_task(executor.execute())
    try:
        await asyncio.wait_for(executor.listening.wait(), 10)
        # What deliver() sends from a fold worker in another process.
        await get_channel_layer().group_send(
            exec_group_for(run.pk),
            {"type": "run.fold", "source": source.pk, "items": 7, "new": 3},
        )
        status = await asyncio.wait_for(task, 30)
    finally:
        await client.aclose()
    assert status.sources[source.pk]["count"] == 7 and status.new_items == 3
    await sync_to_async(run.refresh_from_db)()
    assert run.status["items"] == 7 and run.status["sources"][0]["state"] == "ok"


@pytest.mark.django_db(transaction=True)
async def test_progress_sent_from_async_code_still_reaches_the_saved_status(alice):
    from newsroom.runs import receivers

    run, _ = await sync_to_async(_run_with_source)(alice, "done")
    # Sent on the event loop, where the database may not be used directly.
    briefing_progress.send(sender=None, run_id=run.pk, progress={"stage": "outlook"})
    # The receivers' thread works in order: once this no-op ran, so did the update.
    await asyncio.to_thread(receivers._offload.submit(lambda: None).result)
    await sync_to_async(run.refresh_from_db)()
    assert run.status["model"] == {"stage": "outlook"}
