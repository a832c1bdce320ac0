"""Idle parts of interaction rules: a part the others imply on every training user goes; scores stay."""

import numpy as np
import pytest

import rudi_explain as rx
from rudi_explain.rules.formula import And, Lit, Or, evaluate_formula, formula_literals
from rudi_explain.rules.literals import Literals
from rudi_explain.rules.ruleset import RuleSet
from rudi_explain.rules.scorecard import Scorecard
from rudi_explain.rules.scorecard_idle import drop_idle_parts

SEEDS = range(8)


def _lit(lits: Literals, column: int, threshold: float, negated: bool = False) -> Lit:
    """The literal ``column > threshold`` of the table (``NOT`` with ``negated``), the nearest threshold there."""
    idx = np.flatnonzero(lits.column == column)
    return Lit(int(idx[np.argmin(np.abs(lits.thresholds[idx] - threshold))]), negated)


def _case(seed: int, n: int = 1500):
    """Three outputs: ``cash`` (most users none), ``share`` (below 1 for every user with cash, by construction),
    ``hour``; a teacher moved by cash above a threshold and by hour."""
    rng = np.random.default_rng(seed)
    cash = np.where(rng.random(n) < 0.8, 0.0, rng.lognormal(5, 1, n))
    share = np.where(cash > 0, rng.uniform(0.3, 0.95, n), rng.uniform(0.6, 1.0, n))
    share[(cash == 0) & (rng.random(n) < 0.3)] = 1.0
    hour = rng.uniform(0, 24, n)
    V = np.column_stack([cash, share, hour])
    y = 1.0 * (cash > 300) + 0.05 * hour + rng.normal(0, 0.2, n)
    return rng, V, y, Literals.from_values(V, names=["cash", "share", "hour"], n_quantiles=10)


def _parts_idle(rule, Z) -> list[bool]:
    """For each top-level part of ``rule``: whether the rule without it fires for the same rows (no simplify)."""
    f = rule.formula
    fires = evaluate_formula(f, Z).astype(bool)
    out = []
    for i in range(len(f.children)):
        rest = f.children[:i] + f.children[i + 1:]
        trial = type(f)(rest) if len(rest) > 1 else rest[0]
        out.append(bool(np.array_equal(evaluate_formula(trial, Z).astype(bool), fires)))
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_an_implied_part_goes_and_the_rule_becomes_its_card(seed):
    rng, V, y, lits = _case(seed)
    implied = And((_lit(lits, 0, 300), _lit(lits, 1, 0.99, negated=True)))  # cash > 300 AND share <= 0.99
    needed = And((_lit(lits, 2, 12), _lit(lits, 1, 0.8)))  # hour > 12 AND share > 0.8: both parts matter
    rules = RuleSet.from_formulas([implied, needed, _lit(lits, 2, 6)], [0.9, 0.3, 0.2], 0.1, literals=lits)
    card = Scorecard.from_rules(rules, V, y)
    assert len(card.interactions) == 2 and [c.column for c in card.cards] == [2]
    Z = lits.transform_values(V)
    assert _parts_idle(card.interactions[0] if card.interactions[0].weight > 0.5 else card.interactions[1], Z) \
        == [False, True]  # the share part is idle in the data, not in logic

    got = drop_idle_parts(card, V, y)

    np.testing.assert_allclose(got.predict(V), card.predict(V), atol=1e-12)  # the same scores on these users
    assert sorted(c.column for c in got.cards) == [0, 2]  # cash alone: its own card now
    assert len(got) == len(card)  # an interaction became a card: the budget's count is the same
    (kept,) = got.interactions
    assert {int(lits.column[x.index]) for x in formula_literals(kept.formula)} == {1, 2}
    assert _parts_idle(kept, got.literals.transform_values(V)) == [False, False]
    cash = next(c for c in got.cards if c.column == 0)
    assert len(cash.edges) == 1 and cash.bands[1].points - cash.bands[0].points == pytest.approx(0.9)
    # new users who break the data's implication (cash but all payments at home) get the card's points
    odd = np.array([[500.0, 1.0, 10.0], [0.0, 1.0, 10.0]])
    assert got.predict(odd)[0] - got.predict(odd)[1] == pytest.approx(0.9)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_part_left_on_an_output_with_a_card_stays_an_interaction(seed):
    rng, V, y, lits = _case(seed)
    implied = And((_lit(lits, 0, 300), _lit(lits, 1, 0.99, negated=True)))
    rules = RuleSet.from_formulas([implied, _lit(lits, 0, 50)], [0.9, 0.2], 0.1, literals=lits)
    card = Scorecard.from_rules(rules, V, y)
    assert [c.column for c in card.cards] == [0]  # cash has a card: reducing the rule would change its bands
    got = drop_idle_parts(card, V, y)
    assert got is card


