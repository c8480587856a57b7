from __future__ import annotations

import pytest

from newsroom.fetch.tests.server import LocalServer


@pytest.fixture
def server():
    server = LocalServer()
    yield server
    server.close()
