"""Fixtures for the live area's socket tests: a hub with an injectable tick."""

from __future__ import annotations

import asyncio
import re

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.db import connections

from newsroom.live.hub import Hub, set_hub
from newsroom.live.render import ComponentCache
from newsroom.live.tick import Scheduler
from newsroom.runs.models import Run
from newsroom.runs.status import RunStatus


async def _no_wait(seconds: float) -> None:
    await asyncio.sleep(0)


async def _make_hub(autostart: bool):
    layer = get_channel_layer()
    await layer.flush()
    scheduler = Scheduler(200, cache=ComponentCache(), sleep=_no_wait)
    hub = Hub(scheduler, layer, autostart=autostart)
    set_hub(hub)
    return hub


async def _drop_hub(hub: Hub) -> None:
    await hub.shutdown()
    set_hub(None)
    layer = get_channel_layer()
    await layer.flush()
    if hasattr(layer, "close_pools"):
        await layer.close_pools()
    # The hub's database thread keeps its connection (CONN_MAX_AGE); close it so
    # the test database can be dropped.
    await database_sync_to_async(connections.close_all)()


@pytest.fixture
async def hub():
    """A hub whose tick runs only when the test calls `await hub.tick()`."""
    hub = await _make_hub(autostart=False)
    yield hub
    await _drop_hub(hub)


@pytest.fixture
async def running_hub():
    """A hub whose tick loop runs, with the wait between ticks injected away."""
    hub = await _make_hub(autostart=True)
    yield hub
    await _drop_hub(hub)


def session_of(client, user) -> str:
    client.force_login(user)
    return client.cookies["sessionid"].value


@pytest.fixture
def alice_session(client, alice) -> str:
    return session_of(client, alice)


@pytest.fixture
def bob_session(alice_session, bob) -> str:
    from django.test import Client

    return session_of(Client(), bob)


async def connect(
    path: str, session: str | None = None, origin: bytes = b"http://127.0.0.1"
) -> tuple[WebsocketCommunicator, bool, int | None]:
    from newsroom.asgi import application

    headers = [(b"origin", origin), (b"host", b"127.0.0.1")]
    if session:
        headers.append((b"cookie", f"sessionid={session}".encode()))
    communicator = WebsocketCommunicator(application, path, headers=headers)
    connected, code = await communicator.connect()
    return communicator, connected, code


@database_sync_to_async
def make_run(
    reader, sources: int = 5, categories=("World", "Science")
) -> tuple[Run, RunStatus]:
    """A run in the database with `sources` queued sources and its snapshot saved."""
    run = Run.objects.create(reader=reader, state=Run.State.RUNNING)
    status = RunStatus(run.pk, reader.pk, "running")
    for i in range(1, sources + 1):
        status.add_source(i, f"Source {i:03d}", categories[i % len(categories)])
    Run.objects.filter(pk=run.pk).update(status=status.to_json())
    return run, status


@database_sync_to_async
def save_snapshot(run: Run, status: RunStatus) -> None:
    Run.objects.filter(pk=run.pk).update(status=status.to_json())


async def publish(change: dict) -> None:
    await get_channel_layer().group_send(
        f"run.{change['run']}", {"type": "run.change", "change": change}
    )


def frame_seq(frame: str) -> int:
    match = re.match(r"<!--live (\d+)", frame)
    assert match, f"not a live frame: {frame[:40]!r}"
    return int(match.group(1))
