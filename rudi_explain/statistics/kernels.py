"""Segment reductions: one aggregate per segment key, for all keys at once.

Every function takes ``values`` (or category ``codes``) of the events left,
their segment ``keys`` (ints in ``[0, n_keys)``, in the current event order)
and ``n_keys``, and returns one value per key without a Python loop over keys.
NaN values are skipped, as SEMANTICS.md says.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "segment_count",
    "segment_sum",
    "segment_mean",
    "segment_max",
    "segment_min",
    "segment_std",
    "segment_first",
    "segment_percentile",
    "onehot_counts",
]


def segment_count(keys: np.ndarray, n_keys: int) -> np.ndarray:
    """Number of events per key (missing values included)."""
    return np.bincount(keys, minlength=n_keys).astype(np.float64)


def _defined(values: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ok = ~np.isnan(values)
    if ok.all():
        return values, keys
    kept = np.flatnonzero(ok)  # then gathers: numpy's boolean indexing is several times slower
    return values.take(kept), keys.take(kept)


def segment_sum(values: np.ndarray, keys: np.ndarray, n_keys: int) -> np.ndarray:
    """Sum per key; 0 where nothing is left."""
    v, k = _defined(values, keys)
    return np.bincount(k, weights=v, minlength=n_keys)


def segment_mean(values: np.ndarray, keys: np.ndarray, n_keys: int) -> np.ndarray:
    """Mean per key; NaN where no defined value is left."""
    v, k = _defined(values, keys)
    total = np.bincount(k, weights=v, minlength=n_keys)
    count = np.bincount(k, minlength=n_keys)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / count, np.nan)


def segment_max(values: np.ndarray, keys: np.ndarray, n_keys: int) -> np.ndarray:
    """Maximum per key; NaN where no defined value is left."""
    out = np.full(n_keys, np.nan)
    np.fmax.at(out, keys, values)  # fmax skips NaN on both sides
    return out


def segment_min(values: np.ndarray, keys: np.ndarray, n_keys: int) -> np.ndarray:
    """Minimum per key; NaN where no defined value is left."""
    out = np.full(n_keys, np.nan)
    np.fmin.at(out, keys, values)
    return out


def segment_std(values: np.ndarray, keys: np.ndarray, n_keys: int) -> np.ndarray:
    """Sample standard deviation (ddof=1) per key; NaN with fewer than 2 values.

    Two passes (mean, then squared deviations) keep it accurate for large,
    nearly constant values, where the one-pass sum-of-squares form cancels.
    """
    v, k = _defined(values, keys)
    count = np.bincount(k, minlength=n_keys)
    total = np.bincount(k, weights=v, minlength=n_keys)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total / np.maximum(count, 1)
        squares = np.bincount(k, weights=(v - mean[k]) ** 2, minlength=n_keys)
        return np.where(count > 1, np.sqrt(squares / (count - 1)), np.nan)


def segment_first(values: np.ndarray, keys: np.ndarray, n_keys: int) -> np.ndarray:
    """First defined value per key in the current order; NaN where none."""
    ok = np.flatnonzero(~np.isnan(values))
    first = np.full(n_keys, len(values), dtype=np.int64)
    np.minimum.at(first, keys[ok], ok)
    out = np.full(n_keys, np.nan)
    has = first < len(values)
    out[has] = values[first[has]]
    return out


def segment_percentile(values: np.ndarray, keys: np.ndarray, n_keys: int, q: float,
                       presorted: bool = False) -> np.ndarray:
    """The q-th percentile per key, linear interpolation as numpy's default.

    With ``presorted=True`` the values must already be grouped by ascending
    key and sorted ascending within each key (NaN anywhere: they are dropped).
    """
    v, k = _defined(values, keys)
    if not presorted:
        order = np.lexsort((v, k))
        v, k = v[order], k[order]
    count = np.bincount(k, minlength=n_keys)
    start = np.zeros(n_keys, dtype=np.int64)
    np.cumsum(count[:-1], out=start[1:])
    has = count > 0
    rank = (count[has] - 1) * (q / 100.0)
    lo = np.floor(rank).astype(np.int64)
    hi = np.minimum(lo + 1, count[has] - 1)
    frac = rank - lo
    a, b = v[start[has] + lo], v[start[has] + hi]
    out = np.full(n_keys, np.nan)
    # numpy's lerp: from the nearer end, so that frac = 1 gives b exactly.
    out[has] = np.where(frac >= 0.5, b - (b - a) * (1 - frac), a + (b - a) * frac)
    return out


def onehot_counts(codes: np.ndarray, keys: np.ndarray, n_keys: int, n_categories: int) -> tuple[np.ndarray, np.ndarray]:
    """Events per key, and events per (key, category), for a one-hot selection.

    Returns ``(n, c)`` with ``n`` of shape (n_keys,) counting every event left
    (unseen categories included: they are all-zero one-hot rows) and ``c`` of
    shape (n_keys, n_categories).
    """
    if len(codes) and codes.min() >= 0:
        # Every event has a category (the usual case): no masks, and the events per key are
        # the row sums of the counts (whole numbers, exact), one bincount instead of two.
        flat = keys.astype(np.int64) * n_categories + codes
        counts = np.bincount(flat, minlength=n_keys * n_categories).reshape(n_keys, n_categories)
        return counts.sum(axis=1).astype(np.float64), counts.astype(np.float64)
    n = np.bincount(keys, minlength=n_keys).astype(np.float64)
    seen = np.flatnonzero(codes >= 0)
    flat = keys.take(seen).astype(np.int64) * n_categories + codes.take(seen)
    c = np.bincount(flat, minlength=n_keys * n_categories).astype(np.float64)
    return n, c.reshape(n_keys, n_categories)
