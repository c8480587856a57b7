"""Collapsing near-duplicate items into events without comparing every pair.

Pure: numpy only. Candidate pairs come from random-hyperplane LSH buckets
(several tables of a few sign bits each); only candidates are scored, so the
work grows with the bucket sizes, not with the square of the items. Exact
matches (normalised title, normalised URL) join through dictionaries. A
union-find turns the accepted pairs into groups.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np


class UnionFind:
    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        parent = self.parent
        while parent[i] != i:
            parent[i] = parent[parent[i]]  # path halving keeps trees flat
            i = parent[i]
        return i

    def union(self, a: int, b: int) -> bool:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        # The smaller index is the root so groups come out in input order.
        if rb < ra:
            ra, rb = rb, ra
        self.parent[rb] = ra
        return True

    def groups(self) -> list[list[int]]:
        by_root: dict[int, list[int]] = {}
        for i in range(len(self.parent)):
            by_root.setdefault(self.find(i), []).append(i)
        return list(by_root.values())


@dataclass
class LshIndex:
    """Random-hyperplane LSH over unit vectors; `candidate_pairs` lists pairs
    that share a bucket in at least one table.

    With b bits per table, two vectors at angle t share a bucket with
    probability (1 - t/pi)**b; `tables` tables raise recall to
    1 - (1 - p)**tables. Buckets larger than `max_bucket` are split on
    further bits so one crowded topic cannot bring back all-pairs work.
    """

    bits: int | None = None  # None: grows with log2(n), see bits_for
    tables: int = 24
    seed: int = 20240607
    max_bucket: int = 64
    extra_bits: int = 4  # for splitting crowded buckets

    @staticmethod
    def bits_for(n: int) -> int:
        # About 8 items per bucket on evenly spread data, so the pairs scored
        # per table grow with n, not n squared.
        return max(6, math.ceil(math.log2(max(2, n) / 8)))

    def planes(self, dim: int, bits: int) -> np.ndarray:
        rng = np.random.default_rng(self.seed)
        return rng.standard_normal(
            (dim, self.tables * (bits + self.extra_bits))
        ).astype(np.float32)

    def blocks(self, vectors: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(members, their vectors) per bucket of two or more, table by table.

        Codes put the table's first bits highest, so after one sort per table
        every bucket, and every sub-bucket a crowded one is split into, is a
        contiguous run: its vectors are a view, not a copy."""
        n = vectors.shape[0]
        if n < 2:
            return
        bits = self.bits or self.bits_for(n)
        width = bits + self.extra_bits
        signs = (vectors @ self.planes(vectors.shape[1], bits)) > 0
        weights = 1 << np.arange(width - 1, -1, -1, dtype=np.int64)
        for t in range(self.tables):
            codes = signs[:, t * width : (t + 1) * width].astype(np.int64) @ weights
            order = np.argsort(codes, kind="stable")
            codes = codes[order]
            ordered = vectors[order]
            stack = [(0, n, bits)]
            while stack:
                lo, hi, level = stack.pop()
                prefix = codes[lo:hi] >> (width - level)
                cuts = [lo, *(np.flatnonzero(np.diff(prefix)) + 1 + lo).tolist(), hi]
                for a, b in zip(cuts, cuts[1:], strict=False):
                    if b - a < 2:
                        continue
                    if b - a > self.max_bucket and level < width:
                        stack.append((a, b, level + 1))
                    else:
                        yield order[a:b], ordered[a:b]

    def buckets(self, vectors: np.ndarray) -> list[np.ndarray]:
        """Groups of row indices that share a bucket in some table (size >= 2)."""
        return [np.sort(members) for members, _ in self.blocks(vectors)]

    def candidate_pairs(self, vectors: np.ndarray) -> set[tuple[int, int]]:
        """Distinct (i, j) pairs, i < j, that share some bucket."""
        pairs: set[tuple[int, int]] = set()
        for group in self.buckets(vectors):
            i, j = _triangle(len(group))
            a, b = group[i], group[j]
            pairs.update(
                zip(np.minimum(a, b).tolist(), np.maximum(a, b).tolist(), strict=True)
            )
        return pairs


@dataclass
class ClusterResult:
    groups: list[list[int]]
    candidates: int  # pair scorings done (a pair in several buckets counts again)
    semantic_links: int  # pairs accepted by similarity
    exact_links: int  # pairs joined by title or URL


_TRIANGLES: dict[int, tuple[np.ndarray, np.ndarray]] = {}


def _triangle(size: int) -> tuple[np.ndarray, np.ndarray]:
    if size not in _TRIANGLES:
        _TRIANGLES[size] = np.triu_indices(size, k=1)
    return _TRIANGLES[size]


def exact_links(keys: Sequence[str], uf: UnionFind) -> int:
    """Join items that share a non-empty key; returns the joins made."""
    first: dict[str, int] = {}
    joined = 0
    for i, key in enumerate(keys):
        if not key:
            continue
        if key in first:
            joined += uf.union(first[key], i)
        else:
            first[key] = i
    return joined


