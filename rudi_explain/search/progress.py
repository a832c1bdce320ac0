"""What the statistics search reports while it runs, and how a caller stops it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from rudi_explain.exceptions import StateError

if TYPE_CHECKING:
    from rudi_explain.statistics import Statistic
    from rudi_explain.statistics.grammar import Schema

__all__ = ["SearchProgress", "SearchCancelled", "catalog_work"]


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


def catalog_work(stats: Sequence[Statistic], schema: Schema) -> np.ndarray:
    """The catalog's work up to each statistic: ``out[i]`` is the work of ``stats[:i]`` (``len(stats) + 1`` values).

    A statistic's work is one plus its outputs: a count has one output, "the total amount by
    country" one per country, and each output is a column to check, bin and standardize. On the
    catalogs of 17 recorded runs (``benchmarks/bench_eta.py``; payments, edits and planted cases
    of 2,000 to 100,000 users) the seconds of a chunk of 50 statistics followed its outputs
    (correlation up to 0.93 where a categorical column has 40 values), and the catalog's seconds
    told from its first 40% were within 30% of the real ones in 88% of the runs by this work
    against 29% by the count of statistics.

    Parameters
    ----------
    stats : sequence of Statistic
        The catalog, in the order it is evaluated.
    schema : Schema
        The columns and vocabularies the statistics are valid on.

    Returns
    -------
    ndarray of shape (len(stats) + 1,)
    """
    work = np.fromiter((1.0 + st.n_outputs(schema) for st in stats), dtype=float, count=len(stats))
    return np.concatenate([[0.0], np.cumsum(work)])


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
