"""Pair rules found for the additive scorecard on its residual (issue 26), over seeds."""

from itertools import combinations

import numpy as np

from rudi_explain.metrics import fidelity
from rudi_explain.rules.formula import Lit, formula_literals
from rudi_explain.rules.literals import Literals
from rudi_explain.rules.ruleset import RuleSet
from rudi_explain.rules.scorecard_additive import (
    WithPairRules,
    additive_scorecard,
    choose_scorecard,
    scorecard_candidates,
)
from rudi_explain.rules.scorecard_pairs import add_pair_rules, best_pair

SEEDS = range(8)
OPTIONS = {"max_bands": 6, "monotone": True, "linear": True, "split": True}


def _reference_pair(Z, column, r, min_share, max_share):
    """Every pair of literals or complements of two outputs, one at a time: the least squares fit of r on an
    intercept and the pair's indicator, and the fall of its squared error against the intercept alone."""
    n, m = Z.shape
    X = np.concatenate([Z, ~Z], axis=1)
    best, best_gain = None, 0.0
    for a, b in combinations(range(2 * m), 2):
        if column[a % m] == column[b % m]:
            continue
        f = X[:, a] & X[:, b]
        if not min_share <= f.mean() < max_share:
            continue
        A = np.column_stack([np.ones(n), f])
        coef = np.linalg.lstsq(A, r, rcond=None)[0]
        gain = float(np.sum((r - r.mean()) ** 2) - np.sum((r - A @ coef) ** 2))
        if gain > best_gain + 1e-9:
            best, best_gain = (a, b), gain
    return best, best_gain


def test_best_pair_is_the_brute_force_least_squares_pair():
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        n, m = 300, 6
        Z = rng.random((n, m)) < rng.uniform(0.2, 0.8, m)
        column = rng.integers(0, 3, m)
        r = rng.normal(0, 1, n) + 1.5 * (Z[:, 0] & ~Z[:, 3]) * (column[0] != column[3])
        found = best_pair(Z, column, r, min_share=0.02, max_share=0.9)
        ref, gain = _reference_pair(Z, column, r, 0.02, 0.9)
        assert found is not None and ref is not None
        i, ni, j, nj, g = found
        assert {(i + m * ni), (j + m * nj)} == set(ref)
        assert np.isclose(g, gain, rtol=1e-9)
        assert column[i] != column[j]


def test_best_pair_never_pairs_one_output_nor_a_rule_outside_the_shares():
    rng = np.random.default_rng(0)
    Z = rng.random((200, 4)) < 0.5
    assert best_pair(Z, np.zeros(4, dtype=int), rng.normal(0, 1, 200)) is None  # one output only
    found = best_pair(Z, np.array([0, 0, 1, 1]), rng.normal(0, 1, 200), min_share=0.3, max_share=0.4)
    if found is not None:
        i, ni, j, nj, _ = found
        share = ((Z[:, i] ^ ni) & (Z[:, j] ^ nj)).mean()
        assert 0.3 <= share < 0.4


def _case(seed, interaction, n=3000):
    """Two outputs acting additively, and (``interaction``) a bonus where both are high: the cards alone
    cannot follow it."""
    rng = np.random.default_rng(seed)
    V = np.column_stack([rng.uniform(0, 100, n), rng.exponential(20, n), rng.normal(0, 1, n)])
    y = V[:, 0] / 50 + np.minimum(V[:, 1], 40) / 40 + rng.normal(0, 0.2, n)
    if interaction:
        y += 1.2 * ((V[:, 0] > 60) & (V[:, 1] > 25))
    lits = Literals.from_values(V, n_quantiles=10)
    rules = RuleSet.from_formulas([Lit(0)], [1.0], literals=lits)
    test = rng.random(n) < 0.3
    is_valid = ~test & (rng.random(n) < 0.25)
    return V, y, lits, rules, test, is_valid


def _paired(V, y, rules, test, is_valid, max_rules=10):
    train = ~test
    cards = additive_scorecard(rules, V[train], y[train], is_valid[train], max_rules=max_rules)
    paired = add_pair_rules(cards, V[train], y[train], is_valid[train], max_rules=max_rules, options=OPTIONS)
    return cards, paired


def test_a_planted_interaction_is_found_as_a_pair_rule_and_raises_held_out_fidelity():
    found = gained = 0
    for seed in SEEDS:
        V, y, lits, rules, test, is_valid = _case(seed, interaction=True)
        cards, paired = _paired(V, y, rules, test, is_valid)
        assert len(paired) <= 10
        outputs = [{int(lits.column[lit.index]) for lit in formula_literals(r.formula)} for r in paired.interactions]
        found += any(o == {0, 1} for o in outputs)
        gained += fidelity(y[test], paired.predict(V[test])) > fidelity(y[test], cards.predict(V[test])) + 0.002
    assert found >= 7 and gained >= 7


def test_pair_rules_on_an_additive_teacher_lose_no_held_out_fidelity():
    """Where the cards already follow the teacher, a pair rule may still split a band the cards cut coarsely,
    but it must not cost held-out fidelity (a loss of more than 0.002 in at most one seed of eight)."""
    lost = 0
    for seed in SEEDS:
        V, y, _, rules, test, is_valid = _case(seed, interaction=False)
        cards, paired = _paired(V, y, rules, test, is_valid)
        lost += fidelity(y[test], paired.predict(V[test])) < fidelity(y[test], cards.predict(V[test])) - 0.002
    assert lost <= 1


def test_pair_rules_keep_the_reading_guarantees():
    for seed in SEEDS:
        V, y, lits, rules, test, is_valid = _case(seed, interaction=True)
        train = ~test
        for budget in (2, 3, 4, 10):
            _, paired = _paired(V, y, rules, test, is_valid, max_rules=budget)
            assert len(paired) <= budget
            table = paired.literals
            Z = table.transform_values(V[train])
            for r in paired.interactions:
                lits_used = formula_literals(r.formula)
                assert len({int(table.column[lit.index]) for lit in lits_used}) >= 2
                for lit in lits_used:  # no vacuous literal
                    assert 0.01 < Z[:, lit.index].mean() < 0.99
                assert r.fires(Z).mean() < 0.9
            # each user in one band per card, and the scorecard's scores are its rule form's
            bands = paired.band_index(V)
            assert bands.shape == (len(V), len(paired.cards))
            rs = paired.to_rules()
            assert np.allclose(paired.predict(V), rs.score(rs.matrix(V)), rtol=1e-9, atol=1e-9)
            for c in paired.cards:  # centred points
                assert abs(float(np.mean(c.points(V[train, c.column])))) < 1e-6


def test_the_choice_weighs_each_candidate_without_its_pair_rules():
    V, y, lits, rules, test, is_valid = _case(0, interaction=True)
    train = ~test
    paired = scorecard_candidates(rules, max_rules=10)
    plain = scorecard_candidates(rules, max_rules=10, pairs=False)
    assert list(paired) == list(plain) and all(isinstance(f, WithPairRules) for f in paired.values())
    a = choose_scorecard(paired, V[train], y[train], is_valid[train])
    b = choose_scorecard(plain, V[train], y[train], is_valid[train])
    assert a == b
