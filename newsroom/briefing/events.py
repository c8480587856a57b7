"""Events from items, and the connections between events.

Pure: no Django. Input is a list of ItemView (plain data) with one unit
vector per item; output is Event and Edge records, JSON-ready via to_json().
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from newsroom.briefing import text as textlib
from newsroom.briefing.cluster import (
    ClusterResult,
    LshIndex,
    cluster,
    cluster_all_pairs,
)

# Importance halves for every this many hours an event has been quiet.
RECENCY_HALF_LIFE_HOURS = 12.0
# Events closer than this (and not the same story) are linked "close in meaning".
RELATED_THRESHOLD = 0.55
# A name carried by more than this share of the events (and more than four)
# says little about a link: it is the day's backdrop, not a connection.
COMMON_NAME_SHARE = 0.03
MAX_EDGES_PER_EVENT = 5

_STOPWORDS = frozenset(
    """a about after again against all also an and any are as at be because been
    before being between both but by can could did do does for from had has have
    he her his how i if in into is it its itself last more most new next no not now
    of off on once one only or other our out over own said says same she should so
    some such than that the their them then there these they this those through to
    too two under until up very was we were what when where which while who why
    will with would year years you week day days today yesterday tuesday monday
    wednesday thursday friday saturday sunday people told percent per cent after""".split()
)


@dataclass
class ItemView:
    id: int
    title: str
    text: str
    url: str
    source_id: int
    source_name: str
    source_host: str
    published: datetime | None
    first_seen: datetime
    category_id: int | None = None
    names: list[textlib.Name] = field(default_factory=list)

    @property
    def seen(self) -> datetime:
        return self.published or self.first_seen

    @property
    def embed_text(self) -> str:
        body = self.text[:400] if self.text else ""
        return f"{self.title}. {body}" if body else self.title


@dataclass
class Event:
    key: str
    items: list[ItemView]  # most representative first
    vector: np.ndarray
    category_id: int | None = None
    names: list[textlib.Name] = field(default_factory=list)
    importance: float = 0.0
    story: str = ""
    previous: list[dict] = field(default_factory=list)
    left_out: bool = False  # its story was covered lately and it brings nothing new

    @property
    def lead_item(self) -> ItemView:
        return self.items[0]

    @property
    def headline(self) -> str:
        return self.lead_item.title or self.lead_item.url

    @property
    def lead(self) -> str:
        for item in self.items:
            sentence = textlib.lead(item.text)
            if sentence:
                return sentence
        return ""

    @property
    def sources(self) -> list[str]:
        return sorted({i.source_name for i in self.items})

    @property
    def independent_sources(self) -> int:
        # Two feeds of one site are one voice.
        return len({i.source_host or f"source-{i.source_id}" for i in self.items})

    @property
    def first_seen(self) -> datetime:
        return min(i.seen for i in self.items)

    @property
    def last_seen(self) -> datetime:
        return max(i.seen for i in self.items)

    @property
    def item_ids(self) -> list[int]:
        return [i.id for i in self.items]

    def to_json(self, categories: dict[int, str]) -> dict:
        return {
            "key": self.key,
            "story": self.story,
            "headline": self.headline,
            "lead": self.lead,
            "category": self.category_id,
            "category_name": categories.get(self.category_id or -1, ""),
            "items": self.item_ids,
            "sources": self.sources,
            "independent_sources": self.independent_sources,
            "first_seen": self.first_seen.isoformat(),
            "last_seen": self.last_seen.isoformat(),
            "importance": round(self.importance, 4),
            "names": [n.text for n in self.names[:12]],
            "previous": self.previous,
        }


@dataclass
class Edge:
    a: str
    b: str
    kind: str  # "names" or "meaning"
    shared: list[str]
    weight: float

    @property
    def label(self) -> str:
        if self.kind == "names":
            return "Both involve " + _join(self.shared)
        return (
            "Close in meaning: " + _join(self.shared)
            if self.shared
            else "Close in meaning"
        )

    def to_json(self) -> dict:
        return {
            "a": self.a,
            "b": self.b,
            "kind": self.kind,
            "shared": self.shared,
            "label": self.label,
            "weight": round(self.weight, 4),
        }


def _join(words: Sequence[str]) -> str:
    words = list(words)
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " and " + words[-1]


def importance(sources: int, last_seen: datetime, now: datetime) -> float:
    """More independent sources weigh more (with diminishing returns); quiet
    events fade with a half-life. 1 source just now -> 1.0."""
    hours = max(0.0, (now - last_seen).total_seconds() / 3600)
    return (1 + math.log2(max(1, sources))) * 0.5 ** (hours / RECENCY_HALF_LIFE_HOURS)


def build_events(
    items: Sequence[ItemView],
    vectors: np.ndarray,
    threshold: float,
    now: datetime,
    index: LshIndex | None = None,
    all_pairs: bool = False,
) -> tuple[list[Event], ClusterResult]:
    """Cluster items into events, most important first (ties: earliest first).
    all_pairs: score every pair instead of LSH candidates (the benchmark's baseline)."""
    titles = [textlib.normalise_title(i.title) for i in items]
    # A title of one or two words ("Live updates") is too generic to join on.
    titles = [t if len(t.split()) >= 4 else "" for t in titles]
    urls = [textlib.normalise_url(i.url) for i in items]
    gaz = textlib.gazetteer()
    for item in items:
        item.names = textlib.extract_names(
            f"{item.title}. {textlib.lead(item.text, 600)}", gaz
        )
    # Places tell stories apart ("quake in Japan", "quake in Chile"). People do
    # not: one outlet names the minister, another only her ministry.
    keys = [frozenset(n.text for n in i.names if n.kind == "place") for i in items]
    if all_pairs:
        result = cluster_all_pairs(vectors, titles, urls, threshold, keys)
    else:
        result = cluster(vectors, titles, urls, threshold, index, keys)
    events: list[Event] = []
    for group in result.groups:
        members = [items[g] for g in group]
        block = vectors[group]
        centroid = block.mean(axis=0)
        norm = float(np.linalg.norm(centroid))
        centroid = centroid / norm if norm else centroid
        # The item nearest the centroid speaks for the event; ties go to the
        # longer text, then the earlier item, so the choice is deterministic.
        closeness = block @ centroid
        order = sorted(
            range(len(members)),
            key=lambda k: (
                -round(float(closeness[k]), 6),
                -len(members[k].text),
                members[k].id,
            ),
        )
        members = [members[k] for k in order]
        cats = Counter(m.category_id for m in members if m.category_id is not None)
        category = (
            sorted(cats.items(), key=lambda kv: (-kv[1], kv[0]))[0][0] if cats else None
        )
        event = Event(
            key="",
            items=members,
            vector=centroid.astype(np.float32),
            category_id=category,
        )
        event.importance = importance(event.independent_sources, event.last_seen, now)
        events.append(event)
    events.sort(key=lambda e: (-e.importance, e.first_seen, e.items[0].id))
    for n, event in enumerate(events, start=1):
        event.key = f"e{n}"
    return events, result


def attach_names(events: Sequence[Event]) -> None:
    """Each event's names, most mentioned first (from its items' names)."""
    for event in events:
        counts: Counter[str] = Counter()
        kinds: dict[str, textlib.Name] = {}
        for item in event.items[:8]:
            for name in item.names:
                counts[name.text] += 1
                kinds.setdefault(name.text, name)
        event.names = [
            kinds[t] for t, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        ]


def _content_words(event: Event) -> Counter[str]:
    words: Counter[str] = Counter()
    for item in event.items[:6]:
        for w in re.findall(
            r"[a-z][a-z'-]{2,}", f"{item.title} {item.text[:300]}".lower()
        ):
            if w not in _STOPWORDS:
                words[w] += 1
    return words


def connect(
    events: Sequence[Event],
    same_threshold: float,
    related_threshold: float = RELATED_THRESHOLD,
    index: LshIndex | None = None,
) -> list[Edge]:
    """Edges between events sharing names, or close in meaning but below the
    same-story threshold. Pairs come from an inverted index of names and from
    LSH buckets, never from all pairs."""
    by_key = {e.key: e for e in events}
    holders: dict[str, list[int]] = {}
    kinds: dict[str, str] = {}
    for n, event in enumerate(events):
        for name in event.names:
            holders.setdefault(name.text, []).append(n)
            kinds[name.text] = name.kind
    limit = max(4, int(len(events) * COMMON_NAME_SHARE))
    shared: dict[tuple[int, int], list[str]] = {}
    for name, owners in holders.items():
        if len(owners) < 2 or len(owners) > limit:
            continue
        for x in range(len(owners)):
            for y in range(x + 1, len(owners)):
                shared.setdefault((owners[x], owners[y]), []).append(name)
    kind_rank = {"actor": 0, "organisation": 1, "place": 2}
    candidates: list[tuple[float, int, int, list[str] | None]] = []
    for (x, y), names in shared.items():
        names.sort(key=lambda t: (kind_rank.get(kinds[t], 3), t))
        weight = sum(1.0 if kinds[t] != "place" else 0.6 for t in names)
        candidates.append((weight, x, y, names[:3]))

    if len(events) >= 2:
        vectors = np.stack([e.vector for e in events])
        n = len(events)
        keys: list[np.ndarray] = []
        sims_found: list[np.ndarray] = []
        for members, block in (index or LshIndex(bits=4, tables=16)).blocks(vectors):
            sims = block @ block.T
            close = (sims >= related_threshold) & (sims < same_threshold)
            i, j = np.nonzero(np.triu(close, k=1))
            if len(i):
                a, b = members[i], members[j]
                keys.append(np.minimum(a, b) * n + np.maximum(a, b))
                sims_found.append(sims[i, j])
        if keys:
            unique, first = np.unique(np.concatenate(keys), return_index=True)
            close_sims = np.concatenate(sims_found)[first]
            for key, sim in zip(unique.tolist(), close_sims.tolist(), strict=True):
                x, y = divmod(key, n)
                if (x, y) not in shared:
                    candidates.append((sim, x, y, None))

    # Keep each event's strongest few links so the graph stays readable; what
    # two merely similar events share in words is worked out only for kept links.
    candidates.sort(key=lambda c: (-c[0], events[c[1]].key, events[c[2]].key))
    degree: Counter[int] = Counter()
    words: dict[int, Counter[str]] = {}
    kept: list[Edge] = []
    for weight, x, y, names in candidates:
        if degree[x] >= MAX_EDGES_PER_EVENT or degree[y] >= MAX_EDGES_PER_EVENT:
            continue
        degree[x] += 1
        degree[y] += 1
        if names is not None:
            kept.append(Edge(events[x].key, events[y].key, "names", names, weight))
            continue
        for k in (x, y):
            if k not in words:
                words[k] = _content_words(events[k])
        common = sorted(
            set(words[x]) & set(words[y]),
            key=lambda w: (-(words[x][w] + words[y][w]), w),
        )
        kept.append(Edge(events[x].key, events[y].key, "meaning", common[:3], weight))
    assert all(e.a in by_key and e.b in by_key for e in kept)
    return kept
