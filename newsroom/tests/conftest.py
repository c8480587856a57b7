from __future__ import annotations

import pytest


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
