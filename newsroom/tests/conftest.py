from __future__ import annotations

import importlib.util
from dataclasses import dataclass

import pytest


@dataclass
class _Fetched:
    url: str
    status: int
    content_type: str
    body: bytes
    charset: str | None = None


def _loopback_fetch(url: str) -> _Fetched:
    # Only until the runs branch's safe fetcher (newsroom.fetch) is merged.
    import httpx

    from newsroom.sources.discovery import FetchFailed

    assert url.startswith("http://127.0.0.1:"), url
    try:
        r = httpx.get(url, follow_redirects=True, timeout=5, trust_env=False)
    except httpx.HTTPError as e:
        raise FetchFailed(str(e)) from e
    return _Fetched(str(r.url), r.status_code, r.headers.get("content-type", ""), r.content)


@pytest.fixture
def fetch(settings):
    """The app's own fetch for discovery, allowed to reach the loopback test servers."""
    settings.NEWSROOM_ALLOW_PRIVATE_NETWORKS = True
    if importlib.util.find_spec("newsroom.fetch") is None:
        return _loopback_fetch
    from newsroom.sources.fetching import safe_fetch

    return safe_fetch
