"""How many kept pages fit and how long an idle one may stay.

Pure arithmetic, no Django: the reaper and the registry feed it numbers the pool
measured (available memory, reserve, per-tab memory, tab limit).

- `session_cap`: pages memory admits, counting the `open` ones (their memory is
  already among the used), never above `max_tabs - 1` so one tab is always left
  for rendering sources.
- `idle_limit`: the fuller the machine, the shorter a page may idle; the prior
  with one page open, `prior / cap` when exactly full, 0 beyond.
- `reclaim_count`: how many of the longest-idle pages to close so the rest fit.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction


@dataclass(frozen=True)
class Room:
    """What the pool measured: megabytes available (None: unknown) and the limits."""

    available_mb: int | None
    reserve_mb: int
    tab_mb: int
    max_tabs: int


def session_cap(room: Room, open_pages: int) -> int:
    """Kept pages this machine can hold now, the `open` ones included.

    May be below `open_pages`: something else ate the memory.
    """
    tabs = max(room.max_tabs - 1, 0)
    if room.available_mb is None:
        return tabs
    spare = room.available_mb - room.reserve_mb
    # Floor division rounds towards minus infinity: almost fitting is not fitting.
    fit = spare // max(room.tab_mb, 1) + open_pages
    return min(max(fit, 0), tabs)


def idle_limit(prior: float, open_pages: int, cap: int) -> float:
    """Seconds a page may idle while `open_pages` are open and `cap` fit."""
    if cap == 0 or open_pages > cap:
        return 0.0
    # One fraction instead of 1 - (open - 1) / cap: no rounding from subtracting.
    return float(Fraction(prior) * Fraction(cap + 1 - max(open_pages, 1), cap))


def reclaim_count(idle: list[float], others: int, prior: float, cap: int) -> int:
    """How many of `idle` (seconds idle, longest first) to close.

    `others` are pages that hold a slot without being in the list (busy ones,
    ones about to open). Closing one lengthens the limit for the rest, so stop at
    the first page that is within the limit of what remains.
    """
    open_pages = len(idle) + others
    count = 0
    for waited in idle:
        if waited < idle_limit(prior, open_pages, cap):
            break
        count += 1
        open_pages -= 1
    return count
