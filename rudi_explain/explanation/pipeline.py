"""``explain()``: the whole job, and its stages in order.

The job queries the teacher for every user, splits users into training and held-out sets,
searches statistics on the training users (stage 1), builds literals and trains the rule student
(stage 2), prunes its rules on validation users, then scores every user: :func:`fit` returns the
:class:`~rudi_explain.explanation.result.FittedState` that the
:class:`~rudi_explain.explanation.explanation.Explanation` reads.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from rudi_explain.data.alignment import name_users, per_user_values
from rudi_explain.data.sequences import Sequences
from rudi_explain.exceptions import InputError, InputTypeError
from rudi_explain.explanation.config import DEFAULTS, STUDENTS, ExplainConfig
from rudi_explain.explanation.console import TerminalBar, in_kernel, interactive_kernel, notebook_cell
from rudi_explain.explanation.explanation import Explanation
from rudi_explain.explanation.job import Job, JobInputs, JobProgress
from rudi_explain.explanation.result import FittedState
from rudi_explain.explanation.search_stage import check_given, find_statistics, held_out_users, mcts_beside
from rudi_explain.explanation.student_stage import check_student, fit_rules, raise_on_cancel
from rudi_explain.explanation.torch_import import needs_torch, torch_importer
from rudi_explain.sql.spark import as_table, is_table_source, within_sample
from rudi_explain.teachers.adapters import Teacher, as_teacher, given_scores

__all__ = ["explain", "fit", "STUDENTS"]


# ------------------------------------------------------------------ units
def _score_unit(teacher: Teacher | None, y: np.ndarray) -> str:
    """The unit of the teacher's scores: 'probability', 'logit' or 'raw'.

    A scikit-learn teacher says by its method (``predict_proba`` gives
    probabilities; ``decision_function`` gives logits for logistic models, a
    margin otherwise); a torch teacher's class-1 probability lies in [0, 1],
    its logit difference does not. Given scores and callables are 'raw'.
    """
    if teacher is None:
        return "raw"
    method = getattr(teacher, "method", None)
    if method == "predict_proba":
        return "probability"
    if method == "decision_function":
        return "logit"
    if teacher.kind == "torch":
        return "probability" if bool(((y >= 0) & (y <= 1)).all()) else "logit"
    return "raw"


def _standardize(y: np.ndarray) -> tuple[np.ndarray, float, float]:
    """``(z, a, b)`` with ``y = a * z + b`` and ``z`` of mean 0 and standard deviation 1.

    The search and the student train on ``z``: scores of any size (1e300, or
    1e-300) then neither overflow nor underflow. Dividing by the largest
    magnitude first keeps even the mean and spread from overflowing.
    """
    scale = float(np.max(np.abs(y))) if len(y) else 0.0
    if scale == 0.0:
        return y.astype(np.float64), 1.0, 0.0
    ys = y / scale
    mean, sd = float(ys.mean()), float(ys.std())
    if sd == 0.0:
        return y.astype(np.float64), 1.0, 0.0
    return (ys - mean) / sd, scale * sd, scale * mean


def _labels_array(labels: Any, seqs: Sequences, in_users_order: bool = False) -> np.ndarray | None:
    """The 0/1 labels in ``seqs.users`` order, or None; an error naming users with other values."""
    if labels is None:
        return None
    y = per_user_values(labels, seqs.users, "the labels", in_users_order=in_users_order)
    bad = ~np.isin(y, (0.0, 1.0))
    if bad.any():
        raise InputError(f"labels must be 0 or 1; users {name_users(seqs.users[bad])} have {y[bad][:5].tolist()}")
    return y


#: Fewer training users than this and the search cannot tell a statistic from chance.
MIN_TRAIN_USERS = 20
#: A share of users with one and the same score from which the scores are called near-constant.
MAX_TIED_SHARE = 0.95


def _check_enough_data(n: int, n_train: int, y_train: np.ndarray) -> None:
    """Fail before the search, in words, when the users are too few or their scores barely vary."""
    if n_train < MIN_TRAIN_USERS:
        raise InputError(f"only {n} users ({n_train} to train on once {n - n_train} are held out): explain() needs "
                         f"at least {MIN_TRAIN_USERS} training users to tell a statistic from chance; pass more "
                         "users (a few hundred or more is best)")
    if n_train == 0:
        return
    values, counts = np.unique(y_train, return_counts=True)
    top = int(counts.argmax())
    share = counts[top] / n_train
    if share >= MAX_TIED_SHARE:
        what = "all the training users share one score" if len(values) == 1 else \
            f"{share:.0%} of the training users share one score"
        raise InputError(f"the scores barely vary: {what} ({values[top]:g}), so there is nothing for statistics to "
                         "explain; pass scores that differ between users (e.g. the model's probabilities or logits "
                         "rather than rounded or thresholded ones), or more users of the rarer scores")


# ------------------------------------------------------------------ the stages
def fit(seqs: Sequences, config: ExplainConfig, inputs: JobInputs, job: Job) -> FittedState:
    """Run the stages in order (teacher, search, literals, student, evaluate) and return what they computed.

    Parameters
    ----------
    seqs : Sequences
        The users to explain.
    config : ExplainConfig
    inputs : JobInputs
        The teacher, or the given scores; the labels.
    job : Job
        Receives the progress events and the statistics found; its cancel stops the stages.

    Returns
    -------
    FittedState
    """
    p = config
    n = seqs.n_users
    is_test, rng = held_out_users(n, p)
    labels = _labels_array(inputs.labels, seqs, p.in_users_order)
    seconds = job.seconds

    t = time.perf_counter()
    # the time left counts PyTorch's import where the job will make it (1.3-1.7 s on the reference machine):
    # told and decided at once, before a teacher could import it
    import_torch = torch_importer(p)
    job.emit("teacher", 0, 1, f"querying the teacher for {n:,} users", users=n, torch_import=needs_torch(p),
             mcts_beside=mcts_beside(p))
    teacher = inputs.teacher
    if teacher is None:
        y = given_scores(inputs.scores, seqs, in_users_order=p.in_users_order)
        teacher_kind = "given scores"
    else:
        stop: dict[str, Any] = {}
        if "should_stop" in inspect.signature(teacher.score).parameters:  # asked between batches of users
            stop["should_stop"] = raise_on_cancel(job)
        y = teacher.score(seqs, **stop)
        teacher_kind = teacher.kind
    score_unit = _score_unit(teacher, y)
    seconds["teacher"] = time.perf_counter() - t
    job.emit("teacher", 1, 1, f"teacher scores for {n:,} users")
    job.check_cancel()

    train_idx = np.flatnonzero(~is_test)
    train = seqs.subset(train_idx)
    z, a, b = _standardize(y)
    y_train = z[train_idx]
    _check_enough_data(n, train_idx.size, y[train_idx])

    # MCTS-SG's tree grows beside the later stages (a forked process, where two cores are free); in the
    # rare job whose checking users keep its statistic, the search and the stages run again without it.
    rng_state = rng.bit_generator.state
    for beside in (True, False):
        statistics, search = find_statistics(train, y_train, config, job, after_catalog=import_torch, beside=beside)
        import_torch()  # no search, or one without a catalog
        try:
            state = fit_rules(seqs, train, statistics, y, z, (a, b), is_test, rng, config, job, labels=labels,
                              teacher_kind=teacher_kind, score_unit=score_unit)
            if search is None or search.mcts_refused(should_stop=job.check_cancel):
                return state
        finally:
            if search is not None:
                search.close_beside()
        rng.bit_generator.state = rng_state
        job.emit("search", 0, p.n_stats, "MCTS-SG's statistic was kept: the search runs again with it in this "
                 "process", rerun=True)
    raise AssertionError("unreachable: a search without beside stands")


# ------------------------------------------------------------------ explain()
def _read_data(data: Any, config: ExplainConfig, scores: Any, labels: Any) -> tuple[Sequences, Any, Any, Any]:
    """``(sequences, event_table, scores, labels)``: the users to fit on, and the table larger than memory."""
    if isinstance(data, Sequences):
        return data, None, scores, labels
    if isinstance(data, (pd.DataFrame, dict)):
        return Sequences(data, user=config.user, time=config.time, categorical=config.categorical,
                         numerical=config.numerical), None, scores, labels
    if not is_table_source(data):
        raise InputTypeError("data must be a DataFrame of events or Sequences (or, larger than memory, a Parquet "
                             f"path, a DuckDB relation or a Spark DataFrame), got {type(data).__name__}")
    # Larger than memory: fit on a seeded sample of users; exp.event_table scores all of them (DuckDB, Spark).
    event_table = as_table(data, user=config.user, time=config.time)
    seqs = event_table.sample(random_state=config.random_state, categorical=config.categorical,
                              numerical=config.numerical)
    return seqs, event_table, within_sample(scores, seqs), within_sample(labels, seqs)


def explain(model: Any, data: pd.DataFrame | Sequences, *, user: str = DEFAULTS.user,
            time: str | None = DEFAULTS.time, scores: Any = None, labels: Any = None,
            n_stats: int = DEFAULTS.n_stats, max_depth: int = DEFAULTS.max_depth, n_rules: int = DEFAULTS.n_rules,
            student: Any = DEFAULTS.student, background: bool | str = DEFAULTS.background,
            random_state: int | None = DEFAULTS.random_state, categorical: list[str] | None = DEFAULTS.categorical,
            numerical: list[str] | None = DEFAULTS.numerical, test_size: float = DEFAULTS.test_size,
            n_simulations: int = DEFAULTS.n_simulations, batch_size: int = DEFAULTS.batch_size,
            grammar: str = DEFAULTS.grammar, search_params: dict | None = None, student_params: dict | None = None,
            teacher_params: dict | None = None, progress: Callable[[JobProgress], Any] | bool | None = None,
            in_users_order: bool = DEFAULTS.in_users_order, prune: bool = DEFAULTS.prune,
            max_rules: int = DEFAULTS.max_rules, max_literals: int = DEFAULTS.max_literals,
            validation_size: float = DEFAULTS.validation_size, n_quantiles: int = DEFAULTS.n_quantiles,
            refine: bool = DEFAULTS.refine, statistics: list | None = DEFAULTS.statistics,
            search: bool = DEFAULTS.search) -> Explanation:
    """Distil a model over behaviour sequences into a few weighted rules.

    Every parameter after ``data`` is keyword-only; the defaults are those of
    :class:`~rudi_explain.explanation.config.ExplainConfig`.

    Parameters
    ----------
    model : torch.nn.Module, scikit-learn estimator, callable or None
        The teacher (see :func:`rudi_explain.teachers.as_teacher`); None when
        ``scores`` are given.
    data : DataFrame (one row per event), Sequences, or a table larger than memory
        A Parquet path (or glob), a DuckDB relation, ``(connection, table)``
        or a :class:`~rudi_explain.sql.warehouse.EventTable` (its ``n_users``
        sets the sample): the explanation is fitted on a seeded sample of
        users read into memory; ``exp.event_table.score(exp)`` gives every
        user's statistics and rule scores, computed in DuckDB. A Spark
        DataFrame (or a :class:`~rudi_explain.sql.spark.SparkEventTable`)
        likewise: Spark draws the sample, and ``exp.score_spark(df)`` scores
        every user in Spark.
    user, time : str
        Column names, for a DataFrame or a table.
    scores : Series indexed by user id, optional
        The teacher's scores, instead of querying a model (for a Spark
        DataFrame of events, also a Spark DataFrame: user id, score).
    labels : Series of 0/1 indexed by user id, optional
        True outcomes: AUC of teacher and rules on held-out users
        (``report()["auc_users"]`` says so).
    n_stats, max_depth : int
        Statistics to search (K) and their maximum depth (D).
    n_rules : int
        Rules of the student (R).
    student : {'gsnln', 'trees', 'lasso', 'cart', 'brl', 'hkl'} or estimator, default='gsnln'
        An estimator given is cloned (:func:`sklearn.base.clone`) and the clone is fitted: the
        object passed is left as it was.
    background : bool or 'thread', default=True
        Return at once and run in a worker thread, in a live notebook (the
        widget shows the progress). In a script, or a headless notebook run
        (nbclient, nbval, CI), the job runs inline so that it finishes before
        the call returns (a headless runner would shut the kernel down under
        the thread). ``'thread'`` always uses a thread; ``False`` always runs
        inline. In a live notebook, re-running the cell that started a job
        cancels that job (the re-run replaces it; a line on stderr says so);
        jobs started elsewhere run on (:func:`rudi_explain.running` lists them).
    random_state : int or None, default=0
        Seeds the split, the search and the student.
    categorical, numerical : list of str, optional
        The columns of each kind (None: inferred), for a DataFrame or a table.
    test_size : float, default=0.2
        Share of users held out for the figures.
    n_simulations, batch_size : int
        MCTS-SG settings; ``search_params`` passes others (``reward``, ``n_jobs``, ...). With two
        workers (the default on two cores or more, Linux), MCTS-SG's tree grows in a forked process
        while the later stages run, and the job runs again in one process in the rare case that its
        statistic is kept: the same rules either way (``search_params={"n_jobs": 1}`` or the
        environment variable ``RUDI_EXPLAIN_FORK=0`` keep it in one).
    grammar : {'readable', 'paper'}, default='readable'
        The statistics the search may propose (SEMANTICS.md): readable ones,
        the short catalog first; or the paper's full grammar and algorithm.
    student_params, teacher_params : dict, optional
        Passed to the student's constructor and to ``as_teacher``.
    progress : callable or bool, optional
        A callable receives every :class:`JobProgress` event (and replaces
        the progress on stderr). By default (None) a job run inline shows its
        progress on stderr (a live bar on a terminal, a line per stage and
        per statistic found otherwise), except in a notebook kernel, where it
        would be saved into the notebook; ``True`` shows it there too;
        ``False`` is silent.
    in_users_order : bool, default=False
        Accept ``scores``, ``labels`` (or a ``model`` of given scores) as bare
        arrays read by position in ``seqs.users`` order, the sorted user ids.
        Without it a bare array is refused: it has no ids, so an array in
        another order (the natural order of a table) would silently pair each
        user with someone else's value. Prefer Series indexed by user id.
    prune : bool, default=True
        Fold, trim and prune the student's rules (:mod:`rudi_explain.rules.pruning`):
        the student is fitted on the training users but a validation share,
        on which the default point of the fidelity curve is chosen.
    max_rules, max_literals : int, default=10, 4
        Bounds of the default rule set, and of every rule's length.
    validation_size : float, default=0.2
        Share of the training users kept for pruning.
    n_quantiles : int, default=10
        Candidate thresholds per statistic output: 10 the paper's deciles, 20
        every 5th percentile (see :class:`~rudi_explain.rules.literals.Literals`).
    refine : bool, default=True
        Move every threshold the rules use to where it fits the teacher best,
        near its neighbours on the quantile grid or anywhere on a coarser one
        (:func:`rudi_explain.rules.refine.refine_thresholds`): chosen on the fitting
        users, kept only if the validation users agree, so it needs
        ``prune=True``: :func:`rudi_explain.rules.refine.prune_and_refine` prunes
        both the refined and the fitted rules, refines each default point
        again, and keeps the path whose default fits the validation users
        better. ``unpruned_rules`` is the start of that path.
    statistics : list of str or Statistic, optional
        Statistics of your own, as texts (``"Select(amount) |
        RetainBy(merchant_category=gambling) | Sum"``, the text form of
        SEMANTICS.md) or :class:`~rudi_explain.statistics.Statistic` objects.
        Each is checked against the data before the teacher is asked: an
        unknown column or category, a text that does not parse, or a
        statistic with one value (or none) for every training user is an
        ``InputError`` naming it. With ``search=True`` they are candidates
        beside the search's own: its forward selection keeps one only where
        it explains measurably more on users it was not chosen on (as any
        statistic), prefers it among those that explain about as much, and
        never edits it; one kept counts toward ``n_stats``. ``exp.params``
        records them (``"statistics"``), and a saved file too.
    search : bool, default=True
        False: use only the statistics given, as given (no search at all;
        ``n_stats`` is then unused). The job's search stage says it was
        skipped.

    Returns
    -------
    Explanation
    """
    config = ExplainConfig(
        n_stats=n_stats, max_depth=max_depth, n_rules=n_rules, student=student, random_state=random_state,
        test_size=test_size, n_simulations=n_simulations, batch_size=batch_size, grammar=grammar,
        search_params=search_params, student_params=student_params, in_users_order=in_users_order, prune=prune,
        max_rules=max_rules, max_literals=max_literals, validation_size=validation_size, n_quantiles=n_quantiles,
        refine=refine, statistics=statistics, search=search, user=user, time=time, categorical=categorical,
        numerical=numerical, background=background,
        teacher_params=teacher_params)
    if model is not None and scores is not None:
        raise InputError("pass either a model or its scores (scores=...), not both")
    if model is None and scores is None:
        raise InputError("there is no model to explain: pass a model, or the scores themselves (scores=...)")
    seqs, event_table, scores, labels = _read_data(data, config, scores, labels)
    teacher = as_teacher(model, **{"in_users_order": config.in_users_order, **(config.teacher_params or {})}) \
        if model is not None else None
    if labels is not None:
        _labels_array(labels, seqs, config.in_users_order)  # fail now, not in the background
    if scores is not None:
        given_scores(scores, seqs, in_users_order=config.in_users_order)  # likewise
    check_student(config)  # fail now, not after the search
    check_given(seqs, config)  # likewise, and before the teacher is asked
    inputs = JobInputs(teacher, scores, labels)
    if not (progress is None or isinstance(progress, bool) or callable(progress)):
        raise InputTypeError(f"progress must be a callable, True, False or None, got {type(progress).__name__}")
    exp = Explanation(seqs, config, inputs=inputs, work=partial(fit, seqs, config, inputs), event_table=event_table)
    if callable(progress):
        exp.on_progress(progress)
    if background == "thread" or (background is True and interactive_kernel()):
        exp._start_replacing(notebook_cell())  # a re-run of a cell replaces the job it started before
        return exp
    if progress is True or (progress is None and (not background or not in_kernel())):
        exp.on_progress(TerminalBar())  # inline, outside a notebook: say on stderr how far it is
    exp._start_job(in_thread=False)
    return exp.wait()
