"""The search's columns: each statistic output cut at its deciles and drawn as two standardized lines.

A catalog output is scored (:class:`rudi_explain.search.catalog.ColumnScreen`) by its step function over
:data:`N_BINS` bins (:func:`bin_columns`) and by the better of two straight lines (:func:`standardize`):
the values as they are and clipped to their 1st and 99th percentiles. Both are computed by chunks of
columns, each chunk sorted once.
"""

from __future__ import annotations

import numpy as np

__all__ = ["N_BINS", "bin_columns", "standardize", "binned_and_standardized"]

#: Bins of a column: its deciles (undefined values share the lowest).
N_BINS = 10


def bin_columns(X: np.ndarray) -> np.ndarray:
    """Decile bin of every value; undefined values in the lowest bin.

    Undefined counts as below every threshold, as in the literals the rules are
    made of (SEMANTICS.md): a bin of its own let the search keep a statistic
    for *whether* it is defined (the largest [merchant = m] among a category's
    events: "has any events of that category"), which no rule can then say.

    Parameters
    ----------
    X : ndarray of shape (n, m)

    Returns
    -------
    bins : ndarray of uint8, shape (n, m)
    """
    return binned_and_standardized(X, lines=False)[0]


def standardize(X: np.ndarray) -> np.ndarray:
    """Each column twice, as it is and clipped to its 1st and 99th percentiles, centred
    and scaled over its defined values; undefined set to 0 (float32, shape (n, m, 2)).

    Two straight lines, because a heavy-tailed total can act either way: a score
    linear in the total amount needs the raw line, while a score that saturates
    (a probability, a capped effect) is told apart only by the clipped one: a
    raw line there is set by a handful of extreme users.
    """
    return binned_and_standardized(X, bins=False)[1]


def binned_and_standardized(X: np.ndarray, bins: bool = True, lines: bool = True,
                             lone: np.ndarray | None = None, chunk: int = 512) -> tuple[np.ndarray, np.ndarray]:
    """:func:`bin_columns` and :func:`standardize` of ``X`` (each only if asked; an empty
    array otherwise), by chunks of ``chunk`` columns, each chunk sorted once for both: the
    deciles and the clipping ranks read the same sorted columns. ``lone``: the columns
    standardized as if each were the only column of its block (see :func:`_column_sums`)."""
    n, m = X.shape
    binned = np.empty((n, m if bins else 0), dtype=np.uint8)
    # By chunks of columns: a catalog can hold 100,000 columns, and a whole float64 copy
    # of it per step (clipped, centred) took a scenario past 11 GB; a chunk also bounds
    # the comparisons with the deciles.
    out = np.empty((n, m if lines else 0, 2), dtype=np.float32)
    for start in range(0, m, chunk):
        block = X[:, start:start + chunk]
        alone = None if lone is None else lone[start:start + chunk]
        ordered = np.sort(block, axis=0)  # NaN last
        # One finiteness mask for all four steps (the clipped block's too, unless it clipped an infinity).
        finite = np.isfinite(block)
        defined = finite.sum(axis=0)
        if bins:
            binned[:, start:start + chunk] = _bin_block(block, ordered, defined)
        if lines:
            out[:, start:start + chunk, 0] = _standardize(block, finite, defined, alone)
            clipped = _clip_tails(block, ordered=ordered, defined=defined)
            same = not _has_infinity(ordered, defined)
            out[:, start:start + chunk, 1] = _standardize(clipped, finite if same else None,
                                                          defined if same else None, alone)
    return binned, out


def _has_infinity(ordered: np.ndarray, defined: np.ndarray) -> bool:
    """Whether a column of ``ordered`` (sorted: -inf first, then finite values, +inf, NaN last) holds
    an infinity, given its count of finite values."""
    n = len(ordered)
    if n == 0:
        return False
    after = np.take_along_axis(ordered, np.minimum(defined, n - 1)[None, :], axis=0)[0]
    return bool(np.isneginf(ordered[0]).any() or np.isposinf(after[defined < n]).any())


