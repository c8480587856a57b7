"""Components, the component cache and patch selection.

A component is a function of hashable args that returns HTML: a string, or a
`Fragment` built with `fragment(...)` from strings and other components. A
component whose HTML has an id on its root element becomes a `Part`: the unit a
patch frame sends. Everything else is static text, part of the region's
structure.

`component(fn, *args)` goes through the active `ComponentCache`, keyed by
(fn, args), valid while every cell the render read keeps its version. A hit
returns the very same Part or Fragment object, so patch selection skips it by
identity. Pure Python: no Django.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import re
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from newsroom.live.cells import ReadSet, capture, record

_ROOT_ID = re.compile(r'\s*<[a-zA-Z][a-zA-Z0-9-]*\b[^>]*?\sid="([^"]+)"')


class Part:
    """A component's HTML whose root element carries `id`."""

    __slots__ = ("id", "html")

    def __init__(self, id: str, html: str) -> None:
        self.id = id
        self.html = html

    def __repr__(self) -> str:
        return f"<Part #{self.id}>"


class Fragment:
    """A flat sequence of static strings and Parts: a region or a piece of one."""

    __slots__ = (
        "segments",
        "_shape",
        "_html",
        "_digest",
        "_patch_base",
        "_patch",
        "__weakref__",
    )

    def __init__(self, segments: tuple[str | Part, ...]) -> None:
        self.segments = segments
        self._shape: tuple[str, ...] | None = None
        self._html: str | None = None
        self._digest: str | None = None
        self._patch_base: weakref.ref[Fragment] | None = None
        self._patch: tuple[str, bool] | None = None

    @property
    def shape(self) -> tuple[str, ...]:
        """The structure: static text, and the ids of parts ("\\0" marks an id)."""
        if self._shape is None:
            self._shape = tuple(
                s if s.__class__ is str else "\0" + s.id for s in self.segments
            )
        return self._shape

    @property
    def html(self) -> str:
        if self._html is None:
            self._html = "".join(
                s if s.__class__ is str else s.html for s in self.segments
            )
        return self._html

    @property
    def digest(self) -> str:
        """Short fingerprint of the HTML: tells whether a page already shows it."""
        if self._digest is None:
            self._digest = hashlib.blake2b(
                self.html.encode(), digest_size=10
            ).hexdigest()
        return self._digest

    def parts(self) -> Iterator[Part]:
        return (s for s in self.segments if s.__class__ is Part)


def _flatten(pieces: Iterable[Any], out: list[str | Part]) -> None:
    for piece in pieces:
        if piece is None or piece == "":
            continue
        cls = piece.__class__
        if cls is str:
            if out and out[-1].__class__ is str:
                out[-1] += piece
            else:
                out.append(piece)
        elif cls is Part:
            out.append(piece)
        elif cls is Fragment:
            _flatten(piece.segments, out)
        elif isinstance(piece, str):  # SafeString and other str subclasses
            _flatten((str(piece),), out)
        else:
            _flatten(piece, out)


def fragment(*pieces: Any) -> Fragment:
    """Join strings, Parts, Fragments and iterables of them into one Fragment."""
    out: list[str | Part] = []
    _flatten(pieces, out)
    return Fragment(tuple(out))


def as_output(value: Any) -> Part | Fragment:
    """A component's return value as a Part (root element has an id) or Fragment."""
    if isinstance(value, (Part, Fragment)):
        return value
    if isinstance(value, str):
        html = str(value)
        match = _ROOT_ID.match(html)
        # Only a single root element is a Part: "<li id=a>..</li><li>..</li>" is not.
        if match and _single_root(html):
            return Part(match.group(1), html)
        return Fragment((html,)) if html else Fragment(())
    return fragment(value)


_TAG = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9-]*)[^>]*?(/?)>|<!--.*?-->", re.S)
_VOID = frozenset(
    "area base br col embed hr img input link meta source track wbr".split()
)


def _single_root(html: str) -> bool:
    """True when the root element closes at the very end of the HTML."""
    depth = 0
    for match in _TAG.finditer(html):
        closing, tag, selfclose = match.groups()
        if tag is None or tag.lower() in _VOID or selfclose:
            if depth == 0 and tag is not None:
                return not html[match.end() :].strip()
            continue
        depth += -1 if closing else 1
        if depth == 0:
            return not html[match.end() :].strip()
    return False


class _Entry:
    __slots__ = ("value", "readset")

    def __init__(self, value: Part | Fragment, readset: ReadSet) -> None:
        self.value = value
        self.readset = readset


