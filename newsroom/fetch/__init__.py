"""The safe fetcher: http(s) only, public addresses only (checked and pinned),
redirects followed by hand and re-checked, bodies capped after decompression.

    result = await fetch(url, etag=..., last_modified=..., client=make_client())
    result = fetch_sync(url)            # from synchronous code

Every refusal or failure raises FetchError; str(error) is shown to the reader.
"""

from __future__ import annotations

from newsroom.fetch.client import (
    MAX_REDIRECTS,
    FetchError,
    FetchResult,
    fetch,
    fetch_sync,
    parse_retry_after,
)
from newsroom.fetch.network import SafeClient, make_client

__all__ = [
    "MAX_REDIRECTS",
    "FetchError",
    "FetchResult",
    "SafeClient",
    "fetch",
    "fetch_sync",
    "make_client",
    "parse_retry_after",
]
