"""Forward selection's second form of a candidate: its effect split by the strongest statistic kept.

The selection of :meth:`~rudi_explain.search.statistics_search.StatisticsSearch._fit_screened`
scores a candidate by what it adds to an *additive* step model of the statistics kept
(:class:`~rudi_explain.search.catalog.StepModel`). A teacher whose score depends on a statistic
differently for different users ("the mean price matters for repeat buyers, not for one-time
buyers") gives that statistic little additive gain, and the additive check on users it was not
chosen on can even fall when it is added: its one step function has to average two opposite
effects. The student (rules with conjunctions) uses such a statistic well, but the search never
offered it. Measured on CDNOW (1,500 customers, a gradient-boosting teacher of who buys again):
after the purchase count and the CDs bought, every one of the 25 best additive candidates lost
held-out R^2 (up to -0.04), while the first statistic's users split at its median gave the mean
CDs per purchase +0.016 and the first purchase's amount +0.025 on the same checking users.

So when no additive candidate passes the check, the candidate whose step function explains the
most of the residual *separately* on the users above and at or below the median of the first
statistic kept (its "strata") is tried, judged by the same check with its column split in two
(one copy per stratum, zero on the other): it stays only if that explains at least ``min_gain``
more on the checking users. The kept statistic is the plain statistic; only the check sees it
split. Choosing stays on the choosing users and keeping on the checking users, as for the
additive form.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from rudi_explain.search.catalog import ColumnScreen
from rudi_explain.statistics import Statistic

__all__ = ["median_strata", "split_column", "stratified_gains", "in_form", "interaction_candidates"]

#: A stratum with fewer than this share of the choosing users splits nothing.
MIN_STRATUM = 0.1


def median_strata(column: ColumnScreen, rows: np.ndarray) -> np.ndarray | None:
    """Users above the median bin of ``column`` (its first output) on ``rows``, as a boolean per user;
    None where one side would hold under :data:`MIN_STRATUM` of ``rows`` (nothing to split by)."""
    bins = column.bins[:, 0]
    median = np.median(bins[rows])
    for high in (bins > median, bins >= median):
        share = float(high[rows].mean())
        if MIN_STRATUM <= share <= 1 - MIN_STRATUM:
            return high
    return None


def split_column(column: ColumnScreen, strata: np.ndarray) -> ColumnScreen:
    """``column`` as two columns of the same statistic: its bins and values on the users of each
    stratum, zero (the first bin, the mean) on the other's, so a step model fits one step
    function per stratum."""
    high = strata[:, None]
    bins = np.hstack([np.where(high, column.bins, 0), np.where(high, 0, column.bins)]).astype(column.bins.dtype)
    values = np.concatenate([np.where(high[:, :, None], column.values, 0),
                             np.where(high[:, :, None], 0, column.values)], axis=1).astype(column.values.dtype)
    return ColumnScreen(column.owners + column.owners, bins, values)


def stratified_gains(screen: ColumnScreen, residual: np.ndarray, rows: np.ndarray, strata: np.ndarray,
                     total_var: float) -> np.ndarray:
    """Share of the target's variance each column of ``screen`` explains of ``residual`` (on ``rows``) with
    one step function per stratum (:meth:`ColumnScreen.gains` on each stratum, adjusted for the bins it
    spends there, weighted by the stratum's users)."""
    out = np.zeros(len(screen))
    for part in (strata[rows], ~strata[rows]):
        r = residual[part] - residual[part].mean()
        out += screen.gains(r, rows[part], total_var, within=(rows, part)) * part.sum() / len(rows)
    return out


def in_form(cols: ColumnScreen, split: set[tuple[str, int]], strata: np.ndarray | None) -> ColumnScreen:
    """``cols`` as the check sees them: each column whose (statistic text, output) is in ``split``
    split by ``strata`` (:func:`split_column`), the others as they are."""
    if strata is None or not split or not any((str(st), o) in split for st, o in cols.owners):
        return cols
    parts = [split_column(cols.take(j), strata) if (str(st), o) in split else cols.take(j)
             for j, (st, o) in enumerate(cols.owners)]
    return ColumnScreen.join(parts, len(cols.bins))


def _ordered(screen: ColumnScreen, gains: np.ndarray, min_gain: float, beam: int, taken: set[tuple[str, int]],
             preference: Callable[[Statistic], tuple]) -> list[int]:
    """Of the columns whose ``gains`` reach ``min_gain`` (and whose (statistic text, output) is not
    in ``taken``), the most preferred of about equals to the best (within 5% + 0.0005, as the
    additive choice), then the rest by gain; one column per statistic, at most ``beam``."""
    gains = np.round(gains, 6)  # no decision on a near-tie
    ok = [i for i in range(len(screen))
          if gains[i] >= min_gain and (str(screen.owners[i][0]), screen.owners[i][1]) not in taken]
    if not ok:
        return []
    top = max(gains[i] for i in ok)
    near = {i for i in ok if gains[i] >= top - (0.05 * top + 0.0005)}
    order = sorted(near, key=lambda i: (preference(screen.owners[i][0]), -gains[i], i)) + \
        sorted(set(ok) - near, key=lambda i: (-gains[i], i))
    out: list[int] = []
    stats: set[Statistic] = set()
    for i in order:
        if screen.owners[i][0] not in stats:
            stats.add(screen.owners[i][0])
            out.append(i)
        if len(out) == beam:
            break
    return out


def interaction_candidates(screen: ColumnScreen, residual: np.ndarray, rows: np.ndarray, strata: np.ndarray,
                           total_var: float, min_gain: float, beam: int, taken: set[tuple[str, int]],
                           preference: Callable[[Statistic], tuple]) -> list[int]:
    """Columns of ``screen`` to try split by ``strata``, in order: of those whose
    :func:`stratified_gains` reach ``min_gain`` (and whose (statistic text, output) is not in
    ``taken``), the most preferred (``preference``, smallest first: given, then simplest) of about
    equals to the best (within 5% + 0.0005, as the additive choice), then the rest by gain; one
    column per statistic, at most ``beam`` statistics."""
    return _ordered(screen, stratified_gains(screen, residual, rows, strata, total_var), min_gain, beam, taken,
                    preference)


