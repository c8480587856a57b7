"""The reference registry's vectors for capacity, idle limit and reclaim count."""

from __future__ import annotations

import pytest

from sessions_app.limits import Room, idle_limit, reclaim_count, session_cap

PRIOR = 300.0


def room(available: int | None, max_tabs: int) -> Room:
    return Room(available_mb=available, reserve_mb=1024, tab_mb=200, max_tabs=max_tabs)


@pytest.mark.parametrize(
    ("name", "available", "max_tabs", "open_pages", "cap"),
    [
        # 3024 - 1024 = 2000 MB spare: ten more, twelve with the two open.
        ("memory decides", 3024, 64, 2, 12),
        ("tab limit keeps one tab for rendering", 3024, 4, 2, 3),
        ("unknown memory: tab limit only", None, 8, 0, 7),
        # 500 MB short of the reserve: three pages must go, none of three fit.
        ("short of memory, three open", 524, 64, 3, 0),
        ("short of memory, five open", 524, 64, 5, 2),
        ("never below zero", 0, 64, 0, 0),
        ("one tab means no kept pages", None, 1, 0, 0),
    ],
)
def test_capacity_comes_from_memory(name, available, max_tabs, open_pages, cap):
    assert session_cap(room(available, max_tabs), open_pages) == cap, name


@pytest.mark.parametrize(
    ("open_pages", "cap", "limit"),
    [
        (1, 10, PRIOR),
        (1, 1, PRIOR),
        (6, 10, PRIOR / 2),
        (10, 10, PRIOR / 10),
        (11, 10, 0.0),
        (1, 0, 0.0),
        (0, 4, PRIOR),
    ],
)
def test_the_fuller_the_shorter_the_idle_limit(open_pages, cap, limit):
    assert idle_limit(PRIOR, open_pages, cap) == limit


@pytest.mark.parametrize(
    ("name", "idle", "others", "cap", "count"),
    [
        ("room enough: none reach the limit", [10, 5], 0, 10, 0),
        ("one open, idle past the prior", [301], 0, 10, 1),
        # Full: the limit is a third of the prior; closing the 200 s page
        # lengthens it and the next one stays.
        ("full: close until the rest fit", [200, 60, 1], 0, 3, 1),
        ("opening one more when full: free one slot", [2, 1], 1, 2, 1),
        ("busy pages hold slots; only idle ones can go", [1], 3, 2, 1),
        ("nothing idle", [], 2, 1, 0),
    ],
)
def test_reclaims_the_oldest_until_it_fits(name, idle, others, cap, count):
    assert reclaim_count([float(s) for s in idle], others, PRIOR, cap) == count, name
