"""How well a student mimics its teacher, and how well scores rank labels.

``fidelity`` is the seed paper's pairwise agreement (SEMANTICS.md), computed
exactly in O(N log N) from pair counts rather than by visiting pairs. ``auc``
is the area under the ROC curve with ties counted as one half.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt
from numpy.typing import ArrayLike

from rudi_explain.correlation import multiple_correlation
from rudi_explain.exceptions import InputError
from rudi_explain.validation import check_random_state_seed

__all__ = ["fidelity", "Agreement", "fidelity_interval", "auc", "count_pairs", "multiple_correlation"]


def _as_score_vector(values: ArrayLike, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.reshape(-1)
    if arr.ndim != 1:
        raise InputError(f"{name} must be a 1-D array of scores, got shape {arr.shape}")
    if arr.dtype == bool:
        arr = arr.astype(np.float64)
    if not np.issubdtype(arr.dtype, np.number):
        raise InputError(f"{name} must be numeric, got dtype {arr.dtype}")
    arr = arr.astype(np.float64, copy=False)
    bad = ~np.isfinite(arr)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"{name} has {int(bad.sum())} NaN or infinite value(s), the first at position {i}"
        )
    return arr


def _dense_ranks(values: np.ndarray) -> np.ndarray:
    """Integer ranks 0..q-1 with equal values sharing a rank."""
    _, inverse = np.unique(values, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64)


def _tied_pairs(ranks: np.ndarray) -> int:
    """Number of unordered pairs with equal rank."""
    counts = np.bincount(ranks).astype(np.int64)
    return int((counts * (counts - 1) // 2).sum())


#: Up to this many values, :func:`_count_increasing_pairs` counts by merging sorted runs (the agreement's
#: usual sizes: a few hundred to a few thousand users, some 300 counts a job); beyond, by the bits of the values.
MERGE_COUNT_UP_TO = 8192


def _count_increasing_pairs(values: np.ndarray) -> int:
    """Number of index pairs ``i < j`` with ``values[i] < values[j]`` (strict).

    ``values`` are non-negative integers. O(N log N) numpy work, no Python loop over elements:
    :func:`_merge_count` up to :data:`MERGE_COUNT_UP_TO` values (2-2.5x faster there, its index
    arrays cached by length), :func:`_bitwise_count` beyond.
    """
    if values.size < 2:
        return 0
    return _merge_count(values) if values.size <= MERGE_COUNT_UP_TO else _bitwise_count(values)


@lru_cache(maxsize=4)  # at most 4 lengths: about 7 MB at 8,192 values
def _merge_levels(n: int) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray, int], ...]:
    """For each level of a bottom-up merge sort of ``n`` values (runs of 1, 2, 4, ... merged in pairs): every
    position's pair of runs times ``n`` (the key offset that keeps pairs apart), the positions in left runs and
    in right runs, and how many left-run values lie in pairs before each right-run value's, summed."""
    at = np.arange(n)
    levels = []
    width = 1
    while width < n:
        pair = at // (2 * width)
        right = (at // width) % 2 == 1
        in_right = np.flatnonzero(right)
        levels.append((pair * n, np.flatnonzero(~right), in_right, int((pair[in_right] * width).sum())))
        width *= 2
    return tuple(levels)


def _merge_count(values: np.ndarray) -> int:
    """:func:`_count_increasing_pairs` by a bottom-up merge sort.

    At each level the runs (sorted) are merged in pairs, left and right; each right-run value makes
    an increasing pair with every left-run value below it, and those are counted for all pairs at
    once: the keys ``value + pair * n`` keep the pairs apart in one sorted order, so one
    ``searchsorted`` of the right runs' keys among the left runs' counts them (less the left values
    of earlier pairs). The merge is a stable sort of the keys (two sorted runs a pair: linear).
    """
    n = values.size
    if int(values.max()) >= n:  # the keys need values below n: dense ranks keep every order
        values = np.unique(values, return_inverse=True)[1].reshape(-1)
    keys = values.astype(np.int64)
    total = 0
    for offset, in_left, in_right, before in _merge_levels(n):
        shifted = keys + offset
        total += int(np.searchsorted(shifted[in_left], shifted[in_right], side="left").sum()) - before
        shifted.sort(kind="stable")
        keys = shifted - offset
    return total


def _bitwise_count(values: np.ndarray) -> int:
    """:func:`_count_increasing_pairs` by a wavelet-matrix sweep, most significant bit first: after
    stable partitions by the higher bits, the elements sharing those bits lie together in their original
    order, so the pairs that first differ at bit ``b`` (0 in ``i``, 1 in ``j``) are counted with one
    cumulative sum. O(N) numpy work per bit, O(N log N) in all, and memory of a few copies of the values.
    """
    n = values.size
    n_bits = max(1, int(values.max()).bit_length())
    dtype = np.int32 if n < 2**31 - 1 else np.int64
    vals: npt.NDArray[np.signedinteger[Any]] = values.astype(dtype)
    new_group = np.empty(n, dtype=bool)
    total = 0
    for b in range(n_bits - 1, -1, -1):
        prefix = vals >> (b + 1)
        new_group[0] = True
        np.not_equal(prefix[1:], prefix[:-1], out=new_group[1:])
        bit = (vals >> b) & 1
        zero = 1 - bit
        zeros_before: npt.NDArray[np.signedinteger[Any]] = np.cumsum(zero, dtype=dtype)
        zeros_before -= zero
        # zeros_before is non-decreasing, so a running max of its values at
        # group starts gives each element its own group's start value.
        zeros_before -= np.maximum.accumulate(np.where(new_group, zeros_before, 0))
        total += int(np.dot(zeros_before.astype(np.int64), bit.astype(np.int64)))
        is_one = bit.astype(bool)
        vals = np.concatenate((vals[~is_one], vals[is_one]))
    return total


def count_pairs(teacher: ArrayLike, student: ArrayLike) -> tuple[int, int]:
    """Agreeing ordered pairs and all ordered pairs, counted exactly.

    Parameters
    ----------
    teacher, student : array-like of shape (n_users,)

    Returns
    -------
    agree : int
        Ordered pairs ``i != j`` with
        ``(teacher_i > teacher_j) == (student_i > student_j)``.
    total : int
        ``n_users * (n_users - 1)``.
    """
    t = _as_score_vector(teacher, "teacher")
    s = _as_score_vector(student, "student")
    if t.size != s.size:
        raise InputError(
            f"teacher and student must score the same users: got {t.size} and {s.size} scores"
        )
    n = t.size
    total = n * (n - 1)
    if n < 2:
        return 0, total
    rt, rs = _dense_ranks(t), _dense_ranks(s)
    half = n * (n - 1) // 2
    # Ordered pairs with teacher_i > teacher_j: one per unordered pair not tied.
    p_t = half - _tied_pairs(rt)
    p_s = half - _tied_pairs(rs)
    # Ordered pairs where both are true: strictly concordant unordered pairs.
    # Sort by teacher ascending and, within teacher ties, student descending,
    # so that no pair tied in the teacher counts as increasing in the student.
    order = np.argsort(rt * n + (n - 1 - rs))
    both = _count_increasing_pairs(rs[order])
    # Disagreements are pairs where exactly one of the two comparisons holds.
    agree = total - (p_t - both) - (p_s - both)
    return int(agree), int(total)


def fidelity(teacher: ArrayLike, student: ArrayLike) -> float:
    """The seed paper's fidelity: the share of agreeing ordered pairs.

    Over ordered pairs ``i != j``, the share where
    ``(teacher_i > teacher_j) == (student_i > student_j)``. Ties follow this
    definition: a pair tied in both agrees in both orders; a pair tied in one
    score only disagrees in exactly one of its two orders. Exact, in
    O(N log N) time.

    Parameters
    ----------
    teacher : array-like of shape (n_users,)
        The teacher model's scores.
    student : array-like of shape (n_users,)
        The student's scores for the same users in the same order.

    Returns
    -------
    float
        In [0, 1]; 1 when the student orders every pair as the teacher does.

    Raises
    ------
    ValueError
        On lengths that differ, fewer than two users, or NaN/infinite scores.
    """
    agree, total = count_pairs(teacher, student)
    if total == 0:
        raise InputError("fidelity needs at least two users")
    return agree / total


class Agreement:
    """:func:`fidelity` to one teacher, for many students: the same counts.

    Pruning and the scorecard's budget score hundreds of students against the same
    teacher scores; the teacher's ranks, tied pairs and order are computed once, so
    each student costs one sort fewer (and a cheap one within the teacher's ties).

    Parameters
    ----------
    teacher : ndarray of shape (n_users,)

    Examples
    --------
    >>> import numpy as np
    >>> agree = Agreement(np.array([1.0, 2.0, 3.0]))
    >>> agree(np.array([0.1, 0.3, 0.2])) == fidelity([1.0, 2.0, 3.0], [0.1, 0.3, 0.2])
    True
    """

    def __init__(self, teacher: np.ndarray) -> None:
        self.teacher = np.asarray(teacher, dtype=np.float64)
        n = self.n = self.teacher.size
        self.total = n * (n - 1)
        self.half = n * (n - 1) // 2
        self.ranks = _dense_ranks(self.teacher) if n >= 2 and np.isfinite(self.teacher).all() else None
        if self.ranks is not None:
            self.p_t = self.half - _tied_pairs(self.ranks)
            self.order = np.argsort(self.ranks, kind="stable")
            self.sorted_ranks = self.ranks[self.order]

    def __call__(self, student: np.ndarray) -> float:
        s = np.asarray(student, dtype=np.float64)
        if self.ranks is None or s.shape != self.teacher.shape or not np.isfinite(s).all():
            return fidelity(self.teacher, s)  # its errors, in its words
        return self.of_ranks(_dense_ranks(s))

    def of_ranks(self, rs: np.ndarray) -> float:
        """Fidelity of a student given by its dense ranks (0 .. q-1, equal scores sharing one)."""
        assert self.ranks is not None
        n = self.n
        p_s = self.half - _tied_pairs(rs)
        # As count_pairs: by teacher ascending, and within teacher ties by student descending. Users in
        # the teacher's order already are sorted but within its ties: a stable sort of nearly sorted keys
        # (users with equal keys have equal student ranks, so their order changes no count).
        order = self.order
        if self.p_t < self.half:
            order = order[np.argsort(self.sorted_ranks * n + (n - 1 - rs[order]), kind="stable")]
        both = _count_increasing_pairs(rs[order])
        return (self.total - (self.p_t - both) - (p_s - both)) / self.total


def auc(labels: ArrayLike, scores: ArrayLike) -> float:
    """Area under the ROC curve of ``scores`` for binary ``labels``.

    The probability that a random positive scores above a random negative,
    ties counting one half (the Mann-Whitney statistic).

    Parameters
    ----------
    labels : array-like of shape (n_users,)
        0/1 or boolean labels; both classes must occur.
    scores : array-like of shape (n_users,)

    Returns
    -------
    float
    """
    y = _as_score_vector(labels, "labels")
    s = _as_score_vector(scores, "scores")
    if y.size != s.size:
        raise InputError(f"labels and scores differ in length: {y.size} and {s.size}")
    if not np.isin(y, (0.0, 1.0)).all():
        raise InputError("labels must be binary (0/1 or bool)")
    pos = y == 1.0
    n_pos = int(pos.sum())
    n_neg = y.size - n_pos
    if n_pos == 0 or n_neg == 0:
        raise InputError("auc needs both positive and negative labels")
    from scipy.stats import rankdata

    ranks = rankdata(s)  # average ranks: ties count one half
    u = ranks[pos].sum() - n_pos * (n_pos + 1) / 2.0
    return float(u / (n_pos * n_neg))


def fidelity_interval(teacher: ArrayLike, student: ArrayLike, level: float = 0.95, n_boot: int = 200,
                      max_sample: int = 2000, random_state: int | None = 0) -> tuple[float, float]:
    """A confidence interval for :func:`fidelity` on a sample of users.

    Fidelity averages over pairs of users, so its spread shrinks like one
    over the square root of the number of users. The spread is estimated by
    a bootstrap of users (resamples of at most ``max_sample`` users, scaled
    back to the full sample size; pairs of a user with its own copy are left
    out, as the fidelity has no pair ``i == i``) and the interval is the
    estimate plus or minus the normal quantile times that spread. Below 30
    users the bootstrap understates the uncertainty, so the interval is at
    least the Wilson interval of ``n // 2`` disjoint, independent pairs.

    Parameters
    ----------
    teacher, student : array-like of shape (n_users,)
    level : float, default=0.95
    n_boot : int, default=200
        Bootstrap resamples.
    max_sample : int, default=2000
        Users per resample; bounds the cost at ``n_boot`` fidelities of that size.
    random_state : int or None, default=0

    Returns
    -------
    (low, high) : tuple of float
        Within [0, 1].
    """
    from statistics import NormalDist

    t = _as_score_vector(teacher, "teacher")
    s = _as_score_vector(student, "student")
    f = fidelity(t, s)
    n = t.size
    z = NormalDist().inv_cdf(0.5 + level / 2)
    rng = np.random.default_rng(check_random_state_seed(random_state))
    m = min(n, max_sample)
    values = []
    for _ in range(n_boot):  # a loop over resamples, each one vectorized
        idx = rng.integers(0, n, m)
        agree, total = count_pairs(t[idx], s[idx])
        copies = np.bincount(idx)
        own = int((copies * (copies - 1)).sum())  # ordered pairs of copies: tied in both, so they agree
        if total - own > 0:
            values.append((agree - own) / (total - own))
    sd = float(np.std(values, ddof=1)) * np.sqrt(m / n) if len(values) > 1 else 0.0
    low, high = f - z * sd, f + z * sd
    if n < 30:
        k = max(1, n // 2)
        centre = (f + z * z / (2 * k)) / (1 + z * z / k)
        half = z * np.sqrt(f * (1 - f) / k + z * z / (4 * k * k)) / (1 + z * z / k)
        low, high = min(low, centre - half), max(high, centre + half)
    return float(max(0.0, low)), float(min(1.0, high))
