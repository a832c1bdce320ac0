"""FP-growth on bitsets against brute-force enumeration of itemsets."""

import itertools

import numpy as np
import pytest

from rudi_explain.students.fpgrowth import frequent_itemsets, item_matrix, pack_rows, popcount


def brute_force(items, min_support, max_card, group):
    n, k = items.shape
    support = {}
    for c in range(1, max_card + 1):
        for s in itertools.combinations(range(k), c):
            if len({group[i] for i in s}) < c:
                continue
            support[s] = int(items[:, list(s)].all(axis=1).sum())
    out = {}
    for s, sup in support.items():
        if sup < min_support or sup == n:
            continue
        subs = [s[:i] + s[i + 1:] for i in range(len(s))] if len(s) > 1 else []
        if any(support[t] == sup for t in subs):
            continue  # a shorter antecedent holds on the same rows
        out[s] = sup
    return out


@pytest.mark.parametrize("seed,max_card,min_support", [(0, 2, 5), (1, 3, 8), (2, 3, 1)])
def test_matches_brute_force(seed, max_card, min_support):
    rng = np.random.default_rng(seed)
    X = rng.random((60, 6)) < rng.uniform(0.2, 0.8, 6)
    X[:, 5] = X[:, 0] | X[:, 1]  # nested literals make redundant itemsets
    items = item_matrix(X)
    group = np.concatenate([np.arange(6), np.arange(6)])
    got, sups = frequent_itemsets(items, min_support, max_card, exclusive=group)
    want = brute_force(items, min_support, max_card, group)
    assert len(got) == len(set(got))
    assert dict(zip(got, sups.tolist())) == want


def test_both_polarities_are_items():
    X = np.array([[1, 0], [1, 1], [0, 1], [0, 0]], dtype=bool)
    items = item_matrix(X)
    assert items.shape == (4, 4)
    np.testing.assert_array_equal(items[:, 2:], ~X)
    got, _ = frequent_itemsets(items, 1, 1)
    assert sorted(got) == [(0,), (1,), (2,), (3,)]


def test_bitsets():
    rng = np.random.default_rng(3)
    B = rng.random((5, 130)) < 0.3
    P = pack_rows(B)
    assert P.dtype == np.uint64 and P.shape == (5, 3)
    np.testing.assert_array_equal(popcount(P), B.sum(axis=1))
    np.testing.assert_array_equal(popcount(P[0] & P[1]), (B[0] & B[1]).sum())


def test_bad_arguments():
    items = np.ones((4, 2), dtype=bool)
    with pytest.raises(ValueError, match="min_support"):
        frequent_itemsets(items, 0, 2)
    with pytest.raises(ValueError, match="max_cardinality"):
        frequent_itemsets(items, 1, 0)
