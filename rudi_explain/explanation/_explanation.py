"""``explain()``: the whole job, in the background, and what it leaves behind.

The job queries the teacher for every user, splits users into training and
held-out sets, searches statistics on the training users (stage 1), builds
literals and trains the rule student (stage 2), then measures fidelity and
AUC on the held-out users. The :class:`Explanation` it returns holds the
result and answers questions about single users.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import uuid
import warnings
import weakref
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rudi_explain import metrics
from rudi_explain.data.alignment import name_users, per_user_values
from rudi_explain.data.sequences import Sequences
from rudi_explain.exceptions import InputError, InputTypeError, StateError, WaitTimeout
from rudi_explain.explanation import archive as _archive
from rudi_explain.rules.formula import formula_literals
from rudi_explain.rules.literals import Literals
from rudi_explain.rules.pruning import MAX_LITERALS, MAX_RULES, PruningPath
from rudi_explain.rules.refine import prune_and_refine
from rudi_explain.rules.ruleset import RuleSet
from rudi_explain.search.statistics_search import SearchCancelled, SearchProgress, StatisticsSearch
from rudi_explain.statistics import Statistic
from rudi_explain.statistics.readable import check_grammar
from rudi_explain.teachers.adapters import Teacher, as_teacher, given_scores

__all__ = ["explain", "Explanation", "UserView", "JobProgress", "ExplanationCancelled", "load", "STUDENTS",
           "FORMAT", "FORMAT_VERSION"]

FORMAT = "rudi-explain/explanation"
FORMAT_VERSION = 1
STAGES = ("teacher", "search", "literals", "student", "evaluate")
#: seconds between checks while waiting for a job (an interrupt is seen within one)
WAIT_STEP = 0.1
#: seconds an interrupted wait gives the cancelled job to stop before returning
CANCEL_GRACE = 2.0
#: explanations whose job is running, for :func:`running`
_RUNNING: weakref.WeakSet[Explanation] = weakref.WeakSet()


def running() -> list[Explanation]:
    """The explanations whose job is still running, oldest first.

    A notebook cell re-run starts a new job and leaves the old one running
    out of reach (two jobs share the CPU); this finds them, e.g.
    ``for e in rx.running(): e.cancel()``.
    """
    return sorted(_RUNNING, key=lambda e: e._start)


class _JobResult:
    """An attribute the job fills in. Read while the job runs, it waits for the
    job (saying so once); after a failed or cancelled job it raises an error
    that says why: never a silent None."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.public, self.private = name, "_result_" + name

    def __get__(self, exp: Any, owner: type | None = None) -> Any:
        if exp is None:
            return self
        exp._ready(f"exp.{self.public}")
        return exp.__dict__.get(self.private)

    def __set__(self, exp: Any, value: Any) -> None:
        exp.__dict__[self.private] = value


class WaitInterrupted(KeyboardInterrupt):
    """An interrupted ``wait()``: still a KeyboardInterrupt (a script stops), shown by IPython as
    the one word a plain interrupt shows, not 50 lines of the waiting loop; the line before it
    said what became of the job."""

    def _render_traceback_(self) -> list[str]:
        return ["KeyboardInterrupt"]


class ExplanationCancelled(StateError):
    """The job was cancelled before it finished.

    Attributes
    ----------
    statistics : list of Statistic
        The statistics the search had found (also ``exp.statistics``).
    """

    def __init__(self, message: str = "the explanation was cancelled", statistics: Any = ()) -> None:
        super().__init__(message)
        self.statistics = list(statistics)

    def _render_traceback_(self) -> list[str]:
        # IPython shows this instead of a traceback: a stop the user asked for is not a crash, and
        # the job thread's 60 frames told them nothing.
        return [f"{type(self).__name__}: {self}"]


@dataclass(frozen=True)
class JobProgress:
    """One progress event of the explain job.

    Attributes
    ----------
    stage : str
        'teacher', 'search', 'literals', 'student', 'evaluate' or 'done'.
    step, total : int
        Where the stage is (e.g. statistic 3 of 20, epoch 120 of 500).
    message : str
        A line for people.
    numbers : dict
        Stage figures: the statistic searched and its reward, the training
        loss and running fidelity, ...
    elapsed : float
        Seconds since the job started.
    """

    stage: str
    step: int
    total: int
    message: str
    numbers: dict = field(default_factory=dict)
    elapsed: float = 0.0


#: Students by name, for ``explain(student=...)``.
STUDENTS = ("gsnln", "trees", "brl", "hkl", "cart", "lasso")


def _student(name_or_estimator: Any, n_rules: int, random_state: int | None, params: dict) -> Any:
    """A student instance: a name from :data:`STUDENTS`, or the estimator given."""
    if not isinstance(name_or_estimator, str):
        return name_or_estimator
    from rudi_explain.students import GSNLN, BayesianRuleList, CARTRules, HKLRuleEnsemble, LassoLiterals, SumOfTrees

    builders = {
        "gsnln": lambda: GSNLN(n_rules=n_rules, random_state=random_state, **params),
        "trees": lambda: SumOfTrees(n_rules=n_rules, random_state=random_state, **params),
        # A rule list's length comes from its prior, not from n_rules.
        "brl": lambda: BayesianRuleList(random_state=random_state, **params),
        "hkl": lambda: HKLRuleEnsemble(n_rules=n_rules, random_state=random_state, **params),
        "cart": lambda: CARTRules(n_rules=n_rules, random_state=random_state, **params),
        "lasso": lambda: LassoLiterals(n_rules=n_rules, **params),
    }
    if name_or_estimator not in builders:
        raise InputError(f"student must be one of {list(STUDENTS)} or an estimator, got {name_or_estimator!r}")
    return builders[name_or_estimator]()


#: What fidelity measures, in one line (report, widget, HTML report).
FIDELITY_MEANING = ("fidelity: of all pairs of held-out users, the share that the rules put in the same order "
                    "as the model does (0.5 is chance, 1 is the model's own order)")


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


def _check_student(name_or_estimator: Any, n_rules: int, random_state: int | None, params: dict) -> None:
    """Build the student and check its settings now: a bad one must not fail only after the search."""
    if isinstance(name_or_estimator, str) and name_or_estimator not in STUDENTS:
        _student(name_or_estimator, n_rules, random_state, params)  # names the students there are
    try:
        built = _student(name_or_estimator, n_rules, random_state, params)
        check = getattr(built, "_check_params", None)
        if isinstance(name_or_estimator, str) and callable(check):
            import inspect

            if not any(p.default is inspect.Parameter.empty for p in inspect.signature(check).parameters.values()):
                check()
    except (TypeError, ValueError) as err:
        raise InputError(f"student_params {params!r} do not suit the {name_or_estimator!r} student: {err}") \
            from None


def _labels_array(labels: Any, seqs: Sequences, in_users_order: bool = False) -> np.ndarray | None:
    if labels is None:
        return None
    y = per_user_values(labels, seqs.users, "the labels", in_users_order=in_users_order)
    bad = ~np.isin(y, (0.0, 1.0))
    if bad.any():
        raise InputError(f"labels must be 0 or 1; users {name_users(seqs.users[bad])} have {y[bad][:5].tolist()}")
    return y


