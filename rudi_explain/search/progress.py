"""What the statistics search reports while it runs, and how a caller stops it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rudi_explain.exceptions import StateError

if TYPE_CHECKING:
    from rudi_explain.statistics import Statistic

__all__ = ["SearchProgress", "SearchCancelled"]


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
