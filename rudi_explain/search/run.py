"""``search_statistics()``: stage 1 in one call (a :class:`StatisticsSearch` fitted, its statistics returned)."""

from __future__ import annotations

from collections.abc import Callable

from rudi_explain.data.sequences import Sequences
from rudi_explain.search.progress import SearchProgress
from rudi_explain.search.statistics_search import StatisticsSearch
from rudi_explain.statistics import Statistic

__all__ = ["search_statistics"]


def search_statistics(seqs: Sequences, target, *, n_stats: int = 20, max_depth: int = 4, batch_size: int = 128,
                      n_simulations: int = 500, random_state: int | None = 0, method: str = "mcts",
                      progress: Callable[[SearchProgress], bool | None] | None = None,
                      reward: str = "split", grammar: str = "readable", **params) -> list[Statistic]:
    """Search K statistics of the sequences that explain a target (MCTS-SG).

    Parameters
    ----------
    seqs : Sequences
    target : array-like of shape (n_users,) or Series indexed by user id
        Usually the teacher's scores.
    n_stats, max_depth, batch_size, n_simulations : int
        K, D, B and the iterations per tree (the paper's defaults).
    random_state : int or None, default=0
    method : {'mcts', 'random', 'lasso', 'gbm'}, default='mcts'
        MCTS-SG or one of the paper's Table 3 baselines.
    progress : callable, optional
        Receives :class:`SearchProgress`; return ``False`` to cancel
        (:class:`SearchCancelled` is raised with the statistics found so far).
    reward : {"split", "adjusted", "paper"}, default="split"
        See :class:`StatisticsSearch`.
    grammar : {"readable", "paper"}, default="readable"
        The readable grammar (catalog first, then MCTS-SG), or the paper's
        full grammar and algorithm (Table 3).
    **params
        Further :class:`StatisticsSearch` parameters (``screen_size``,
        ``min_gain``, ``catalog``, ...).

    Returns
    -------
    list of Statistic
        In the order found; no two are equivalent.
    """
    search = StatisticsSearch(n_stats=n_stats, max_depth=max_depth, batch_size=batch_size,
                              n_simulations=n_simulations, method=method, reward=reward,
                              random_state=random_state, grammar=grammar, **params)
    return search.fit(seqs, target, progress=progress).statistics_