class _TerminalBar:
    """Progress for ``background=False`` runs: a live bar on a terminal, a line per stage otherwise."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.last = 0.0
        self.stage = ""

    def __call__(self, event: JobProgress) -> None:
        if not self.tty:
            if event.step == event.total or event.stage in ("failed", "cancelled"):
                self.stream.write(f"[{event.elapsed:7.1f} s] {event.stage:<8} {event.message}\n")
                self.stream.flush()
            return
        now = time.perf_counter()
        if now - self.last < 0.25 and event.step not in (0, event.total) and event.stage == self.stage:
            return
        self.last, self.stage = now, event.stage
        width = 24
        filled = int(width * event.step / event.total) if event.total else 0
        line = f"\r[{'#' * filled}{'-' * (width - filled)}] {event.stage:<8} {event.message[:70]:<70}"
        end = "\n" if event.stage in ("done", "failed", "cancelled") else ""
        self.stream.write(line + end)
        self.stream.flush()


class Explanation:
    """The result of :func:`explain`: statistics, literals, rules and figures.

    Returned at once when the job runs in the background: :meth:`wait`
    blocks until it ends (and re-raises its failure), :attr:`done` tells
    whether it has, :meth:`cancel` stops it, :attr:`progress` holds the last
    progress event. In a notebook the object shows as the widget.

    Attributes
    ----------
    sequences : Sequences
    statistics : list of Statistic
    literals : Literals
    rules : RuleSet
    teacher_scores, student_scores : pandas Series indexed by user id
    is_test : ndarray of bool
        Held-out users (aligned with ``sequences.users``).

    Notes
    -----
    Reading a result (``rules``, ``literals``, ``student_scores``,
    ``report()``, ...) while the job runs waits for it, with a note that
    ``exp.cancel()`` or an interrupt stops it; after a failed or cancelled
    job it raises an error saying why. No result is ever a silent None.
    """

    literals = _JobResult()
    rules = _JobResult()
    student = _JobResult()
    unpruned_rules = _JobResult()
    pruning = _JobResult()
    teacher_scores = _JobResult()
    student_scores = _JobResult()

    def __init__(self, seqs: Sequences, params: dict) -> None:
        self.sequences = seqs
        self.params = params
        self._job_args: tuple | None = None  # (teacher, scores, labels) of a job :meth:`retry` can run again
        self._listeners: list[Callable[[JobProgress], Any]] = []
        self._cancel = threading.Event()
        self._finished = threading.Event()
        # explain(model, "events.parquet"): the whole table, scored in DuckDB (rudi_explain.sql.warehouse)
        self.event_table: Any = None
        self._reset()

    def _reset(self) -> None:
        """Every result and job field as before a run (a new explanation, or a retry)."""
        seqs = self.sequences
        self.statistics: list[Statistic] = []
        self.literals: Literals | None = None
        self.rules: RuleSet | None = None
        self.student = None
        self.unpruned_rules: RuleSet | None = None
        self.pruning: PruningPath | None = None
        # why there is no pruning path when the reason is not explain()'s settings (an old file)
        self._no_pruning: str | None = None
        self.score_unit = "raw"
        self.teacher_kind = ""
        self.teacher_scores: pd.Series | None = None
        self.student_scores: pd.Series | None = None
        self.labels: np.ndarray | None = None
        self.is_test = np.zeros(seqs.n_users, dtype=bool)
        self.seconds: dict[str, float] = {}
        self.progress: JobProgress | None = None
        self.history: list[JobProgress] = []
        self.error: BaseException | None = None
        self._stop_message = "the explanation was cancelled"
        self.status = "pending"
        self._values: np.ndarray | None = None
        self._literal_matrix: np.ndarray | None = None
        self._fires: np.ndarray | None = None
        self._thread: threading.Thread | None = None
        self._job_ident: int | None = None  # the thread running the job, once it runs
        self._told_waiting = False
        self._start = time.perf_counter()

    # ------------------------------------------------------------ the job
    def _emit(self, stage: str, step: int, total: int, message: str, **numbers: Any) -> None:
        event = JobProgress(stage, step, total, message, numbers, time.perf_counter() - self._start)
        self.progress = event
        if stage != "search" or step == total or not self.history or self.history[-1].stage != stage:
            self.history.append(event)
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:  # a broken display must not break the job
                pass

    def on_progress(self, listener: Callable[[JobProgress], Any]) -> None:
        """Call ``listener(JobProgress)`` on every progress event from now on."""
        self._listeners.append(listener)

    def _check_cancel(self) -> None:
        if self._cancel.is_set():
            raise ExplanationCancelled("the explanation was cancelled")

    def _run(self, teacher: Teacher | None, scores: Any, labels: Any) -> None:
        self._job_ident = threading.get_ident()
        self.status = "running"
        _RUNNING.add(self)
        try:
            self._job(teacher, scores, labels)
            self.status = "done"
            self._emit("done", 1, 1, self._summary_line())
        except BaseException as err:  # re-raised by wait()
            self.error = err
            cancelled = isinstance(err, (ExplanationCancelled, SearchCancelled))
            if isinstance(err, SearchCancelled):  # what the search found is kept
                self.statistics = list(err.statistics)
            self.status = "cancelled" if cancelled else "failed"
            # where it stopped, so a view keeps the stages done and the bar where it was
            reached = self.progress if self.progress is not None and self.progress.stage in STAGES else None
            stage = reached.stage if reached is not None else STAGES[0]
            k = len(self.statistics)
            found = (f"; the {k} statistic{'s' if k > 1 else ''} found {'are' if k > 1 else 'is'} kept "
                     "(exp.statistics)") if k else ""
            message = (f"cancelled during the {stage} stage{found}" if cancelled
                       else f"{type(err).__name__}: {err}")
            self._stop_message = message
            self._emit(self.status, reached.step if reached else 0, reached.total if reached else 1, message,
                       reached=stage, found=[str(st) for st in self.statistics])
        finally:
            self._finished.set()
            _RUNNING.discard(self)

    def _job(self, teacher: Teacher | None, scores: Any, labels: Any) -> None:
        p = self.params
        seqs = self.sequences
        rng = np.random.default_rng(p["random_state"])
        n = seqs.n_users
        n_test = int(round(n * p["test_size"]))
        if n - n_test < 10 or n_test < 2:
            raise InputError(f"{n} users are too few to train on and hold out (test_size={p['test_size']})")
        self.is_test = np.zeros(n, dtype=bool)
        self.is_test[rng.permutation(n)[:n_test]] = True
        self.labels = _labels_array(labels, seqs, p.get("in_users_order", False))

        t = time.perf_counter()
        self._emit("teacher", 0, 1, f"querying the teacher for {n:,} users")
        if teacher is None:
            y = given_scores(scores, seqs, in_users_order=p.get("in_users_order", False))
            self.teacher_kind = "given scores"
        else:
            y = teacher.score(seqs)
            self.teacher_kind = teacher.kind
        self.score_unit = _score_unit(teacher, y)
        self.teacher_scores = pd.Series(y, index=pd.Index(seqs.users, name=seqs.user_column), name="teacher")
        self.seconds["teacher"] = time.perf_counter() - t
        self._emit("teacher", 1, 1, f"teacher scores for {n:,} users")
        self._check_cancel()

        train_idx = np.flatnonzero(~self.is_test)
        train = seqs.subset(train_idx)
        z, a, b = _standardize(y)
        y_train = z[train_idx]

        t = time.perf_counter()
        K = p["n_stats"]

        def on_search(event: SearchProgress) -> bool:
            self._emit("search", event.statistic - 1, K,
                       f"statistic {event.statistic}/{K}, step {event.step}: {event.best}",
                       statistic=event.statistic, depth_step=event.step, simulation=event.simulation,
                       best=event.best, reward=event.best_reward, pipeline=event.pipeline,
                       found=list(event.found))
            return not self._cancel.is_set()

        search = StatisticsSearch(n_stats=K, max_depth=p["max_depth"], n_simulations=p["n_simulations"],
                                  batch_size=p["batch_size"], random_state=p["random_state"],
                                  grammar=p.get("grammar", "readable"), **p["search_params"])
        self.statistics = search.fit(train, y_train, progress=on_search).statistics_
        self.seconds["search"] = time.perf_counter() - t
        self._emit("search", K, K, f"{len(self.statistics)} statistics found")
        self._check_cancel()

        t = time.perf_counter()
        n_quantiles = p.get("n_quantiles", 10)
        self._emit("literals", 0, 1, f"round thresholds at {n_quantiles} quantiles of the training users")
        self.literals = Literals.fit(train, self.statistics, n_quantiles=n_quantiles)
        self._values = self.literals.values(seqs)
        self._literal_matrix = self.literals.transform_values(self._values)
        self.seconds["literals"] = time.perf_counter() - t
        self._emit("literals", 1, 1, f"{self.literals.n_literals} literals")
        self._check_cancel()

        t = time.perf_counter()
        student = _student(p["student"], p["n_rules"], p["random_state"], dict(p["student_params"]))
        epochs = getattr(student, "epochs", 0)

        def on_epoch(event: Any) -> bool:
            self._emit("student", event.epoch, event.epochs, f"epoch {event.epoch}/{event.epochs}: "
                       f"loss {event.loss:.4f}, fidelity {event.fidelity:.3f}",
                       epoch=event.epoch, loss=event.loss, fidelity=event.fidelity)
            return not self._cancel.is_set()

        self._emit("student", 0, max(epochs, 1), f"training {type(student).__name__}")
        X_train = self._literal_matrix[train_idx]
        # a rule list (first match wins) is not a sum of rules: nothing to prune, no users to hold back
        prune = p.get("prune", True) and p["student"] != "brl"
        # Pruning chooses on validation users: a split of the training users the student does not see.
        is_valid = np.zeros(train_idx.size, dtype=bool)
        if prune:
            n_valid = max(2, int(round(train_idx.size * p.get("validation_size", 0.2))))
            is_valid[rng.permutation(train_idx.size)[:n_valid]] = True
        student.fit(X_train[~is_valid], y_train[~is_valid], progress=on_epoch)
        self._check_cancel()
        self.student = student
        self.unpruned_rules = _in_teacher_units(student.rules(self.literals), a, b)
        self.rules = self.unpruned_rules
        self.seconds["student"] = time.perf_counter() - t
        if prune and type(self.unpruned_rules) is RuleSet and not self.unpruned_rules.linear:
            t = time.perf_counter()
            self._emit("evaluate", 0, 1, "moving thresholds, pruning and merging rules on validation users")
            self.pruning = prune_and_refine(self.unpruned_rules, self._values[train_idx], y[train_idx], is_valid,
                                            max_rules=p.get("max_rules", MAX_RULES),
                                            max_literals=p.get("max_literals", MAX_LITERALS),
                                            refine=p.get("refine", True), should_stop=self._cancel.is_set)
            self._check_cancel()
            if self.pruning.default_rules.literals is not self.literals:  # refined: an extended table
                self.literals = self.pruning.default_rules.literals
                self._literal_matrix = self.literals.transform_values(self._values)
            self.unpruned_rules = self.pruning.unpruned
            self.rules = self.pruning.default_rules
            self.seconds["pruning"] = time.perf_counter() - t

        t = time.perf_counter()
        self._emit("evaluate", 0, 1, "fidelity and AUC on held-out users")
        self._fires = self.rules.fires(self._literal_matrix)
        self.student_scores = pd.Series(self.rules.score(self._literal_matrix), index=self.teacher_scores.index,
                                        name="student")
        self.seconds["evaluate"] = time.perf_counter() - t
        self.seconds["total"] = time.perf_counter() - self._start

    # ------------------------------------------------------- job control
    @property
    def done(self) -> bool:
        """Whether the job has ended (finished, failed or cancelled)."""
        return self._finished.is_set()

    def wait(self, timeout: float | None = None) -> Explanation:
        """Block until the job ends; re-raise its failure. Returns self.

        Interrupting the wait (Ctrl-C, or the notebook's Interrupt) cancels
        the job too, so nothing runs on out of reach; it says so.

        Raises
        ------
        ExplanationCancelled
            When the job was cancelled: one line (in a notebook, no traceback)
            saying at which stage, and that the statistics found are kept.
        TimeoutError
            When ``timeout`` seconds passed first; the job goes on.
        """
        if not self._wait_for_job(timeout):
            raise WaitTimeout(f"the explanation is still running after {timeout} s")
        if self.status == "cancelled":
            # One line saying where it stopped and what is kept, not the job thread's traceback.
            raise ExplanationCancelled(self._stop_message, self.statistics) from None
        if self.error is not None:
            raise self.error
        return self

    def _wait_for_job(self, timeout: float | None = None) -> bool:
        """Wait for the job in short steps; an interrupt cancels it. Whether it ended."""
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            with self._widget_messages():
                # short waits: a KeyboardInterrupt reaches this thread between them at once
                while not self._finished.wait(WAIT_STEP):
                    if deadline is not None and time.monotonic() >= deadline:
                        return False
        except KeyboardInterrupt:
            self.cancel()
            stopped = self._finished.wait(CANCEL_GRACE)
            print("interrupted: the explanation was cancelled" + ("" if stopped else
                  " (it stops at its next check, within a second or so)"), file=sys.stderr, flush=True)
            raise WaitInterrupted("the wait was interrupted and the explanation cancelled") from None
        return True

    def _widget_messages(self) -> Any:
        """A context in which this explanation's widgets get their messages (Cancel) while the
        kernel's main thread blocks here; nothing outside a kernel (see :mod:`kernel_messages`)."""
        import contextlib

        widget = sys.modules.get("rudi_explain.views.widget")  # no widget module loaded: no widget to serve
        if widget is None or not hasattr(widget, "views"):
            return contextlib.nullcontext(False)
        from rudi_explain.views.kernel_messages import widget_messages

        return widget_messages(widget.views(self))

    def cancel(self) -> None:
        """Ask the job to stop at its next check (within a second or so)."""
        self._cancel.set()

    def retry(self) -> Explanation:
        """Run the job again, in the background, after it failed or was cancelled.

        The same data, teacher and settings (a cancelled search starts over:
        it is seeded, so it finds the same statistics again). A widget showing
        this explanation follows the new run. Returns self.

        Raises
        ------
        RuntimeError
            While the job runs, after it finished, or for an explanation
            loaded from a file (run :func:`explain` again).
        """
        if not self.done:
            raise StateError("the explanation is still running: nothing to retry")
        if self.status == "done":
            raise StateError("the explanation finished: nothing to retry")
        if self._job_args is None:
            raise StateError("this explanation was not started here (loaded from a file): run explain() again")
        self._reset()
        self._cancel.clear()
        self._finished.clear()
        self._thread = threading.Thread(target=self._run, args=self._job_args, daemon=True, name="rudi-explain")
        self._thread.start()
        return self

    def _in_job(self) -> bool:
        """Whether results are being filled in by this very thread (the job, or a load)."""
        if self._finished.is_set():
            return False
        if self._job_ident is None:  # not started: a background job is about to, a load fills in here
            return self._thread is None
        return self._job_ident == threading.get_ident()

    def _ready(self, what: str = "the results") -> None:
        """Wait for a running job (saying so once) and raise if it failed or was cancelled."""
        if self._in_job():
            return
        if not self._finished.is_set():
            if not self._told_waiting:
                self._told_waiting = True
                print(f"{what}: waiting for the explanation to finish ({self.progress.message if self.progress else 'starting'}); "
                      "exp.cancel() or an interrupt stops it", file=sys.stderr, flush=True)
            self._wait_for_job()
        if self.error is not None:
            raise StateError(f"the explanation did not finish ({self.status}): {type(self.error).__name__}: "
                               f"{self.error}; there are no results: run explain() again") from None

    # ------------------------------------------------------------ results
    def _summary_line(self) -> str:
        r = self.report()
        return (f"{r['n_rules']} rules, fidelity {r['fidelity_test']:.3f} on {r['n_test']:,} held-out users"
                f" in {r['seconds']['total']:.1f} s")

    def report(self) -> dict:
        """Figures: fidelity (training and held out), AUCs, sizes and seconds per stage.

        Besides the figures: ``fidelity_test_ci``, a 95% confidence interval
        of the held-out fidelity (:func:`rudi_explain.metrics.fidelity_interval`);
        ``fidelity_constant``, the held-out fidelity a constant score would
        reach (high when the teacher's scores are mostly tied); ``auc_users``,
        which users the AUCs cover (``"held-out"``, or None without AUC);
        and ``warnings``, sentences for people when the held-out set or the
        spread of the teacher's scores is too small to trust the figures.
        """
        self._ready("exp.report()")
        y = self.teacher_scores.to_numpy()
        s = self.student_scores.to_numpy()
        test, train = self.is_test, ~self.is_test
        auc_teacher = auc_student = None
        if self.labels is not None and len(np.unique(self.labels[test])) == 2:
            auc_teacher = metrics.auc(self.labels[test], y[test])
            auc_student = metrics.auc(self.labels[test], s[test])
        fidelity_test = metrics.fidelity(y[test], s[test])
        # Object ids can be reused, so the sums of the scores make part of the key.
        key = (id(self.student_scores), id(self.teacher_scores), self.is_test.tobytes(), float(s[test].sum()),
               float(y[test].sum()))
        # Computed once per set of scores: the bootstrap costs a few hundred fidelities.
        if getattr(self, "_ci_cache", (None,))[0] != key:
            self._ci_cache = (key, metrics.fidelity_interval(y[test], s[test], random_state=self.params.get(
                "random_state", 0)), metrics.fidelity(y[test], np.zeros(int(test.sum()))))
        ci, constant = self._ci_cache[1], self._ci_cache[2]
        return {
            "fidelity_train": metrics.fidelity(y[train], s[train]),
            "fidelity_test": fidelity_test,
            "fidelity_test_ci": ci,
            "fidelity_constant": constant,
            "auc_teacher": auc_teacher,
            "auc_student": auc_student,
            "auc_users": "held-out" if auc_teacher is not None else None,
            "warnings": _figure_warnings(y, test, fidelity_test, ci, constant),
            "n_users": int(len(y)),
            "n_train": int(train.sum()),
            "n_test": int(test.sum()),
            "n_statistics": len(self.statistics),
            "n_literals": int(self.literals.n_literals),
            "n_rules": len(self.rules),
            "max_literals": int(self.rules.max_literals) if len(self.rules) else 0,
            "teacher": self.teacher_kind,
            "student": self.params["student"] if isinstance(self.params["student"], str) else type(self.student).__name__,
            "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
            "score_unit": self.score_unit,
            "fidelity_meaning": FIDELITY_MEANING,
            **self._unpruned_figures(),
        }

    def _unpruned_figures(self) -> dict:
        """Rules and held-out fidelity of the student before pruning, when it was pruned."""
        if self.pruning is None:
            return {}
        unpruned = self.pruning.unpruned
        y = self.teacher_scores.to_numpy()[self.is_test]
        return {"n_rules_unpruned": len(unpruned),
                "fidelity_test_unpruned": metrics.fidelity(y, unpruned.score(self._literal_matrix[self.is_test]))}

    @property
    def fidelity_curve(self) -> pd.DataFrame:
        """Fidelity against the number of rules, along the pruning path.

        One row per point, from the most rules to one: ``n_rules``,
        ``fidelity_valid`` (on the validation users that chose the path),
        ``fidelity_test`` (on the held-out users), ``max_literals`` and
        ``default`` (the point :attr:`rules` is). :meth:`with_rules` gives
        the explanation at another point.
        """
        self._ready("exp.fidelity_curve")  # the widget asks from the job's last event: in the job, no wait
        if self.pruning is None:
            raise InputError(self._no_pruning or "this explanation was not pruned (explain(prune=False), a rule "
                             "list or linear terms): it has no fidelity curve")
        y = self.teacher_scores.to_numpy()[self.is_test]
        Z = self._literal_matrix[self.is_test]
        path = self.pruning
        return pd.DataFrame({
            "n_rules": path.n_rules.astype(int),
            "fidelity_valid": path.fidelity_valid,
            "fidelity_test": [metrics.fidelity(y, rs.score(Z)) for rs in path.rule_sets],
            "max_literals": [rs.max_literals for rs in path.rule_sets],
            "default": np.arange(len(path.rule_sets)) == path.default,
        })

    def with_rules(self, k: int) -> Explanation:
        """The same explanation at another point of the fidelity curve.

        Parameters
        ----------
        k : int
            Number of rules; the point with the most rules, at most ``k``.

        Returns
        -------
        Explanation
            A copy sharing the data, statistics and literals, with the rules
            of that point (and their scores); this one is unchanged.
        """
        import copy

        self._ready()
        if self.pruning is None:
            raise InputError(self._no_pruning or "this explanation was not pruned: it has one rule set only")
        other = copy.copy(self)
        other.rules = self.pruning.at(k)
        other._fires = other.rules.fires(self._literal_matrix)
        other.student_scores = pd.Series(other.rules.score(self._literal_matrix), index=self.teacher_scores.index,
                                         name="student")
        other._listeners = []
        return other

    def with_threshold(self, literal: Any, value: float) -> Explanation:
        """What-if: a new explanation with one literal's threshold moved to ``value``.

        Parameters
        ----------
        literal : int or str
            The literal's index in :attr:`literals`, its name, or a statistic
            output on which the rules use one literal
            (:func:`rudi_explain.audit.what_if.resolve_literal`).
        value : float
            The new threshold, used exactly as given; must be finite.

        Returns
        -------
        Explanation
            A copy sharing the data, statistic values and teacher scores, with
            the literal's truth, the rules' text, firings and scores, and so
            ``report()`` and ``fidelity_curve``, recomputed; this one is
            unchanged. Moving the threshold back gives the original figures
            exactly. See :func:`rudi_explain.audit.what_if.moved_threshold`.
        """
        from rudi_explain.audit.what_if import moved_threshold

        return moved_threshold(self, literal, value)

    def agreement(self, n_users: int | None = 200, method: str | None = None, *, time_budget: float | None = 60.0,
                  random_state: int | None = 0, teacher: Any = None, **options: Any) -> Any:
        """Rule-model agreement over a random sample of held-out users: its distribution.

        For each sampled user, the share of the model's own event attribution
        that falls on the events the user's fired rules read
        (``exp.user(uid).attributions.agreement``), computed in batches. It
        asks the model (integrated gradients for a PyTorch teacher, event
        occlusion otherwise), so it is bounded: ``n_users`` users at most, and
        no new batch of users starts after ``time_budget`` seconds.

        Parameters
        ----------
        n_users : int or None, default=200
            Held-out users sampled (None: all of them).
        method : str, optional
            ``"integrated_gradients"``, ``"ablation"`` or ``"occlusion"``.
        time_budget : float or None, default=60
            Seconds; the users reached by then make the distribution (the note says so).
        random_state : int or None, default=0
            Seeds the sample.
        teacher : model, optional
            For an explanation that holds no model (given scores, loaded from a file).
        **options
            See :func:`rudi_explain.audit.attributions.agreement_summary`.

        Returns
        -------
        rudi_explain.audit.attributions.AgreementSummary
            ``per_user`` (one row per user), ``deciles``, ``histogram()``,
            ``n_no_rule``, ``describe()`` and ``to_dict()``.

        Raises
        ------
        rudi_explain.audit.attributions.TeacherUnavailable
            No model can be reached (the message says why and what to pass).
        """
        from rudi_explain.audit.attributions import agreement_summary

        return agreement_summary(self, n_users, method, teacher=teacher, random_state=random_state,
                                 time_budget=time_budget, **options)

    def user(self, user_id: Any) -> UserView:
        """Why this user got their score: the per-user view."""
        self._ready()
        return UserView(self, self.sequences.user_index(user_id))

    def predict(self, data: pd.DataFrame | Sequences) -> pd.Series:
        """Rule scores for (new) users: a Series indexed by user id.

        ``data`` may also be a Parquet path or DuckDB relation: the scores
        are then computed inside DuckDB from the rules' SQL.

        Categories the training data lacked are unseen: they match no filter.
        """
        self._ready()
        if not isinstance(data, (pd.DataFrame, Sequences)):
            from rudi_explain.sql.warehouse import as_event_table, is_event_source

            if is_event_source(data):  # a Parquet path or DuckDB relation: scored in DuckDB
                seqs = self.sequences
                return as_event_table(data, seqs.user_column, seqs.time_column).score(self)["score"].rename("rules")
        if isinstance(data, pd.DataFrame):
            seqs = self.sequences
            data = Sequences(data, user=seqs.user_column, time=seqs.time_column, categorical=seqs.categorical,
                             numerical=seqs.numerical, vocabularies=seqs.vocabularies)
        elif isinstance(data, Sequences):
            if any(data.vocabularies.get(c) != v for c, v in self.sequences.vocabularies.items()):
                from rudi_explain.teachers.aggregator import align_vocabularies

                data = align_vocabularies(data, self.sequences.vocabularies)
        else:
            raise InputTypeError(f"predict needs a DataFrame of events or Sequences, got {type(data).__name__}")
        missing = [c for c in self.sequences.columns if c not in data.columns]
        if missing:
            raise InputError(f"the new events lack the column(s) {missing} the rules use")
        return pd.Series(self.rules.score(data), index=pd.Index(data.users, name=data.user_column), name="rules")

    def widget(self):
        """The notebook widget for this explanation."""
        from rudi_explain.views.widget import ExplanationWidget

        return ExplanationWidget(self)

    def to_html(self, path: str | Path, n_users: int = 40) -> Path:
        """Write a standalone HTML report (one file, works offline from disk).

        Summary, rule cards, thresholds and the drill-down of ``n_users``
        users (top-scored, rule-card examples and a random sample); see
        :func:`rudi_explain.views.report.write_html`.
        """
        from rudi_explain.views.report import write_html

        self._ready()
        return write_html(self, path, n_users=n_users)

    def _ipython_display_(self) -> None:
        """Show a static HTML copy, then the widget; the copy is redone when a running job ends.

        The copy (:func:`rudi_explain.views.static_view.static_html`: summary, rules
        in words, fidelity curve) is what a notebook opened without its kernel
        shows (nbconvert, GitHub); a live widget hides it. It is updated in
        place when the job ends, so a saved notebook holds the final result.
        """
        try:
            from IPython.display import display, update_display
        except ImportError:
            print(repr(self))
            return
        from rudi_explain.views.static_view import static_html

        display_id = f"rudi-explain-{uuid.uuid4().hex}"

        def copy() -> dict:
            return {"text/html": static_html(self), "text/plain": repr(self)}

        display(copy(), raw=True, display_id=display_id)
        if not self.done:
            def on_end(event: JobProgress) -> None:
                if event.stage in ("done", "failed", "cancelled"):
                    update_display(copy(), raw=True, display_id=display_id)

            self.on_progress(on_end)
            if self.done:  # ended before the listener was in place
                update_display(copy(), raw=True, display_id=display_id)
        display(self.widget())

    def __repr__(self) -> str:
        if self.status != "done":
            stage = self.progress.message if self.progress else ""
            return f"Explanation({self.status}: {stage})"
        r = self.report()
        return (f"Explanation({r['n_users']:,} users, {r['n_statistics']} statistics, {r['n_rules']} rules; "
                f"fidelity {r['fidelity_test']:.3f} held out)")

    # --------------------------------------------------------- save / load
    def save(self, path: str | Path) -> Path:
        """Write the explanation to one file: JSON plus numpy arrays in a zip, never pickle."""
        self._ready()
        path = Path(path)
        seq_meta, seq_arrays = self.sequences.to_arrays()
        meta = {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "params": {k: v for k, v in self.params.items() if k != "student"} | {
                "student": self.report()["student"]},
            "statistics": [str(s) for s in self.statistics],
            "literals": self.literals.to_dict(),
            "rules": self.rules.to_dict(),
            "teacher_kind": self.teacher_kind,
            "seconds": self.seconds,
            "history": [{"stage": e.stage, "step": e.step, "total": e.total, "message": e.message,
                         "elapsed": e.elapsed} for e in self.history],
            "sequences": seq_meta,
            # null when not pruned; a file without the key predates saved pruning paths
            "pruning": None if self.pruning is None else self.pruning.to_dict(),
        }
        arrays = {"teacher_scores": self.teacher_scores.to_numpy(), "student_scores": self.student_scores.to_numpy(),
                  "is_test": self.is_test, "values": self._values,
                  **{f"seq_{k}": v for k, v in seq_arrays.items()}}
        if self.labels is not None:
            arrays["labels"] = self.labels
        # Everything that can fail on the content fails here, before a file is opened.
        text = json.dumps(meta, default=_json_default)
        tmp = path.with_name(path.name + ".partial")
        try:
            with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
                zf.writestr("explanation.json", text)
                for name, array in arrays.items():
                    buffer = BytesIO()
                    np.save(buffer, np.ascontiguousarray(array), allow_pickle=False)
                    zf.writestr(f"arrays/{name}.npy", buffer.getvalue())
            tmp.replace(path)  # a failed save never leaves a half-written file under the name
        except BaseException:
            tmp.unlink(missing_ok=True)  # nor a .partial beside it
            raise
        return path


#: Fewer held-out users than this, and the held-out figures get a warning.
MIN_HELD_OUT = 30


def _figure_warnings(y: np.ndarray, test: np.ndarray, fidelity: float, ci: tuple[float, float],
                     constant: float) -> list[str]:
    """Sentences for people when the figures rest on too little to trust."""
    out = []
    n_test = int(test.sum())
    if n_test < MIN_HELD_OUT or ci[1] - ci[0] > 0.2:
        out.append(f"only {n_test:,} held-out users: the held-out fidelity {fidelity:.3f} is uncertain "
                   f"(95% interval {ci[0]:.2f} to {ci[1]:.2f}); explain more users or hold out more")
    spread = np.ptp(y / np.max(np.abs(y))) if np.any(y) else 0.0
    if spread == 0:
        out.append("the teacher gives every user the same score: there is nothing to explain, and the "
                   "fidelity says nothing")
    elif spread < 1e-9:
        out.append(f"the teacher's scores differ only by {spread:.1e} of their size: the rules may explain "
                   "rounding noise")
    # A constant score agrees on half of the untied pairs and on every tied one:
    # 0.75 means half of the held-out pairs are tied in the teacher.
    if spread != 0 and constant >= 0.75:
        values, counts = np.unique(y[test], return_counts=True)
        share = counts.max() / n_test
        out.append(f"{share:.0%} of the held-out teacher scores are tied at {values[counts.argmax()]:.4g}: a "
                   f"constant score already reaches fidelity {constant:.3f} (the rules: {fidelity:.3f})")
    return out


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


def _in_teacher_units(rules: RuleSet, a: float, b: float) -> RuleSet:
    """Rules trained on ``z`` rewritten to score ``a * z + b``, in the teacher's units.

    Only a plain :class:`RuleSet` is rewritten: a rule list's scores are
    probabilities of its own target, not a sum of weights.
    """
    if (a == 1.0 and b == 0.0) or type(rules) is not RuleSet:
        return rules
    import dataclasses

    scaled = [dataclasses.replace(r, weight=r.weight * a) for r in rules.rules]
    return RuleSet(scaled, b + a * rules.intercept, rules.literals if rules.literals is not None else rules.info)


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    raise InputTypeError(f"cannot save {type(value).__name__} in an explanation file")


def _check_meta(meta: dict, path: Path) -> None:
    """Refuse JSON fields of the wrong type, naming the field (not a raw TypeError later)."""
    expect = _archive.expect
    for key, types in (("params", dict), ("statistics", list), ("literals", dict), ("rules", dict),
                       ("teacher_kind", str), ("seconds", dict), ("history", list), ("sequences", dict)):
        if key not in meta:
            raise InputError(f"{path} is damaged: it lacks the field {key!r}")
        expect(meta[key], types, key, path)
    for i, text in enumerate(meta["statistics"]):
        expect(text, str, f"statistics[{i}]", path)
    for key, value in meta["seconds"].items():
        expect(value, (int, float), f"seconds.{key}", path)
    for i, e in enumerate(meta["history"]):
        expect(e, dict, f"history[{i}]", path)
        for key, types in (("stage", str), ("step", int), ("total", int), ("message", str),
                           ("elapsed", (int, float))):
            expect(e.get(key), types, f"history[{i}].{key}", path)
    expect(meta["params"].get("student"), str, "params.student", path)
    sm = meta["sequences"]
    for key, types in (("user_column", str), ("time_column", (str, type(None))), ("users", list),
                       ("vocabularies", dict), ("categorical", list), ("numerical", list),
                       ("time_dtype", (str, type(None)))):
        expect(sm.get(key), types, f"sequences.{key}", path)
    for key in ("categorical", "numerical"):
        for i, name in enumerate(sm[key]):
            expect(name, str, f"sequences.{key}[{i}]", path)
    for name in sm["categorical"]:
        vocab = expect(sm["vocabularies"].get(name), list, f"sequences.vocabularies.{name}", path)
        if not all(isinstance(v, str) for v in vocab):
            raise InputError(f"{path} is damaged: field 'sequences.vocabularies.{name}' holds a non-text category")
    users = sm["users"]
    # The ids a Sequences allows: all text or all whole numbers.
    if not (all(isinstance(u, str) for u in users)
            or all(isinstance(u, int) and not isinstance(u, bool) for u in users)):
        raise InputError(f"{path} is damaged: field 'sequences.users' must hold only text or only whole numbers")
    if len(set(users)) != len(users):
        seen: set = set()
        dup = [u for u in users if u in seen or seen.add(u)]
        raise InputError(f"{path} is damaged: field 'sequences.users' repeats user ids {name_users(dup)}")
    expect(meta["literals"].get("output_names"), list, "literals.output_names", path)
    if meta.get("pruning") is not None:
        _check_pruning(meta["pruning"], path)


def _check_rule_list(rs: Any, field: str, path: Path) -> None:
    """Types of one saved rule set of a pruning path: intercept, and rules of formula and weight."""
    expect = _archive.expect
    expect(rs, dict, field, path)
    expect(rs.get("intercept"), (int, float), f"{field}.intercept", path)
    for i, r in enumerate(expect(rs.get("rules"), list, f"{field}.rules", path)):
        expect(r, dict, f"{field}.rules[{i}]", path)
        expect(r.get("formula"), dict, f"{field}.rules[{i}].formula", path)
        expect(r.get("weight"), (int, float), f"{field}.rules[{i}].weight", path)


def _check_pruning(pruning: Any, path: Path) -> None:
    """Types of the saved pruning path (:meth:`PruningPath.to_dict`), naming the field."""
    expect = _archive.expect
    expect(pruning, dict, "pruning", path)
    _check_rule_list(pruning.get("unpruned"), "pruning.unpruned", path)
    for i, rs in enumerate(expect(pruning.get("rule_sets"), list, "pruning.rule_sets", path)):
        _check_rule_list(rs, f"pruning.rule_sets[{i}]", path)
    for i, n in enumerate(expect(pruning.get("n_rules"), list, "pruning.n_rules", path)):
        expect(n, int, f"pruning.n_rules[{i}]", path)
    for i, f in enumerate(expect(pruning.get("fidelity_valid"), list, "pruning.fidelity_valid", path)):
        expect(f, (int, float), f"pruning.fidelity_valid[{i}]", path)
    expect(pruning.get("fidelity_unpruned"), (int, float), "pruning.fidelity_unpruned", path)
    expect(pruning.get("default"), int, "pruning.default", path)
    expect(pruning.get("settings", {}), dict, "pruning.settings", path)


def load(path: str | Path, *, max_bytes: int | None = None) -> Explanation:
    """Read an explanation written by :meth:`Explanation.save`.

    Files are treated as untrusted: only the entries the format names are
    read, each array's header is checked against the shape the JSON promises
    before its data is read, and the bytes read are bounded.

    Parameters
    ----------
    path : str or Path
    max_bytes : int, optional
        The most bytes to decompress. By default 64 MiB plus 100 times the
        file's size on disk: far above what real explanations need, far below
        what a file padded with compressible junk would claim.

    Raises
    ------
    ValueError
        Naming the path and the damaged entry or field: not an explanation
        file, another format version, wrong JSON types, array shapes or dtypes
        that differ from what the JSON promises, bad CRC, decreasing offsets,
        out-of-range category codes, repeated users, no held-out users.
    """
    path = Path(path)
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as err:
        raise InputError(f"{path} is not a rudi-explain explanation file ({err})") from None
    with zf:
        reader = _archive.ArchiveReader(zf, path, _archive.default_budget(path) if max_bytes is None
                                        else int(max_bytes))
        try:
            raw = reader.read_bytes("explanation.json")
        except KeyError:
            raise InputError(f"{path} is not a rudi-explain explanation file (no explanation.json)") from None
        try:
            meta = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
            raise InputError(f"{path} is not a rudi-explain explanation file (no readable explanation.json)") from None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise InputError(f"{path} is not a rudi-explain explanation file")
        if meta.get("version") != FORMAT_VERSION:
            raise InputError(f"{path} has format version {meta.get('version')}; this rudi-explain reads version "
                             f"{FORMAT_VERSION}")
        _check_meta(meta, path)
        sm = meta["sequences"]
        n_users, n_out = len(sm["users"]), len(meta["literals"]["output_names"])
        # (entry, dtype kinds, shape with None = n_events, what): the only entries read.
        wanted = [("teacher_scores", "fi", (n_users,), "teacher scores"),
                  ("student_scores", "fi", (n_users,), "student scores"),
                  ("is_test", "b", (n_users,), "held-out flags"),
                  ("values", "f", (n_users, n_out), "statistic values"),
                  ("seq_event_user", "iu", (None,), "user of each event"),
                  ("seq_input_row", "iu", (None,), "input row of each event")]
        if sm["time_dtype"] is not None:
            wanted.append(("seq_times", "fiu", (None,), "event times"))
        wanted += [(f"seq_codes_{i}", "iu", (None,), f"codes of column {c!r}") for i, c in enumerate(sm["categorical"])]
        wanted += [(f"seq_values_{i}", "f", (None,), f"values of column {c!r}") for i, c in enumerate(sm["numerical"])]
        has_labels = reader.info("arrays/labels.npy") is not None
        if has_labels:
            wanted.append(("labels", "fib", (n_users,), "labels"))
        reader.check_declared(["explanation.json", "arrays/seq_offsets.npy"] + [f"arrays/{w[0]}.npy" for w in wanted])
        offsets = reader.read_array("arrays/seq_offsets.npy", "iu", (n_users + 1,), "event offsets of each user")
        offsets = offsets.astype(np.int64)
        if len(offsets) and offsets[0] != 0 or (np.diff(offsets) < 0).any():
            bad = np.flatnonzero(np.diff(offsets) < 0)
            where = f" at user {name_users([sm['users'][bad[0]]])}" if len(bad) else ""
            raise InputError(f"{path} is damaged: array arrays/seq_offsets.npy does not start at 0 and "
                             f"never decrease{where}")
        n_events = int(offsets[-1])
        arrays = {"seq_offsets": offsets}
        for name, kinds, shape, what in wanted:
            shape = tuple(n_events if s is None else s for s in shape)
            arrays[name] = reader.read_array(f"arrays/{name}.npy", kinds, shape, what)
    try:
        seqs = Sequences.from_arrays(sm, {k[4:]: v for k, v in arrays.items() if k.startswith("seq_")})
    except ValueError as err:
        raise InputError(f"{path} is damaged: {err}") from None
    exp = Explanation(seqs, meta["params"])
    for field_name, build in (
            ("statistics", lambda: setattr(exp, "statistics", [Statistic.parse(t) for t in meta["statistics"]])),
            ("literals", lambda: setattr(exp, "literals", Literals.from_dict(meta["literals"]))),
            ("rules", lambda: setattr(exp, "rules", RuleSet.from_dict(meta["rules"])))):
        try:
            build()
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as err:
            raise InputError(f"{path} is damaged: field {field_name!r}: {err}") from None
    exp.literals.statistics = exp.statistics
    exp.rules.literals = exp.literals
    if "pruning" not in meta:
        exp._no_pruning = (f"{path} predates saved pruning paths: it has the explanation's rules but no fidelity "
                           "curve and no other points (explain again, or load it with the version that saved it)")
    elif meta["pruning"] is not None:
        try:
            exp.pruning = PruningPath.from_dict(meta["pruning"], exp.literals)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError) as err:
            raise InputError(f"{path} is damaged: field 'pruning': {err}") from None
    exp.teacher_kind = meta["teacher_kind"]
    exp.seconds = meta["seconds"]
    exp.history = [JobProgress(e["stage"], e["step"], e["total"], e["message"], {}, e["elapsed"])
                   for e in meta["history"]]
    index = pd.Index(seqs.users, name=seqs.user_column)
    for name in ("teacher_scores", "student_scores"):
        if not np.isfinite(arrays[name]).all():
            raise InputError(f"{path} is damaged: array arrays/{name}.npy has NaN or infinite scores")
    exp.teacher_scores = pd.Series(arrays["teacher_scores"].astype(np.float64), index=index, name="teacher")
    exp.student_scores = pd.Series(arrays["student_scores"].astype(np.float64), index=index, name="student")
    exp.is_test = arrays["is_test"].astype(bool)
    n_test = int(exp.is_test.sum())
    if n_test < 2 or n_users - n_test < 2:
        raise InputError(f"{path} is damaged: array arrays/is_test.npy holds out {n_test} of {n_users} users; "
                         "fidelity needs at least two held-out and two training users")
    if has_labels:
        labels = arrays["labels"].astype(np.float64)
        if not np.isin(labels, (0.0, 1.0)).all():
            raise InputError(f"{path} is damaged: array arrays/labels.npy holds labels other than 0 and 1")
        exp.labels = labels
    exp._values = arrays["values"].astype(np.float64)
    if exp.literals.n_outputs != n_out or (exp.literals.output_statistic >= len(exp.statistics)).any():
        raise InputError(f"{path} is damaged: field 'literals' does not match the statistics")
    try:
        exp._literal_matrix = exp.literals.transform_values(exp._values)
        exp._fires = exp.rules.fires(exp._literal_matrix)
    except (IndexError, ValueError) as err:
        raise InputError(f"{path} is damaged: field 'rules' refers to literals the file lacks ({err})") from None
    exp.status = "done"
    exp.progress = exp.history[-1] if exp.history else None
    exp._finished.set()
    return exp


