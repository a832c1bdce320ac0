"""What an explain job computed, as one frozen value: :class:`FittedState`.

An :class:`~rudi_explain.explanation.Explanation` reads everything it shows from its
``result``; the audit and the views read the same public fields. Nothing here changes after it is
built: the dataclass is frozen, its arrays (and the arrays behind its Series) are read-only views,
and another point of the fidelity curve or a moved threshold is a new ``FittedState``
(:func:`dataclasses.replace`, :meth:`FittedState.with_rules`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from rudi_explain.data.sequences import Sequences
from rudi_explain.exceptions import InputError
from rudi_explain.explanation.scorecard_choice import ScorecardChoice
from rudi_explain.rules.literals import Literals
from rudi_explain.rules.pruning import PruningPath
from rudi_explain.rules.ruleset import RuleSet
from rudi_explain.rules.scorecard import Scorecard
from rudi_explain.rules.scorecard_budget import is_additive
from rudi_explain.statistics import Statistic

__all__ = ["FittedState", "read_only", "score_series", "read_scorecard"]


def read_only(array: np.ndarray) -> np.ndarray:
    """A read-only view of ``array`` (the array itself stays as it was)."""
    view = np.asarray(array).view()
    view.flags.writeable = False
    return view


def score_series(scores: np.ndarray, index: pd.Index, name: str) -> pd.Series:
    """Scores as a Series indexed by user id, over a read-only view of ``scores`` (no copy)."""
    return pd.Series(read_only(np.asarray(scores)), index=index, name=name, copy=False)


def _read_only_series(series: pd.Series) -> pd.Series:
    values = series.to_numpy()
    if not values.flags.writeable:
        return series
    return pd.Series(read_only(values), index=series.index, name=series.name, copy=False)


#: the array fields of :class:`FittedState`, made read-only when it is built
_ARRAYS = ("is_test", "values", "literal_matrix", "fires", "labels")


@dataclass(frozen=True, eq=False)
class FittedState:
    """What an explain job computed, read-only.

    Every per-user array lines up with ``sequences.users`` of the explanation it belongs to.
    Compared by identity (``eq=False``), so a result can key a cache.

    Attributes
    ----------
    statistics : tuple of Statistic
        The statistics the search found (stage 1).
    literals : Literals
        The literal table: statistic outputs and thresholds.
    rules : RuleSet
        The rules (after pruning, at the default point of the fidelity curve).
    teacher_scores, student_scores : pandas Series
        The teacher's scores and the rules' scores, indexed by user id (read-only values).
    is_test : ndarray of bool, shape (n_users,)
        The held-out users; the others trained the search and the student.
    values : ndarray of float, shape (n_users, n_outputs)
        Every statistic output for every user (NaN where undefined).
    literal_matrix : ndarray of bool, shape (n_users, n_literals)
        Whether each literal holds for each user.
    fires : ndarray of bool, shape (n_users, n_rules)
        Whether each rule fires for each user (a linear term: where its value is nonzero).
    labels : ndarray of float or None
        The 0/1 outcomes given to ``explain(labels=...)``.
    student : estimator or None
        The fitted rule student (None for a loaded explanation).
    unpruned_rules : RuleSet or None
        The student's rules before pruning (None for a loaded explanation).
    pruning : PruningPath or None
        The pruning path (the fidelity curve); None when not pruned.
    no_pruning_reason : str or None
        Why there is no pruning path when the reason is not ``explain()``'s settings (an old file).
    teacher_kind : str
        'torch', 'sklearn', 'callable', 'given scores', ...
    score_unit : str
        'probability', 'logit' or 'raw'.
    seconds : mapping of str to float
        Seconds per stage, and ``"total"``.
    moved_thresholds : tuple of dict
        What-if moves made since the job (``{"literal", "from", "to"}``), oldest first.
    scorecard : Scorecard or None
        The rules read as cards and interaction rules (SEMANTICS.md, "The
        scorecard"), with exactly the rules' scores; None for rules that are
        not a sum (a rule list, linear terms).
    scorecard_choice : ScorecardChoice or None
        Which form of scorecard explain() kept and on what evidence (``.text()``: one sentence); None where
        none was weighed (not pruned, a rule list). Bound to :attr:`rules`: once they are replaced (another
        point of the fidelity curve, a moved threshold) it says that it no longer describes them.
    """

    statistics: tuple[Statistic, ...]
    literals: Literals
    rules: RuleSet
    teacher_scores: pd.Series
    student_scores: pd.Series
    is_test: np.ndarray
    values: np.ndarray
    literal_matrix: np.ndarray
    fires: np.ndarray
    labels: np.ndarray | None = None
    student: Any = None
    unpruned_rules: RuleSet | None = None
    pruning: PruningPath | None = None
    no_pruning_reason: str | None = None
    teacher_kind: str = ""
    score_unit: str = "raw"
    seconds: Mapping[str, float] = field(default_factory=dict)
    moved_thresholds: tuple[Mapping[str, Any], ...] = ()
    scorecard: Scorecard | None = None
    scorecard_choice: ScorecardChoice | None = None

    def __post_init__(self) -> None:
        def put(name: str, value: Any) -> None:
            object.__setattr__(self, name, value)

        put("statistics", tuple(self.statistics))
        for name in _ARRAYS:
            value = getattr(self, name)
            if value is not None:
                put(name, read_only(value))
        put("teacher_scores", _read_only_series(self.teacher_scores))
        put("student_scores", _read_only_series(self.student_scores))
        put("seconds", MappingProxyType(dict(self.seconds)))
        put("moved_thresholds", tuple(MappingProxyType(dict(m)) for m in self.moved_thresholds))
        if self.scorecard_choice is not None:  # every new state (dataclasses.replace too) checks its rules
            put("scorecard_choice", self.scorecard_choice.bound_to(self.rules, len(self.moved_thresholds)))

    @classmethod
    def from_values(cls, sequences: Sequences, statistics: Any, literals: Literals, rules: RuleSet,
                    values: np.ndarray, teacher_scores: np.ndarray, is_test: np.ndarray, *,
                    student_scores: np.ndarray | None = None, **fields: Any) -> FittedState:
        """A result from the statistic values: the literal matrix, firings and rule scores derived.

        Parameters
        ----------
        sequences : Sequences
            The users (for the scores' index).
        statistics, literals, rules
            As the attributes.
        values : ndarray, shape (n_users, n_outputs)
            The statistic outputs for every user.
        teacher_scores : ndarray, shape (n_users,)
        is_test : ndarray of bool, shape (n_users,)
        student_scores : ndarray, optional
            The rule scores when known (a saved file's); computed from the rules otherwise.
        **fields
            The other attributes (``labels``, ``pruning``, ``seconds``, ...).
            Without ``scorecard`` (or None), additive rules are read off as one
            (:meth:`Scorecard.from_rules`, exactly their scores).

        Returns
        -------
        FittedState
        """
        index = pd.Index(sequences.users, name=sequences.user_column)
        literal_matrix = literals.transform_values(values)
        # linear terms read the statistic values, rules the literals
        read = np.asarray(values, dtype=np.float64) if rules.reads_values else literal_matrix
        fires = rules.fires(read)
        if student_scores is None:
            student_scores = rules.score(read)
        if fields.get("scorecard") is None:
            fields["scorecard"] = read_scorecard(rules, values, teacher_scores, is_test)
        return cls(statistics=tuple(statistics), literals=literals, rules=rules,
                   teacher_scores=score_series(teacher_scores, index, "teacher"),
                   student_scores=score_series(student_scores, index, "student"), is_test=is_test, values=values,
                   literal_matrix=literal_matrix, fires=fires, **fields)

    def with_rules(self, rules: RuleSet, **changes: Any) -> FittedState:
        """A new result with other rules over the same literal matrix: their firings and scores recomputed.

        Parameters
        ----------
        rules : RuleSet
        **changes
            Other fields to replace (e.g. ``literals`` and ``literal_matrix`` together).
            Without ``scorecard``, the new rules are read off as one (exactly their scores).

        Returns
        -------
        FittedState
        """
        Z = changes.get("values", self.values) if rules.reads_values else \
            changes.get("literal_matrix", self.literal_matrix)
        if "scorecard" not in changes:
            changes["scorecard"] = read_scorecard(rules, self.values, self.teacher_scores.to_numpy(), self.is_test)
        return dataclasses.replace(self, rules=rules, fires=rules.fires(Z),
                                   student_scores=score_series(rules.score(Z), self.teacher_scores.index, "student"),
                                   **changes)


def read_scorecard(rules: RuleSet, values: np.ndarray, teacher_scores: np.ndarray,
                   is_test: np.ndarray) -> Scorecard | None:
    """Additive ``rules`` read off as a scorecard centred on the training users; None for other rules.

    Parameters
    ----------
    rules : RuleSet
    values : ndarray, shape (n_users, n_outputs)
    teacher_scores : ndarray, shape (n_users,)
    is_test : ndarray of bool, shape (n_users,)
        The held-out users: the others centre the points and give each band its share and teacher mean.

    Returns
    -------
    Scorecard or None
        None also for rules and linear terms that are not one card per output (a linear term without
        bounds, or beside band rules on its output).
    """
    if not is_additive(rules):
        return None
    train = ~np.asarray(is_test, dtype=bool)
    if not train.any():  # no training users (a damaged file): centre on all users
        train = np.ones_like(train)
    try:
        return Scorecard.from_rules(rules, np.asarray(values)[train], np.asarray(teacher_scores)[train])
    except InputError:
        if rules.has_linear:  # rules and linear terms built by hand: scored as they are, shown as rules
            return None
        raise
