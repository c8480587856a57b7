"""Live streams over real WebSockets (Channels' communicator, the full ASGI stack:
origin check, session authentication, routing) with the tick called by the test."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from django.test import Client
from django.urls import reverse

from newsroom.briefing.signals import briefing_stored
from newsroom.live import loaders
from newsroom.live import pages as live_pages
from newsroom.live.tests.conftest import (
    connect,
    frame_seq,
    make_run,
    publish,
    save_snapshot,
)

pytestmark = pytest.mark.django_db(transaction=True)


async def ack(communicator, frame: str) -> None:
    await communicator.send_to(text_data=f'{{"ack": {frame_seq(frame)}}}')


async def test_a_socket_without_a_session_is_closed_with_4401(hub):
    communicator, connected, _ = await connect("/ws/live/sidebar/")
    assert connected
    assert await communicator.receive_output(timeout=2) == {
        "type": "websocket.close",
        "code": 4401,
    }


async def test_a_socket_from_another_origin_is_refused(hub, alice_session):
    communicator, connected, _ = await connect(
        "/ws/live/sidebar/", alice_session, origin=b"http://evil.example"
    )
    assert not connected
    assert hub.streams() == []


async def test_a_run_stream_sends_only_the_row_that_changed(hub, alice, alice_session):
    run, status = await make_run(alice, sources=50)
    served = await database_sync_to_async(live_pages.run_page)(run.pk, alice.pk)
    communicator, connected, _ = await connect(
        f"/ws/live/run/{run.pk}/?have={served.digest}", alice_session
    )
    assert connected
    await hub.tick()
    assert await communicator.receive_nothing()  # the page already shows this

    target = hub.received + 1
    await publish(status.fold_outcome(17, items=12, new=3))
    await hub.until_received(target)
    await hub.tick()
    frame = await communicator.receive_from()
    assert frame.startswith("<!--live 1-->")
    assert f'id="live-src-{run.pk}-17"' in frame
    assert "12 <i>+3</i>" in frame
    assert f'id="live-src-{run.pk}-16"' not in frame  # unchanged rows stay home
    assert 'id="live-sidebar"' not in frame
    assert len(frame) < 1500
    await communicator.disconnect()


async def test_a_burst_of_changes_becomes_one_frame(hub, alice, alice_session):
    run, status = await make_run(alice, sources=20)
    communicator, _, _ = await connect(f"/ws/live/run/{run.pk}/", alice_session)
    await hub.tick()
    await ack(communicator, await communicator.receive_from())

    target = hub.received + 100
    for n in range(100):
        sid = n % 20 + 1
        await publish(status.report(sid, "ok", message=f"S{sid}: {n}", count=n, ms=n))
    await hub.until_received(target)
    stream = hub.streams()[0]
    renders = stream.renders
    await hub.tick()
    assert stream.renders == renders + 1
    frame = await communicator.receive_from()
    assert "<b>20</b><span>ok</span>" in frame  # totals after all 100 changes
    assert await communicator.receive_nothing()
    await communicator.disconnect()


async def test_a_new_part_id_changes_the_structure_and_sends_the_region(
    hub, alice, alice_session
):
    run, status = await make_run(alice, sources=3)
    communicator, _, _ = await connect(f"/ws/live/run/{run.pk}/", alice_session)
    await hub.tick()
    await ack(communicator, await communicator.receive_from())
    target = hub.received + 1
    await publish(status.add_source(99, "Late addition", "World"))
    await hub.until_received(target)
    await hub.tick()
    frame = await communicator.receive_from()
    assert frame.startswith("<!--live 2 full-->")
    assert '<div id="live-sidebar"' in frame and "Late addition" in frame
    await communicator.disconnect()


async def test_another_readers_page_gets_no_frame_and_cannot_open_the_run(
    hub, alice, bob, alice_session, bob_session
):
    run, status = await make_run(alice, sources=5)
    bob_page = await database_sync_to_async(live_pages.sidebar_page)(bob.pk)
    bobs, _, _ = await connect(f"/ws/live/sidebar/?have={bob_page.digest}", bob_session)
    alices, _, _ = await connect(f"/ws/live/run/{run.pk}/", alice_session)
    await hub.tick()
    await ack(alices, await alices.receive_from())
    assert await bobs.receive_nothing()

    target = hub.received + 10
    for n in range(10):
        await publish(status.report(n % 5 + 1, "ok", message="ok", count=n))
    await hub.until_received(target)
    bob_stream = next(s for s in hub.streams() if s.reader_id == bob.pk)
    assert bob_stream not in hub.scheduler.dirty
    await hub.tick()
    assert await alices.receive_from()
    assert await bobs.receive_nothing()
    assert bob_stream.frames == 0

    snooping, _, _ = await connect(f"/ws/live/run/{run.pk}/", bob_session)
    assert await snooping.receive_output(timeout=2) == {
        "type": "websocket.close",
        "code": 4404,
    }
    for communicator in (bobs, alices):
        await communicator.disconnect()


async def test_a_change_naming_another_reader_is_not_applied(
    hub, alice, bob, alice_session
):
    run, status = await make_run(alice, sources=2)
    communicator, _, _ = await connect(f"/ws/live/run/{run.pk}/", alice_session)
    await hub.tick()
    await ack(communicator, await communicator.receive_from())
    forged = status.report(1, "error", message="forged", error="x")
    forged["reader"] = bob.pk
    target = hub.received + 1
    await publish(forged)
    await hub.until_received(target)
    await hub.tick()
    assert await communicator.receive_nothing()
    await communicator.disconnect()


async def test_closing_the_socket_releases_every_watch(hub, alice, alice_session):
    run, status = await make_run(alice, sources=10)
    communicator, _, _ = await connect(f"/ws/live/run/{run.pk}/", alice_session)
    await hub.tick()
    await communicator.receive_from()
    replica = hub.runs[run.pk].replica
    assert any(cell.readsets for cell in replica.cells())
    await communicator.disconnect()
    await asyncio.sleep(0)
    assert hub.streams() == []
    assert hub.runs == {} and hub.readers == {}
    assert not any(cell.readsets for cell in replica.cells())
    assert hub.scheduler.cache.forget(replica) == 0  # its cached parts went too


async def test_logging_out_closes_that_readers_streams_with_4401(
    hub, client, alice, bob, alice_session, bob_session
):
    await make_run(alice, sources=3)
    sidebar, _, _ = await connect("/ws/live/sidebar/", alice_session)
    article, _, _ = await connect("/ws/live/article/", alice_session)
    bobs, _, _ = await connect("/ws/live/sidebar/", bob_session)
    await hub.tick()
    for communicator in (sidebar, article, bobs):
        await ack(communicator, await communicator.receive_from())

    target = hub.received + 1
    response = await sync_to_async(client.post)(reverse("logout"))  # alice's session
    assert response.status_code == 302
    await hub.until_received(target)
    for communicator in (sidebar, article):
        assert await communicator.receive_output(timeout=2) == {
            "type": "websocket.close",
            "code": 4401,
        }
    assert [s.reader_id for s in hub.streams()] == [bob.pk]
    assert await bobs.receive_nothing()
    await bobs.disconnect()


async def test_the_dashboard_follows_a_new_run(hub, alice, alice_session):
    communicator, _, _ = await connect("/ws/live/sidebar/", alice_session)
    await hub.tick()
    first = await communicator.receive_from()
    assert "No runs yet" in first
    await ack(communicator, first)

    target = hub.received + 1
    run, status = await make_run(alice, sources=4)  # post_save tells the reader's group
    await hub.until_received(target)
    for _ in range(50):  # the hub loads the new run, then queues the switch as a tx
        if hub.scheduler.txs:
            break
        await asyncio.sleep(0.02)
    await hub.tick()
    frame = await communicator.receive_from()
    assert frame.startswith("<!--live 2 full-->")
    assert f"Run #{run.pk}" in frame and "Source 004" in frame
    await communicator.disconnect()


async def test_a_stored_briefing_rerenders_the_article_and_not_the_sidebar(
    hub, alice, alice_session, monkeypatch
):
    await make_run(alice, sources=3)
    sidebar, _, _ = await connect("/ws/live/sidebar/", alice_session)
    article, _, _ = await connect("/ws/live/article/", alice_session)
    await hub.tick()
    for communicator in (sidebar, article):
        await ack(communicator, await communicator.receive_from())
    streams = {s.name: s for s in hub.streams()}

    # The Briefing model is the briefing area's; stand in its loader's answer.
    monkeypatch.setattr(
        loaders,
        "latest_briefing",
        lambda reader_id: {
            "title": "Briefing for Monday",
            "text": "## World\n\nCalm.",
            "url": "",
        },
    )
    target = hub.received + 1
    await database_sync_to_async(briefing_stored.send)(
        sender=None, briefing=None, reader=alice
    )
    await hub.until_received(target)
    for _ in range(50):
        if hub.scheduler.txs:
            break
        await asyncio.sleep(0.02)
    await hub.tick()
    frame = await article.receive_from()
    assert "Briefing for Monday" in frame and "<h3>World</h3>" in frame
    assert streams["article"].renders == 2
    assert streams["sidebar"].renders == 1
    assert await sidebar.receive_nothing()
    for communicator in (sidebar, article):
        await communicator.disconnect()


async def test_a_gap_in_the_changes_reloads_the_snapshot(
    running_hub, alice, alice_session
):
    run, status = await make_run(alice, sources=4)
    communicator, _, _ = await connect(f"/ws/live/run/{run.pk}/", alice_session)
    await ack(communicator, await communicator.receive_from(timeout=5))

    status.report(1, "ok", message="lost on the way", count=5)  # never published
    change = status.report(2, "error", message="S2 failed", error="timed out")
    await save_snapshot(run, status)
    await publish(change)
    seen = ""
    while "lost on the way" not in seen or "S2 failed" not in seen:
        frame = await communicator.receive_from(timeout=5)
        seen += frame
        await ack(communicator, frame)
    replica = running_hub.runs[run.pk].replica
    assert replica.seq == status.seq
    assert replica.status.counts["ok"] == 1 and replica.status.counts["error"] == 1
    await communicator.disconnect()


async def test_published_batches_reach_the_page_and_a_gap_inside_one_reloads(
    running_hub, alice, alice_session
):
    from newsroom.runs.publish import Publisher

    run, status = await make_run(alice, sources=6)
    communicator, _, _ = await connect(f"/ws/live/run/{run.pk}/", alice_session)
    await ack(communicator, await communicator.receive_from(timeout=5))

    publisher = Publisher()
    publisher.start()
    changes = [
        status.report(1, "ok", message="S1 in a batch", count=4),
        status.report(2, "fetching", message="S2 fetching"),
    ]
    status.report(3, "ok", message="lost on the way", count=5)  # never published
    changes.append(status.report(4, "error", message="S4 failed", error="timed out"))
    await save_snapshot(run, status)
    for change in changes:
        publisher.publish(change)
    await publisher.close()
    seen = ""
    while not all(
        text in seen for text in ("S1 in a batch", "lost on the way", "S4 failed")
    ):
        frame = await communicator.receive_from(timeout=5)
        seen += frame
        await ack(communicator, frame)
    replica = running_hub.runs[run.pk].replica
    assert replica.seq == status.seq
    assert replica.status.counts["ok"] == 2 and replica.status.counts["error"] == 1
    assert replica.status.counts["fetching"] == 1
    await communicator.disconnect()


def test_the_dashboard_page_serves_the_region_and_its_socket(alice_session, alice):
    page = _get_dashboard(alice_session)
    assert 'ws-connect="/ws/live/sidebar/?have=' in page
    assert 'ws-connect="/ws/live/article/?have=' in page
    assert page.count("live/live.js") == 1
    assert 'id="live-sidebar"' in page and 'id="live-article"' in page


def _get_dashboard(session: str) -> str:
    client = Client()
    client.cookies["sessionid"] = session
    response = client.get(reverse("dashboard"))
    assert response.status_code == 200
    return response.content.decode()
