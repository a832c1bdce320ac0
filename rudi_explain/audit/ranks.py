"""A user's percentile: one definition, used wherever one is shown.

**Mid-rank**: the share of the others strictly below, plus half the share tied with it,
in percent (:func:`percentile_of`). Chosen over "the share strictly below" because rule scores
are heavily tied (ten rules give a few dozen distinct scores): strictly below, every user of a
tied block gets the block's bottom, so a user tied with a fifth of the users at the top reads
80 under the rules while the teacher, whose scores are seldom tied, says 90 or more; the gap is
the ties', not the rules'. Mid-rank puts every tied user at the middle of their block, so a
teacher percentile and a rule percentile compare fairly; it is also symmetric (the top user of
``n`` sits at ``100 - 50 / n`` as the bottom one sits at ``50 / n``), and the correlation of
mid-rank percentiles is Spearman's rank correlation with ties averaged.
"""

from __future__ import annotations

import numpy as np

__all__ = ["percentile_of", "percentile", "percentile_words"]


def percentile_of(x: np.ndarray | float, among: np.ndarray, *, among_sorted: bool = False) -> np.ndarray:
    """Mid-rank percentile of each of ``x`` among the values ``among``, in [0, 100].

    ``100 * (number below + number equal / 2) / len(among)``; NaN values in ``among`` count as
    above every number.

    Parameters
    ----------
    x : float or ndarray
        The values to place.
    among : ndarray
        The values they are placed among (e.g. the training users' rule scores).
    among_sorted : bool, default=False
        Whether ``among`` is sorted already (saves a sort when placing many values in turn).

    Returns
    -------
    ndarray of float
        The shape of ``x``.
    """
    s = np.asarray(among, dtype=np.float64)
    if not among_sorted:
        s = np.sort(s)
    lo = np.searchsorted(s, x, side="left")
    hi = np.searchsorted(s, x, side="right")
    return 100.0 * ((lo + hi) / 2) / len(s)


def percentile(x: float, among: np.ndarray) -> float:
    """:func:`percentile_of` for one value, as a float: two counts, no sort (a drill-down into one user)."""
    values = np.asarray(among, dtype=np.float64)
    if np.isnan(x):
        lo, hi = int(np.count_nonzero(~np.isnan(values))), len(values)
    else:
        lo, hi = int(np.count_nonzero(values < x)), int(np.count_nonzero(values <= x))
    return 100.0 * ((lo + hi) / 2) / len(values)


def percentile_words(p: float | None) -> str:
    """A percentile as a reader says it: ``"22nd percentile"`` when whole, else ``"percentile 3.2"``.

    Rounded to one decimal first; a fraction never takes an ordinal suffix ("3.22th" reads as a
    typo). ``None`` or NaN gives ``"percentile -"``.
    """
    if p is None or np.isnan(p):
        return "percentile -"
    r = round(float(p), 1)
    if r != int(r):
        return f"percentile {r:.1f}"
    k = int(r)
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix} percentile"
