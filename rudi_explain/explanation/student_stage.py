"""Stages 2 and 3 of the job: literals over the statistics found, the rule student, its scorecard, the figures.

:func:`fit_rules` takes the statistics the search found (:mod:`~rudi_explain.explanation.search_stage`)
and returns the :class:`~rudi_explain.explanation.result.FittedState` of the job: the literal table at
round thresholds of the training users, the student trained on them (on the training users less the
validation users), its rules pruned into the scorecard where the student is additive, and every
user's statistics and scores for the figures on the held-out users.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn.base import clone

from rudi_explain.data.sequences import Sequences
from rudi_explain.exceptions import InputError
from rudi_explain.explanation.config import STUDENTS, ExplainConfig
from rudi_explain.explanation.job import Job
from rudi_explain.explanation.result import FittedState
from rudi_explain.explanation.scorecard_step import prune_to_scorecard
from rudi_explain.rules.literals import Literals, statistic_values
from rudi_explain.rules.ruleset import RuleSet
from rudi_explain.statistics import Statistic
from rudi_explain.students import GSNLN, BayesianRuleList, CARTRules, HKLRuleEnsemble, LassoLiterals, SumOfTrees

__all__ = ["fit_rules", "student_for", "check_student", "in_teacher_units", "raise_on_cancel"]


# ------------------------------------------------------------------ the student
def _fresh_copy(estimator: Any) -> Any:
    """An unfitted copy of an estimator given to ``explain(student=...)``: the caller's object is never fitted."""
    try:
        return clone(estimator)
    except (TypeError, ValueError, RuntimeError, AttributeError):
        # Not a scikit-learn estimator (no get_params, or a constructor that changes its
        # parameters): a deep copy is fitted instead, still never the caller's object.
        return copy.deepcopy(estimator)


def student_for(name_or_estimator: Any, n_rules: int, random_state: int | None, params: dict) -> Any:
    """A student instance: a name from :data:`STUDENTS`, or an unfitted copy of the estimator given."""
    if not isinstance(name_or_estimator, str):
        return _fresh_copy(name_or_estimator)
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


def check_student(config: ExplainConfig) -> None:
    """Build the student and check its settings now: a bad one must not fail only after the search."""
    params = dict(config.student_params or {})
    try:
        built = student_for(config.student, config.n_rules, config.random_state, params)
        check = getattr(built, "_check_params", None)
        if isinstance(config.student, str) and callable(check):
            if not any(p.default is inspect.Parameter.empty for p in inspect.signature(check).parameters.values()):
                check()
    except (TypeError, ValueError) as err:
        raise InputError(f"student_params {params!r} do not suit the {config.student!r} student: {err}") \
            from None


# ------------------------------------------------------------------ units
def in_teacher_units(rules: RuleSet, a: float, b: float) -> RuleSet:
    """Rules trained on ``z`` rewritten to score ``a * z + b``, in the teacher's units.

    Only a plain :class:`RuleSet` is rewritten: a rule list's scores are
    probabilities of its own target, not a sum of weights.
    """
    if (a == 1.0 and b == 0.0) or type(rules) is not RuleSet:
        return rules
    scaled = [dataclasses.replace(r, weight=r.weight * a) for r in rules.rules]
    return RuleSet(scaled, b + a * rules.intercept, rules.literals if rules.literals is not None else rules.info)


def raise_on_cancel(job: Job) -> Callable[[], bool]:
    """A ``should_stop`` that raises at a cancel: the stage stops at its next check, skipping what follows it."""
    def should_stop() -> bool:
        job.check_cancel()
        return False
    return should_stop


