"""The fetch that discovery uses in the app: the safe fetcher of newsroom.fetch.

Discovery itself takes any fetch callable; this adapter turns the safe fetcher's
FetchError into discovery's FetchFailed so its plain-words message reaches the form.
"""

from __future__ import annotations

from newsroom.sources.discovery import Fetched, FetchFailed


def safe_fetch(url: str) -> Fetched:
    from newsroom.fetch import FetchError, fetch_sync

    try:
        return fetch_sync(url)
    except FetchError as e:
        raise FetchFailed(str(e)) from e
