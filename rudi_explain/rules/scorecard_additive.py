"""A second scorecard beside the student's: one card for every statistic output, binned afresh (issue 26).

The student's scorecard keeps the cards its rules happen to read, at the
student's own band edges. On some data that leaves a statistic off the
scorecard, or a card with 2-3 bands where the teacher's score moves steadily
(CDNOW's amounts, the planted family's tenure), and many users tie. The
additive candidate (:func:`additive_scorecard`) gives every output of the
literal table a card cut at all of its round thresholds, merges adjacent
bands to at most ``max_bands`` (the cheapest in training error first), fits
every point jointly, chooses monotone, linear and extra edges on the
validation users as :meth:`~rudi_explain.rules.scorecard.Scorecard.refit`
does for the student's cards, and keeps the student's interaction rules or
none. It is the same kind of scorecard (SEMANTICS.md, "The scorecard"): each
user in one band per card, centred points, sign notes, no vacuous edge, the
budget counting cards and interaction rules.

:func:`choose_scorecard` picks among candidate fits on users none of them was
fitted or chosen on: each candidate is fitted on the fitting users (an inner
share of them choosing its forms) and scored on the validation users; a
later candidate must beat the ones before by ``tie``. The chosen one then gets
the pair rules (:mod:`~rudi_explain.rules.scorecard_pairs`) that clear the
noise while the budget has room: conjunctions of two literals of two outputs
found on its residual, where the cards' sum misses an interaction.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from rudi_explain.exceptions import InputError
from rudi_explain.metrics import fidelity
from rudi_explain.rules.literals import MOVE_TOLERANCE, Literals, is_vacuous, round_threshold
from rudi_explain.rules.pruning import complement_common
from rudi_explain.rules.ruleset import RuleSet
from rudi_explain.rules.scorecard import Scorecard
from rudi_explain.rules.scorecard_budget import is_additive, scorecard_within_budget, within_budget
from rudi_explain.rules.scorecard_cards import Band, Card
from rudi_explain.rules.scorecard_fit import DEFINED_THRESHOLD, MAX_BANDS, sample_rows
from rudi_explain.rules.scorecard_pairs import add_pair_rules

__all__ = ["additive_scorecard", "all_output_cards", "choose_scorecard", "scorecard_candidates", "WithPairRules",
           "fit_options", "EDGE_QUANTILES", "INNER_SHARE", "MIN_USERS", "TIE"]

#: Share of the fitting users that choose a candidate's forms (monotone, linear, extra edges) when
#: :func:`choose_scorecard` fits it on the fitting users only.
INNER_SHARE = 0.2
#: Fewest validation (and fitting) users a choice is made on; with fewer, the first candidate. The wage panel's
#: 54 validation users chose the additive card by 0.003 of their fidelity, and it lost 0.010 on held-out users:
#: a few dozen users' fidelity moves by 0.02-0.03 between draws.
MIN_USERS = 100
#: Units beyond the budget the refitted candidate keeps for the budget step to choose among.
SLACK = 2
#: Validation fidelity a later candidate must gain over the best before it. The GRU demo (800 validation
#: users) chose the additive card by 0.0056 and lost 0.004 held-out; at 0.001 no bench_real case lost more than
#: 0.002 after the wage panel's small validation set was left out (:data:`MIN_USERS`), but the demo fell.
TIE = 0.006

#: The finer additive candidate's offered edges: the table's thresholds and the rounded quantiles 1/EDGE_QUANTILES,
#: 2/EDGE_QUANTILES, ... of the training users' defined values. The table's own (deciles, moved by the student's
#: refinement) cut CDNOW's average amount and payments' totals too coarsely for the merge to find where the teacher
#: moves. Offered as a fourth candidate, not in place of the table's: in place of them, the choice between the
#: additive forms moved by noise (CDNOW 3 lost 0.024 held-out, planted 2 0.003).
EDGE_QUANTILES = 20

#: A candidate fit: (values, teacher scores, validation mask) -> scorecard.
Fit = Callable[[np.ndarray, np.ndarray, np.ndarray], Scorecard]


def all_output_cards(literals: Literals, values: np.ndarray, quantiles: int = 0) -> list[Card]:
    """One card per output of ``literals`` with a finite threshold, cut at all of its thresholds and finer, points 0.

    With ``quantiles`` of 2 or more, a card also offers the output's quantiles 1/``quantiles``, 2/``quantiles``,
    ... of the defined ``values``, each moved to the roundest number as the table's are (SEMANTICS.md, "Literals and
    rules"); none leaves 99% of the defined users on one side, and of edges splitting them alike the lowest stays.
    An output gets an undefined band where the table says it can be undefined or
    some of ``values`` (the training users) is NaN, as :func:`~rudi_explain.rules.scorecard_fit.read_off` does.
    """
    cards = []
    for c in range(literals.n_outputs):
        thr = np.unique(literals.thresholds[literals.column == c])
        thr = thr[np.isfinite(thr) & (thr > DEFINED_THRESHOLD)]
        if not thr.size:
            continue
        thr = _finer_edges(thr, values[:, c], str(literals.output_kind[c]), quantiles)
        undefined = bool(literals.output_undefined[c]) or bool(np.isnan(values[:, c]).any())
        cards.append(Card(
            column=c, name=literals.output_descriptions[c], kind=literals.output_kind[c], unit=literals.output_unit[c],
            edges=tuple(float(x) for x in thr), bands=tuple(Band(0.0) for _ in range(thr.size + 1)),
            undefined=Band(0.0) if undefined else None,
            undefined_words=literals.output_undefined_words[c] if undefined else "",
        ))
    return cards


def _finer_edges(thr: np.ndarray, values: np.ndarray, kind: str, quantiles: int) -> np.ndarray:
    """``thr`` with the rounded quantiles of the defined ``values`` added; vacuous and duplicate splits dropped."""
    v = np.sort(values[~np.isnan(values)])
    if kind == "binary" or quantiles < 2 or v.size < 2:
        return thr

    def above(edges: np.ndarray) -> np.ndarray:
        return v.size - np.searchsorted(v, edges, side="right")

    extra = [round_threshold(v, float(x), v.size, kind, MOVE_TOLERANCE)
             for x in np.unique(np.quantile(v, np.arange(1, quantiles) / quantiles))]
    new = np.unique(np.asarray(extra, dtype=np.float64))
    new = np.setdiff1d(new[~is_vacuous(above(new), v.size) & (new > DEFINED_THRESHOLD)], thr)
    # The table's own edges stay whatever they split; a new edge splitting the defined users as one of
    # them does goes, and of new edges splitting them alike the lowest stays (``new`` is sorted).
    new = new[~np.isin(above(new), above(thr))]
    _, first = np.unique(above(new), return_index=True)
    return np.unique(np.concatenate([thr, new[first]]))


def additive_scorecard(rules: RuleSet, values: np.ndarray, y: np.ndarray, is_valid: np.ndarray, *, max_rules: int,
                       interactions: bool = False, max_bands: int = MAX_BANDS, linear: bool = True,
                       quantiles: int = 0) -> Scorecard:
    """Every output of the rules' literal table as a card, binned afresh, within the budget.

    Parameters
    ----------
    rules : RuleSet
        Additive rules over a Literals table (the pruned student's): the table's
        thresholds are the band edges offered, and with ``interactions`` their
        rules over two or more outputs are kept (weights refitted).
    values : ndarray, shape (n_users, n_outputs)
        The training users' statistic outputs (NaN where undefined).
    y : ndarray, shape (n_users,)
        Their teacher scores.
    is_valid : ndarray of bool, shape (n_users,)
        Validation users: they choose each card's form and which unit goes first when over budget
        (:func:`~rudi_explain.rules.scorecard_budget.within_budget`); the points are fitted on all the users.
    max_rules : int
        The budget: cards plus interaction rules.
    interactions : bool, default=False
        Keep the rules' interaction rules (else the cards alone).
    max_bands : int, default=6
    linear : bool, default=True
        Allow linear cards.
    quantiles : int, default=0
        Each card is offered the rounded quantiles 1/``quantiles``, ... of its output beside the table's
        thresholds (:func:`all_output_cards`); below 2, the table's thresholds alone.

    Returns
    -------
    Scorecard
        Over the rules' literal table; ``len(result) <= max_rules``.
    """
    if not is_additive(rules):
        raise InputError("the additive scorecard reads a plain sum of rules over a Literals table")
    V = np.asarray(values, dtype=np.float64)
    t = np.asarray(y, dtype=np.float64).reshape(-1)
    valid = np.asarray(is_valid, dtype=bool).reshape(-1)
    table = rules.literal_table()
    kept = []
    if interactions:
        common = complement_common(rules, table.transform_values(V))
        kept = list(Scorecard.from_rules(common, V, t).interactions)
    options = fit_options(linear, max_bands)
    card = Scorecard(all_output_cards(table, V, quantiles), kept, float(t.mean()), table).refit(
        V, t, is_valid=valid, **options)
    room = max_rules + SLACK
    if len(card) > room:
        # The budget step tries every unit at each drop: with a dozen outputs and the student's 20 rules that was
        # most of the job (planted 7: 60 s). The cards that move scores most, then the heaviest rules (the order
        # a scorecard keeps them in), go on to it.
        cards = card.cards[:room]
        card = Scorecard(cards, card.interactions[:room - len(cards)], card.base, table).refit(
            V, t, is_valid=valid, **options)
    return within_budget(card, V, t, valid, max_rules, options)


def fit_options(linear: bool, max_bands: int = MAX_BANDS) -> dict[str, Any]:
    """How an additive scorecard's cards are refitted (:meth:`Scorecard.refit`): monotone where the teacher is,
    linear where allowed, extra edges chosen on validation users."""
    return {"max_bands": max_bands, "monotone": True, "linear": linear, "split": True}


@dataclass(frozen=True)
class WithPairRules:
    """A candidate fit whose scorecard gets the pair rules that clear the noise, within the budget
    (:func:`~rudi_explain.rules.scorecard_pairs.add_pair_rules`).

    :func:`choose_scorecard` weighs the candidate by :attr:`fit` alone: the pair rules go on the chosen one.
    Weighed inside the choice, they moved it by the noise of a few hundred validation users (edits 1 lost
    0.008 held-out, planted 3 0.007), where added after it no case of bench_real lost more than 0.001.
    """

    fit: Fit
    max_rules: int
    linear: bool = True

    def __call__(self, values: np.ndarray, y: np.ndarray, is_valid: np.ndarray) -> Scorecard:
        return self.with_pairs(self.fit(values, y, is_valid), values, y, is_valid)

    def with_pairs(self, card: Scorecard, values: np.ndarray, y: np.ndarray, is_valid: np.ndarray) -> Scorecard:
        """``card`` (what :attr:`fit` gave on these users) with the pair rules found on its residual."""
        return add_pair_rules(card, np.asarray(values, dtype=np.float64),
                              np.asarray(y, dtype=np.float64).reshape(-1), np.asarray(is_valid, dtype=bool).reshape(-1),
                              max_rules=self.max_rules, options=fit_options(self.linear))


def scorecard_candidates(start: RuleSet, *, max_rules: int, linear: bool = True,
                         additive: bool = True, pairs: bool = True) -> dict[str, Fit]:
    """The candidate fits :func:`choose_scorecard` weighs, in the order it weighs them: the plainest first.

    With ``additive``: every output as a card binned afresh, then the same offered finer edges
    (:data:`EDGE_QUANTILES`), then every output as a card with the start point's interaction rules, then the
    start point's own scorecard (the student's, ``"student"``); without, the student's alone. A form with
    interaction rules is thus kept only where it is more faithful than the cards alone by the tie: the
    explanation of a teacher that adds its statistics up reads as cards, not as interaction rules the
    teacher does not have. With ``pairs``, each is a :class:`WithPairRules`: the scorecard it chooses gets the
    pair rules found on its residual (CDNOW's count x amount), weighed without them.
    """
    student: Fit = partial(scorecard_within_budget, start, max_rules=max_rules, linear=linear)
    fits: dict[str, Fit] = {}
    if additive:
        fits["additive"] = partial(additive_scorecard, start, max_rules=max_rules, linear=linear)
        fits["additive, finer edges"] = partial(additive_scorecard, start, max_rules=max_rules, linear=linear,
                                                quantiles=EDGE_QUANTILES)
        fits["additive with interactions"] = partial(additive_scorecard, start, max_rules=max_rules, linear=linear,
                                                     interactions=True)
    fits["student"] = student
    if not pairs:
        return fits
    return {name: WithPairRules(fit, max_rules, linear) for name, fit in fits.items()}


def choose_scorecard(candidates: Mapping[str, Fit], values: np.ndarray, y: np.ndarray, is_valid: np.ndarray, *,
                     tie: float = TIE, fallback: str | None = None) -> tuple[str, dict[str, float]]:
    """The candidate most faithful on the validation users, each fitted without them.

    Each candidate is fitted on the fitting users (those not ``is_valid``), a fixed
    :data:`INNER_SHARE` of them standing in for validation users in its own choices,
    and scored by fidelity on the validation users (samples of both, at most
    :data:`~rudi_explain.rules.scorecard_fit.CHOICE_USERS` each). In the order given,
    a candidate replaces the best so far only if it is more faithful by more than ``tie``.

    Parameters
    ----------
    candidates : mapping of str to Fit
        The forms, in the order they are weighed.
    values, y, is_valid
        The training users' statistic outputs, teacher scores, and which of them validate.
    tie : float, default=TIE
        The validation fidelity a later candidate must gain over the best before it.
    fallback : str, optional
        The candidate kept where too few users make a choice (default: the first).

    Returns
    -------
    (str, dict)
        The chosen candidate's name, and every candidate's validation fidelity.
        With fewer than :data:`MIN_USERS` validation or fitting users, ``fallback`` and no scores.
    """
    names = list(candidates)
    if not names:
        raise InputError("no candidate to choose from")
    if fallback is not None and fallback not in candidates:
        raise InputError(f"the fallback {fallback!r} is not a candidate ({', '.join(names)})")
    valid = np.asarray(is_valid, dtype=bool).reshape(-1)
    fit_rows, valid_rows = sample_rows(~valid), sample_rows(valid)
    if fit_rows.size < MIN_USERS or valid_rows.size < MIN_USERS:
        return (names[0] if fallback is None else fallback), {}
    # a fixed draw, not the seed: given the same users, the same choice whatever random_state
    inner = np.zeros(fit_rows.size, dtype=bool)
    inner[np.random.default_rng(0).permutation(fit_rows.size)[:max(2, round(fit_rows.size * INNER_SHARE))]] = True
    V_fit, y_fit = values[fit_rows], y[fit_rows]
    V_valid, y_valid = values[valid_rows], y[valid_rows]
    scores: dict[str, float] = {}
    best = names[0]
    for name in names:
        fit = candidates[name]
        fit = fit.fit if isinstance(fit, WithPairRules) else fit
        scores[name] = float(fidelity(y_valid, fit(V_fit, y_fit, inner).predict(V_valid)))
        gain = scores[name] - scores[best]
        if gain > tie:
            best = name
    return best, scores

