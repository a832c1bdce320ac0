"""explain()'s post-processing: the student's rules pruned, then read and refitted as a scorecard.

:func:`prune_to_scorecard` runs :func:`rudi_explain.rules.refine.prune_and_refine`
(thresholds moved, rules pruned and swapped on validation users) and turns its
default point into the explanation's model,
:func:`rudi_explain.rules.scorecard_budget.scorecard_within_budget`: cards and
interaction rules refitted jointly, ``max_rules`` of them at most, in the form validation users chose,
less the cards and interaction rules those users do not miss
(:func:`~rudi_explain.rules.scorecard_budget.without_idle_units`; the choice,
:class:`~rudi_explain.explanation.scorecard_choice.ScorecardChoice`, which the explanation shows, names them).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from rudi_explain.explanation.config import ExplainConfig
from rudi_explain.explanation.job import ExplanationCancelled
from rudi_explain.explanation.scorecard_choice import IDLE_TIE, ScorecardChoice
from rudi_explain.metrics import fidelity
from rudi_explain.rules.formula import literal_info
from rudi_explain.rules.literals import Literals
from rudi_explain.rules.pruning import PruningPath
from rudi_explain.rules.refine import prune_and_refine
from rudi_explain.rules.ruleset import Rule, RuleSet
from rudi_explain.rules.scorecard import Scorecard
from rudi_explain.rules.scorecard_additive import (
    MIN_USERS,
    Fit,
    WithPairRules,
    choose_scorecard,
    fit_options,
    scorecard_candidates,
)
from rudi_explain.rules.scorecard_budget import scorecard_within_budget, without_idle_units
from rudi_explain.rules.scorecard_cards import Band, Card
from rudi_explain.rules.scorecard_fit import notes_later, sample_rows, with_notes
from rudi_explain.rules.scorecard_fuse import fuse_near_bands
from rudi_explain.rules.scorecard_idle import drop_idle_parts
from rudi_explain.rules.scorecard_nested import unnest_interactions
from rudi_explain.search.parallel import one_blas_thread

#: What :func:`prune_to_scorecard` returns: the pruning path, the scorecard, its rule form, and the choice of form.
Step = tuple[PruningPath, Scorecard, RuleSet, ScorecardChoice]

__all__ = ["prune_to_scorecard", "LINEAR_CARDS", "Step"]

#: Whether explain() may fit linear cards (``slope x value clipped to [lo, hi]``, where users they were not
#: chosen on say they fit at least as well). Their rule form exists: ``Scorecard.to_rules`` writes a clipped
#: LinearTerm beside the rules, with exactly the scorecard's scores (numpy, SQL, save/load), and held-out
#: fidelity did not drop with them (issue 26, item 2): on 12 cases of payments, edits and planted data at
#: 3,000 users it rose by 0.001-0.009 in mean, and never fell.
LINEAR_CARDS = True
#: Whether explain() weighs an additive scorecard (every statistic output a card, binned afresh at the literal
#: table's thresholds, with the student's interaction rules or none) against the student's own, on validation
#: users the candidates were not fitted on (issue 26: the student's cards leave statistics out, or cut them into
#: 2-3 bands where the teacher moves steadily).
ADDITIVE = True
#: Whether neighbouring bands within 2% of their card's spread become one band, refitted
#: (:func:`~rudi_explain.rules.scorecard_fuse.fuse_near_bands`).
FUSE = True
#: A larger pruning point is tried while its read-off has at most ``max_rules + SLACK`` cards and interaction rules.
SLACK = 2
#: Validation fidelity a larger starting point must gain over the one before it is kept.
TIE = 1e-3


def prune_to_scorecard(rules: RuleSet, values: np.ndarray, y: np.ndarray, is_valid: np.ndarray,
                       config: ExplainConfig, *,
                       should_stop: Callable[[], bool] | None = None) -> Step:
    """The pruning path of the student's rules, the scorecard its default point becomes, its rule form, and why.

    Parameters
    ----------
    rules : RuleSet
        The student's additive rules, in the teacher's units.
    values : ndarray, shape (n_users, n_outputs)
        The training users' statistic outputs.
    y : ndarray, shape (n_users,)
        Their teacher scores.
    is_valid : ndarray of bool, shape (n_users,)
        The validation users: they choose the pruning path's default point, each card's form, and which
        unit goes first when the scorecard is over budget.
    config : ExplainConfig
        ``max_rules`` (cards and interaction rules), ``max_literals``, ``refine``.
    should_stop : callable, optional
        Asked during the pruning and between the scorecard's steps; a stop raises there
        (:class:`~rudi_explain.explanation.ExplanationCancelled` where ``should_stop`` returns True).

    Returns
    -------
    (PruningPath, Scorecard, RuleSet, ScorecardChoice)
        The rule set is ``scorecard.to_rules()``: the explanation's rules, with exactly the scorecard's
        scores, over the pruning's literal table extended by the scorecard's band edges; the pruning
        path's rule sets are put over that table too (their literals keep their indices). The choice
        names the form of scorecard kept, each form's validation fidelity and the validation users
        (or why no choice was made).
    """
    # One BLAS thread: the joint fits' products are small, and on 2 busy cores a second thread waking for
    # each made them 20 to 40 times slower (issue 27); the same results either way. The sign notes are
    # written once, on the scorecard kept (:func:`_prune_to_scorecard`).
    with one_blas_thread(), notes_later():
        return _prune_to_scorecard(rules, values, y, is_valid, config, should_stop)


def _prune_to_scorecard(rules: RuleSet, values: np.ndarray, y: np.ndarray, is_valid: np.ndarray,
                        config: ExplainConfig,
                        should_stop: Callable[[], bool] | None) -> Step:
    def check() -> None:
        # Between the scorecard's steps too: at 100,000 users they ran 1.8 s after the pruning's last check.
        if should_stop is not None and should_stop():
            raise ExplanationCancelled("the explanation was cancelled")

    pruning = prune_and_refine(rules, values, y, is_valid, max_rules=config.max_rules,
                               max_literals=config.max_literals, refine=config.refine, should_stop=should_stop)
    k = _power_of_two_scale(y)
    if k == 1.0:
        start = _start(pruning, values, y, is_valid, config.max_rules, check)
        scorecard, choice = _fit_scorecard(start, values, y, is_valid, config.max_rules, check)
        fitted_table = scorecard.literals  # the pruning path's
        scorecard = _readable(scorecard, values, y)
        check()
        scorecard = Scorecard(with_notes(scorecard.cards, scorecard.interactions, scorecard.literals, values, y),
                              scorecard.interactions, scorecard.base, scorecard.literals)
    else:
        # scores near the float limits (1e300): the joint refit's squared errors would overflow. Fitted on
        # y / k (k a power of two: exact), the points are then put back in the teacher's units, and the
        # scorecard read off them exactly.
        start = _scaled(_start(pruning, values, y / k, is_valid, config.max_rules, check), 1 / k)
        fitted, choice = _fit_scorecard(start, values, y / k, is_valid, config.max_rules, check)
        fitted_table = fitted.literals
        fitted = _readable(fitted, values, y / k)
        check()
        # its notes' numbers in the teacher's units, as the points beside them will be
        cards = with_notes(fitted.cards, fitted.interactions, fitted.literals, values, y / k, shown=k)
        scorecard = _scaled_scorecard(Scorecard(cards, fitted.interactions, fitted.base, fitted.literals), k)
    rules = scorecard.to_rules()
    table = rules.literal_table()
    if table is not fitted_table:  # one table for all: the explanation's
        pruning = dataclasses.replace(pruning, unpruned=_over(pruning.unpruned, table),
                                      rule_sets=[_over(rs, table) for rs in pruning.rule_sets])
        info = literal_info(table)
        scorecard = Scorecard(scorecard.cards, [Rule(r.formula, r.weight, info) for r in scorecard.interactions],
                              scorecard.base, table)
    return pruning, scorecard, rules, choice


def _readable(scorecard: Scorecard, values: np.ndarray, y: np.ndarray) -> Scorecard:
    """The scorecard read more plainly: neighbouring bands whose points a reader cannot tell apart as one band
    (its points refitted); then, with the same scores, a part of an interaction rule the others imply on every
    training user dropped (it reads as something the model needs), and two nested rules written as two effects
    their common users do not get."""
    if FUSE:
        scorecard = fuse_near_bands(scorecard, values, y)
    return unnest_interactions(drop_idle_parts(scorecard, values, y), values, y)


def _fit_scorecard(start: RuleSet, values: np.ndarray, y: np.ndarray, is_valid: np.ndarray,
                   max_rules: int, check: Callable[[], None]) -> tuple[Scorecard, ScorecardChoice]:
    """Every statistic as a card, or a form with interaction rules where validation users say it is better.

    Candidates, plainest first (:func:`~rudi_explain.rules.scorecard_additive.choose_scorecard`: each fitted
    without the validation users and scored on them; a later one must be more faithful by its ``TIE``): every
    output as a card binned afresh; the same offered finer edges; every output as a card with the start point's
    interaction rules; the start point's own scorecard (the student's, also the one kept where too few users
    make a choice). The chosen one is then fitted on all the training users, and returned with the choice: its
    name, each candidate's validation fidelity, and the users they were scored and fitted on. ``check`` is
    called before each step (it raises to stop).
    """
    check()
    candidates = scorecard_candidates(start, max_rules=max_rules, linear=LINEAR_CARDS, additive=ADDITIVE)
    valid = np.asarray(is_valid, dtype=bool)
    # the users choose_scorecard scores and fits on (samples of at most CHOICE_USERS each)
    n_valid, n_fit = sample_rows(valid).size, sample_rows(~valid).size
    if len(candidates) == 1:
        scorecard, n_added, dropped = _fit_chosen(candidates["student"], values, y, is_valid, check)
        return scorecard, ScorecardChoice.weighed("student", {}, n_valid, n_fit, n_forms=1, n_added=n_added,
                                                  dropped=dropped)
    # with too few users to weigh the forms, the student's own (a choice on a few dozen users is noise)
    name, scores = choose_scorecard(candidates, values, y, is_valid, fallback="student")
    check()
    scorecard, n_added, dropped = _fit_chosen(candidates[name], values, y, is_valid, check)
    return scorecard, ScorecardChoice.weighed(name, scores, n_valid, n_fit, n_forms=len(candidates),
                                              n_added=n_added, dropped=dropped)


def _fit_chosen(make: Fit, values: np.ndarray, y: np.ndarray, is_valid: np.ndarray,
                check: Callable[[], None]) -> tuple[Scorecard, int, tuple[tuple[str, ...], tuple[str, ...]]]:
    """The chosen form fitted on all the training users less its idle units, how many pair rules it added to
    what was weighed, and the units left out (:func:`_without_idle_units`).

    A :class:`~rudi_explain.rules.scorecard_additive.WithPairRules` form was weighed by its ``fit`` alone: that
    fit, then its pair rules, so the rules added are counted for the reader without fitting it twice.
    """
    if not isinstance(make, WithPairRules):
        full = make(values, y, is_valid)
        n_added = 0
    else:
        own = make.fit(values, y, is_valid)
        full = make.with_pairs(own, values, y, is_valid)
        n_added = max(len(full.interactions) - len(own.interactions), 0)
    check()
    kept, dropped = _without_idle_units(full, values, y, is_valid)
    return kept, n_added, dropped


def _without_idle_units(card: Scorecard, values: np.ndarray, y: np.ndarray, is_valid: np.ndarray
                        ) -> tuple[Scorecard, tuple[tuple[str, ...], tuple[str, ...]]]:
    """``card`` less the cards and interaction rules the validation users do not miss, and what went (in words).

    A unit goes while the scorecard refitted without it is at most ``IDLE_TIE`` (0.0005) less faithful on the validation
    users than with it (:func:`~rudi_explain.rules.scorecard_budget.without_idle_units`): shown, a card whose
    points move scores by a few thousandths reads as something the model uses. With fewer than ``MIN_USERS``
    validation or fitting users (the sizes a scorecard form is chosen on) nothing is judged.
    """
    valid = np.asarray(is_valid, dtype=bool).reshape(-1)
    if sample_rows(valid).size < MIN_USERS or sample_rows(~valid).size < MIN_USERS or len(card) < 2:
        return card, ((), ())
    kept, cards, rules = without_idle_units(card, np.asarray(values, dtype=np.float64),
                                           np.asarray(y, dtype=np.float64), valid, fit_options(LINEAR_CARDS),
                                           tie=IDLE_TIE)
    return kept, (tuple(cards), tuple(rules))


def _power_of_two_scale(y: np.ndarray) -> float:
    """1 for ordinary scores; for scores whose squares overflow or vanish, the power of two near their spread."""
    spread = float(np.max(np.abs(y - np.mean(y)))) if len(y) else 0.0
    if spread == 0.0 or 1e-100 < spread * np.sqrt(len(y)) < 1e100:
        return 1.0
    return float(2.0 ** np.round(np.log2(spread)))


def _scaled_scorecard(sc: Scorecard, k: float) -> Scorecard:
    """``sc`` with every point, weight, teacher mean and the base times ``k`` (a power of two: exact)."""
    def band(b: Band | None) -> Band | None:
        return None if b is None else dataclasses.replace(
            b, points=b.points * k, teacher=None if b.teacher is None else b.teacher * k)

    def card(c: Card) -> Card:
        lin = c.linear
        if lin is not None:
            lin = dataclasses.replace(lin, slope=lin.slope * k, offset=lin.offset * k,
                                      teacher=None if lin.teacher is None else lin.teacher * k)
        return dataclasses.replace(c, bands=tuple(band(b) for b in c.bands),  # type: ignore[misc]
                                   undefined=band(c.undefined), linear=lin)

    interactions = [dataclasses.replace(r, weight=r.weight * k) for r in sc.interactions]
    return Scorecard([card(c) for c in sc.cards], interactions, sc.base * k, sc.literals)


def _scaled(rules: RuleSet, factor: float) -> RuleSet:
    """``rules`` with every weight and the intercept times ``factor`` (a power of two: exact)."""
    return RuleSet([dataclasses.replace(r, weight=r.weight * factor) for r in rules.rules], rules.intercept * factor,
                   rules.literals if rules.literals is not None else rules.info)


def _start(pruning: PruningPath, values: np.ndarray, y: np.ndarray, is_valid: np.ndarray,
           max_rules: int, check: Callable[[], None]) -> RuleSet:
    """The point of the pruning path the scorecard starts from: the default, or a larger one that fits the budget.

    The budget counts cards, not rules: the default point's bands on one output are one card, so a point
    with more rules may still read as ``max_rules`` cards and interaction rules or fewer (a few more: the
    budget step drops them). Each such point is read off, brought within budget and refitted on the
    fitting users; the one most faithful on the validation users is kept (the default on a tie). ``check`` is
    called before each point (it raises to stop).
    """
    valid = np.asarray(is_valid, dtype=bool)
    fit = ~valid
    if valid.sum() < 2 or fit.sum() < 2:
        return pruning.default_rules
    best, best_fid = pruning.default_rules, -np.inf
    # a choice: made on samples of the fitting and validation users (all of them when few)
    fit_rows, valid_rows = sample_rows(fit), sample_rows(valid)
    V_fit, y_fit, V_valid, y_valid = values[fit_rows], y[fit_rows], values[valid_rows], y[valid_rows]
    for k in range(pruning.default, -1, -1):  # the default first, then ever more rules
        check()
        rules = pruning.rule_sets[k]
        if k != pruning.default and len(Scorecard.from_rules(rules, V_fit, y_fit)) > max_rules + SLACK:
            break
        trial = scorecard_within_budget(rules, V_fit, y_fit, np.zeros(fit_rows.size, dtype=bool),
                                        max_rules=max_rules, linear=LINEAR_CARDS)
        f = fidelity(y_valid, trial.predict(V_valid))
        if f > best_fid + TIE:
            best, best_fid = rules, f
    return best


def _over(rules: RuleSet, table: Literals) -> RuleSet:
    """The same additive rules over a table that extends theirs (same literals at the same indices)."""
    info = literal_info(table)
    return RuleSet([Rule(r.formula, r.weight, info) for r in rules.formula_rules()], rules.intercept, table)
