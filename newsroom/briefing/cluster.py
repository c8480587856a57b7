"""Collapsing near-duplicate items into events without comparing every pair.

Pure: numpy only. Candidate pairs come from random-hyperplane LSH buckets
(several tables of a few sign bits each); only candidates are scored, so the
work grows with the bucket sizes, not with the square of the items. Exact
matches (normalised title, normalised URL) join through dictionaries. A
union-find turns the accepted pairs into groups.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
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

    def buckets(self, vectors: np.ndarray) -> list[np.ndarray]:
        """Groups of row indices that share a bucket in some table (size >= 2)."""
        n = vectors.shape[0]
        if n < 2:
            return []
        bits = self.bits or self.bits_for(n)
        signs = (vectors @ self.planes(vectors.shape[1], bits)) > 0
        width = bits + self.extra_bits
        weights = 1 << np.arange(width, dtype=np.int64)
        out: list[np.ndarray] = []
        for t in range(self.tables):
            table = signs[:, t * width : (t + 1) * width].astype(np.int64)
            self._split(table, weights, bits, np.arange(n), out)
        return out

    def candidate_pairs(self, vectors: np.ndarray) -> set[tuple[int, int]]:
        """Distinct (i, j) pairs, i < j, that share some bucket."""
        pairs: set[tuple[int, int]] = set()
        for group in self.buckets(vectors):
            i, j = np.triu_indices(len(group), k=1)
            pairs.update(zip(group[i].tolist(), group[j].tolist(), strict=True))
        return pairs

    def _split(
        self,
        table: np.ndarray,
        weights: np.ndarray,
        bits: int,
        members: np.ndarray,
        out: list[np.ndarray],
    ) -> None:
        codes = table[members, :bits] @ weights[:bits]
        order = np.argsort(codes, kind="stable")
        bounds = np.flatnonzero(np.diff(codes[order])) + 1
        for group in np.split(members[order], bounds):
            if len(group) < 2:
                continue
            if len(group) > self.max_bucket and bits < table.shape[1]:
                self._split(table, weights, bits + 1, group, out)
                continue
            out.append(np.sort(group))


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
    # All candidate pairs of all buckets as two index arrays (triangles cached
    # per bucket size), then scored in chunks: no Python work per pair.
    left: list[np.ndarray] = []
    right: list[np.ndarray] = []
    for group in (index or LshIndex()).buckets(vectors):
        i, j = _triangle(len(group))
        left.append(group[i])
        right.append(group[j])
    if not left:
        return ClusterResult(uf.groups(), 0, 0, joined)
    a_all, b_all = np.concatenate(left), np.concatenate(right)
    scored = len(a_all)
    found: list[np.ndarray] = []
    found_sims: list[np.ndarray] = []
    for start in range(0, scored, 65536):
        a, b = a_all[start : start + 65536], b_all[start : start + 65536]
        sims = np.einsum("ij,ij->i", vectors[a], vectors[b])
        keep = sims >= threshold
        if keep.any():
            found.append(
                np.minimum(a[keep], b[keep]) * n + np.maximum(a[keep], b[keep])
            )
            found_sims.append(sims[keep])
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