def merge(
    vectors: np.ndarray,
    uf: UnionFind,
    pairs: np.ndarray,
    sims: np.ndarray,
    threshold: float,
    names: Sequence[frozenset[str]] | None = None,
) -> int:
    """Union the pairs, strongest first, but only while the two groups' centroids
    stay within the threshold too. Plain single-link would chain: A~B and B~C
    would put A with C even when A and C tell different stories.

    `names` (people and places per item, optional) veto a join when both groups
    name someone or somewhere and have no name in common: "quake strikes Japan"
    and "quake strikes Chile" read alike to a bag-of-words model but are two
    events. Returns the joins made."""
    group_names: dict[int, frozenset[str]] = {}
    if names is not None:
        for i in range(len(uf.parent)):
            root = uf.find(i)
            group_names[root] = group_names.get(root, frozenset()) | names[i]
    # Sum of member vectors per root; groups made by exact links start full.
    sums: dict[int, np.ndarray] = {}
    for i in range(len(uf.parent)):
        root = uf.find(i)
        if root != i:
            if root not in sums:
                sums[root] = vectors[root].astype(np.float64)
            sums[root] = sums[root] + vectors[i]

    def centroid(root: int) -> np.ndarray:
        total = sums.get(root)
        return vectors[root].astype(np.float64) if total is None else total

    joined = 0
    for k in np.argsort(-sims, kind="stable").tolist():
        a, b = int(pairs[k, 0]), int(pairs[k, 1])
        ra, rb = uf.find(a), uf.find(b)
        if ra == rb:
            continue
        if names is not None:
            na, nb = group_names[ra], group_names[rb]
            if na and nb and na.isdisjoint(nb):
                continue
        ca, cb = centroid(ra), centroid(rb)
        cos = float(ca @ cb) / (float(np.linalg.norm(ca) * np.linalg.norm(cb)) or 1.0)
        if cos < threshold:
            continue
        uf.union(ra, rb)
        root = uf.find(ra)
        sums[root] = ca + cb
        if names is not None:
            group_names[root] = group_names[ra] | group_names[rb]
        joined += 1
    return joined


def cluster(
    vectors: np.ndarray,
    titles: Sequence[str],
    urls: Sequence[str],
    threshold: float,
    index: LshIndex | None = None,
    names: Sequence[frozenset[str]] | None = None,
) -> ClusterResult:
    """Group items whose unit vectors have cosine >= threshold (through LSH
    candidates), or that share a normalised title or URL."""
    n = vectors.shape[0]
    uf = UnionFind(n)
    joined = exact_links(titles, uf) + exact_links(urls, uf)
    scored = 0
    found: list[np.ndarray] = []
    found_sims: list[np.ndarray] = []
    # One small matrix product per bucket over a view of the sorted vectors; a
    # pair met in several tables is scored again, cheaper than deduplicating.
    for members, block in (index or LshIndex()).blocks(vectors):
        sims = block @ block.T
        size = len(members)
        scored += size * (size - 1) // 2
        i, j = np.nonzero(np.triu(sims >= threshold, k=1))
        if len(i):
            a, b = members[i], members[j]
            found.append(np.minimum(a, b) * n + np.maximum(a, b))
            found_sims.append(sims[i, j])
    if not found:
        return ClusterResult(uf.groups(), scored, 0, joined)
    keys, first = np.unique(np.concatenate(found), return_index=True)
    pair_sims = np.concatenate(found_sims)[first]
    pairs = np.stack([keys // n, keys % n], axis=1)
    links = merge(vectors, uf, pairs, pair_sims, threshold, names)
    return ClusterResult(uf.groups(), scored, links, joined)


def cluster_all_pairs(
    vectors: np.ndarray,
    titles: Sequence[str],
    urls: Sequence[str],
    threshold: float,
    names: Sequence[frozenset[str]] | None = None,
) -> ClusterResult:
    """The quadratic baseline: every pair scored, one at a time, as a naive
    implementation would, then the same merge. Used by the benchmark."""
    n = vectors.shape[0]
    uf = UnionFind(n)
    joined = exact_links(titles, uf) + exact_links(urls, uf)
    rows = list(vectors)
    pairs: list[tuple[int, int]] = []
    sims: list[float] = []
    for i in range(n):
        vi = rows[i]
        for j in range(i + 1, n):
            s = float(np.dot(vi, rows[j]))
            if s >= threshold:
                pairs.append((i, j))
                sims.append(s)
    if pairs:
        links = merge(vectors, uf, np.array(pairs), np.array(sims), threshold, names)
    else:
        links = 0
    return ClusterResult(uf.groups(), n * (n - 1) // 2, links, joined)


def similar_pairs_matrix(vectors: np.ndarray, threshold: float) -> set[tuple[int, int]]:
    """All pairs at or above threshold via one matrix product (exact; for recall
    checks and small inputs)."""
    sims = vectors @ vectors.T
    i, j = np.nonzero(np.triu(sims >= threshold, k=1))
    return set(zip(i.tolist(), j.tolist(), strict=True))
