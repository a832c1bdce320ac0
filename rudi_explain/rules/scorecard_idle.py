"""Idle parts of interaction rules: a literal that changes no training user's firing goes.

A rule's parts can be implied by one another in the data without being so in logic: in the
payments demo, "foreign ATM cash is more than 300 EUR AND the share of payments at home is at
most 99.4%" fires for exactly the users the first part alone fires for, since a user with that
much ATM cash abroad has payments abroad. :func:`~rudi_explain.rules.formula.simplify` cannot
see it (two statistics); a reader takes the second part for something the model needs.

:func:`drop_idle_parts` drops, one at a time, each part of an interaction rule whose removal
leaves the rule firing for the same training users, so the scorecard's scores on them are
unchanged: a top-level part, or one nested inside a part (``(a OR b) AND c`` where ``b`` adds no
user to ``a``). A rule left reading one statistic output becomes that output's card (two bands,
or a range), as :meth:`~rudi_explain.rules.scorecard.Scorecard.from_rules` reads any
single-output rule; it is left an interaction where the output already has a card, whose bands
it would otherwise change.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from rudi_explain.rules.formula import (
    And,
    Formula,
    LiteralInfo,
    Or,
    evaluate_formula,
    formula_literals,
    literal_info,
    simplify,
)
from rudi_explain.rules.ruleset import LinearTerm, Rule, RuleSet
from rudi_explain.rules.scorecard import Scorecard

__all__ = ["drop_idle_parts", "without_idle_parts"]


def _one_part_less(formula: Formula) -> Iterator[Formula]:
    """``formula`` with one part of one of its conjunctions or disjunctions removed, at any depth: the
    top-level parts first, in order, then those inside each part (a node left with one part is that part)."""
    if not isinstance(formula, (And, Or)):
        return
    op, parts = type(formula), formula.children
    for i in range(len(parts) if len(parts) > 1 else 0):
        rest = parts[:i] + parts[i + 1:]
        yield op(rest) if len(rest) > 1 else rest[0]
    for i, part in enumerate(parts):
        for smaller in _one_part_less(part):
            yield op(parts[:i] + (smaller,) + parts[i + 1:])


def without_idle_parts(formula: Formula, Z: np.ndarray, outputs: np.ndarray, carded: set[int],
                       info: LiteralInfo) -> Formula:
    """``formula`` less each part, at any depth, whose removal fires it for the same rows of ``Z``.

    Parts are tried top-level first, in order (then those nested in each), again from the first after
    each removal; a removal that leaves the formula on one output already in ``carded`` (the outputs
    with a card), or on none, is not made.
    """
    fires = evaluate_formula(formula, Z).astype(bool)
    result: Formula = formula
    removed = True
    while removed:
        removed = False
        for smaller in _one_part_less(result):
            trial = simplify(smaller, info)
            read = {int(outputs[lit.index]) for lit in formula_literals(trial)}
            alone = len(read) == 1 and read <= carded
            if read and not alone and np.array_equal(evaluate_formula(trial, Z).astype(bool), fires):
                result, removed = trial, True
                break
    return result


def drop_idle_parts(scorecard: Scorecard, values: np.ndarray, y: np.ndarray) -> Scorecard:
    """``scorecard`` with the idle parts of its interaction rules dropped (see the module).

    Parameters
    ----------
    scorecard : Scorecard
    values : ndarray of shape (n_users, n_outputs)
        The training users' statistic outputs, on which firing must not change.
    y : ndarray of shape (n_users,)
        Their teacher scores (the cards' descriptions, as :meth:`Scorecard.from_rules` takes them).

    Returns
    -------
    Scorecard
        The same scorecard where no part is idle; otherwise one read off the simplified rules, with
        the same scores on the training users.
    """
    if not scorecard.interactions:
        return scorecard
    rules = scorecard.to_rules()
    table = rules.literal_table()
    info = literal_info(table)
    Z = table.transform_values(np.asarray(values, dtype=np.float64))  # the literals, linear terms or not
    outputs = np.asarray(table.column)
    carded = {c.column for c in scorecard.cards}
    changed = False
    kept: list[Rule | LinearTerm] = []
    for r in rules:
        if isinstance(r, Rule) and len({int(outputs[lit.index]) for lit in formula_literals(r.formula)}) > 1:
            formula = without_idle_parts(r.formula, Z, outputs, carded, info)
            if formula is not r.formula:
                r, changed = Rule(formula, r.weight, info), True
        kept.append(r)
    if not changed:
        return scorecard
    return Scorecard.from_rules(RuleSet(kept, rules.intercept, table), values, y)
