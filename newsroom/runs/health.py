"""Source health after a fetch: backoff arithmetic. Pure: no Django."""

from __future__ import annotations

from datetime import datetime, timedelta

MAX_BACKOFF = timedelta(hours=24)


def backoff(error_count: int, interval: timedelta) -> timedelta:
    """Wait before retrying a source that failed `error_count` times in a row:
    the normal interval, doubling per further error, never more than a day."""
    if error_count <= 0:
        return interval
    # Cap the exponent so a long-dead source never overflows the arithmetic.
    doubled = interval * (2 ** min(error_count - 1, 20))
    return min(doubled, MAX_BACKOFF)


def next_attempt(
    now: datetime,
    error_count: int,
    interval: timedelta,
    retry_after: datetime | None = None,
) -> datetime:
    """When to try a failing source again: the backoff, or later if the server
    asked (Retry-After)."""
    when = now + backoff(error_count, interval)
    if retry_after is not None and retry_after > when:
        return retry_after
    return when
