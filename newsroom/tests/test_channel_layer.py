"""The Redis channel layer: idle listeners wait quietly, and stop when told to."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from django.conf import settings
from redis.asyncio.connection import (
    Connection,
    SSLConnection,
    UnixDomainSocketConnection,
)

from newsroom.channel_layer import RedisChannelLayer

needs_redis = pytest.mark.skipif(
    not settings.REDIS_URL, reason="needs Redis (set REDIS_URL)"
)

# Hang guard only: a lost cancellation never ends, a delivered one ends at once.
ENDS_WITHIN_S = 30


@pytest.fixture
async def layer():
    # A prefix of its own: flush() at the end removes only this test's keys.
    layer = RedisChannelLayer(
        hosts=[settings.REDIS_URL], prefix=f"test{uuid.uuid4().hex[:8]}"
    )
    yield layer
    await layer.flush()


@pytest.mark.parametrize(
    "url, base",
    [
        ("redis://127.0.0.1:6379/13", Connection),
        ("rediss://127.0.0.1:6379/13", SSLConnection),
        ("unix:///run/redis.sock?db=13", UnixDomainSocketConnection),
        ("redis://127.0.0.1:6379/13?socket_timeout=2", Connection),
    ],
)
def test_reads_outlast_the_blocking_pop_whatever_the_url(url, base):
    pool = RedisChannelLayer(hosts=[url]).create_pool(0)
    assert pool.connection_kwargs["socket_timeout"] > RedisChannelLayer.brpop_timeout
    # The connection class the URL chose, made cancel-safe.
    assert issubclass(pool.connection_class, base)
    assert pool.connection_class is not base


@needs_redis
@pytest.mark.slow
async def test_an_idle_receive_waits_past_the_read_timeout(layer):
    # redis-py 8's default 5 s read timeout equals the 5 s blocking pop: an idle
    # receive() used to raise TimeoutError here instead of waiting on.
    channel = await layer.new_channel()

    async def send_later():
        await asyncio.sleep(6)
        await layer.send(channel, {"type": "late", "n": 1})

    sender = asyncio.create_task(send_later())
    message = await layer.receive(channel)
    await sender
    assert message == {"type": "late", "n": 1}


async def _cancel_after(steps: int, body) -> tuple[bool, asyncio.Task]:
    task = asyncio.create_task(body())
    for _ in range(steps):
        await asyncio.sleep(0)
    asked = task.cancel()
    await asyncio.wait([task], timeout=ENDS_WITHIN_S)
    return asked, task


@needs_redis
async def test_a_cancellation_during_a_command_is_never_lost(layer):
    # Cancelled at every point of group_add's two commands (write, read, next
    # write...): on Python 3.11 redis-py's wait_for around each write dropped
    # the cancellation and the task ran on as if nothing had happened.
    channel = await layer.new_channel()
    await layer.group_add("warm", channel)  # the pool's connection is open
    finished_anyway = []
    for steps in range(16):

        async def join():
            await layer.group_add("room", channel)
            return "joined"

        asked, task = await _cancel_after(steps, join)
        if asked and not task.cancelled():
            finished_anyway.append((steps, task.result()))
    assert finished_anyway == []
    # The cancelled commands left no unread reply on a pooled connection: the
    # next commands get their own answers.
    await layer.group_send("room", {"type": "hello"})
    assert await layer.receive(channel) == {"type": "hello"}


@needs_redis
async def test_a_listener_cancelled_as_it_starts_stops(layer):
    # What the run executor's listener does when its run ends at once: join a
    # group, wait for messages, and be cancelled somewhere along the way. A lost
    # cancellation left it in receive() for good, and the run never finished.
    still_running = []
    for steps in range(16):
        channel = await layer.new_channel()

        async def listen(channel=channel):
            await layer.group_add("listeners", channel)
            while True:
                await layer.receive(channel)

        asked, task = await _cancel_after(steps, listen)
        if not task.done():
            still_running.append(steps)
            task.cancel()  # once more, so the test can end
            await asyncio.wait([task], timeout=ENDS_WITHIN_S)
        assert asked
    assert still_running == []