class ComponentCache:
    """HTML of components keyed by (component, args).

    An entry is valid while its ReadSet is. It is admitted on its second request,
    so a component rendered once and never again cannot push out the ones every
    frame renders. Eviction is by generation: entries live in `young`; when young
    fills, it becomes `old` and the previous old is dropped; a hit in old moves
    the entry back to young. Roughly LRU, with no bookkeeping on a young hit.
    """

    def __init__(self, capacity: int = 20_000) -> None:
        if capacity < 2:
            raise ValueError("cache capacity must be at least 2")
        self.capacity = capacity
        self.young: dict[tuple, _Entry] = {}
        self.old: dict[tuple, _Entry] = {}
        self.seen_young: set[tuple] = set()
        self.seen_old: set[tuple] = set()
        self.renders = 0
        self.hits = 0

    def __len__(self) -> int:
        return len(self.young) + len(self.old)

    def get(self, fn: Callable[..., Any], args: tuple) -> Part | Fragment:
        key = (fn, args)
        entry = self.young.get(key)
        if entry is None:
            entry = self.old.pop(key, None)
            if entry is not None:
                self._put(key, entry)
        if entry is not None and entry.readset.valid():
            self.hits += 1
            record(entry.readset)
            return entry.value
        value, readset = capture(_render, fn, args)
        self.renders += 1
        if entry is not None:
            entry.value, entry.readset = value, readset
        elif key in self.seen_young or key in self.seen_old:
            self._put(key, _Entry(value, readset))
        else:
            self._seen(key)
        return value

    def forget(self, arg: Any) -> int:
        """Drop every entry whose args include `arg` (a replica no page shows any
        more), so it is not kept alive until its generation turns over. Returns
        how many were dropped."""
        dropped = 0
        for generation in (self.young, self.old):
            for key in [k for k in generation if any(a is arg for a in k[1])]:
                del generation[key]
                dropped += 1
        for seen in (self.seen_young, self.seen_old):
            seen.difference_update([k for k in seen if any(a is arg for a in k[1])])
        return dropped

    def _put(self, key: tuple, entry: _Entry) -> None:
        if len(self.young) >= self.capacity // 2:
            self.old = self.young
            self.young = {}
        self.young[key] = entry

    def _seen(self, key: tuple) -> None:
        if len(self.seen_young) >= self.capacity // 2:
            self.seen_old = self.seen_young
            self.seen_young = set()
        self.seen_young.add(key)


def _render(fn: Callable[..., Any], args: tuple) -> Part | Fragment:
    return as_output(fn(*args))


_cache: contextvars.ContextVar[ComponentCache | None] = contextvars.ContextVar(
    "live_cache", default=None
)


@contextlib.contextmanager
def using_cache(cache: ComponentCache | None) -> Iterator[None]:
    token = _cache.set(cache)
    try:
        yield
    finally:
        _cache.reset(token)


def component(fn: Callable[..., Any], *args: Any) -> Part | Fragment:
    """Render fn(*args) through the active cache (or directly without one)."""
    cache = _cache.get()
    if cache is not None:
        return cache.get(fn, args)
    return capture(_render, fn, args)[0]


def render_page(fn: Callable[..., Any], *args: Any) -> tuple[Fragment, ReadSet]:
    """A region: its Fragment and everything it read."""
    value, readset = capture(component, fn, *args)
    if value.__class__ is Part:
        value = Fragment((value,))
    return value, readset  # type: ignore[return-value]


def patch(prev: Fragment | None, new: Fragment) -> tuple[str, bool] | None:
    """The HTML a client showing `prev` needs to show `new`, and whether it is the
    whole region; None when nothing changed.

    Only parts whose HTML changed are sent; the whole region when the structure
    (static text, the parts' ids and order) changed or the client has nothing.
    Shared cached parts are skipped by identity; only re-rendered ones are
    compared as strings. The result is kept on `new`, so a hundred streams that
    showed the same page before pay for one comparison.
    """
    if prev is new:
        return None
    if prev is None:
        return new.html, True
    if new._patch_base is not None and new._patch_base() is prev:
        return new._patch
    result: tuple[str, bool] | None
    if prev.shape != new.shape:
        result = (new.html, True)
    else:
        changed = [
            n.html
            for p, n in zip(prev.segments, new.segments, strict=True)
            if p is not n and n.__class__ is Part and n.html != p.html  # type: ignore[union-attr]
        ]
        result = ("".join(changed), False) if changed else None
    # A weak reference: pages must not keep their predecessors alive in a chain.
    new._patch_base, new._patch = weakref.ref(prev), result
    return result
