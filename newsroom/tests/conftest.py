from __future__ import annotations

import pytest


@pytest.fixture
def fetch(settings):
    """The app's own fetch for discovery (the safe fetcher), allowed to reach the
    loopback test servers."""
    settings.NEWSROOM_ALLOW_PRIVATE_NETWORKS = True
    from newsroom.sources.fetching import safe_fetch

    return safe_fetch
