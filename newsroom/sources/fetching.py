"""The fetch that discovery uses in the app: the safe fetcher of newsroom.fetch.

Discovery itself takes any fetch callable; this adapter turns the safe fetcher's
FetchError into discovery's FetchFailed so its plain-words message reaches the form.
"""

from __future__ import annotations

from newsroom.sources.discovery import Fetched, FetchFailed

# Discovery runs inside a request and may probe up to ten addresses: each gets
# a shorter budget than a run's fetch so a dead site cannot hold the page for long.
DISCOVERY_TIMEOUT = 10.0


def safe_fetch(url: str) -> Fetched:
    from django.conf import settings

    from newsroom.fetch import FetchError, fetch_sync

    try:
        return fetch_sync(
            url, timeout=min(settings.NEWSROOM_FETCH_TIMEOUT, DISCOVERY_TIMEOUT)
        )
    except FetchError as e:
        raise FetchFailed(str(e)) from e