@pytest.mark.parametrize("seed", SEEDS)
def test_or_parts_and_rules_with_nothing_idle(seed):
    rng, V, y, lits = _case(seed)
    # share <= 0.99 OR cash > 300: the cash part adds no user (every user with cash has share below 0.99)
    either = Or((_lit(lits, 1, 0.99, negated=True), _lit(lits, 0, 300)))
    both = And((_lit(lits, 2, 12), _lit(lits, 1, 0.8)))
    rules = RuleSet.from_formulas([either, both], [0.4, 0.3], 0.0, literals=lits)
    card = Scorecard.from_rules(rules, V, y)
    got = drop_idle_parts(card, V, y)
    np.testing.assert_allclose(got.predict(V), card.predict(V), atol=1e-12)
    assert sorted(c.column for c in got.cards) == [1]  # the share card
    assert len(got.interactions) == 1 and _parts_idle(got.interactions[0], lits.transform_values(V)) == [False, False]
    untouched = Scorecard.from_rules(RuleSet.from_formulas([both], [0.3], 0.0, literals=lits), V, y)
    assert drop_idle_parts(untouched, V, y) is untouched


def _without_each_part(f):
    """``f`` less one part of one of its And/Or nodes, for every node at any depth and every part of it."""
    if isinstance(f, Lit):
        return []
    out = []
    for i, part in enumerate(f.children):
        rest = f.children[:i] + f.children[i + 1:]
        if rest:
            out.append(type(f)(rest) if len(rest) > 1 else rest[0])
        out += [type(f)(f.children[:i] + (smaller,) + f.children[i + 1:]) for smaller in _without_each_part(part)]
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_an_idle_part_nested_in_a_part_goes(seed):
    rng, V, y, lits = _case(seed)
    # (share <= 0.99 OR cash > 300) AND hour > 12: inside the OR, cash adds no user (every user with cash has a
    # share below 0.95); neither top-level part is idle
    nested = And((Or((_lit(lits, 1, 0.99, negated=True), _lit(lits, 0, 300))), _lit(lits, 2, 12)))
    rules = RuleSet.from_formulas([nested, _lit(lits, 2, 6)], [0.5, 0.2], 0.1, literals=lits)
    card = Scorecard.from_rules(rules, V, y)
    (rule,) = card.interactions
    Z = lits.transform_values(V)
    assert _parts_idle(rule, Z) == [False, False]
    fires = evaluate_formula(rule.formula, Z).astype(bool)
    assert any(np.array_equal(evaluate_formula(g, Z).astype(bool), fires) for g in _without_each_part(rule.formula))

    got = drop_idle_parts(card, V, y)

    np.testing.assert_allclose(got.predict(V), card.predict(V), atol=1e-12)
    (kept,) = got.interactions
    assert {int(lits.column[x.index]) for x in formula_literals(kept.formula)} == {1, 2}  # cash is gone
    assert len(formula_literals(kept.formula)) == 2
    Zg = got.literals.transform_values(V)
    fires = evaluate_formula(kept.formula, Zg).astype(bool)
    smaller = _without_each_part(kept.formula)
    assert not any(np.array_equal(evaluate_formula(g, Zg).astype(bool), fires) for g in smaller)


@pytest.mark.slow
def test_the_explanation_has_no_idle_part_and_names_foreign_atm_cash_as_a_card():
    demo = rx.datasets.make_payments(5000, random_state=0)  # the demo: its foreign ATM rule had an idle part
    exp = rx.explain(None, demo.events, scores=demo.risk, background=False, progress=False)
    sc = exp.scorecard
    values = np.asarray(exp.result.values)
    train = ~np.asarray(exp.result.is_test, dtype=bool)
    Z = sc.literals.transform_values(values[train])
    carded = {c.column for c in sc.cards}
    for rule in sc.interactions:
        fires = evaluate_formula(rule.formula, Z).astype(bool)
        for g in _without_each_part(rule.formula):  # a part at any depth
            read = {int(sc.literals.column[x.index]) for x in formula_literals(g)}
            idle = np.array_equal(evaluate_formula(g, Z).astype(bool), fires)
            assert not idle or read <= carded and len(read) == 1, (str(rule), g)
    np.testing.assert_allclose(sc.predict(values), exp.result.student_scores.to_numpy(), atol=1e-9)
    names = [c.name for c in sc.cards]
    assert any("channel is atm" in n and "country is not home" in n for n in names), names
