"""What the statistics search reports while it runs, and how a caller stops it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from rudi_explain.exceptions import StateError
from rudi_explain.statistics.operators import Abs, FilterBy, RetainBy, SortBy, Top
from rudi_explain.statistics.time_operators import Within

if TYPE_CHECKING:
    from rudi_explain.statistics import Statistic
    from rudi_explain.statistics.grammar import Schema

__all__ = ["SearchProgress", "SearchCancelled", "catalog_work", "catalog_parts"]


@dataclass(frozen=True)
class SearchProgress:
    """What the search is doing, for progress bars and widgets.

    Attributes
    ----------
    method : str
    statistic : int
        Which statistic is being searched, 1-based, out of ``n_stats``.
    n_stats : int
    step : int
        Which operator of that statistic is being chosen (1 = the Select).
    simulation : int
        Simulations run in the current tree, out of ``n_simulations``.
    n_simulations : int
    pipeline : str
        The operators committed so far for this statistic.
    best : str
        The best complete statistic seen in this tree (or the last one found).
    best_reward : float
    found : tuple of str
        Statistics found so far.
    elapsed : float
        Seconds since the search started.
    phase : str
        With the catalog: 'catalog' (evaluating it), 'select' (choosing, deepening, checking)
        or 'mcts'; '' otherwise. What an estimate of the time left goes by.
    phase_done, phase_total : int
        Catalog statistics evaluated so far, out of all of them (0 in the other phases).
    min_gain : float
        The search's stopping rule: a statistic must explain at least this much more.
    phase_work_done, phase_work_total : float
        The catalog's work done so far, out of all of it, in :func:`catalog_work`'s units (0 where
        the search does not report it): what an estimate of the time left goes by, since the
        catalog's statistics cost up to 40 times one another.
    """

    method: str
    statistic: int
    n_stats: int
    step: int
    simulation: int
    n_simulations: int
    pipeline: str
    best: str
    best_reward: float
    found: tuple[str, ...]
    elapsed: float
    phase: str = ""
    phase_done: int = 0
    phase_total: int = 0
    min_gain: float = 0.0
    phase_work_done: float = 0.0
    phase_work_total: float = 0.0


#: What a catalog statistic costs on the sample besides its outputs, in outputs (each output is a column to
#: check, bin and standardize): fitted on the per-statistic seconds of the catalogs of payments, edits and
#: planted cases (5,000 users, the search's 4,000-user sample, each statistic timed alone with a fresh
#: frame cache, the least of three runs; ``benchmarks/bench_eta.py --weigh``).
#: A statistic: its evaluation's fixed part.
WORK_PER_STATISTIC = 3.75
#: An event (per user) in the frame it aggregates.
WORK_PER_EVENT = 0.2
#: An event (per user) a row operator reads the first time its prefix is applied (``FrameCache``: a
#: filter is applied once to the sample, then reused).
WORK_PER_EVENT_PASSED = 0.022
#: An event (per user) sorted the first time an order is needed (``SortBy``, a percentile's order:
#: sorted once over the sample and cached, then filtered): 8 outputs, so a statistic that brings a new
#: order costs 20 to 60 times one that does not.
WORK_PER_EVENT_SORTED = 8.0
#: Events per user where the search does not say (about those of the cases measured: 21 to 49).
EVENTS_PER_USER = 30.0


def catalog_work(stats: Sequence[Statistic], schema: Schema, events_per_user: float | None = None) -> np.ndarray:
    """The catalog's work up to each statistic: ``out[i]`` is the work of ``stats[:i]`` (``len(stats) + 1`` values).

    A statistic's work, in units of one output, is its outputs (a count has one, "the total amount
    by country" one per country: each a column to check, bin and standardize), a fixed part, the
    events it aggregates, and what it is the first in the catalog's order to need: each new prefix
    of row operators reads the events before it once (:class:`~rudi_explain.statistics.frame.FrameCache`),
    and each new order (a ``SortBy``, or the sorted values of a percentile) sorts every event of the
    sample once. The events a filter keeps are told from the schema alone: a category's events on
    average (``RetainBy``: one over the column's categories; ``FilterBy``: the rest), a ``Top(k)``
    ``k`` events, a time window half of them. By outputs alone, the first tenth of a catalog's seconds
    (its statistics over every event, its first orders) read as 3% to 6% of its work, and the estimate of
    the time left that extrapolates from it overshot 2 to 3 times; by this work, 8% to 11%.

    Parameters
    ----------
    stats : sequence of Statistic
        The catalog, in the order it is evaluated.
    schema : Schema
        The columns and vocabularies the statistics are valid on.
    events_per_user : float, optional
        The sample's events per user (default :data:`EVENTS_PER_USER`): how much the events
        weigh against the outputs.

    Returns
    -------
    ndarray of shape (len(stats) + 1,)
    """
    weights = np.array([WORK_PER_STATISTIC, 1.0, WORK_PER_EVENT, WORK_PER_EVENT_PASSED, WORK_PER_EVENT_SORTED])
    return np.concatenate([[0.0], np.cumsum(catalog_parts(stats, schema, events_per_user) @ weights)])


def catalog_parts(stats: Sequence[Statistic], schema: Schema, events_per_user: float | None = None) -> np.ndarray:
    """What each statistic of a catalog costs, in parts :func:`catalog_work` weighs.

    Parameters
    ----------
    stats, schema, events_per_user
        As :func:`catalog_work`.

    Returns
    -------
    ndarray of shape (len(stats), 5)
        Per statistic: 1, its outputs, and the events per user it aggregates, reads to apply
        row-operator prefixes no statistic before it applied, and sorts for orders none before it needed.
    """
    per_user = EVENTS_PER_USER if events_per_user is None else max(float(events_per_user), 0.0)
    prefixes: set[tuple] = set()
    orders: set[tuple] = set()
    out = np.empty((len(stats), 5))
    for i, st in enumerate(stats):
        out[i] = (1.0, st.n_outputs(schema), *_events(st, schema, per_user, prefixes, orders))
    return out


def _events(stat: Statistic, schema: Schema, per_user: float, prefixes: set[tuple],
            orders: set[tuple]) -> tuple[float, float, float]:
    """Events per user that ``stat`` aggregates, reads to apply new row-operator prefixes, and sorts,
    told from the schema; ``prefixes`` and ``orders`` hold those applied before and are filled."""
    rows = stat.operators[1:-1]
    left, passed, sorted_ = per_user, 0.0, 0.0
    layout, absolute = True, False  # still in time order; Abs met
    for i, op in enumerate(rows):
        new = rows[:i + 1] not in prefixes
        if new:
            prefixes.add(rows[:i + 1])
            passed += left
        if isinstance(op, RetainBy):
            left /= max(len(schema.vocabularies[op.column]), 1)
        elif isinstance(op, FilterBy):
            left *= 1.0 - 1.0 / max(len(schema.vocabularies[op.column]), 1)
        elif isinstance(op, Top):
            left = min(left, float(op.k))
        elif isinstance(op, Within):
            left /= 2.0
        elif isinstance(op, Abs):
            absolute = True
        elif isinstance(op, SortBy):
            if layout:  # one order over all events, cached, then filtered
                order = (op.column, op.direction == "desc", False)
                if order not in orders:
                    orders.add(order)
                    sorted_ += per_user
            elif new:  # a sort of the frame itself
                sorted_ += left
            layout = False
    if stat.aggregation.sorted_input and stat.selected in schema.numerical:
        if layout:
            order = (stat.selected, False, absolute)
            if order not in orders:
                orders.add(order)
                sorted_ += per_user
        else:  # sorted each time (Statistic.evaluate)
            sorted_ += left
    return left, passed, sorted_


class SearchCancelled(StateError):
    """Raised when the progress callback asked to stop; ``statistics`` holds those found so far.

    Parameters
    ----------
    statistics : list of Statistic
        The statistics found before the search stopped.
    """

    def __init__(self, statistics: list[Statistic]):
        super().__init__(f"statistics search cancelled after {len(statistics)} statistic(s)")
        self.statistics = statistics
