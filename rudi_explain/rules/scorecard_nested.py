"""Interaction rules that do not nest: each rule's weight is what its own users get more.

Two interaction rules where one is the other with one literal more, as in

    +1.18  total at most 25 AND average more than 17.5
    -1.16  total at most 25 AND average more than 18

fire together for nearly all the wider rule's users: each weight reads as a
large effect, yet those users get +0.02 (a scorecard fitted jointly gives such
pairs cancelling weights). :func:`unnested` writes the wider rule without the
narrower one's users (its extra literal negated), and gives the narrower the
sum of the two weights, with the same scores:

    +1.18  total at most 25 AND average more than 17.5 and at most 18
    +0.02  total at most 25 AND average more than 18

:func:`unnest_interactions` does so to a scorecard once its units are chosen,
as its last step: what the scorecard is (its cards, the budget's choices, the
users' scores) does not change, only how its rules read. Written apart before
the joint refit instead, the budget's and the idle units' choices differ (a
rule left out of a nested pair leaves its users to the other; of a pair written
apart, not): on the 49 cases of ``bench_real.py`` the mean held-out fidelity
fell 0.0003, CDNOW 2's by 0.0195.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rudi_explain.rules.formula import And, Const, Formula, Lit, formula_literals, implies, simplify
from rudi_explain.rules.ruleset import Rule, RuleSet
from rudi_explain.rules.scorecard import Scorecard

__all__ = ["unnested", "unnest_interactions"]


def unnest_interactions(scorecard: Scorecard, values: np.ndarray, y: np.ndarray) -> Scorecard:
    """``scorecard`` with its nested interaction rules written apart (:func:`unnested`): the same scores.

    Parameters
    ----------
    scorecard : Scorecard
    values : ndarray of shape (n_users, n_outputs)
        The training users' statistic outputs.
    y : ndarray of shape (n_users,)
        Their teacher scores (the cards' descriptions, as :meth:`Scorecard.from_rules` takes them).

    Returns
    -------
    Scorecard
        ``scorecard`` itself where no pair nests; otherwise one read off its rules with the
        interaction rules written apart.
    """
    if len(scorecard.interactions) < 2 or unnested(scorecard.interactions) == list(scorecard.interactions):
        return scorecard
    rules = scorecard.to_rules()
    outputs = np.asarray(rules.literal_table().column)
    at = [i for i, r in enumerate(rules.rules) if isinstance(r, Rule)
          and len({int(outputs[lit.index]) for lit in formula_literals(r.formula)}) > 1]
    kept = list(rules.rules)
    for i, r in zip(at, unnested([kept[i] for i in at])):  # type: ignore[misc]
        kept[i] = r
    return Scorecard.from_rules(RuleSet(kept, rules.intercept, rules.literal_table()), values, y)


def unnested(rules: Sequence[Rule]) -> list[Rule]:
    """``rules`` with every nested pair written apart, in the same order, with the same scores.

    A pair nests where both rules are conjunctions of literals, and the narrower one's literals are
    the wider one's (each implied by one of the narrower's) and exactly one literal more, ``l``: the
    wider rule becomes ``wider AND NOT l`` (simplified: on one output, a range), and the narrower
    one's weight becomes the sum of both. Until no pair nests.

    Parameters
    ----------
    rules : sequence of Rule
        Interaction rules over one literal table (their ``info``).

    Returns
    -------
    list of Rule
    """
    out = list(rules)
    # each rewrite adds a literal to one rule: a bound on the rewrites, for a pathological set
    for _ in range(len(out) * len(out) + 1):
        pair = _nested_pair(out)
        if pair is None:
            break
        wide, narrow, formula = pair
        w = out[wide]
        out[narrow] = Rule(out[narrow].formula, out[narrow].weight + w.weight, out[narrow].info)
        out[wide] = Rule(formula, w.weight, w.info)
    return out


def _conjunction(f: Formula) -> tuple[Lit, ...] | None:
    """The literals of ``f`` where it is one literal or an AND of literals, else None."""
    if isinstance(f, Lit):
        return (f,)
    if isinstance(f, And) and all(isinstance(c, Lit) for c in f.children):
        return tuple(f.children)
    return None


def _nested_pair(rules: list[Rule]) -> tuple[int, int, Formula] | None:
    """The first nested pair of :func:`unnested`: ``(wide, narrow, the wide rule without the narrow one's
    users)``, or None."""
    for i, wide in enumerate(rules):
        a = _conjunction(wide.formula)
        if a is None:
            continue
        for j, narrow in enumerate(rules):
            b = _conjunction(narrow.formula) if j != i else None
            if b is None:
                continue
            info = wide.info
            if not all(any(implies(y, x, info) for y in b) for x in a):
                continue  # the narrow rule's users are not all the wide one's
            extra = [y for y in b if not any(implies(x, y, info) for x in a)]
            if len(extra) != 1:
                continue  # the same users (none more), or the difference is no single literal
            apart = simplify(And((*a, ~extra[0])), info)
            if not isinstance(apart, Const):
                return i, j, apart
    return None