# ------------------------------------------------------------------ the stages
def fit_rules(seqs: Sequences, train: Sequences, statistics: list[Statistic], y: np.ndarray, z: np.ndarray,
              units: tuple[float, float], is_test: np.ndarray, rng: np.random.Generator, config: ExplainConfig,
              job: Job, *, labels: np.ndarray | None, teacher_kind: str, score_unit: str) -> FittedState:
    """Literals, the student, its scorecard and the figures, over the statistics found.

    Parameters
    ----------
    seqs : Sequences
        Every user of the job.
    train : Sequences
        The training users (``seqs`` less the held-out users), as the search read them: their sorted
        frames are cached there.
    statistics : list of Statistic
    y, z : ndarray, shape (n_users,)
        The teacher's scores, and the same standardized (``y = a * z + b``, ``units = (a, b)``): the student
        trains on ``z``, its rules are put back in the teacher's units.
    is_test : ndarray of bool
        The held-out users.
    rng : Generator
        Draws the validation users (next after the held-out users).
    config : ExplainConfig
    job : Job
        Receives the progress events; its cancel stops the stages.
    labels : ndarray or None
    teacher_kind, score_unit : str
    """
    p = config
    n = seqs.n_users
    a, b = units
    seconds = job.seconds
    train_idx = np.flatnonzero(~is_test)
    y_train = z[train_idx]
    t = time.perf_counter()
    job.emit("literals", 0, 1, f"round thresholds at {p.n_quantiles} quantiles of the training users")
    stop_here = raise_on_cancel(job)
    # Each user's values once: the training users' (whose sorted frames the search made) give the thresholds,
    # the held-out users' are evaluated as a batch. Over all users, each sorting statistic sorted every event
    # again (5 s of 6 at 100,000 users, issue 27); the values are the same (vocabularies and reference time
    # are shared).
    train_values = statistic_values(train, statistics, should_stop=stop_here)
    literals = Literals.fit(train, statistics, n_quantiles=p.n_quantiles, should_stop=stop_here,
                            values=train_values)
    values = np.empty((n, train_values.shape[1]), dtype=np.float64)
    values[train_idx] = train_values
    test_idx = np.flatnonzero(is_test)
    if test_idx.size:
        values[test_idx] = statistic_values(seqs, statistics, test_idx, should_stop=stop_here)
    literal_matrix = literals.transform_values(values)
    seconds["literals"] = time.perf_counter() - t
    job.emit("literals", 1, 1, f"{literals.n_literals} literals")
    job.check_cancel()

    t = time.perf_counter()
    student = student_for(p.student, p.n_rules, p.random_state, dict(p.student_params or {}))
    epochs = getattr(student, "epochs", 0)

    def on_epoch(event: Any) -> bool:
        job.emit("student", event.epoch, event.epochs, f"epoch {event.epoch}/{event.epochs}: "
                 f"loss {event.loss:.4f}, fidelity {event.fidelity:.3f}",
                 epoch=event.epoch, loss=event.loss, fidelity=event.fidelity)
        return not job.stopping()

    job.emit("student", 0, max(epochs, 1), f"training {type(student).__name__}")
    X_train = literal_matrix[train_idx]
    # a rule list (first match wins) is not a sum of rules: nothing to prune, no users to hold back
    prune = p.prune and p.student != "brl"
    # Pruning chooses on validation users: a split of the training users the student does not see.
    is_valid = np.zeros(train_idx.size, dtype=bool)
    if prune:
        n_valid = max(2, int(round(train_idx.size * p.validation_size)))
        is_valid[rng.permutation(train_idx.size)[:n_valid]] = True
    fit_kwargs: dict[str, Any] = {"progress": on_epoch}
    if "should_stop" in inspect.signature(student.fit).parameters:
        # asked per mini-batch, solve or a few hundred sampling steps: a cancel within a second. GS-NLN keeps
        # what it learned when stopped (the check below then raises); the other students raise at once.
        fit_kwargs["should_stop"] = job.stopping if isinstance(student, GSNLN) else raise_on_cancel(job)
    student.fit(X_train[~is_valid], y_train[~is_valid], **fit_kwargs)
    job.check_cancel()
    unpruned_rules = in_teacher_units(student.rules(literals), a, b)
    rules = unpruned_rules
    pruning = scorecard = choice = None
    seconds["student"] = time.perf_counter() - t
    if prune and type(unpruned_rules) is RuleSet and not unpruned_rules.linear:
        t = time.perf_counter()
        job.emit("evaluate", 0, 1, "moving thresholds, pruning and merging rules on validation users")
        # the pruned rules become the scorecard (SEMANTICS.md): the model; the rules are its rule form
        pruning, scorecard, rules, choice = prune_to_scorecard(unpruned_rules, values[train_idx], y[train_idx],
                                                               is_valid, p, should_stop=raise_on_cancel(job))
        job.check_cancel()
        unpruned_rules = pruning.unpruned
        literals = rules.literal_table()  # the refined table, extended by the scorecard's band edges
        seconds["pruning"] = time.perf_counter() - t

    t = time.perf_counter()
    job.emit("evaluate", 0, 1, "fidelity and AUC on held-out users")
    state = FittedState.from_values(
        seqs, statistics, literals, rules, values, y, is_test, labels=labels, student=student,
        unpruned_rules=unpruned_rules, pruning=pruning, teacher_kind=teacher_kind, score_unit=score_unit,
        scorecard=scorecard, scorecard_choice=choice)
    seconds["evaluate"] = time.perf_counter() - t
    seconds["total"] = job.elapsed
    return dataclasses.replace(state, seconds=seconds)
