"""Idle filters: a ``RetainBy``/``FilterBy`` step stays only if it changes what its statistic explains.

Of the thousands of filters a statistic can take, some win on the users the search chose on by
luck ("excluding Tuesdays", "industry is not 11"): the statistic without them explains about as
much, and a reader takes the filter for something the model cares about. Once the search has
chosen its statistics, :func:`drop_idle_filters` tries each searched statistic with each of its
filters dropped, on users the search did not choose on, with the criterion the selection keeps a
statistic by (the held-out R^2 of the additive step model of all the statistics chosen,
:class:`~rudi_explain.search.catalog.StepModel`): a filter whose drop costs less than
``tolerance`` of the target's variance there goes.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

import numpy as np

from rudi_explain.data.sequences import Sequences
from rudi_explain.search.catalog import ColumnScreen, StepModel
from rudi_explain.statistics import FilterBy, RetainBy, Schema, Statistic

__all__ = ["drop_idle_filters", "without_each_filter"]


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


def drop_idle_filters(statistics: Sequence[Statistic], seqs: Sequences, y: np.ndarray, fit_rows: np.ndarray,
                      held_rows: np.ndarray, *, tolerance: float = 0.002, keep: Collection[tuple] = (),
                      grammar: str = "readable", tick: Callable[[], None] | None = None
                      ) -> tuple[list[Statistic | None], list[tuple[Statistic, Statistic | None]]]:
    """Drop the filters that change nothing the statistics explain on held-out users.

    The additive step model of all the statistics is fitted on ``fit_rows`` and scored (R^2)
    on ``held_rows``; for each statistic with filters in turn, each filter is dropped in
    turn and the model refitted. The best drop that keeps the score within ``tolerance`` of the
    statistic as chosen is made, and the simpler statistic is tried again (so two idle filters
    both go, but a chain of drops never loses more than ``tolerance`` in all). A statistic whose
    filter-free form is already among the others goes altogether under the same test.

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
        (the search's ``min_gain``).
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

    def held_r2(stats: list[Statistic | None]) -> float:
        cols = ColumnScreen.join([columns(st) for st in stats if st is not None], n)
        model = StepModel(cols.bins[fit_rows], cols.values[fit_rows], y[fit_rows])
        err = y[held_rows] - model.predict(cols.bins[held_rows], cols.values[held_rows])
        centred = y[held_rows] - y[held_rows].mean()
        return 1.0 - float(err @ err) / max(float(centred @ centred), 1e-300)

    dropped: list[tuple[Statistic, Statistic | None]] = []
    for j, chosen in enumerate(statistics):
        if chosen.key in keep or not any(isinstance(op, (RetainBy, FilterBy)) for op in chosen.operators):
            continue
        if tick is not None:
            tick()
        reference = held_r2(current)  # the statistic as chosen, beside the others as they now are
        stat: Statistic | None = chosen
        while stat is not None:
            others = {st.key for i, st in enumerate(current) if i != j and st is not None}
            trials: list[tuple[float, int, Statistic | None]] = []
            for order, simple in enumerate(without_each_filter(stat, schema, grammar)):
                again = simple.key in others  # already there: the statistic adds nothing of its own
                trial = current[:j] + [None if again else simple] + current[j + 1:]
                trials.append((round(held_r2(trial), 9), -order, None if again else simple))
            passing = [t for t in trials if t[0] >= reference - tolerance]
            if not passing:
                break
            _, _, best = max(passing, key=lambda t: (t[0], t[1]))
            current[j] = stat = best
        if current[j] is not chosen:
            dropped.append((chosen, current[j]))
    return current, dropped