def _bin_block(block: np.ndarray, ordered: np.ndarray, defined: np.ndarray | None = None) -> np.ndarray:
    """:func:`bin_columns` of ``block`` (n, k), given its columns sorted (``ordered``, NaN last) and,
    optionally, each column's count of finite values (``defined``)."""
    q = np.linspace(0, 1, N_BINS + 1)[1:-1]
    if defined is None:
        defined = np.isfinite(block).sum(axis=0)
    # The deciles of each column's defined values (lower value at each cut: ties stay together).
    at = np.floor(q[:, None] * np.maximum(defined - 1, 0)[None, :]).astype(np.int64)
    edges = np.take_along_axis(ordered, at, axis=0)  # (9, k)
    # The deciles each value lies above, counted one decile at a time (whole numbers, at most 9:
    # a uint8 sum is exact, and cheaper than one (n, 9, k) comparison summed over its middle axis).
    b = np.zeros(block.shape, dtype=np.uint8)
    for edge in edges:
        b += block > edge  # NaN is above no decile (and a NaN edge, of a column with none defined, is below none)
    return b


def _clip_tails(X: np.ndarray, share: float = 0.01, ordered: np.ndarray | None = None,
                defined: np.ndarray | None = None) -> np.ndarray:
    """Each column clipped to the defined values at ranks ``share`` and ``1 - share`` (NaN stays).

    By sorting, not ``np.nanpercentile``, which loops over columns in Python when
    there are NaNs (8x slower on a catalog); ``ordered``: the columns already sorted (NaN last);
    ``defined``: each column's count of finite values, if known.
    """
    if ordered is None:
        ordered = np.sort(X, axis=0)  # NaN last
    if defined is None:
        defined = np.isfinite(X).sum(axis=0)
    last = np.maximum(defined - 1, 0)
    lo = np.take_along_axis(ordered, np.floor(share * last).astype(np.int64)[None, :], axis=0)
    hi = np.take_along_axis(ordered, np.ceil((1 - share) * last).astype(np.int64)[None, :], axis=0)
    return np.clip(X, lo, hi)


def _column_sums(A: np.ndarray, lone: np.ndarray | None = None) -> np.ndarray:
    """``A.sum(axis=0)``, the columns where ``lone`` holds summed as numpy sums a block of one
    column: pairwise, where it sums a wider block row by row (the last bits can differ). So a
    statistic's single column has the same values binned beside others as binned alone."""
    sums = A.sum(axis=0)
    if lone is not None and A.shape[1] > 1 and lone.any():
        sums[lone] = np.ascontiguousarray(A[:, lone].T).sum(axis=1)
    return sums


def _standardize(X: np.ndarray, finite: np.ndarray | None = None, defined: np.ndarray | None = None,
                 lone: np.ndarray | None = None) -> np.ndarray:
    """Each column centred and scaled over its finite values, the others set to 0 (float32);
    ``finite`` (X's finiteness) and ``defined`` (its column sums) where already known; ``lone``
    as for :func:`_column_sums`."""
    # Masked sums rather than np.nanmean/np.nanstd, which copy and check far more.
    if finite is None or defined is None:
        finite = np.isfinite(X)
        defined = finite.sum(axis=0)
    count = np.maximum(defined, 1)
    if defined.sum() == finite.size:  # every value defined: no masking (the same arithmetic)
        Z = X - _column_sums(X, lone) / count
    else:
        Z = np.where(finite, X, 0.0)  # centred where defined; undefined stays 0, at the mean (one pass)
        np.subtract(Z, _column_sums(Z, lone) / count, out=Z, where=finite)
    scale = np.sqrt(_column_sums(Z * Z, lone) / count)
    Z /= np.where(scale > 0, scale, 1.0)
    return Z.astype(np.float32)
