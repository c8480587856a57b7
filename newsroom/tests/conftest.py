from __future__ import annotations

import pytest
from django.db import connections

from newsroom.tests.faultkit import FlakyProxy, is_postgres


@pytest.fixture
def fetch(settings):
    """The app's own fetch for discovery (the safe fetcher), allowed to reach the
    loopback test servers."""
    settings.NEWSROOM_ALLOW_PRIVATE_NETWORKS = True
    from newsroom.sources.fetching import safe_fetch

    return safe_fetch


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    # Readers are created in most tests; the real hasher costs ~0.5 s each here.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def db_via_proxy(transactional_db):
    """The test database reached through a FlakyProxy the test can make refuse
    (and cut) connections: a real PostgreSQL outage, seen from this process."""
    if not is_postgres():
        pytest.skip("a database outage is a PostgreSQL fault")
    db = connections["default"].settings_dict
    proxy = FlakyProxy(int(db["PORT"] or 5432), db["HOST"] or "127.0.0.1")
    saved = db["HOST"], db["PORT"]
    connections.close_all()
    db["HOST"], db["PORT"] = "127.0.0.1", str(proxy.port)
    try:
        yield proxy
    finally:
        connections.close_all()
        db["HOST"], db["PORT"] = saved
        proxy.close()
