"""One user's score and the rules behind it: :class:`UserView` (``exp.user(uid)``).

The view reads the explanation's result (``exp.result``): the user's scores and their
percentiles (:mod:`rudi_explain.audit.ranks`), the rules that fire, each literal's value and
threshold. Its attributions and counterfactual ask :mod:`rudi_explain.audit.attributions` and
:mod:`rudi_explain.audit.counterfactual`.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from rudi_explain.audit.attributions import EventAttributions, user_attributions
from rudi_explain.audit.cards import band_label, value_text
from rudi_explain.audit.counterfactual import Counterfactual, counterfactual
from rudi_explain.audit.ranks import percentile, percentile_words
from rudi_explain.rules.formula import formula_literals
from rudi_explain.rules.ruleset import LinearTerm, Rule
from rudi_explain.rules.scorecard_cards import UNDEFINED
from rudi_explain.rules.values import format_value, points_text

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
    added : dict of int to float
        Rule index -> what it adds to this user's score, for the fired rules:
        a rule's weight, a linear term's weight times the user's clipped value.
    contributions : pandas Series
        Rule text -> what it adds (``added``), for the fired rules, largest first in size.
    literals : DataFrame
        Each literal: its name, the statistic output's value for this user,
        the threshold, whether it holds, and the value and threshold written
        for people (``value_text``, ``threshold_text``: a share as a percent).
    conditions : DataFrame
        Each literal as the rules use it (a ``<=`` literal as ``<=``): the
        rule, the sentence, the notation, the user's value, whether it
        holds for this user as written, and the value for people (``value_text``).
    events : DataFrame
        The user's events in time order.
    bands : DataFrame
        The user's band on each card of the scorecard (empty without one), in
        the scorecard's order: ``card`` (its output in words), ``band`` (the
        band in words, or a linear card's slope), ``value`` (the user's value,
        written the one way: a share as a percent), ``points``, ``users`` (the
        training users' share in that band, as a percent), and the raw
        ``value_raw``, ``share`` (a fraction) and ``band_index`` (-1: undefined).
    base : float or None
        The scorecard's base (None without a scorecard).
    interactions : pandas Series
        Interaction rule text -> weight, for those that fire for the user.
    score_check : dict or None
        ``base + card points + fired interaction weights`` against the rule
        score: ``base``, ``cards``, ``interactions``, ``total``, ``score`` and
        ``holds`` (equal to 1e-9 relative); None without a scorecard.
    """

    def __init__(self, exp: Explanation, index: int) -> None:
        state = exp.result
        self.explanation = exp
        self.index = index
        user_id = exp.sequences.users[index]
        # a plain Python value (17814, not np.int64(17814)) for people and for the caller's dict keys
        self.user_id = user_id.item() if isinstance(user_id, np.generic) else user_id
        y = state.teacher_scores.to_numpy()
        self.teacher_score = float(y[index])
        self.student_score = float(state.student_scores.iloc[index])
        self.percentile = percentile(y[index], y)
        s = state.student_scores.to_numpy()
        self.student_percentile = percentile(s[index], s)
        self.is_held_out = bool(state.is_test[index])
        self.fired = [int(k) for k in np.flatnonzero(state.fires[index])]
        rules = state.rules
        # a rule adds its weight; a linear term (a linear card) its weight times the user's clipped value
        row = state.values[index:index + 1]
        added = {k: _added(rules[k], row) for k in self.fired}
        self.added = added
        fired = sorted(self.fired, key=lambda k: -abs(added[k]))
        self.contributions = pd.Series([added[k] for k in fired], index=[str(rules[k].text) for k in fired],
                                       name="weight", dtype=np.float64)
        self.intercept = float(rules.intercept)
        lit = state.literals
        values = state.values[index, lit.column]
        self.literals = pd.DataFrame({
            "literal": lit.names,
            "value": values,
            "threshold": lit.thresholds,
            "holds": state.literal_matrix[index],
            # for people: the value and threshold written the one way (a share as a percent)
            "value_text": [value_text(lit, int(c), float(x)) for c, x in zip(lit.column, values)],
            "threshold_text": [value_text(lit, int(c), float(t), exact=True)
                               for c, t in zip(lit.column, lit.thresholds)],
        })
        rows = []
        for k, rule in enumerate(rules):
            if not hasattr(rule, "formula"):
                continue
            rule = cast(Rule, rule)
            for part in formula_literals(rule.formula):
                holds = bool(state.literal_matrix[index, part.index]) != part.negated
                c = int(lit.column[part.index])
                x = float(state.values[index, c])
                rows.append((k, rule.info.render_literal(part), rule.info.notation(part), x, holds,
                             value_text(lit, c, x)))
        self.conditions = pd.DataFrame(rows, columns=["rule", "condition", "notation", "value", "holds",
                                                      "value_text"])
        self._attributions: EventAttributions | None = None
        self._scorecard_part(state)

    def _scorecard_part(self, state: Any) -> None:
        """The user's band and points on each card, the fired interaction rules, and the sum check."""
        sc = state.scorecard
        columns = ["card", "band", "value", "points", "users", "value_raw", "share", "band_index"]
        if sc is None:
            self.bands = pd.DataFrame(columns=columns)
            self.base = None
            self.interactions = pd.Series([], name="weight", dtype=np.float64)
            self.score_check = None
            return
        V = state.values[self.index:self.index + 1]
        band = sc.band_index(V)[0]
        pts = sc.points(V)[0]
        rows = []
        for k, card in enumerate(sc.cards):  # a loop over cards, for one user
            x = float(V[0, card.column])
            b = int(band[k])
            part = card.undefined if b == UNDEFINED else (card.linear if card.linear is not None else card.bands[b])
            share = float(part.share) if part is not None else float("nan")
            rows.append((card.name, band_label(card, b), format_value(x, card.kind, card.unit), float(pts[k]),
                         format_value(share, "share"), x, share, b))
        self.bands = pd.DataFrame(rows, columns=columns)
        fires = sc.fires(V)[0]
        self.base = float(sc.base)
        self.interactions = pd.Series([r.weight for r, f in zip(sc.interactions, fires) if f],
                                      index=[str(r.text) for r, f in zip(sc.interactions, fires) if f],
                                      name="weight", dtype=np.float64)
        cards, inter = float(pts.sum()), float(self.interactions.sum())
        total = self.base + cards + inter
        self.score_check = {"base": self.base, "cards": cards, "interactions": inter, "total": total,
                            "score": self.student_score,
                            "holds": bool(np.isclose(total, self.student_score, rtol=1e-9, atol=1e-9))}

    def score_text(self) -> str:
        """The sum check in words: "score -0.12 = base -1.20 + cards +0.87 + interaction rules +0.21"."""
        c = self.score_check
        if c is None:
            return f"rule score {points_text(self.student_score, sign=False)}"
        return (f"score {points_text(c['total'], sign=False)} = base {points_text(c['base'])} + cards "
                f"{points_text(c['cards'])} + interaction rules that fire {points_text(c['interactions'])}"
                + ("" if c["holds"] else f" (the rules say {points_text(c['score'], sign=False)}: they differ)"))

    def bands_text(self) -> str:
        """The user's band on each card, one line each: card, band, value, points, users in that band."""
        lines = [self.score_text()]
        for r in self.bands.itertuples():
            lines.append(f"  {r.card}: {r.band} (value {r.value}): {points_text(r.points)} points, "
                         f"{r.users} of users in this band")
        for text, w in self.interactions.items():
            lines.append(f"  interaction rule {points_text(w)}: {text}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """The score, the sum check and the band table, every string escaped."""
        head = html.escape(self._head())
        if self.score_check is None:
            return f"<pre>{head}</pre>"
        cells = "".join(
            "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in
                             (r.card, r.band, r.value, points_text(r.points), r.users)) + "</tr>"
            for r in self.bands.itertuples())
        inter = "".join(f"<li>{html.escape(points_text(w))} {html.escape(str(t))}</li>"
                        for t, w in self.interactions.items())
        return (f"<div><pre>{head}</pre><p>{html.escape(self.score_text())}</p>"
                "<table><thead><tr><th>card</th><th>band</th><th>value</th><th>points</th><th>users in band</th>"
                f"</tr></thead><tbody>{cells}</tbody></table>"
                + (f"<p>interaction rules that fire:</p><ul>{inter}</ul>" if inter else "") + "</div>")

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

    def _head(self) -> str:
        return (f"UserView({self.user_id!r}: teacher {points_text(self.teacher_score, sign=False)} "
                f"({percentile_words(self.percentile)}), rules {points_text(self.student_score, sign=False)} "
                f"({percentile_words(self.student_percentile)}), {len(self.fired)} rules fire)")

    def __repr__(self) -> str:
        head = self._head()
        return head if self.score_check is None else head + "\n" + self.bands_text()


def _added(rule: Rule | LinearTerm, row: np.ndarray) -> float:
    """What a fired rule adds: its weight; a linear term its weight times the user's clipped value."""
    if isinstance(rule, LinearTerm):
        return float(rule.weight * rule.value(row)[0])
    return float(rule.weight)
