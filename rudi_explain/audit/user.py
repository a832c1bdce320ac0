"""One user's score and the rules behind it: :class:`UserView` (``exp.user(uid)``).

The view reads the explanation's result (``exp.result``): the user's scores and their
percentiles (:mod:`rudi_explain.audit.ranks`), the rules that fire, each literal's value and
threshold. Its attributions and counterfactual ask :mod:`rudi_explain.audit.attributions` and
:mod:`rudi_explain.audit.counterfactual`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from rudi_explain.audit.attributions import EventAttributions, user_attributions
from rudi_explain.audit.counterfactual import Counterfactual, counterfactual
from rudi_explain.audit.ranks import percentile, percentile_words
from rudi_explain.rules.formula import formula_literals
from rudi_explain.rules.ruleset import Rule

if TYPE_CHECKING:
    from rudi_explain.explanation import Explanation

__all__ = ["UserView"]


class UserView:
    """One user's score and the rules behind it.

    Attributes
    ----------
    user_id : object
    teacher_score, student_score : float
    percentile : float
        The teacher score's percentile among all users explained: the share (in percent) with a
        lower score, plus half the share tied with it (:mod:`rudi_explain.audit.ranks`).
    student_percentile : float
        The rule score's percentile, the same way: compare it with ``percentile`` (the two
        scores have different scales, their ranks do not).
    is_held_out : bool
        Whether the user was held out of training.
    intercept : float
        The rules' intercept: every user's starting score.
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
        state = exp.result
        self.explanation = exp
        self.index = index
        self.user_id = exp.sequences.users[index]
        y = state.teacher_scores.to_numpy()
        self.teacher_score = float(y[index])
        self.student_score = float(state.student_scores.iloc[index])
        self.percentile = percentile(y[index], y)
        s = state.student_scores.to_numpy()
        self.student_percentile = percentile(s[index], s)
        self.is_held_out = bool(state.is_test[index])
        self.fired = [int(k) for k in np.flatnonzero(state.fires[index])]
        rules = state.rules
        fired = sorted(self.fired, key=lambda k: -abs(rules[k].weight))
        self.contributions = pd.Series([rules[k].weight for k in fired], index=[str(rules[k].text) for k in fired],
                                       name="weight", dtype=np.float64)
        self.intercept = float(rules.intercept)
        lit = state.literals
        values = state.values[index, lit.column]
        self.literals = pd.DataFrame({
            "literal": lit.names,
            "value": values,
            "threshold": lit.thresholds,
            "holds": state.literal_matrix[index],
        })
        rows = []
        for k, rule in enumerate(rules):
            if not hasattr(rule, "formula"):
                continue
            rule = cast(Rule, rule)
            for part in formula_literals(rule.formula):
                holds = bool(state.literal_matrix[index, part.index]) != part.negated
                rows.append((k, rule.info.render_literal(part), rule.info.notation(part),
                             float(state.values[index, lit.column[part.index]]), holds))
        self.conditions = pd.DataFrame(rows, columns=["rule", "condition", "notation", "value", "holds"])
        self._attributions: EventAttributions | None = None

    @property
    def events(self) -> pd.DataFrame:
        """The user's events in time order."""
        return self.explanation.sequences.events(self.user_id)

    @property
    def attributions(self) -> EventAttributions:
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
        if self._attributions is None:
            self._attributions = self.attribute()
        return self._attributions

    def attribute(self, method: str | None = None, *, teacher: Any = None, **options: Any) -> EventAttributions:
        """Event attributions by a chosen method: ``"integrated_gradients"``, ``"ablation"`` or ``"occlusion"``.

        ``teacher`` passes the model for an explanation that holds none;
        ``options`` go to :func:`rudi_explain.audit.attributions.attribute_events`.
        Returns :class:`rudi_explain.audit.attributions.EventAttributions`.
        """
        return user_attributions(self.explanation, self.user_id, method, teacher=teacher, **options)

    def counterfactual(self, target_percentile: float = 50.0, direction: str = "below", max_literals: int = 3, *,
                       teacher: Any = None, edit_events: bool = True) -> Counterfactual:
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
        return counterfactual(self.explanation, self.index, target_percentile, direction, max_literals,
                              teacher=teacher, edit_events=edit_events)

    def __repr__(self) -> str:
        return (f"UserView({self.user_id!r}: teacher {self.teacher_score:.4g} "
                f"({percentile_words(self.percentile)}), rules {self.student_score:.4g} "
                f"({percentile_words(self.student_percentile)}), {len(self.fired)} rules fire)")
