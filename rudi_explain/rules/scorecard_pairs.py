"""Interaction rules found for the chosen scorecard itself: pairs of literals on its residual (issue 26).

The additive scorecard (:func:`~rudi_explain.rules.scorecard_additive.additive_scorecard`)
keeps the student's interaction rules or none. The student's rules were fitted
beside the student's own cards, not beside the additive cards: on CDNOW the
teacher's score rises with the amount spent mostly for customers who bought
more than once, an interaction between two cards that a sum of cards cannot
follow and that the student's rules, cut elsewhere, do not catch.

:func:`add_pair_rules` starts from a fitted scorecard (the one
:func:`~rudi_explain.rules.scorecard_additive.choose_scorecard` chose) and,
while the budget has room, adds the conjunction of two literals of two
different outputs (each literal or its complement, at the literal table's
thresholds) that most lowers the squared error of its residual
(:func:`best_pair`); the scorecard is refitted jointly after each, and a rule
is kept only while its fall is more than :data:`PENALTY` times the largest
fall expected of noise among the pairs tried (2 ln(pairs) residual variances).
A bar on the validation users' squared error (as for a card's extra edge) kept
none on CDNOW: a few hundred validation users cannot see a 0.005 gain. It is the
same kind of scorecard (SEMANTICS.md, "The scorecard"): every interaction rule
reads two statistic outputs, no literal is vacuous (each leaves more than 1% of
the training users on either side), none fires for 90% of them or more, and
``len(scorecard) <= max_rules``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rudi_explain.rules.formula import And, Lit, literal_info, simplify
from rudi_explain.rules.literals import VACUOUS_SHARE
from rudi_explain.rules.pruning import COMMON_RULE_SHARE
from rudi_explain.rules.ruleset import Rule
from rudi_explain.rules.scorecard import Scorecard
from rudi_explain.rules.scorecard_fit import DEFINED_THRESHOLD, sample_rows

__all__ = ["add_pair_rules", "best_pair", "PENALTY", "MAX_PAIRS", "MIN_SHARE"]

#: A pair rule is kept where its fall of the squared error is more than this many times the largest fall
#: expected of noise among the pairs tried (2 ln(pairs) residual variances).
PENALTY = 0.5
#: Most pair rules added to one scorecard.
MAX_PAIRS = 3
#: Fewest training users (share) a pair rule fires for.
MIN_SHARE = 0.02


def _candidate_literals(table: Any, Z: np.ndarray) -> np.ndarray:
    """Indices of the table's literals that are no vacuous test on these users (true for more than 1% and less
    than 99%), one per (output, share of users) so that two thresholds splitting the users alike count once."""
    share = Z.mean(axis=0)
    ok = (share > 1 - VACUOUS_SHARE) & (share < VACUOUS_SHARE) & (table.thresholds > DEFINED_THRESHOLD) \
        & np.isfinite(table.thresholds)
    seen: set[tuple[int, float]] = set()
    keep = []
    for i in np.flatnonzero(ok):
        key = (int(table.column[i]), round(float(share[i]), 4))
        if key not in seen:
            seen.add(key)
            keep.append(int(i))
    return np.asarray(keep, dtype=np.int64)


def best_pair(Z: np.ndarray, column: np.ndarray, r: np.ndarray, *, min_share: float = MIN_SHARE,
              max_share: float = COMMON_RULE_SHARE) -> tuple[int, bool, int, bool, float] | None:
    """The conjunction of two literals (or their complements) of two different outputs that most lowers the
    squared error of residual ``r`` when its indicator is added with a free weight and an intercept.

    Parameters
    ----------
    Z : ndarray of bool, shape (n_users, n_literals)
        Candidate literals' truth values.
    column : ndarray of int, shape (n_literals,)
        The output each literal reads (a pair is two different outputs).
    r : ndarray, shape (n_users,)
        The residual to explain.
    min_share, max_share : float
        The conjunction fires for at least ``min_share`` and less than ``max_share`` of the users.

    Returns
    -------
    (i, negated_i, j, negated_j, gain) or None
        Positions in ``Z``'s columns, whether each is complemented, and the fall of the squared error;
        None where no pair qualifies.
    """
    n, m = Z.shape
    if n < 2 or m < 2:
        return None
    X = np.concatenate([Z, ~Z], axis=1).astype(np.float64)
    cols = np.concatenate([column, column])
    rc = r - r.mean()
    count = X.T @ X  # users both fire for
    total = (X * rc[:, None]).T @ X  # their centred residual's sum
    share = count / n
    with np.errstate(divide="ignore", invalid="ignore"):
        # least squares of r on [1, indicator]: the fall is sum^2 / (count (1 - share)) for a centred r
        gain = total ** 2 / (count * (1 - share))
    bad = (cols[:, None] == cols[None, :]) | (share < min_share) | (share >= max_share) | ~np.isfinite(gain)
    gain = np.where(bad, -np.inf, gain)
    a, b = divmod(int(np.argmax(gain)), 2 * m)
    if not np.isfinite(gain[a, b]) or gain[a, b] <= 0:
        return None
    return a % m, a >= m, b % m, b >= m, float(gain[a, b])


def add_pair_rules(card: Scorecard, values: np.ndarray, y: np.ndarray, is_valid: np.ndarray, *, max_rules: int,
                   options: dict[str, Any], max_pairs: int | None = None, penalty: float | None = None) -> Scorecard:
    """``card`` with up to ``max_pairs`` pair rules, each kept where its fall clears the noise, within the budget.

    Parameters
    ----------
    card : Scorecard
        Fitted on ``values``, ``y`` (its literal table offers the thresholds).
    values : ndarray, shape (n_users, n_outputs)
    y : ndarray, shape (n_users,)
    is_valid : ndarray of bool, shape (n_users,)
        They choose the cards' forms in each refit (:meth:`Scorecard.refit`).
    max_rules : int
        Cards plus interaction rules, at most.
    options : dict
        :meth:`Scorecard.refit`'s options.
    max_pairs : int, default=:data:`MAX_PAIRS`
    penalty : float, default=:data:`PENALTY`

    Returns
    -------
    Scorecard
    """
    max_pairs = MAX_PAIRS if max_pairs is None else max_pairs
    penalty = PENALTY if penalty is None else penalty
    valid = np.asarray(is_valid, dtype=bool)
    table = card.literals
    Z_all = table.transform_values(values)
    lits = _candidate_literals(table, Z_all)
    if lits.size < 2:
        return card
    # the pairs are searched on a fixed sample (all users below CHOICE_USERS): the float matrix of the literals
    # and their complements would be 160 MB at 100,000 users and 100 literals
    rows = sample_rows(np.ones(len(y), dtype=bool))
    Z, V_rows, y_rows = Z_all[np.ix_(rows, lits)], values[rows], y[rows]
    # the largest of M noise falls is about 2 ln(M) residual variances (each a chi-square of one degree)
    tried = np.log(max(2.0, (2 * lits.size) ** 2 / 2))
    info = literal_info(table)
    have = {r.formula for r in card.interactions}
    for _ in range(max_pairs):
        if len(card) >= max_rules:
            break
        r = y_rows - card.predict(V_rows)
        found = best_pair(Z, table.column[lits], r)
        if found is None:
            break
        i, ni, j, nj, gain = found
        # in canonical form, as every other rule is: the same text after a what-if rebuilds the scorecard
        formula = simplify(And((Lit(int(lits[i]), ni), Lit(int(lits[j]), nj))), info)
        fires = (Z_all[:, lits[i]] ^ ni) & (Z_all[:, lits[j]] ^ nj)
        if formula in have or gain <= penalty * 2 * tried * float(r.var()) \
                or not MIN_SHARE <= fires.mean() < COMMON_RULE_SHARE:  # judged on every user given
            break
        have.add(formula)
        card = Scorecard(card.cards, [*card.interactions, Rule(formula, 0.0, info)], card.base, table).refit(
            values, y, is_valid=valid, **options)
    return card
