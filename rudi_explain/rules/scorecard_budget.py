"""explain()'s last modelling step: the pruned rules become a scorecard within the budget.

:func:`scorecard_within_budget` reads a scorecard off a pruned additive rule
set (exactly its scores), refits it jointly on the training users
(validation users choose each card's form, SEMANTICS.md "The scorecard"),
and, while it has more units (cards and interaction rules) than the budget,
drops the unit whose removal costs least on the validation users and
refits. A statistic output used alone is one card however many bands it
has: one unit of the budget. An interaction rule that fires for 90% of the
training users or more is read as its complement
(:func:`~rudi_explain.rules.pruning.complement_common`: the same scores).
:func:`without_idle_units` goes on dropping, within the budget, while a unit's
removal costs the validation users at most a tie.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from rudi_explain.exceptions import InputError
from rudi_explain.metrics import Agreement
from rudi_explain.rules.literals import Literals
from rudi_explain.rules.pruning import complement_common
from rudi_explain.rules.ruleset import RuleSet
from rudi_explain.rules.scorecard import Scorecard
from rudi_explain.rules.scorecard_fit import MAX_BANDS, DropOne, refit, sample_rows

__all__ = ["scorecard_within_budget", "within_budget", "without_idle_units", "is_additive"]


def is_additive(rules: object) -> bool:
    """Whether ``rules`` is a plain sum of rules (a scorecard reads it): not a rule list, not linear terms."""
    return type(rules) is RuleSet and not rules.linear and isinstance(rules.literals, Literals)


def scorecard_within_budget(rules: RuleSet, values: ArrayLike, y: ArrayLike, is_valid: ArrayLike, *,
                            max_rules: int, max_bands: int = MAX_BANDS, monotone: bool = True,
                            linear: bool = False, split: bool = True) -> Scorecard:
    """The scorecard of ``rules`` refitted jointly, with at most ``max_rules`` cards and interaction rules.

    Parameters
    ----------
    rules : RuleSet
        Additive rules over a Literals table (the pruned student's).
    values : array-like of shape (n_users, n_outputs)
        The training users' statistic outputs (NaN where undefined).
    y : array-like of shape (n_users,)
        Their teacher scores, in the units of the rules' weights.
    is_valid : array-like of bool, shape (n_users,)
        The validation users (the pruning's): they choose each card's form
        and which unit goes first when over budget; the points are then
        fitted on all the users given.
    max_rules : int
        The budget: cards plus interaction rules.
    max_bands : int, default=6
        Most value bands a card keeps.
    monotone : bool, default=True
        Cards monotone where the teacher's mean is, unless validation users say otherwise.
    linear : bool, default=False
        Allow linear cards (:meth:`Scorecard.to_rules` writes each as a clipped
        :class:`~rudi_explain.rules.ruleset.LinearTerm`, with the same scores).
    split : bool, default=True
        Band cards gain band edges where validation users say they fit clearly better
        (:meth:`Scorecard.refit`); a card is one unit of the budget however many bands it has.

    Returns
    -------
    Scorecard
        ``len(result) <= max_rules``; no interaction rule fires for 90% of these users or more
        (:data:`~rudi_explain.rules.pruning.COMMON_RULE_SHARE`), and no band edge leaves 1% of the users
        whose value is defined or fewer on one side
        (:data:`~rudi_explain.rules.literals.VACUOUS_SHARE`).
    """
    if isinstance(max_rules, bool) or not isinstance(max_rules, (int, np.integer)) or max_rules < 1:
        raise InputError(f"max_rules must be a whole number of at least 1, got {max_rules!r}")
    V = np.asarray(values, dtype=np.float64)
    t = np.asarray(y, dtype=np.float64).reshape(-1)
    valid = np.asarray(is_valid, dtype=bool).reshape(-1)
    if valid.size != t.size:
        raise InputError(f"is_valid has {valid.size} entries for {t.size} users")
    options: dict[str, Any] = {"max_bands": max_bands, "monotone": monotone, "linear": linear, "split": split}
    if is_additive(rules):  # no interaction rule that nearly every training user meets
        rules = complement_common(rules, rules.literal_table().transform_values(V))
    card = Scorecard.from_rules(rules, V, t).refit(V, t, is_valid=valid, **options)
    return within_budget(card, V, t, valid, max_rules, options)


def within_budget(card: Scorecard, V: np.ndarray, t: np.ndarray, valid: np.ndarray, max_rules: int,
                  options: dict[str, Any]) -> Scorecard:
    """``card`` (refitted) less units until at most ``max_rules``: each time the unit whose removal costs
    least on the validation users goes, and the rest is refitted with ``options`` (:meth:`Scorecard.refit`'s).

    Parameters
    ----------
    card : Scorecard
        Refitted on ``V``, ``t`` (the scorecard returned as it is when within budget).
    V : ndarray, shape (n_users, n_outputs)
    t : ndarray, shape (n_users,)
    valid : ndarray of bool, shape (n_users,)
        The validation users (none: the fitting users judge).
    max_rules : int
    options : dict
        ``max_bands``, ``monotone``, ``linear``, ``split``.
    """
    judge = _Judge(V, t, valid, options)
    while len(card) > max_rules:
        k, _ = judge.weakest(card)
        if k is None:  # one unit left: the budget is at least 1
            break
        card = _without(card, k).refit(V, t, is_valid=valid, **options)
    return card


def without_idle_units(card: Scorecard, V: np.ndarray, t: np.ndarray, valid: np.ndarray, options: dict[str, Any],
                       tie: float) -> tuple[Scorecard, list[str], list[str]]:
    """``card`` less the units that do not earn their place, and what went: the cards' names, the rules' texts.

    While more than one unit is left, the unit whose removal costs least on the validation users goes
    if the scorecard refitted without it is at most ``tie`` less faithful there than with it (both
    fitted on the fitting users), and the rest is refitted on all the users given. A card whose points
    move no user's score by more than rounding is one such unit: shown, it reads as something the
    model uses.
    """
    judge = _Judge(V, t, valid, options)
    cards: list[str] = []
    rules: list[str] = []
    current = judge.fidelity(card)
    while len(card) > 1:
        k, fid = judge.weakest(card)
        if k is None or fid < current - tie:
            break
        if k < len(card.cards):
            cards.append(card.cards[k].name)
        else:
            rules.append(card.interactions[k - len(card.cards)].text)
        # the judge refits every trial's points itself: the whole refit (forms chosen afresh) once, at the end
        card, current = _without(card, k), fid
    if cards or rules:
        card = card.refit(V, t, is_valid=valid, **options)
    return card, cards, rules


class _Judge:
    """Units weighed as :func:`within_budget` weighs them: refitted on a sample of the fitting users,
    scored on a sample of the validation users (the fitting users judge where there are none)."""

    def __init__(self, V: np.ndarray, t: np.ndarray, valid: np.ndarray, options: dict[str, Any]) -> None:
        fit = ~valid if valid.any() and (~valid).any() else np.ones(t.size, dtype=bool)
        check = valid if valid.any() else fit
        # which unit goes is a choice: made on samples of the fitting and checking users (all of them when few)
        fit_rows, check_rows = sample_rows(fit), sample_rows(check)
        self.V_fit, self.t_fit, self.V_check, self.t_check = V[fit_rows], t[fit_rows], V[check_rows], t[check_rows]
        self.options = options
        self.agreement = Agreement(self.t_check)  # every trial is scored against these teacher scores

    def fidelity(self, card: Scorecard) -> float:
        """``card`` refitted on the fitting users, its fidelity on the validation users."""
        drop = self._drop_one(card)
        if drop is not None:
            return self._scored(drop.predict_without(None))
        return self._scored(_refitted_points(card, self.V_fit, self.t_fit, self.options).predict(self.V_check))

    def weakest(self, card: Scorecard) -> tuple[int | None, float]:
        """The unit whose removal costs least (its index, cards first; None where one unit is left), and the
        fidelity without it."""
        best, best_fid = None, -np.inf
        if len(card) < 2:
            return best, best_fid
        drop = self._drop_one(card)
        # Each unit left out in turn, refitted on the fitting users, scored on the validation users. Last
        # first, so that on a tie the unit read last goes: the weakest interaction rule, or the card that
        # moves scores least (a scorecard keeps its cards in that order).
        for k in reversed(range(len(card))):
            if drop is not None:
                f = self._scored(drop.predict_without(k))
            else:
                f = self._scored(_refitted_points(_without(card, k), self.V_fit, self.t_fit, self.options)
                                 .predict(self.V_check))
            if f > best_fid:
                best, best_fid = k, f
        return best, best_fid

    def _scored(self, scores: np.ndarray) -> float:
        """Fidelity of ``scores`` of the checking users to their teacher scores (0 with fewer than two)."""
        return float(self.agreement(scores)) if self.t_check.size >= 2 else 0.0

    def _drop_one(self, card: Scorecard) -> DropOne | None:
        """The trials' joint fits from one design (None where a trial's forms could differ: each is refitted)."""
        return DropOne.build(card.base, list(card.cards), list(card.interactions), card.literals, self.V_fit,
                             self.t_fit, self.V_check, **self.options)


def _without(card: Scorecard, k: int) -> Scorecard:
    """The scorecard less unit ``k`` (cards first, then interaction rules); points as they were."""
    n = len(card.cards)
    cards = [c for i, c in enumerate(card.cards) if i != k]
    interactions = [r for i, r in enumerate(card.interactions) if i + n != k]
    return Scorecard(cards, interactions, card.base, card.literals)


def _refitted_points(card: Scorecard, V: np.ndarray, t: np.ndarray, options: dict[str, Any]) -> Scorecard:
    """``card.refit(V, t, **options)`` less its description (centred points, shares, notes): the same scores,
    for a trial that is only scored."""
    base, cards, interactions = refit(card.base, list(card.cards), list(card.interactions), card.literals, V, t,
                                      **options)
    return Scorecard(cards, interactions, base, card.literals)
