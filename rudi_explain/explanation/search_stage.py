"""Stage 1 of the job: which users are held out, the statistics given checked, and the statistics search.

:func:`find_statistics` runs the search on the training users with the statistics the
user gave among its candidates, or takes only those (``search=False``) and says the
search was skipped; :func:`check_given` checks the given ones before the teacher is asked.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from rudi_explain.data.sequences import Sequences
from rudi_explain.exceptions import InputError
from rudi_explain.explanation.config import ExplainConfig
from rudi_explain.explanation.job import Job
from rudi_explain.search.given import check_statistics
from rudi_explain.search.statistics_search import SearchProgress, StatisticsSearch
from rudi_explain.statistics import Statistic

__all__ = ["held_out_users", "check_given", "find_statistics", "mcts_beside"]


def _no_statistic_error(n_train: int, min_gain: float) -> InputError:
    """The error when the search found no statistic, naming the likely causes."""
    return InputError(f"the search found no statistic that explains the scores: on the {n_train} training users no "
                      f"statistic of the events explained at least {min_gain:g} of the scores' variance on users it "
                      "was not chosen on. The users are likely too few, or the scores do not depend on the events; "
                      "pass more users (a few hundred or more), or check that the scores belong to these users")


def held_out_users(n: int, config: ExplainConfig) -> tuple[np.ndarray, np.random.Generator]:
    """``(is_test, rng)``: which users are held out for the figures, and the generator that drew them
    (the job draws the validation users from it next)."""
    rng = np.random.default_rng(config.random_state)
    n_test = int(round(n * config.test_size))
    if n - n_test < 10 or n_test < 2:
        raise InputError(f"{n} users are too few to train on and hold out (test_size={config.test_size})")
    is_test = np.zeros(n, dtype=bool)
    is_test[rng.permutation(n)[:n_test]] = True
    return is_test, rng


def check_given(seqs: Sequences, config: ExplainConfig) -> None:
    """Check the statistics given against the data and the training users now: before the teacher."""
    if not config.statistics:
        return
    try:
        is_test, _ = held_out_users(seqs.n_users, config)
    except InputError:
        return  # too few users: the job says so
    check_statistics(config.given_statistics, seqs, np.flatnonzero(~is_test))


def mcts_beside(config: ExplainConfig) -> bool:
    """Whether the job's search grows MCTS-SG's tree beside the later stages (told to the time left):
    :meth:`StatisticsSearch.tree_goes_beside` of the search the job makes."""
    try:
        return bool(config.search) and _new_search(config, given=()).tree_goes_beside()
    except (TypeError, ValueError):  # a bad search parameter: the search says so, in words
        return False


def _new_search(config: ExplainConfig, given: tuple[Statistic, ...]) -> StatisticsSearch:
    """The job's search, unfitted: its settings and ``search_params``, with the statistics ``given``."""
    p = config
    return StatisticsSearch(n_stats=p.n_stats, max_depth=p.max_depth, n_simulations=p.n_simulations,
                            batch_size=p.batch_size, random_state=p.random_state, grammar=p.grammar,
                            **{"given_statistics": given, **(p.search_params or {})})


def _search(train: Sequences, y_train: np.ndarray, config: ExplainConfig, job: Job,
            given: tuple[Statistic, ...], after_catalog: Callable[[], None], beside: bool) -> StatisticsSearch:
    """Stage 1: the statistics search on the training users, the given statistics among its candidates;
    ``after_catalog`` is called at its first event past the catalog."""
    p = config
    K = p.n_stats

    def on_search(event: SearchProgress) -> bool:
        if event.phase != "catalog":
            after_catalog()
        job.emit("search", event.statistic - 1, K, f"statistic {event.statistic}/{K}, step {event.step}: {event.best}",
                 statistic=event.statistic, depth_step=event.step, simulation=event.simulation,
                 best=event.best, reward=event.best_reward, pipeline=event.pipeline, found=list(event.found),
                 phase=event.phase, phase_done=event.phase_done, phase_total=event.phase_total, min_gain=event.min_gain,
                 phase_work_done=event.phase_work_done, phase_work_total=event.phase_work_total)
        return not job.stopping()

    search = _new_search(config, given)
    statistics = search.fit(train, y_train, progress=on_search, beside=beside).statistics_
    job.found = list(statistics)
    if not statistics:
        search.close_beside()
        job.check_cancel()  # stopped before the first statistic: a cancel, not bad data
        raise _no_statistic_error(train.n_users, search.min_gain)
    return search


def find_statistics(train: Sequences, y_train: np.ndarray, config: ExplainConfig, job: Job,
                    after_catalog: Callable[[], None] = lambda: None, beside: bool = False
                    ) -> tuple[list[Statistic], StatisticsSearch | None]:
    """The statistics of the explanation, searched beside the given ones or only those given, and the search.

    ``after_catalog`` is called once the search is past its catalog (at every later event: it
    must be cheap and idempotent). Records the search's seconds in ``job.seconds["search"]`` and emits the stage's end.
    With ``beside``, MCTS-SG's tree may still be growing in another process when this returns: the caller
    asks ``search.mcts_refused()`` whether the statistics stand (:meth:`StatisticsSearch.fit`), and closes it.
    """
    p = config
    K = p.n_stats
    given = config.given_statistics
    t = time.perf_counter()
    if not p.search:
        # Only the statistics given: no search runs, and the stage says so.
        statistics = list(given)
        job.found = list(statistics)
        job.emit("search", 1, 1, f"no search (search=False): the {len(given)} statistic"
                 f"{'s' if len(given) > 1 else ''} given", given=len(given), skipped=True,
                 found=[str(st) for st in statistics])
        job.check_cancel()
    else:
        search = _search(train, y_train, config, job, given, after_catalog, beside)
        statistics = search.statistics_
        job.seconds["search"] = time.perf_counter() - t
        n_given = sum(st in given for st in statistics)
        try:
            job.emit("search", K, K, f"{len(statistics)} statistics found" +
                     (f" ({n_given} of them given)" if given else ""), given=n_given)
            job.check_cancel()
        except BaseException:
            search.close_beside()
            raise
        return list(statistics), search
    return statistics, None
