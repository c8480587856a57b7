from __future__ import annotations

import pytest

from newsroom.fetch.tests.server import LocalServer, client_trusting


@pytest.fixture
def server():
    server = LocalServer()
    yield server
    server.close()


@pytest.fixture
def fast_limits(settings):
    # Short limits so timeout cases finish quickly; the rules are the same.
    # Generous enough for a loaded 2-core machine, short enough to finish quickly.
    settings.NEWSROOM_FETCH_TIMEOUT = 2.0
    settings.NEWSROOM_FETCH_CONNECT_TIMEOUT = 2.0
    settings.NEWSROOM_FETCH_READ_TIMEOUT = 1.5
    return settings


@pytest.fixture
def web(server):
    """Host names for the tests: `feeds.test` and `other.test` reach the local
    server (stand-ins for public sites); `private.test` resolves to 10.0.0.5;
    127.0.0.1 itself is held to the private-network rule (off)."""

    async def resolver(host, port):
        return {"private.test": ["10.0.0.5"]}.get(host, ["127.0.0.1"])

    class Web:
        def url(self, path: str, host: str = "feeds.test") -> str:
            return f"http://{host}:{server.port}{path}"

        def client(self):
            return client_trusting({"feeds.test", "other.test"}, resolver)

    return Web()


@pytest.fixture(autouse=True)
def close_worker_thread_connections():
    """Async tests reach the database through asgiref's worker thread; close its
    connection afterwards so PostgreSQL can drop the test database at the end."""
    yield
    import asyncio

    from asgiref.sync import sync_to_async
    from django.db import connections

    async def close() -> None:
        await sync_to_async(connections.close_all)()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(close())