class UserView:
    """One user's score and the rules behind it.

    Attributes
    ----------
    user_id : object
    teacher_score, student_score : float
    percentile : float
        Share of users (in percent) with a lower teacher score.
    student_percentile : float
        Share of users (in percent) with a lower rule score: compare it with
        ``percentile`` (the two scores have different scales, their ranks
        do not).
    fired : list of int
        Indices into ``explanation.rules`` of the rules that fire.
    contributions : pandas Series
        Rule text -> weight, for the fired rules, largest |weight| first.
    literals : DataFrame
        Each literal: its name, the statistic output's value for this user,
        the threshold, and whether it holds.
    conditions : DataFrame
        Each literal as the rules use it (a ``<=`` literal as ``<=``): the
        rule, the sentence, the notation, the user's value, and whether it
        holds for this user as written.
    events : DataFrame
        The user's events in time order.
    """

    def __init__(self, exp: Explanation, index: int) -> None:
        self.explanation = exp
        self.index = index
        self.user_id = exp.sequences.users[index]
        y = exp.teacher_scores.to_numpy()
        self.teacher_score = float(y[index])
        self.student_score = float(exp.student_scores.iloc[index])
        self.percentile = float(100.0 * (y < y[index]).mean())
        s = exp.student_scores.to_numpy()
        self.student_percentile = float(100.0 * (s < s[index]).mean())
        self.is_held_out = bool(exp.is_test[index])
        self.fired = [int(k) for k in np.flatnonzero(exp._fires[index])]
        rules = exp.rules
        fired = sorted(self.fired, key=lambda k: -abs(rules[k].weight))
        self.contributions = pd.Series([rules[k].weight for k in fired], index=[str(rules[k].text) for k in fired],
                                       name="weight", dtype=np.float64)
        self.intercept = float(rules.intercept)
        lit = exp.literals
        values = exp._values[index, lit.column]
        self.literals = pd.DataFrame({
            "literal": lit.names,
            "value": values,
            "threshold": lit.thresholds,
            "holds": exp._literal_matrix[index],
        })
        rows = []
        for k, rule in enumerate(rules):
            if not hasattr(rule, "formula"):
                continue
            for part in formula_literals(rule.formula):
                holds = bool(exp._literal_matrix[index, part.index]) != part.negated
                rows.append((k, rule.info.render_literal(part), rule.info.notation(part),
                             float(exp._values[index, exp.literals.column[part.index]]), holds))
        self.conditions = pd.DataFrame(rows, columns=["rule", "condition", "notation", "value", "holds"])

    @property
    def events(self) -> pd.DataFrame:
        return self.explanation.sequences.events(self.user_id)

    @property
    def attributions(self) -> Any:
        """Which of this user's events the teacher itself leaned on, and the rule-model agreement.

        Integrated gradients for a PyTorch teacher, event occlusion for any
        other model; computed on first access. See
        :func:`rudi_explain.audit.attributions.user_attributions`, and
        :meth:`attribute` for another method or a model to pass.

        Raises
        ------
        rudi_explain.audit.attributions.TeacherUnavailable
            The explanation holds no model (given scores, loaded from a file).
        """
        if getattr(self, "_attributions", None) is None:
            self._attributions = self.attribute()
        return self._attributions

    def attribute(self, method: str | None = None, *, teacher: Any = None, **options: Any) -> Any:
        """Event attributions by a chosen method: ``"integrated_gradients"``, ``"ablation"`` or ``"occlusion"``.

        ``teacher`` passes the model for an explanation that holds none;
        ``options`` go to :func:`rudi_explain.audit.attributions.attribute_events`.
        Returns :class:`rudi_explain.audit.attributions.EventAttributions`.
        """
        from rudi_explain.audit.attributions import user_attributions

        return user_attributions(self.explanation, self.user_id, method, teacher=teacher, **options)

    def counterfactual(self, target_percentile: float = 50.0, direction: str = "below", max_literals: int = 3, *,
                       teacher: Any = None, edit_events: bool = True) -> Any:
        """The smallest change of literal values that moves this user's rule score past a percentile.

        Fewest rule literals flipped, then the smallest move in each changed
        statistic's own training quantiles; searched exhaustively up to
        ``max_literals`` flips (see :mod:`rudi_explain.audit.counterfactual`).

        Parameters
        ----------
        target_percentile : float, default=50
            The percentile of the training users' rule scores to pass.
        direction : {"below", "above"}, default="below"
            Whether the new rule score must be strictly below or above it.
        max_literals : int, default=3
            The most literals the change may flip.
        teacher : model, optional
            The model to score the edited events with, for an explanation that
            holds none; by default the one :func:`explain` queried.
        edit_events : bool, default=True
            Where every change is "fewer events" of a count, drop that many
            matching events (the most recent), and evaluate the statistics,
            the rule score and the model on what is left.

        Returns
        -------
        rudi_explain.audit.counterfactual.Counterfactual
            ``changes`` (statistic outputs: value now -> needed, in words and in
            events), ``flipped`` (literal sentences now and after),
            ``new_score`` and ``new_percentile``, ``edit``, ``summary()``.
        """
        from rudi_explain.audit.counterfactual import counterfactual

        return counterfactual(self.explanation, self.index, target_percentile, direction, max_literals,
                              teacher=teacher, edit_events=edit_events)

    def __repr__(self) -> str:
        return (f"UserView({self.user_id!r}: teacher {self.teacher_score:.4g} "
                f"({self.percentile:.0f}th percentile), rules {self.student_score:.4g} "
                f"({self.student_percentile:.0f}th percentile), {len(self.fired)} rules fire)")


