"""channels_redis's Redis channel layer, with connections fit for listeners.

Two fixes, both in the connections the layer opens (every user gets them):

- Reads outlast the blocking pop. `receive()` waits in BZPOPMIN calls of
  `brpop_timeout` (5 s) on the server; redis-py 8 gives every read a 5 s socket
  timeout by default, so an idle receive raised TimeoutError at the same moment
  the pop ended, and a message the server popped just as the client gave up
  was lost with the dropped connection.
- A cancellation is never lost. redis-py bounds each command's write with
  `asyncio.wait_for(write, socket_timeout)`; on Python 3.11 `wait_for` returns
  the write's result instead of raising when the cancellation arrives after
  the write finished but before the waiting task resumed (CPython gh-86296,
  fixed in 3.12). A listener cancelled while a command was on its way then
  carried on into `receive()`, which loops on the pop forever: with 5 s reads
  the next read timeout ended it by luck; with reads that outlast the pop,
  nothing did, and whoever awaited the listener hung.
"""

from __future__ import annotations

import asyncio
from functools import cache

from channels_redis import core

# Seconds a read may take beyond the blocking pop before Redis counts as hung.
READ_MARGIN_S = 10
# Connecting stays quick, so a Redis that is down shows at once.
CONNECT_TIMEOUT_S = 5


@cache
def cancel_safe(connection_class: type) -> type:
    """`connection_class` whose command writes always deliver a cancellation."""

    class CancelSafe(connection_class):
        async def send_packed_command(self, command, check_health=True):
            task = asyncio.current_task()
            asked = task.cancelling() if task is not None else 0
            await super().send_packed_command(command, check_health)
            if task is not None and task.cancelling() > asked:
                # Cancelled during the write, and wait_for dropped it. The reply
                # will never be read: close the connection before the pool
                # hands it out again, then deliver the cancellation.
                await self.disconnect(nowait=True)
                raise asyncio.CancelledError

    name = f"CancelSafe{connection_class.__name__}"
    CancelSafe.__name__ = CancelSafe.__qualname__ = name
    return CancelSafe


class RedisChannelLayer(core.RedisChannelLayer):
    def create_pool(self, index):
        pool = super().create_pool(index)
        kwargs = pool.connection_kwargs
        wanted = self.brpop_timeout + READ_MARGIN_S
        current = kwargs.get("socket_timeout", 0)
        if current is not None and current < wanted:  # None: no timeout at all
            kwargs["socket_timeout"] = wanted
        kwargs.setdefault("socket_connect_timeout", CONNECT_TIMEOUT_S)
        pool.connection_class = cancel_safe(pool.connection_class)
        return pool
