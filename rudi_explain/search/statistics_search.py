"""Stage 1: searching statistics that explain a target (catalog, MCTS-SG, baselines).

With the readable grammar (the default) the search screens the short readable catalog exhaustively, keeps
a statistic only when it explains measurably more on users it was not chosen on (added to an additive step
model, or split by the strata of the first kept statistic where its effect differs between them:
:mod:`rudi_explain.search.selection`), deepens the best by single edits, keeps a deeper form only where it
explains measurably more than its simpler forms there, and leaves MCTS-SG what that cannot explain
(:mod:`~.screened`). Given statistics compete as given (:mod:`~.given`); then a filter
of a searched statistic goes where dropping it changes nothing on held-out training users (:mod:`~.filters`).

With ``grammar="paper"`` it is the paper's algorithm as published: ``search_statistics`` builds each of K
statistics operator by operator, as in the RuDi paper's Algorithms 1 and 2: for every step a fresh Monte Carlo
tree rooted at the partial pipeline grows for ``n_simulations`` iterations (selection by UCT, expansion of an
untried valid operator, a random valid completion as the rollout, a reward from a fresh random batch of users,
backpropagation), then the child with the best mean reward is committed (equation 6). Found statistics, and
every equivalent one, are marked invalid (also inside rollouts), and before each new statistic the target
becomes the residual of a least-squares fit on the statistics found so far (equation 7).

The paper's Table 3 baselines are behind ``method=``: ``"random"`` valid pipelines, and ``"lasso"`` /
``"gbm"`` feature selection over a flat table of every single aggregation of every column.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import cast

import numpy as np

from rudi_explain.beside import Beside, can_fork
from rudi_explain.correlation import REWARDS, _LeastSquares, batch_reward, design_matrix
from rudi_explain.data.alignment import per_user_values
from rudi_explain.data.sequences import Sequences
from rudi_explain.exceptions import InputError, InputTypeError
from rudi_explain.search.baselines import flat_selection
from rudi_explain.search.catalog import neighbours, single_aggregations
from rudi_explain.search.given import check_statistics, read_statistics
from rudi_explain.search.mcts_tree import Node as _Node
from rudi_explain.search.paper_edits import paper_neighbours
from rudi_explain.search.parallel import Workers, one_blas_thread, resolve_n_jobs
from rudi_explain.search.progress import SearchCancelled, SearchProgress
from rudi_explain.search.screened import fit_screened
from rudi_explain.statistics import (
    Aggregation,
    First,
    Max,
    Min,
    Pipeline,
    PipelineState,
    Schema,
    Statistic,
    next_operators,
)
from rudi_explain.statistics.frame import FrameCache
from rudi_explain.statistics.operators import Operator
from rudi_explain.statistics.readable import check_grammar
from rudi_explain.validation import check_one_of, check_random_state_seed, check_real, check_whole

__all__ = ["StatisticsSearch", "SearchProgress", "SearchCancelled", "METHODS", "single_aggregations"]

METHODS = ("mcts", "random", "lasso", "gbm")

#: Candidates a polishing round scores between two progress events (chances to cancel).
_POLISH_CHECK = 64
#: Events of a batch (:func:`_on_batch`) from which its candidates are scored on the workers: below it,
#: in the calling thread. Paired runs at 5,000 users, a batch of 1,024: payments' (47,000 events)
#: refinement took 0.32 s in the calling thread against 0.33-0.37 s on two workers, edits' (29,000
#: events) 0.10 s against 0.14-0.20 s (the rewards' Python work holds the GIL between the small
#: evaluations); with each history 4 to 64 times as long (200,000 to 3.2 million events), two
#: workers evaluated payments' candidates 1.5-1.8x as fast as one.
_THREADED_EVENTS = 100_000


def _on_batch(seqs: Sequences, users: np.ndarray) -> tuple[Sequences, FrameCache]:
    """The users of one batch as their own Sequences, with a frame cache shared by what is scored on it.

    Many statistics scored on one batch (the contenders, a polishing round's edits) then gather its
    events once, and those that share row operators apply them once: the same values as evaluating
    each on ``users`` of ``seqs`` (the same events of each user, in order), in a half to a fifth of
    the time on a polishing round of payments (79 edits: 0.076 s, against 0.014-0.039 s).
    """
    batch = seqs[users]
    return batch, FrameCache(batch)


def _workers_for(batch: Sequences, n_jobs: int | None, n_items: int) -> Workers:
    """Workers to score ``n_items`` candidates on ``batch``: ``n_jobs`` for a long batch, else the calling thread."""
    return Workers(n_jobs if n_items > 1 and batch.n_events >= _THREADED_EVENTS else 1)


def _evaluate_on(stat: Statistic, batch: Sequences, frames: FrameCache) -> np.ndarray:
    """``stat`` on a batch of users (:func:`_on_batch`): a worker's task."""
    return stat.evaluate(batch, frames=frames)


def _fresh_halves_score(stat: Statistic, batch: Sequences, frames: FrameCache, target: np.ndarray,
                        form: str) -> float:
    """``stat``'s reward on a batch (:func:`_on_batch`; ``target`` its users'), the halves drawn by a
    generator seeded 0: the same halves for every candidate, whatever worker scores it."""
    return batch_reward(stat.evaluate(batch, frames=frames), target, form, np.random.default_rng(0))


class StatisticsSearch:
    """Search statistics of sequences that explain a target (stage 1 of RuDi).

    Parameters
    ----------
    n_stats : int, default=20
        Number of statistics K.
    max_depth : int, default=4
        Maximum depth D (operators after Select, the aggregation included).
    batch_size : int, default=128
        Users per reward batch B.
    n_simulations : int, default=500
        Tree iterations for each operator chosen.
    method : {'mcts', 'random', 'lasso', 'gbm'}, default='mcts'
    reward : {"split", "adjusted", "paper"}, default="split"
        How a statistic is scored on a batch. 'paper' is equations 4 and 5
        (|correlation|, or R of a least-squares fit for a vector), which
        favours wide statistics on small batches: pure noise in 8 columns
        scores about 0.25 on 128 users. 'split' (the default) fits on one
        half of the batch and scores the correlation on the other half, so
        extra columns earn nothing unless they predict; 'adjusted' uses R
        from the adjusted R^2. benchmarks/bench_search.py compares them.
    exploration : float, default=1/sqrt(2)
        The UCT constant c of equation 2.
    commit : {'mean', 'max'}, default='mean'
        Which child of the root is committed after each tree: the best mean
        reward (the paper's equation 6) or the best single reward in its
        subtree (as single-player MCTS does when one best answer is sought).
    n_contenders : int, default=50
        After a statistic is built by committing the best child by mean
        reward (equation 6), it is compared with the ``n_contenders`` best
        complete statistics met in the rollouts, on one larger batch of
        ``contender_batch`` users, and the best of them is kept. The mean
        favours operators whose random completions are good on average and
        can walk past a sharp statistic (a needle such as one filter value
        of forty) that a rollout did find; 0 keeps the paper's choice alone.
    contender_batch : int, default=1024
    polish_rounds : int, default=2
        Rounds of local search from the kept statistic: every valid
        statistic one edit away (an operator's argument changed, a filter
        added or dropped, another aggregation or column) is scored on a
        fresh batch of ``contender_batch`` users and the best replaces it if
        it scores higher. The tree finds the region, polishing finds the
        exact filter values that the mean reward blurs. 0 disables it.
    n_polished : int, default=2
        Contenders polished (the best result is kept).
    random_state : int or None, default=0
    grammar : {'readable', 'paper'}, default='readable'
        Which statistics may be proposed (SEMANTICS.md): the readable
        grammar, or the paper's full one (to reproduce its Table 3).
    catalog : bool or None, default=None
        Screen the short readable catalog first (every statistic of depth 1,
        and of depth 2 with one filter or ordering, on ``screen_size``
        training users; :mod:`rudi_explain.search.catalog`), deepen the best, and
        leave MCTS-SG only what that cannot explain. None: yes with the
        readable grammar, no with the paper's (its algorithm as published).
    screen_size : int, default=2000
        Users the catalog is evaluated on: half choose, half check. 2,000
        (4,000 until round 18) takes a third or more off the search from
        5,000 users on with the same held-out fidelity on payments and edits,
        and on six planted cases at most 0.002 lower, two higher
        (benchmarks/README, issue 27); at 1,500 they began to lose.
    screen_columns : int or None, default=50000
        At most this many catalog outputs are held for choosing (18 kB each
        at 2,000 users: 0.9 GB). A catalog with more (six columns of 30
        categories give 140,000: every category's share under every other's
        filter) keeps those that explain the most of the target alone on the
        choosing users (``catalog_columns_``, ``catalog_outputs_``). None: no limit.
    min_gain : float, default=0.002
        A statistic is kept only if it explains at least this share of the
        target's variance more on the checking users, which it was not
        chosen on, added as it is or (when none does so) split by the
        strata of the first statistic kept; the search stops when neither
        does. Likewise a kept
        statistic gives way to a simpler form of it (an operator dropped, a
        plainer aggregation) unless it explains at least this much more there.
    beam : int, default=3
        The best catalog statistics deepened by single edits at each step.
    given_statistics : sequence of str or Statistic, default=()
        Statistics the user brings (texts or :class:`Statistic`), checked
        against the data (:func:`rudi_explain.search.given.check_statistics`).
        With the catalog they are candidates beside it: forward selection
        picks them by the same criterion as the catalog's (explaining at
        least ``min_gain`` more on the checking users), preferring a given
        one among those that explain about as much, and never edits them
        (no deepening, no simpler form, no filter dropped). A given statistic
        chosen counts toward ``n_stats``. Without the catalog (the paper's
        algorithm, the baselines) they are all taken first, and the search
        explains what they leave.
    drop_idle_filters : bool, default=True
        With the catalog: once the statistics are chosen, each searched one
        with ``RetainBy``/``FilterBy`` steps loses a filter where the
        statistic without it explains the target at least as well (within
        ``min_gain``) on training users the search did not choose on
        (:func:`rudi_explain.search.filters.drop_idle_filters`).
    n_jobs : int or None, default=None
        Threads of the catalog and of candidate scoring (None: the cores, at most
        2; :mod:`rudi_explain.search.parallel`); any number gives the same result.
        With 2 or more, ``fit(..., beside=True)`` (as ``explain()`` calls it) grows
        MCTS-SG's tree in a forked process (:mod:`rudi_explain.beside`).

    Attributes
    ----------
    statistics_ : list of Statistic
    rewards_ : list of float
        Mean batch reward of each statistic when it was committed.
    partial_r_ : list of float
        |correlation| (multiple R for vectors) of each statistic with the
        residual target it was searched against, over all users.
    seconds_ : float
        Wall time of the whole search.
    tree_seconds_ : float
        Of which growing the trees (every simulation's steps).
    n_evaluations_ : int
        Batch evaluations made by the tree search (one per simulation).
    stage_seconds_ : dict
        With the catalog: seconds spent evaluating it ('catalog'), choosing,
        deepening and checking ('select'), and in MCTS-SG ('mcts').
    screened_ : int
        Catalog statistics evaluated (0 without the catalog).
    catalog_outputs_, catalog_columns_ : int
        With the catalog: its distinct varying outputs, and those held for
        choosing (fewer only beyond ``screen_columns``).
    check_r2_ : float
        With the catalog: R^2 of the additive model of the kept statistics on
        the checking users (as selection left them, before idle filters go).
    given_ : list of Statistic
        The statistics of ``statistics_`` that were given, in their order there.
    dropped_filters_ : list of (Statistic, Statistic or None)
        Each statistic that lost filters as idle: (the statistic chosen, its form kept; None
        where that form was another statistic kept, so it went).
    """

    def __init__(self, *, n_stats: int = 20, max_depth: int = 4, batch_size: int = 128, n_simulations: int = 500,
                 method: str = "mcts", reward: str = "split", exploration: float = 1 / math.sqrt(2),
                 commit: str = "mean", n_contenders: int = 50, contender_batch: int = 1024,
                 polish_rounds: int = 2, n_polished: int = 2, random_state: int | None = 0,
                 grammar: str = "readable", catalog: bool | None = None, screen_size: int = 2000,
                 min_gain: float = 0.002, beam: int = 3, screen_columns: int | None = 50_000,
                 given_statistics: Sequence[Statistic | str] = (), drop_idle_filters: bool = True,
                 n_jobs: int | None = None) -> None:
        self.n_stats = n_stats
        self.max_depth = max_depth
        self.batch_size = batch_size
        self.n_simulations = n_simulations
        self.method = method
        self.reward = reward
        self.exploration = exploration
        self.commit = commit
        self.n_contenders = n_contenders
        self.contender_batch = contender_batch
        self.polish_rounds = polish_rounds
        self.n_polished = n_polished
        self.random_state = random_state
        self.grammar = grammar
        self.catalog = catalog
        self.screen_size = screen_size
        self.min_gain = min_gain
        self.beam = beam
        self.screen_columns = screen_columns
        self.given_statistics = given_statistics
        self.drop_idle_filters, self.n_jobs = drop_idle_filters, n_jobs

    # ---------------------------------------------------------------- checks
    def _check(self, seqs: Sequences, target) -> np.ndarray:
        if not isinstance(seqs, Sequences):
            raise InputTypeError(f"search_statistics needs a Sequences, got {type(seqs).__name__}")
        for name in ("n_stats", "max_depth", "batch_size", "n_simulations"):
            check_whole(getattr(self, name), name, min_value=1)
        check_one_of(self.method, "method", METHODS)
        check_whole(self.screen_columns, "screen_columns", min_value=1, allow_none=True)
        check_one_of(self.commit, "commit", ("mean", "max"))
        check_grammar(self.grammar)
        check_one_of(self.reward, "reward", REWARDS)
        for name in ("n_contenders", "polish_rounds"):
            check_whole(getattr(self, name), name, min_value=0)
        for name in ("contender_batch", "n_polished", "beam"):
            check_whole(getattr(self, name), name, min_value=1)
        check_whole(self.screen_size, "screen_size", min_value=2)
        check_whole(self.n_jobs, "n_jobs", min_value=1, allow_none=True)
        check_real(self.exploration, "exploration", min_value=0.0)
        check_real(self.min_gain, "min_gain")
        check_random_state_seed(self.random_state)
        if self.catalog is not None and not isinstance(self.catalog, (bool, np.bool_)):
            raise InputTypeError(f"catalog must be True, False or None, got {self.catalog!r}")
        y = per_user_values(target, seqs.users, "the target values")
        if np.ptp(y) == 0:
            raise InputError("the target is constant: there is nothing to explain")
        self._given = read_statistics(self.given_statistics)
        check_statistics(self._given, seqs)
        return y

    # ------------------------------------------------------------------ fit
    def fit(self, seqs: Sequences, target, progress: Callable[[SearchProgress], bool | None] | None = None,
            *, beside: bool = False) -> StatisticsSearch:
        """Search the statistics.

        Parameters
        ----------
        seqs : Sequences
        target : array-like of shape (n_users,) or pandas Series indexed by user id
            The teacher's scores, aligned with ``seqs.users``.
        progress : callable, optional
            Receives :class:`SearchProgress` events; returning ``False``
            cancels the search with :class:`SearchCancelled`.
        beside : bool, default=False
            With the catalog, on Linux and two workers or more: MCTS-SG's tree (run once, when the
            catalog has nothing left) grows in a forked process while the search goes on as if the
            checking users refused its statistic; :meth:`mcts_refused` then says whether they did
            (the result stands) or not (fit again without ``beside``). The caller may do further
            work first: the tree runs beside it. Without it, the tree runs in this thread; the
            statistics are the same either way.
        """
        y = self._check(seqs, target)
        self._seqs, self._schema, self._y = seqs, Schema.of(seqs), y
        self._rng = np.random.default_rng(self.random_state)
        self._progress = progress
        self._phase: tuple[str, int, int] = ("", 0, 0)  # where the screened search is, for estimates of time left
        self._work = (0.0, 0.0)  # the catalog's work done and in all (search.progress.catalog_work)
        self._start = time.perf_counter()
        self._marked: set[tuple] = set()
        self._next_cache: dict[tuple[PipelineState, int], list[Operator]] = {}
        self._key_cache: dict[tuple, tuple] = {}
        self._ends: tuple[int, set[tuple]] = (0, set())  # (first, last) of the marked keys (_is_marked)
        self.statistics_: list[Statistic] = []
        self.rewards_: list[float] = []
        self.partial_r_: list[float] = []
        self.n_evaluations_ = 0
        self.tree_seconds_ = 0.0
        self.stage_seconds_: dict[str, float] = {}  # with the catalog: its stages (search.screened)
        self._values: list[np.ndarray] = []
        self.screened_ = self.catalog_outputs_ = self.catalog_columns_ = 0
        self.dropped_filters_: list[tuple[Statistic, Statistic | None]] = []
        use_catalog = self._uses_catalog()
        self.beside = beside
        self._mcts_beside: Beside | None = None  # the tree's process, with fit(..., beside=True)
        # One BLAS thread: the search's products are small, and a second thread waking for each
        # costs more than it saves (twice the time on 2 busy cores); the same results either way.
        try:
            with one_blas_thread():
                if not (self.method == "mcts" and use_catalog):
                    # No selection to compete in: the given statistics first, the search for what they leave.
                    for stat in self._given:
                        self._accept(stat, float("nan"), self._y)
                if self.method == "mcts" and use_catalog:
                    self._fit_screened()
                elif self.method == "mcts":
                    self._fit_mcts()
                elif self.method == "random":
                    self._fit_random()
                else:
                    self._fit_flat_selection()
        except BaseException:
            self.close_beside()
            raise
        given = {st.key for st in self._given}
        self.given_ = [st for st in self.statistics_ if st.key in given]
        self.seconds_ = time.perf_counter() - self._start
        return self

    def _uses_catalog(self) -> bool:
        return bool(self.catalog if self.catalog is not None else self.grammar == "readable")

    def tree_goes_beside(self) -> bool:
        """Whether ``fit(..., beside=True)`` grows MCTS-SG's tree in a forked process: with the catalog (the
        readable grammar, method 'mcts'), on Linux and two workers or more (:func:`~rudi_explain.beside.can_fork`).

        Raises
        ------
        InputError, InputTypeError
            ``n_jobs`` is not a whole number of at least 1.
        """
        return self.method == "mcts" and self._uses_catalog() and can_fork(resolve_n_jobs(self.n_jobs))

    def mcts_refused(self, should_stop: Callable[[], object] | None = None) -> bool:
        """Whether the statistics stand, once MCTS-SG's tree run beside (``fit(..., beside=True)``) has ended.

        True where no tree ran beside, or the checking users refused its statistic (the search went on
        as if they had); False where they kept it, or its process failed: fit again without ``beside``.
        Waits for the tree, calling ``should_stop`` every 0.1 s meanwhile (a cancel check that may raise:
        the tree is then stopped), and adds its seconds to ``stage_seconds_['mcts']`` and ``tree_seconds_``
        (spent beside the search: not part of ``seconds_``). Asked once: later calls return True.
        """
        pending, self._mcts_beside = getattr(self, "_mcts_beside", None), None
        if pending is None:
            return True
        verdict = pending.result(should_stop)
        if not isinstance(verdict, dict):
            return False
        self.stage_seconds_["mcts"] += float(verdict["seconds"])
        self.tree_seconds_ += float(verdict["tree_seconds"])
        return not verdict["kept"]

    def close_beside(self) -> None:
        """Stop MCTS-SG's tree run beside, if it still runs (a cancel, an error after the search)."""
        pending, self._mcts_beside = getattr(self, "_mcts_beside", None), None
        if pending is not None:
            pending.close()

    def _report(self, k: int, step: int, simulation: int, pipeline: str, best: str, best_reward: float) -> None:
        if self._progress is None:
            return
        event = SearchProgress(self.method, k, self.n_stats, step, simulation, self.n_simulations, pipeline,
                               best, best_reward, tuple(map(str, self.statistics_)), time.perf_counter() - self._start,
                               *self._phase, min_gain=self.min_gain, phase_work_done=self._work[0],
                               phase_work_total=self._work[1])
        if self._progress(event) is False:
            raise SearchCancelled(list(self.statistics_))

    # ------------------------------------------------------------- grammar
    def _next(self, pipeline: Pipeline) -> list[Operator]:
        """Valid next operators (cached by pipeline state: states repeat a lot)."""
        key = (pipeline.state, self.max_depth)
        ops = self._next_cache.get(key)
        if ops is None:
            ops = next_operators(pipeline, self._schema, self.max_depth, self.grammar)
            self._next_cache[key] = ops
        return ops

    def _is_marked(self, operators: tuple[Operator, ...]) -> bool:
        if not self._marked:
            return False
        agg = operators[-1]
        if not isinstance(agg, (First, Min, Max)):
            # A key starts with the selection as it reads and ends with the aggregation, which only
            # a First, Min or Max can change (an ordering that picks the extreme): most candidates
            # are told unmarked by these two alone, without their key.
            if self._ends[0] != len(self._marked):  # the marked keys only grow
                self._ends = (len(self._marked), {(key[0], key[-1]) for key in self._marked})
            head = "Select(*)" if cast(Aggregation, agg).ignores_selection else str(operators[0])
            if (head, str(agg)) not in self._ends[1]:
                return False
        key = self._key_cache.get(operators)
        if key is None:
            key = Statistic(operators).key
            self._key_cache[operators] = key
        return key in self._marked

    def _expandable(self, pipeline: Pipeline) -> list[Operator]:
        ops = [op for op in self._next(pipeline)
               if not (isinstance(op, Aggregation) and self._is_marked(pipeline.operators + (op,)))]
        self._rng.shuffle(ops)  # untried operators are tried in random order
        return ops

    def _rollout(self, pipeline: Pipeline, attempts: int = 20) -> Statistic | None:
        """A random valid completion (equation 3) that is not marked."""
        for _ in range(attempts):
            p = pipeline
            while not p.complete:
                ops = self._next(p)
                op = ops[self._rng.integers(len(ops))]
                if isinstance(op, Aggregation) and self._is_marked(p.operators + (op,)):
                    allowed = [o for o in ops
                               if not (isinstance(o, Aggregation) and self._is_marked(p.operators + (o,)))]
                    if not allowed:
                        break
                    op = allowed[self._rng.integers(len(allowed))]
                p = p.then(op, self._schema)
            if p.complete:
                return p.statistic()
        return None

    # --------------------------------------------------------------- reward
    def _batch(self, size: int) -> np.ndarray:
        n = self._seqs.n_users
        return self._rng.choice(n, size, replace=False) if n > size else np.arange(n)

    def _batch_reward(self, stat: Statistic, target: np.ndarray) -> float:
        users = self._batch(self.batch_size)
        self.n_evaluations_ += 1
        return batch_reward(stat.evaluate(self._seqs, users=users), target[users], self.reward, self._rng)

    def _contenders(self, committed: Statistic, seen: dict[Statistic, float], target: np.ndarray
                    ) -> list[tuple[float, Statistic]]:
        """The committed statistic and the best ones met in rollouts, scored on one larger batch, best first."""
        contenders = [committed] + [s for s in sorted(seen, key=lambda st: seen[st], reverse=True)
                                    if s != committed][: self.n_contenders]
        users = self._batch(self.contender_batch)
        scores = self._shared_halves_scores(contenders, users, target)
        scored = [(score, i, s) for i, (score, s) in enumerate(zip(scores, contenders))]
        return [(score, s) for score, _, s in sorted(scored, key=lambda t: (-t[0], t[1]))]

    def _shared_halves_scores(self, stats: list[Statistic], users: np.ndarray, target: np.ndarray) -> list[float]:
        """Each statistic's reward on ``users``, the halves of each drawn in turn from one generator
        seeded 0: the values are evaluated on the workers, the rewards taken in order here (a
        draw depends on the users defined in the reward before), so any number gives the same."""
        halves = np.random.default_rng(0)
        batch, frames = _on_batch(self._seqs, users)
        evaluate = partial(_evaluate_on, batch=batch, frames=frames)
        with _workers_for(batch, self.n_jobs, len(stats)) as workers:
            return [batch_reward(values, target[users], self.reward, halves)
                    for values in workers.map_ordered(evaluate, stats)]

    def _refine(self, committed: Statistic, seen: dict[Statistic, float], target: np.ndarray) -> Statistic:
        """The committed statistic, or a better contender, polished by local search."""
        if self.n_contenders == 0 and self.polish_rounds == 0:
            return committed
        ranked = self._contenders(committed, seen, target)
        if self.polish_rounds == 0:
            return ranked[0][1]
        # Polish the few best: a contender one or two edits from the answer
        # may rank below a broad statistic that is a dead end.
        finals = [self._polish(s, target) for _, s in ranked[: self.n_polished]]
        users = self._batch(self.contender_batch)
        scores = self._shared_halves_scores([s for _, s in finals], users, target)
        return finals[int(np.argmax(scores))][1]

    def _neighbours(self, stat: Statistic) -> list[Statistic]:
        if self.grammar == "readable":
            return [s for s in neighbours(stat, self._schema, self.max_depth, self.grammar)
                    if s.key not in self._marked]
        return paper_neighbours(stat, self._schema, self.max_depth, self._marked)

    def _polish(self, stat: Statistic, target: np.ndarray) -> tuple[float, Statistic]:
        """Hill-climb by single edits; returns the final statistic and its last batch score."""
        current = -1.0
        for _ in range(self.polish_rounds):
            neighbours = self._neighbours(stat)
            if not neighbours:
                break
            users = self._batch(self.contender_batch)
            # The same halves for every candidate (a generator seeded 0 each): the scores do not
            # depend on one another, so the workers share them, taken in order.
            batch, frames = _on_batch(self._seqs, users)
            score = partial(_fresh_halves_score, batch=batch, frames=frames, target=target[users],
                            form=self.reward)
            current = score(stat)
            scores = self._scores_of(neighbours, score, stat, current, batch)
            best = int(np.argmax(scores))
            if scores[best] <= current + 0.005:
                break
            stat, current = neighbours[best], scores[best]
        return current, stat

    def _scores_of(self, stats: list[Statistic], score: Callable[[Statistic], float], stat: Statistic,
                   current: float, batch: Sequences) -> list[float]:
        """``score`` of each of ``stats`` (one polishing round's edits of ``stat``, which scores
        ``current``, on ``batch``) on the workers where the batch is long, in order. There can be
        thousands: a progress event (a chance to cancel) comes before every 64, once the 64 before
        have been scored, so nothing is scored after a stop, as with one worker."""
        scores: list[float] = []
        with _workers_for(batch, self.n_jobs, len(stats)) as workers:
            for start in range(0, len(stats), _POLISH_CHECK):
                self._report(len(self.statistics_) + 1, 0, start, str(stat), str(stat), current)
                scores.extend(workers.map_ordered(score, stats[start:start + _POLISH_CHECK]))
        return scores

    def _residual(self) -> np.ndarray:
        """Equation 7: the target less its least-squares fit on the statistics found so far."""
        if not self.statistics_:
            return self._y
        X, _, _ = design_matrix(self._values)
        fit = _LeastSquares(X, self._y)
        return self._y - fit.predict(X)

    def _accept(self, stat: Statistic, reward: float, target: np.ndarray) -> None:
        values = stat.evaluate(self._seqs)
        self._values.append(values)
        self.statistics_.append(stat)
        self.rewards_.append(float(reward))
        self.partial_r_.append(batch_reward(values, target, "paper"))
        self._marked.add(stat.key)

    # ------------------------------------------------- catalog, then MCTS
    def _fit_screened(self) -> None:
        """The short readable catalog first, deepened; MCTS-SG for what it leaves (:func:`~.screened.fit_screened`)."""
        fit_screened(self)

    # ----------------------------------------------------------------- MCTS
    def _fit_mcts(self) -> None:
        for k in range(len(self.statistics_) + 1, self.n_stats + 1):
            target = self._residual()
            found = self._mcts_one(k, target)
            if found is None:
                return  # nothing valid is left to find
            stat, reward = found
            self._accept(stat, reward, target)
            self._report(k, 0, self.n_simulations, "", str(stat), reward)

    def _mcts_one(self, k: int, target: np.ndarray) -> tuple[Statistic, float] | None:
        """Algorithms 1 and 2 for one statistic against ``target``: (statistic, reward), or None."""
        c = self.exploration
        pipeline = Pipeline((), schema=self._schema)
        step = 0
        reward = 0.0
        seen: dict[Statistic, float] = {}  # best batch reward of each complete statistic met
        while not pipeline.complete:
            step += 1
            tree_start = time.perf_counter()
            root = _Node(pipeline, None, self._expandable(pipeline))
            best_text, best_reward = "", -1.0
            for it in range(1, self.n_simulations + 1):
                node = root
                pruned = False
                while not node.terminal:  # selection and expansion
                    if node.untried:
                        op = node.untried.pop()
                        child_pipeline = node.pipeline.then(op, self._schema)
                        child = _Node(child_pipeline, node,
                                      [] if child_pipeline.complete else self._expandable(child_pipeline))
                        if not child.terminal and not child.untried:
                            continue  # nothing valid below it: never added
                        node.children.append(child)
                        node = child
                        break
                    live = [ch for ch in node.children if not ch.dead]
                    if not live:
                        node.dead = pruned = True  # prune: nothing valid left in this subtree
                        break
                    log_n = math.log(node.visits) if node.visits > 0 else 0.0
                    node = max(live, key=lambda ch: math.inf if ch.visits == 0 else
                               ch.total / ch.visits + c * math.sqrt(2.0 * log_n / ch.visits))
                if pruned:
                    if root.dead:
                        break
                    continue
                stat = node.pipeline.statistic() if node.terminal else self._rollout(node.pipeline)
                if stat is None:
                    node.dead = True
                    continue
                r = self._batch_reward(stat, target)
                if r > seen.get(stat, -1.0):
                    seen[stat] = r
                if r > best_reward:
                    best_text, best_reward = str(stat), r
                up: _Node | None = node
                while up is not None:  # backpropagation
                    up.visits += 1
                    up.total += r
                    up.best = max(up.best, r)
                    up = up.parent
                if it % 100 == 0:
                    self._report(k, step, it, str(pipeline), best_text, best_reward)
            self.tree_seconds_ += time.perf_counter() - tree_start
            visited = [ch for ch in root.children if ch.visits > 0 and not ch.dead]
            if not visited:
                self._report(k, step, self.n_simulations, str(pipeline), best_text, best_reward)
                return None  # nothing valid is left to find
            if self.commit == "mean":
                best = max(visited, key=lambda ch: ch.total / ch.visits)  # equation 6
            else:
                best = max(visited, key=lambda ch: (ch.best, ch.total / ch.visits))
            pipeline, reward = best.pipeline, best.total / best.visits
        stat = pipeline.statistic()
        stat = self._refine(stat, seen, target)
        return stat, reward

    # ------------------------------------------------------------ baselines
    def _fit_random(self) -> None:
        for k in range(len(self.statistics_) + 1, self.n_stats + 1):
            if (stat := self._rollout(Pipeline((), schema=self._schema), attempts=200)) is None:
                return
            self._accept(stat, float("nan"), self._y)
            self._report(k, 1, 0, "", str(stat), float("nan"))

    def _fit_flat_selection(self) -> None:
        """'lasso' / 'gbm': select among every single aggregation of every column."""
        candidates = [s for s in single_aggregations(self._schema, self.grammar)
                      if s.depth <= self.max_depth and s.key not in self._marked]
        left = self.n_stats - len(self.statistics_)
        if left <= 0 or not candidates:
            return
        values = [s.evaluate(self._seqs) for s in candidates]
        chosen = flat_selection(values, self._y, self.method, left, self._rng, self.random_state)
        for k, i in enumerate(chosen, start=len(self.statistics_) + 1):
            self._accept(candidates[i], float("nan"), self._y)
            self._report(k, 1, 0, "", str(candidates[i]), float("nan"))