def _interactive_kernel() -> bool:
    """Whether we run in a live notebook kernel (not nbclient/nbval or a script)."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        shell = ipython.get_ipython()
    except Exception:
        return False
    if shell is None or type(shell).__name__ != "ZMQInteractiveShell":
        return False
    # Headless runners (nbclient, nbval, papermill) shut the kernel down before
    # a background thread ends, so the saved state would show a progress bar.
    import os

    return not any(os.environ.get(v) for v in ("RUDI_EXPLAIN_BLOCK", "NBVAL", "PAPERMILL", "CI"))


def explain(model: Any, data: pd.DataFrame | Sequences, user: str = "user_id", time: str | None = "ts",
            scores: Any = None, labels: Any = None, n_stats: int = 20, max_depth: int = 4, n_rules: int = 20,
            student: Any = "gsnln", background: bool | str = True, random_state: int | None = 0, *,
            categorical: list[str] | None = None, numerical: list[str] | None = None, test_size: float = 0.2,
            n_simulations: int = 500, batch_size: int = 128, grammar: str = "readable", search_params: dict | None = None,
            student_params: dict | None = None, teacher_params: dict | None = None,
            progress: Callable[[JobProgress], Any] | None = None, in_users_order: bool = False, prune: bool = True, max_rules: int = MAX_RULES,
            max_literals: int = MAX_LITERALS, validation_size: float = 0.2, n_quantiles: int = 10,
            refine: bool = True) -> Explanation:
    """Distil a model over behaviour sequences into a few weighted rules.

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
        user's statistics and rule scores, computed in DuckDB.
    user, time : str
        Column names, for a DataFrame or a table.
    scores : Series indexed by user id, optional
        The teacher's scores, instead of querying a model.
    labels : Series of 0/1 indexed by user id, optional
        True outcomes: AUC of teacher and rules on held-out users
        (``report()["auc_users"]`` says so).
    n_stats, max_depth : int
        Statistics to search (K) and their maximum depth (D).
    n_rules : int
        Rules of the student (R).
    student : {'gsnln', 'trees', 'lasso', 'cart', 'brl', 'hkl'} or estimator, default='gsnln'
    background : bool or 'thread', default=True
        Return at once and run in a worker thread, in a live notebook. In a
        script, or a headless notebook run (nbclient, nbval, CI), the job
        runs inline so that it finishes before the call returns (a headless
        runner would shut the kernel down under the thread). ``'thread'``
        always uses a thread; ``False`` runs inline with a progress bar.
    random_state : int or None, default=0
        Seeds the split, the search and the student.
    test_size : float, default=0.2
        Share of users held out for the figures.
    n_simulations, batch_size : int
        MCTS-SG settings; ``search_params`` passes others (``reward``, ...).
    grammar : {'readable', 'paper'}, default='readable'
        The statistics the search may propose (SEMANTICS.md): readable ones,
        the short catalog first; or the paper's full grammar and algorithm.
    student_params, teacher_params : dict, optional
        Passed to the student's constructor and to ``as_teacher``.
    progress : callable, optional
        Receives every :class:`JobProgress` event.
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

    Returns
    -------
    Explanation
    """
    if background not in (True, False, "thread"):
        raise InputError(f"background must be True, False or 'thread', got {background!r}")
    if not 0 < test_size < 1:
        raise InputError(f"test_size must lie strictly between 0 and 1, got {test_size!r}")
    if model is not None and scores is not None:
        raise InputError("pass either a model or its scores (scores=...), not both")
    if model is None and scores is None:
        raise InputError("there is no model to explain: pass a model, or the scores themselves (scores=...)")
    event_table = None
    if isinstance(data, Sequences):
        seqs = data
    elif isinstance(data, (pd.DataFrame, dict)):
        seqs = Sequences(data, user=user, time=time, categorical=categorical, numerical=numerical)
    else:
        from rudi_explain.sql.warehouse import as_event_table, is_event_source, within_sample

        if not is_event_source(data):
            raise InputTypeError("data must be a DataFrame of events or Sequences (or, larger than memory, a Parquet "
                            f"path or a DuckDB relation), got {type(data).__name__}")
        # Larger than memory: fit on a seeded sample of users; exp.event_table scores all of them in DuckDB.
        event_table = as_event_table(data, user=user, time=time)
        seqs = event_table.sample(random_state=random_state, categorical=categorical, numerical=numerical)
        scores, labels = within_sample(scores, seqs), within_sample(labels, seqs)
    if not 0 < validation_size < 1:
        raise InputError(f"validation_size must lie strictly between 0 and 1, got {validation_size!r}")
    for name, value in (("n_stats", n_stats), ("max_depth", max_depth), ("n_rules", n_rules),
                        ("max_rules", max_rules), ("max_literals", max_literals), ("n_quantiles", n_quantiles)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise InputError(f"{name} must be a whole number >= 1, got {value!r}")
    teacher = as_teacher(model, **{"in_users_order": in_users_order, **(teacher_params or {})}) \
        if model is not None else None
    if labels is not None:
        _labels_array(labels, seqs, in_users_order)  # fail now, not in the background
    if scores is not None:
        given_scores(scores, seqs, in_users_order=in_users_order)  # likewise
    check_grammar(grammar)
    params = {"n_stats": n_stats, "max_depth": max_depth, "n_rules": n_rules, "student": student,
              "random_state": random_state, "test_size": test_size, "n_simulations": n_simulations,
              "batch_size": batch_size, "grammar": grammar, "search_params": dict(search_params or {}),
              "student_params": dict(student_params or {}), "in_users_order": bool(in_users_order), "prune": bool(prune), "max_rules": int(max_rules),
              "max_literals": int(max_literals), "validation_size": float(validation_size),
              "n_quantiles": int(n_quantiles), "refine": bool(refine)}
    _check_student(student, n_rules, random_state, dict(student_params or {}))  # fail now, not after the search
    exp = Explanation(seqs, params)
    exp._job_args = (teacher, scores, labels)
    exp.event_table = event_table
    if progress is not None:
        exp.on_progress(progress)
    if background == "thread" or (background is True and _interactive_kernel()):
        others = running()
        exp._thread = threading.Thread(target=exp._run, args=(teacher, scores, labels), daemon=True,
                                       name="rudi-explain")
        exp._thread.start()
        if others:
            warnings.warn(f"{len(others)} other explanation{'s' if len(others) > 1 else ''} still running: the jobs "
                          "share the CPU. rx.running() lists them; `for e in rx.running()[:-1]: e.cancel()` "
                          "stops all but this one", RuntimeWarning, stacklevel=2)
        return exp
    if not background and progress is None:
        exp.on_progress(_TerminalBar())
    exp._run(teacher, scores, labels)
    return exp.wait()
