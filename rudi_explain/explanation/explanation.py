"""The :class:`Explanation`: a read-only view of what an explain job computed, and the job's controls.

Everything it shows is read from one :class:`~rudi_explain.explanation.result.FittedState`
(``exp.result``). Another point of the fidelity curve (:meth:`Explanation.with_rules`) or a moved
threshold (:meth:`Explanation.with_threshold`) is a new ``Explanation`` over a new result: nothing
is patched in place. The audit and the views are reached through documented façade methods
(``user``, ``with_threshold``, ``agreement`` and ``widget``, ``to_html``, ``_ipython_display_``),
each with one lazy import: this module imports nothing downstream of it, not even for type
hints (so the façades' return types read ``Any``; their docstrings name the classes).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rudi_explain.data.sequences import Sequences
from rudi_explain.exceptions import InputError, InputTypeError, StateError
from rudi_explain.explanation import archive
from rudi_explain.explanation.config import ExplainConfig
from rudi_explain.explanation.figures import Figures, fidelity_by, fidelity_curve, report, slice_groups
from rudi_explain.explanation.job import Job, JobControls, JobInputs, JobProgress
from rudi_explain.explanation.result import FittedState
from rudi_explain.explanation.summary import done_text, full_text, settings_text, summary_line
from rudi_explain.rules.literals import Literals
from rudi_explain.rules.pruning import PruningPath
from rudi_explain.rules.ruleset import RuleSet
from rudi_explain.rules.scorecard import Scorecard
from rudi_explain.sql.spark import as_table, is_spark_source, is_table_source, predict_spark, score_spark
from rudi_explain.statistics import Statistic
from rudi_explain.teachers.aggregator import align_vocabularies

__all__ = ["Explanation"]


class Explanation(JobControls):
    """The result of :func:`explain`: statistics, literals, rules and figures.

    Returned at once when the job runs in the background: :meth:`wait`
    blocks until it ends (and re-raises its failure), :attr:`done` tells
    whether it has, :meth:`cancel` stops it, :attr:`progress` holds the last
    progress event. In a notebook the object shows as the widget.

    Parameters
    ----------
    sequences : Sequences
        The users explained.
    settings : ExplainConfig or mapping
        ``explain()``'s settings; a mapping for an explanation read from a file (its ``"params"``).
    result : FittedState, optional
        What the job computed, for an explanation that is finished already (loaded, derived).
    inputs : JobInputs, optional
        The teacher (or scores) and labels ``explain()`` was given; None when loaded from a file.
    work : callable, optional
        ``work(job) -> FittedState``: the job :func:`explain` runs (and :meth:`retry` runs again).
    history : sequence of JobProgress
        The progress events of a finished job.
    event_table : EventTable, optional
        The table larger than memory the users were sampled from.

    Attributes
    ----------
    sequences : Sequences
    statistics : list of Statistic
    literals : Literals
    rules : RuleSet
    scorecard : Scorecard or None
    teacher_scores, student_scores : pandas Series indexed by user id
    is_test : ndarray of bool
        Held-out users (aligned with ``sequences.users``).
    result : FittedState
        Everything the job computed, read-only.

    Notes
    -----
    Reading a result (``rules``, ``literals``, ``student_scores``,
    ``report()``, ...) while the job runs waits for it, with a note that
    ``exp.cancel()`` or an interrupt stops it; after a failed or cancelled
    job it raises an error saying why. No result is ever a silent None.
    """

    def __init__(self, sequences: Sequences, settings: ExplainConfig | Mapping[str, Any], *,
                 result: FittedState | None = None, inputs: JobInputs | None = None,
                 work: Callable[[Job], FittedState] | None = None, history: Sequence[JobProgress] = (),
                 event_table: Any = None) -> None:
        self._sequences = sequences
        self._config = settings if isinstance(settings, ExplainConfig) else None
        self._params = settings.to_params() if isinstance(settings, ExplainConfig) else dict(settings)
        self._inputs = inputs
        self._work = work
        self._event_table = event_table
        self._listeners: list[Callable[[JobProgress], Any]] = []
        self._result = result
        self._figures = Figures()
        self._job = Job.finished(self, list(history)) if result is not None else Job(self, self._listeners)

    # ------------------------------------------------------------ what it was made from
    @property
    def sequences(self) -> Sequences:
        """The users explained."""
        return self._sequences

    @property
    def config(self) -> ExplainConfig | None:
        """``explain()``'s settings; None for an explanation read from a file (see :attr:`params`)."""
        return self._config

    @property
    def params(self) -> dict[str, Any]:
        """The settings as saved with the explanation (a copy), and any what-if moves (``"moved_thresholds"``)."""
        out = dict(self._params)
        moved = self._result.moved_thresholds if self._result is not None else ()
        if moved:
            out["moved_thresholds"] = [dict(m) for m in moved]
        return out

    @property
    def inputs(self) -> JobInputs | None:
        """The teacher (or scores) and labels ``explain()`` was given; None when loaded from a file."""
        return self._inputs

    @property
    def event_table(self) -> Any:
        """The table larger than memory the users were sampled from (:mod:`rudi_explain.sql.warehouse`)."""
        return self._event_table

    # ------------------------------------------------------------ the result
    def ready_result(self, what: str = "the results") -> FittedState:
        """The result, once the job has finished: wait for a running job (saying so once, naming ``what``).

        Raises
        ------
        RuntimeError
            The job failed or was cancelled (the message says why), or ``what`` is read by the
            job itself before it has finished.
        """
        if self._result is not None:
            return self._result
        job = self._job
        if job.in_job():
            raise StateError(f"{what}: the explanation is still being computed; read it once the job has "
                             "finished (its 'done' progress event)")
        job.wait_with_note(what)
        if self._result is None:
            error = job.error
            raise StateError(f"the explanation did not finish ({job.status}): {type(error).__name__}: {error}; "
                             "there are no results: run explain() again") from None
        return self._result

    @property
    def result(self) -> FittedState:
        """Everything the job computed, read-only (waits for a running job)."""
        return self.ready_result("exp.result")

    def with_result(self, result: FittedState) -> Explanation:
        """A new explanation of the same users, settings and teacher over another result.

        The new one shares no job state with this one (its own progress history, listeners
        and events); this one is unchanged.
        """
        return Explanation(self._sequences, self._config if self._config is not None else self._params,
                           result=result, inputs=self._inputs, work=None, history=self.history,
                           event_table=self._event_table)

    @property
    def literals(self) -> Literals:
        """The literal table: statistic outputs and their thresholds."""
        return self.ready_result("exp.literals").literals

    @property
    def rules(self) -> RuleSet:
        """The rules, at the default point of the fidelity curve."""
        return self.ready_result("exp.rules").rules

    @property
    def scorecard(self) -> Scorecard | None:
        """The explanation read as cards and interaction rules, with exactly :attr:`rules`' scores (SEMANTICS.md,
        "The scorecard"); None where the rules are no sum (a rule list)."""
        return self.ready_result("exp.scorecard").scorecard

    @property
    def student(self) -> Any:
        """The fitted rule student (None for a loaded explanation)."""
        return self.ready_result("exp.student").student

    @property
    def unpruned_rules(self) -> RuleSet | None:
        """The student's rules before pruning (None for a loaded explanation)."""
        return self.ready_result("exp.unpruned_rules").unpruned_rules

    @property
    def pruning(self) -> PruningPath | None:
        """The pruning path behind :attr:`fidelity_curve`; None when not pruned."""
        return self.ready_result("exp.pruning").pruning

    @property
    def teacher_scores(self) -> pd.Series:
        """The teacher's score of every user, indexed by user id (read-only)."""
        return self.ready_result("exp.teacher_scores").teacher_scores

    @property
    def student_scores(self) -> pd.Series:
        """The rules' score of every user, indexed by user id (read-only)."""
        return self.ready_result("exp.student_scores").student_scores

    # Read without waiting: what the job has so far (the statistics found before a cancel).
    @property
    def statistics(self) -> list[Statistic]:
        """The statistics found: kept when the job was cancelled during or after the search."""
        return list(self._result.statistics) if self._result is not None else list(self._job.found)

    @property
    def is_test(self) -> np.ndarray:
        """Held-out users (read-only; all False before the job has split them)."""
        return self._result.is_test if self._result is not None else np.zeros(self._sequences.n_users, dtype=bool)

    @property
    def labels(self) -> np.ndarray | None:
        """The 0/1 outcomes given to ``explain(labels=...)``, in ``sequences.users`` order; None without."""
        return self._result.labels if self._result is not None else None

    @property
    def seconds(self) -> dict[str, float]:
        """Seconds per stage (so far, while the job runs)."""
        return dict(self._result.seconds) if self._result is not None else dict(self._job.seconds)

    @property
    def teacher_kind(self) -> str:
        """'torch', 'sklearn', 'callable', 'given scores', ... ('' before the teacher stage)."""
        return self._result.teacher_kind if self._result is not None else ""

    @property
    def score_unit(self) -> str:
        """The unit of the teacher's scores: 'probability', 'logit' or 'raw'."""
        return self._result.score_unit if self._result is not None else "raw"

    def _finish(self, result: FittedState) -> str:
        """Keep the job's result; the line its 'done' event says."""
        self._result = result
        return done_text(result)

    # ------------------------------------------------------------ figures
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
        state = self.ready_result("exp.report()")
        return report(state, self._params, self._figures)

    @property
    def fidelity_curve(self) -> pd.DataFrame:
        """Fidelity against the number of rules, along the pruning path.

        One row per point, from the most rules to one: ``n_rules``,
        ``fidelity_valid`` (on the validation users that chose the path),
        ``fidelity_test`` (on the held-out users), ``max_literals`` and
        ``default`` (the point :attr:`rules` is). :meth:`with_rules` gives
        the explanation at another point.
        """
        return fidelity_curve(self.ready_result("exp.fidelity_curve"))

    def fidelity_by(self, by: Any, held_out: bool = True) -> pd.DataFrame:
        """Fidelity per slice of users: where the rules follow the model well, and where they do not.

        Parameters
        ----------
        by : str or pandas Series
            A categorical event column (each user is filed under their most
            common value of it; users with none under ``"(no value)"``), or
            one value per user: a Series indexed by user id.
        held_out : bool, default=True
            Over the held-out users (as :meth:`report`'s ``fidelity_test``);
            False: over all users.

        Returns
        -------
        pandas DataFrame
            Indexed by the slice's value, largest slice first: ``n_users``,
            ``share`` (of the users measured), ``fidelity`` (NaN below
            :data:`~rudi_explain.explanation.figures.MIN_SLICE` users or
            where the teacher gives them all one score), ``teacher_mean``
            and ``rules_mean``. ``attrs["fidelity_all"]`` is the fidelity
            over all of them together.
        """
        state = self.ready_result("exp.fidelity_by()")
        return fidelity_by(state, slice_groups(self.sequences, by), held_out=held_out)

    def with_rules(self, k: int) -> Explanation:
        """The same explanation at another point of the fidelity curve.

        Parameters
        ----------
        k : int
            Number of rules; the point with the most rules, at most ``k``.

        Returns
        -------
        Explanation
            A new explanation sharing the data, statistics and literals, with the rules
            of that point (and their firings and scores) and their scorecard read off
            exactly (not refitted: :attr:`rules` is the refitted one); this one is unchanged.
        """
        state = self.ready_result()
        if state.pruning is None:
            raise InputError(state.no_pruning_reason or "this explanation was not pruned: it has one rule set only")
        return self.with_result(state.with_rules(state.pruning.at(k)))

    # ------------------------------------------------------------ façades (one lazy import each)
    def with_threshold(self, literal: Any, value: float) -> Explanation:
        """What-if: a new explanation with one literal's threshold moved to ``value``.

        Parameters
        ----------
        literal : int, str or tuple
            The literal's index in :attr:`literals`, its name, or a statistic output on which the rules use
            one literal; or a band edge of a card of :attr:`scorecard`, ``(card, edge)``: the card's index or
            statistic text and the edge's value now, e.g. ``(0, 60.0)``
            (:func:`rudi_explain.audit.what_if.resolve_literal`). A band edge moves between its neighbours
            only (onto or past one is refused, naming both); a linear card has no edge to move.
        value : float
            The new threshold, used exactly as given; must be finite.

        Returns
        -------
        Explanation
            A new explanation sharing the data, statistic values and teacher scores, with
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

    def user(self, user_id: Any) -> Any:
        """Why this user got their score: the per-user view (:class:`rudi_explain.audit.user.UserView`),
        with a scorecard the user's band and points on each card (``bands``) and the sum check."""
        from rudi_explain.audit.user import UserView

        self.ready_result()
        return UserView(self, self._sequences.user_index(user_id))

    def widget(self) -> Any:
        """The notebook widget for this explanation (:class:`rudi_explain.views.widget.ExplanationWidget`)."""
        from rudi_explain.views.widget import ExplanationWidget

        return ExplanationWidget(self)

    def to_html(self, path: str | Path, n_users: int = 40) -> Path:
        """Write a standalone HTML report (one file, works offline from disk).

        Summary, rule cards, thresholds and the drill-down of ``n_users``
        users (top-scored, rule-card examples and a random sample); see
        :func:`rudi_explain.views.report.write_html`.
        """
        from rudi_explain.views.report import write_html

        self.ready_result()
        return write_html(self, path, n_users=n_users)

    def _ipython_display_(self) -> None:
        """Show a static HTML copy, then the widget; the copy is rewritten whenever the job ends.

        The copy (:func:`rudi_explain.views.static_view.static_html`: summary, rules
        in words, fidelity curve; or how the job failed or where it was cancelled) is
        what a notebook opened without its kernel shows (nbconvert, GitHub); a live
        widget hides it. See :func:`rudi_explain.views.static_view.show`.
        """
        from rudi_explain.views.static_view import show

        show(self)

    # ------------------------------------------------------------ new users, files
    def predict(self, data: pd.DataFrame | Sequences) -> pd.Series:
        """Rule scores for (new) users: a Series indexed by user id.

        ``data`` may also be a Parquet path or DuckDB relation: the scores
        are then computed inside DuckDB from the rules' SQL. A Spark
        DataFrame gives a Spark DataFrame back (columns: the user, ``rules``),
        computed by Spark: see :meth:`score_spark`.

        Categories the training data lacked are unseen: they match no filter.
        """
        rules = self.ready_result().rules
        seqs = self._sequences
        if is_spark_source(data):
            return predict_spark(self, data)  # Spark in, Spark out: no event comes to the driver
        if not isinstance(data, (pd.DataFrame, Sequences)) and is_table_source(data):
            # a Parquet path or DuckDB relation: scored in DuckDB
            return as_table(data, seqs.user_column, seqs.time_column).score(self)["score"].rename("rules")
        if isinstance(data, pd.DataFrame):
            data = Sequences(data, user=seqs.user_column, time=seqs.time_column, categorical=seqs.categorical,
                             numerical=seqs.numerical, vocabularies=seqs.vocabularies)
        elif isinstance(data, Sequences):
            if any(data.vocabularies.get(c) != v for c, v in seqs.vocabularies.items()):
                data = align_vocabularies(data, seqs.vocabularies)
        else:
            raise InputTypeError(f"predict needs a DataFrame of events or Sequences, got {type(data).__name__}")
        missing = [c for c in seqs.columns if c not in data.columns]
        if missing:
            raise InputError(f"the new events lack the column(s) {missing} the rules use")
        return pd.Series(rules.score(data), index=pd.Index(data.users, name=data.user_column), name="rules")

    def score_spark(self, data: Any, *, include_literals: bool = False, reference_time: Any = None,
                    event_order: str | None = None, exact_sums: bool = False) -> Any:
        """Every user's statistic values, rule firings and rule score, computed by Spark: a Spark DataFrame.

        ``data`` is a ``pyspark.sql.DataFrame`` of events with the training
        columns (or a :class:`~rudi_explain.sql.spark.SparkEventTable`).
        Nothing comes to the driver: the rules' SQL runs in Spark when the
        result is acted on. ``exact_sums=True`` adds sums in the engine's
        order, equal to :meth:`predict` on pandas to the bit. The parameters
        and columns: :func:`rudi_explain.sql.spark.score_spark`.
        """
        self.ready_result("exp.score_spark()")
        return score_spark(self, data, include_literals=include_literals, reference_time=reference_time,
                           event_order=event_order, exact_sums=exact_sums)

    def save(self, path: str | Path) -> Path:
        """Write the explanation to one file: JSON plus numpy arrays in a zip, never pickle.

        See :mod:`rudi_explain.explanation.archive` for the format.
        """
        state = self.ready_result()
        params = self.params
        student = params["student"] if isinstance(params["student"], str) else type(state.student).__name__
        params = {k: v for k, v in params.items() if k != "student"} | {"student": student}
        return archive.write(path, self._sequences, params, state, self.history)

    def __repr__(self) -> str:
        if self.status != "done":
            # what tells two runs apart (rx.running()): when, on what, with which settings, and where it is
            started = time.strftime("%H:%M:%S", time.localtime(self.started_at))
            stage = self.progress.message if self.progress else "starting"
            return (f"Explanation({self.status}, started {started}; {self._sequences.n_users:,} users; "
                    f"{settings_text(self._inputs, self._params)}: {stage})")
        return summary_line(self.ready_result(), self.report())

    def __str__(self) -> str:
        """``print(exp)``: the one-line summary, then the scorecard's text form (the rules for a rule list)."""
        return full_text(self.ready_result(), self.report()) if self.status == "done" else repr(self)
