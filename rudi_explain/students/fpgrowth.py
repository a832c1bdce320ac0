"""Frequent itemsets over binary literals, by pattern growth on bitsets.

The Bayesian Rule List pre-mines its candidate antecedents with FP-growth
(minimum support, maximum cardinality). FP-growth's idea is pattern growth
without candidate generation: grow an itemset only by items that are
frequent in its conditional database (the rows that contain the itemset),
depth first, items taken in a fixed order so that each itemset is met once.
Here the conditional database is a bitset of rows instead of a prefix tree:
the supports of every extension of a prefix are counted in one vectorized
pass (one matrix product of the prefix's row mask with the item matrix),
which in numpy is much faster than walking a tree row by row.

Items are the literals *and* their negations (item ``j`` is literal ``j``,
item ``n_literals + j`` is ``NOT`` literal ``j``), so a mined antecedent can
say ``x <= t`` as well as ``x > t``.
"""

from __future__ import annotations

import numpy as np

from rudi_explain.exceptions import InputError

__all__ = ["item_matrix", "frequent_itemsets", "pack_rows", "popcount"]


def item_matrix(X: np.ndarray) -> np.ndarray:
    """Both polarities of every literal as items.

    Parameters
    ----------
    X : ndarray of bool, shape (n_rows, n_literals)

    Returns
    -------
    ndarray of bool, shape (n_rows, 2 * n_literals)
        Columns ``0..n_literals-1`` are the literals, the rest their negations.
    """
    return np.concatenate([X, ~X], axis=1)


def frequent_itemsets(
    items: np.ndarray,
    min_support: int,
    max_cardinality: int,
    exclusive: np.ndarray | None = None,
) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """All itemsets with support >= ``min_support`` and at most ``max_cardinality`` items.

    Itemsets that cover every row are left out (they say nothing), and so
    are itemsets whose rows equal those of a sub-itemset one item shorter
    (the extra item adds no condition on these data, so the shorter
    antecedent already stands for it).

    Parameters
    ----------
    items : ndarray of bool, shape (n_rows, n_items)
    min_support : int
        Minimum number of rows an itemset must hold in (>= 1).
    max_cardinality : int
        Maximum number of items per itemset (>= 1).
    exclusive : ndarray of int, shape (n_items,), optional
        Group of each item; two items of one group never appear together
        (a literal and its negation: their conjunction is empty anyway).

    Returns
    -------
    itemsets : list of tuple of int
        Items of each itemset, ascending.
    supports : ndarray of int, shape (n_itemsets,)
    """
    items = np.asarray(items, dtype=bool)
    n_rows, n_items = items.shape
    if min_support < 1:
        raise InputError(f"min_support must be >= 1 row, got {min_support}")
    if max_cardinality < 1:
        raise InputError(f"max_cardinality must be >= 1, got {max_cardinality}")
    # float32 matrix product counts supports exactly for up to 2**24 rows
    dtype: type[np.floating] = np.float32 if n_rows < 2**24 else np.float64
    M: np.ndarray = items.astype(dtype)
    support = items.sum(axis=0)
    # FP-growth's item order: frequent items by descending support
    frequent = np.flatnonzero(support >= min_support)
    order = frequent[np.argsort(-support[frequent], kind="stable")]
    out: list[tuple[int, ...]] = []
    sups: list[int] = []

    def grow(prefix: tuple[int, ...], mask: np.ndarray, prefix_support: int, candidates: np.ndarray) -> None:
        # supports of prefix + each candidate, counted in the conditional database
        cond = np.matmul(mask.astype(dtype), M[:, candidates]).astype(np.int64)
        keep = (cond >= min_support) & (cond < prefix_support)
        if exclusive is not None and prefix:
            keep &= ~np.isin(exclusive[candidates], exclusive[list(prefix)])
        kept = candidates[keep]
        kept_support = cond[keep]
        for pos, (item, s) in enumerate(zip(kept.tolist(), kept_support.tolist())):
            itemset = prefix + (item,)
            out.append(itemset)
            sups.append(s)
            if len(itemset) < max_cardinality:
                # only items later in the order: each itemset is grown once
                grow(itemset, mask & items[:, item], s, kept[pos + 1:])

    # the empty prefix covers all rows: items that hold everywhere are dropped by `< n_rows`
    grow((), np.ones(n_rows, dtype=bool), n_rows, order)
    # growth only checks the prefix; an itemset can still hold on the same
    # rows as a sub-itemset that leaves out an earlier item: drop those too
    itemsets = [tuple(sorted(s)) for s in out]
    known = dict(zip(itemsets, sups))
    keep_idx = []
    for k, (s, sup) in enumerate(zip(itemsets, sups)):
        redundant = False
        if len(s) > 1:
            for drop in range(len(s)):
                sub = s[:drop] + s[drop + 1:]
                sub_sup = known.get(sub)
                if sub_sup is None:
                    sub_sup = int(items[:, list(sub)].all(axis=1).sum())
                if sub_sup == sup:
                    redundant = True
                    break
        if not redundant:
            keep_idx.append(k)
    return [itemsets[k] for k in keep_idx], np.asarray([sups[k] for k in keep_idx], dtype=np.int64)


def pack_rows(B: np.ndarray) -> np.ndarray:
    """Pack the rows of a bool matrix into uint64 bitsets.

    Parameters
    ----------
    B : ndarray of bool, shape (n_sets, n_rows)

    Returns
    -------
    ndarray of uint64, shape (n_sets, ceil(n_rows / 64))
    """
    B = np.atleast_2d(np.asarray(B, dtype=bool))
    n_words = (B.shape[1] + 63) // 64
    padded = np.zeros((B.shape[0], n_words * 64), dtype=bool)
    padded[:, : B.shape[1]] = B
    return np.packbits(padded, axis=1, bitorder="little").view(np.uint64)


def popcount(words: np.ndarray) -> np.ndarray:
    """Number of set bits along the last axis of a uint64 bitset array."""
    return np.bitwise_count(words).sum(axis=-1, dtype=np.int64)
