"""LSH clustering against the exact all-pairs answer: pure, no database."""

from __future__ import annotations

import numpy as np

from newsroom.briefing.cluster import (
    LshIndex,
    UnionFind,
    cluster,
    cluster_all_pairs,
    similar_pairs_matrix,
)


def _stories(n_stories: int, per_story: int, noise: float, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((n_stories, 64))
    vectors = np.repeat(centres, per_story, axis=0) + noise * rng.standard_normal(
        (n_stories * per_story, 64)
    )
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def test_lsh_finds_nearly_every_similar_pair_while_scoring_a_fraction_of_all_pairs():
    vectors = _stories(150, 4, noise=0.45)
    n = len(vectors)
    exact = similar_pairs_matrix(vectors, 0.7)
    result = cluster(vectors, [""] * n, [""] * n, 0.7)
    found = LshIndex().candidate_pairs(vectors)
    recall = len(exact & found) / len(exact)
    assert recall >= 0.9
    assert len(found) < 0.3 * n * (n - 1) / 2
    assert result.semantic_links <= len(exact)


def test_lsh_groups_match_the_all_pairs_groups_on_clear_stories():
    vectors = _stories(40, 3, noise=0.3)
    n = len(vectors)
    lsh = cluster(vectors, [""] * n, [""] * n, 0.7)
    baseline = cluster_all_pairs(vectors, [""] * n, [""] * n, 0.7)
    assert sorted(map(sorted, lsh.groups)) == sorted(map(sorted, baseline.groups))
    assert len(lsh.groups) == 40


def test_equal_titles_and_urls_join_even_when_the_texts_differ():
    vectors = _stories(4, 1, noise=0.0)
    result = cluster(
        vectors, ["same title", "", "same title", ""], ["", "//a/1", "", "//a/1"], 0.99
    )
    assert sorted(map(sorted, result.groups)) == [[0, 2], [1, 3]]
    assert result.exact_links == 2


def test_a_crowded_bucket_is_split_so_work_stays_bounded():
    # Every vector nearly the same: one LSH bucket would hold all of them.
    rng = np.random.default_rng(5)
    vectors = np.ones((400, 32)) + 0.01 * rng.standard_normal((400, 32))
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(
        np.float32
    )
    index = LshIndex(max_bucket=64)
    assert (
        max(len(g) for g in index.buckets(vectors)) <= 400
    )  # splits stop at the extra bits
    assert cluster(vectors, [""] * 400, [""] * 400, 0.9, index).groups == [
        list(range(400))
    ]


def test_union_find_roots_are_the_smallest_index():
    uf = UnionFind(5)
    uf.union(4, 2)
    uf.union(2, 3)
    assert uf.groups() == [[0], [1], [2, 3, 4]]
