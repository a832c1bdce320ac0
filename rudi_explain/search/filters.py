"""Idle filters: a ``RetainBy``/``FilterBy`` step stays only if it changes what its statistic explains.

Of the thousands of filters a statistic can take, some win on the users the search chose on by
luck ("excluding Tuesdays", "industry is not 11"): the statistic without them explains about as
much, and a reader takes the filter for something the model cares about. Once the search has
chosen its statistics, :func:`drop_idle_filters` tries each searched statistic with each of its
filters dropped, on users the search did not choose on, with the criterion the selection keeps a
statistic by (the held-out R^2 of the additive step model of all the statistics chosen,
:class:`~rudi_explain.search.catalog.StepModel`): a filter whose drop costs less than
``tolerance`` of the target's variance there, give or take the noise of those users, goes.

The noise matters: two forms of one statistic that differ by a rare filter score within about
0.006 of R^2 of each other on 600 held-out users by chance alone, where a filter the target
needs makes a difference of 0.05 or more. So the cost of a drop is measured user by user (each
user's squared error without the filter less with it), and the filter stays only where that
cost's mean exceeds ``tolerance`` by more than ``z`` of its standard errors.

That benefit of the noise goes only to a form that is nearly the statistic as chosen: one that
ranks the held-out users alike (Spearman correlation at least :data:`ALIKE`; "excluding pharmacy"
beside the total). A form that ranks them otherwise is another statistic ("the number of
events" for "the number of events abroad"): it may lose ``tolerance`` and no more, as the
search's simpler forms may. Otherwise a statistic that explains little was replaced by one that
means something else, because neither explains much: a planted share of foreign payments became
"the number of events" on one seed of three.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

import numpy as np
from scipy.stats import rankdata

from rudi_explain.correlation import batch_reward
from rudi_explain.data.sequences import Sequences
from rudi_explain.search.catalog import ColumnScreen, StepModel
from rudi_explain.statistics import FilterBy, RetainBy, Schema, Statistic

__all__ = ["ALIKE", "drop_idle_filters", "same_ranking", "without_each_filter"]


def without_each_filter(stat: Statistic, schema: Schema, grammar: str = "readable") -> list[Statistic]:
    """``stat`` with one ``RetainBy``/``FilterBy`` dropped, for each one whose drop leaves a valid statistic."""
    ops = stat.operators
    out = []
    for i, op in enumerate(ops):
        if isinstance(op, (RetainBy, FilterBy)):
            candidate = Statistic(ops[:i] + ops[i + 1:])
            if candidate.is_valid(schema) and (grammar != "readable" or candidate.is_readable(schema)):
                out.append(candidate)
    return out


#: Rank correlation on the held-out users from which a filter-free form is the statistic as chosen, nearly:
#: its filter must then explain ``tolerance`` more by ``z`` standard errors to stay. "Excluding pharmacy"
#: (6% of payments) ranks the users as the total does (1.00 on make_payments), "at home" (95%) nearly (0.995);
#: "abroad" does not (the number of events abroad against the number of events: 0.37), nor "ATM" in foreign
#: ATM cash (against all foreign spend: 0.53).
ALIKE = 0.9


def same_ranking(a: np.ndarray, b: np.ndarray) -> float:
    """The lowest Spearman correlation between the outputs (columns) of ``a`` and ``b``, one row per user
    (undefined values rank lowest); 0 when they differ in outputs or one output is constant."""
    a, b = (np.asarray(v, dtype=np.float64).reshape(len(v), -1) for v in (a, b))
    if a.shape != b.shape:
        return 0.0
    lowest = 1.0
    for k in range(a.shape[1]):
        ra, rb = (rankdata(np.where(np.isnan(v[:, k]), -np.inf, v[:, k])) for v in (a, b))
        if np.ptp(ra) == 0 or np.ptp(rb) == 0:
            return 0.0
        lowest = min(lowest, float(np.corrcoef(ra, rb)[0, 1]))
    return lowest


def drop_idle_filters(statistics: Sequence[Statistic], seqs: Sequences, y: np.ndarray, fit_rows: np.ndarray,
                      held_rows: np.ndarray, *, tolerance: float = 0.002, z: float = 2.0,
                      keep: Collection[tuple] = (),
                      grammar: str = "readable", tick: Callable[[], None] | None = None
                      ) -> tuple[list[Statistic | None], list[tuple[Statistic, Statistic | None]]]:
    """Drop the filters that change nothing the statistics explain on held-out users.

    The additive step model of all the statistics is fitted on ``fit_rows`` and scored (R^2)
    on ``held_rows``; for each statistic with filters in turn, each filter is dropped in
    turn and the model refitted. The drop that costs least is made if its cost (the fall in
    held-out R^2 from the statistic as chosen) is at most ``tolerance`` plus ``z`` standard
    errors of that cost, and the simpler statistic is tried again: two idle filters both go,
    but a chain of drops is judged against the statistic as chosen, never step by step. A
    statistic whose filter-free form is already among the others goes altogether under the
    same test.

    Parameters
    ----------
    statistics : sequence of Statistic
        The statistics chosen, in order.
    seqs : Sequences
        Users holding both ``fit_rows`` and ``held_rows``.
    y : ndarray of shape (seqs.n_users,)
        The target.
    fit_rows, held_rows : ndarray of int
        Positions in ``seqs``: where the model is fitted (the users the search chose on) and
        where it is judged (users it did not choose on).
    tolerance : float, default=0.002
        The share of the target's variance on ``held_rows`` a filter must explain to stay
        (the search's ``min_gain``); where the form without it ranks the users otherwise
        (:func:`same_ranking` under :data:`ALIKE`), the most its drop may cost.
    z : float, default=2.0
        And by how many standard errors of the paired per-user difference more (about a 2.5%
        chance that an idle filter stays by luck), where the form without it ranks the held-out
        users alike.
    keep : collection of tuple
        Equivalence keys (:attr:`Statistic.key`) of statistics kept as they are (those the
        user gave).
    grammar : {'readable', 'paper'}
        A form without the filter must belong to it.
    tick : callable, optional
        Called before each statistic is tried (a cancel check).

    Returns
    -------
    statistics : list of Statistic or None
        In the same order; a filter-free form in place of a statistic that lost filters, None
        where a statistic went (its filter-free form was another of them).
    dropped : list of (Statistic, Statistic or None)
        Each change made: (the statistic as chosen, what took its place).
    """
    schema = Schema.of(seqs)
    current: list[Statistic | None] = list(statistics)
    if not len(held_rows) or not len(fit_rows):
        return current, []
    cache: dict[tuple, ColumnScreen] = {}
    n = seqs.n_users

    def columns(stat: Statistic) -> ColumnScreen:
        if stat.key not in cache:
            cache[stat.key] = ColumnScreen.build([stat], seqs, set())
        return cache[stat.key]

    held_values: dict[tuple, np.ndarray] = {}  # by key: the held-out users' values, what same_ranking reads

    def held(stat: Statistic) -> np.ndarray:
        if stat.key not in held_values:
            held_values[stat.key] = np.asarray(stat.evaluate(seqs, users=held_rows), dtype=np.float64)
        return held_values[stat.key]

    centred = y[held_rows] - y[held_rows].mean()
    variance = max(float(centred @ centred) / len(held_rows), 1e-300)

    def held_errors(stats: list[Statistic | None]) -> np.ndarray:
        """Each held-out user's squared error under the model of ``stats`` fitted on ``fit_rows``."""
        cols = ColumnScreen.join([columns(st) for st in stats if st is not None], n)
        model = StepModel(cols.bins[fit_rows], cols.values[fit_rows], y[fit_rows])
        err = y[held_rows] - model.predict(cols.bins[held_rows], cols.values[held_rows])
        return err * err

    def cost(trial: np.ndarray, reference: np.ndarray) -> tuple[float, float]:
        """The held-out R^2 lost from ``reference`` to ``trial``, and its standard error."""
        d = (trial - reference) / variance
        se = float(d.std(ddof=1)) / np.sqrt(len(d)) if len(d) > 1 else 0.0
        return float(d.mean()), se

    dropped: list[tuple[Statistic, Statistic | None]] = []
    for j, chosen in enumerate(statistics):
        if chosen.key in keep or not any(isinstance(op, (RetainBy, FilterBy)) for op in chosen.operators):
            continue
        if tick is not None:
            tick()
        reference = held_errors(current)  # the statistic as chosen, beside the others as they now are
        stat: Statistic | None = chosen
        while stat is not None:
            others = {st.key for i, st in enumerate(current) if i != j and st is not None}
            passing: list[tuple[float, int, Statistic | None]] = []
            for order, simple in enumerate(without_each_filter(stat, schema, grammar)):
                again = simple.key in others  # already there: the statistic adds nothing of its own
                trial = current[:j] + [None if again else simple] + current[j + 1:]
                lost, se = cost(held_errors(trial), reference)
                # The benefit of the held-out users' noise goes to a form that is nearly the statistic as chosen
                # ("excluding pharmacy"); a form that ranks the users otherwise is another statistic ("the number
                # of events" for "the number of events abroad"): as in the search's simplify(), it may lose
                # ``tolerance`` and no more. The ranking is read only where it decides.
                if lost <= tolerance or (lost <= tolerance + z * se
                                         and same_ranking(held(stat), held(simple)) >= ALIKE):
                    passing.append((round(lost, 9), order, None if again else simple))
            if not passing:
                break
            _, _, best = min(passing, key=lambda t: (t[0], t[1]))  # the drop that costs least
            current[j] = stat = best
        if current[j] is not chosen:
            dropped.append((chosen, current[j]))
    return current, dropped


#: Fewer held-out users than this and idle filters are not judged (too few to tell).
MIN_HELD = 200


def held_users(search: Any, sample: np.ndarray) -> np.ndarray:
    """Training users a StatisticsSearch's selection never sees, on which idle filters are judged (sorted positions).

    Users outside the screened sample where there are enough (at most ``screen_size`` of
    them); otherwise a fifth of the users, taken out of the sample before it is split.
    """
    if not search.drop_idle_filters:
        return np.zeros(0, dtype=np.int64)
    n = search._seqs.n_users
    # A generator of its own: the search's draws are the same whether or not users are held out.
    rng = np.random.default_rng(None if search.random_state is None else [search.random_state, 26])
    outside = np.setdiff1d(np.arange(n), sample)
    if len(outside) >= MIN_HELD:
        return np.sort(rng.choice(outside, min(len(outside), search.screen_size), replace=False))
    n_held = n // 5
    if n_held < MIN_HELD:
        return np.zeros(0, dtype=np.int64)
    return np.sort(rng.choice(n, n_held, replace=False))

def replace_idle_filters(search: Any, fit_users: np.ndarray, held: np.ndarray, keep: set[tuple],
                         tick: Callable[[], None]) -> None:
    """Replace each of ``search``'s chosen statistics by its form without a filter that changes nothing it explains on
    the held-out users (:func:`rudi_explain.search.filters.drop_idle_filters`)."""
    both = np.union1d(fit_users, held)  # sorted, as subset() orders its users
    local = search._seqs.subset(both)
    kept, dropped = drop_idle_filters(search.statistics_, local, search._y[both], np.searchsorted(both, fit_users),
                                      np.searchsorted(both, held), tolerance=search.min_gain,
                                      keep=keep, grammar=search.grammar, tick=tick)
    if not dropped:
        return
    search.dropped_filters_ = dropped
    keep_at = [i for i, st in enumerate(kept) if st is not None]
    for i in keep_at:
        new = kept[i]
        assert new is not None
        if new != search.statistics_[i]:
            search._values[i] = new.evaluate(search._seqs)
            search.partial_r_[i] = batch_reward(search._values[i], search._y, "paper")
            search.rewards_[i] = float("nan")
            search._marked.add(new.key)
    search.statistics_ = [kept[i] for i in keep_at]
    search._values = [search._values[i] for i in keep_at]
    search.rewards_ = [search.rewards_[i] for i in keep_at]
    search.partial_r_ = [search.partial_r_[i] for i in keep_at]
