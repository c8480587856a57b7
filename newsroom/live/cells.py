"""Cells: versioned reactive values, and capture, which records what a render read.

A `Cell` holds a value and a version that every write bumps. `capture(fn)` runs
`fn` and returns its result with a `ReadSet`: every cell it read and the version
it saw. A ReadSet is what a stream watches and what a cache entry is valid under.

ReadSets are shared objects: a hundred streams showing the same cached region all
hold the same ReadSet, so a write notifies one ReadSet, which marks its hundred
streams dirty, and moving a stream to a new render's reads is one detach and one
attach, whatever the number of cells. Pure Python: no Django.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

T = TypeVar("T")

# Bumped by every write anywhere: a ReadSet checked at the current epoch is
# still valid without looking at its cells again (many streams, one check).
_epoch = 0


def epoch() -> int:
    return _epoch


class Watcher(Protocol):
    def cells_changed(self) -> None: ...


class Cell:
    """A versioned value. `get()` inside a capture records the read."""

    __slots__ = ("value", "version", "readsets", "name", "__weakref__")

    def __init__(self, value: Any = None, name: str = "") -> None:
        self.value = value
        self.version = 0
        self.readsets: set[ReadSet] = set()
        self.name = name

    def __repr__(self) -> str:
        return f"<Cell {self.name or id(self)} v{self.version}>"

    def get(self) -> Any:
        cap = _current.get()
        if cap is not None:
            cap.direct.setdefault(self, self.version)
        return self.value

    def peek(self) -> Any:
        """The value without recording a read (for writers, not renders)."""
        return self.value

    def set(self, value: Any) -> None:
        self.value = value
        self.touch()

    def touch(self) -> None:
        """Record that the value changed in place: a new version, watchers told."""
        global _epoch
        self.version += 1
        _epoch += 1
        if self.readsets:
            for readset in tuple(self.readsets):
                readset.fire()


class ReadSet:
    """Cells read by one render and the versions seen; watched by streams."""

    __slots__ = ("versions", "watchers", "checked", "fired")

    def __init__(self, versions: dict[Cell, int]) -> None:
        self.versions = versions
        self.watchers: set[Watcher] = set()
        self.checked = -1
        self.fired = False

    def __len__(self) -> int:
        return len(self.versions)

    def __contains__(self, cell: Cell) -> bool:
        return cell in self.versions

    def valid(self) -> bool:
        """True while every cell still has the version the render saw."""
        if self.fired:
            return False
        if self.checked == _epoch:
            return True
        for cell, version in self.versions.items():
            if cell.version != version:
                return False
        self.checked = _epoch
        return True

    def attach(self, watcher: Watcher) -> None:
        if not self.watchers:
            for cell in self.versions:
                cell.readsets.add(self)
        self.watchers.add(watcher)
        if not self.valid():
            # A write landed between the render and the watch: do not miss it.
            watcher.cells_changed()

    def detach(self, watcher: Watcher) -> None:
        self.watchers.discard(watcher)
        if not self.watchers:
            for cell in self.versions:
                cell.readsets.discard(self)

    def fire(self) -> None:
        # Versions only grow, so a fired set stays stale: tell watchers once.
        if self.fired:
            return
        self.fired = True
        for watcher in tuple(self.watchers):
            watcher.cells_changed()


class _Capture:
    __slots__ = ("direct", "nested")

    def __init__(self) -> None:
        self.direct: dict[Cell, int] = {}
        self.nested: list[ReadSet] = []

    def readset(self) -> ReadSet:
        if not self.direct and len(self.nested) == 1:
            # One nested result and nothing else: share its ReadSet object.
            return self.nested[0]
        versions: dict[Cell, int] = {}
        seen: set[int] = set()
        for nested in self.nested:
            if id(nested) not in seen:
                seen.add(id(nested))
                versions.update(nested.versions)
        versions.update(self.direct)
        return ReadSet(versions)


_current: contextvars.ContextVar[_Capture | None] = contextvars.ContextVar(
    "live_capture", default=None
)


def capture(fn: Callable[..., T], *args: Any) -> tuple[T, ReadSet]:
    """Run fn(*args); return its result and the ReadSet of every cell it read.

    The reads also count for an enclosing capture, so a page that renders a
    component watches what the component read."""
    outer = _current.get()
    cap = _Capture()
    token = _current.set(cap)
    try:
        result = fn(*args)
    finally:
        _current.reset(token)
    readset = cap.readset()
    if outer is not None:
        outer.nested.append(readset)
    return result, readset


def record(readset: ReadSet) -> None:
    """Count a ReadSet as read by the enclosing capture (a cache hit's reads)."""
    cap = _current.get()
    if cap is not None:
        cap.nested.append(readset)
