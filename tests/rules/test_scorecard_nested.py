"""Interaction rules that do not nest (:func:`~rudi_explain.rules.scorecard_nested.unnested`), and the refit's."""

import numpy as np

from rudi_explain.rules.formula import And, Lit, Or, formula_literals
from rudi_explain.rules.literals import Literals
from rudi_explain.rules.ruleset import RuleSet
from rudi_explain.rules.scorecard import Scorecard
from rudi_explain.rules.scorecard_additive import fit_options
from rudi_explain.rules.scorecard_nested import unnest_interactions, unnested

SEEDS = range(6)


def _table(seed, n=3000):
    rng = np.random.default_rng(seed)
    V = np.column_stack([rng.uniform(0, 100, n), rng.exponential(20, n), rng.uniform(0, 1, n)])
    V[rng.random(n) < 0.1, 1] = np.nan  # NaN: every "more than" literal false, every "at most" true
    return rng, V, Literals.from_values(V, n_quantiles=10)


def _lit(lits, column, q):
    """The literal "output ``column`` more than its ``q``-th threshold"."""
    return Lit(int(np.flatnonzero(lits.column == column)[q]))


def _sum(rules, Z):
    return sum(np.where(r.fires(Z), r.weight, 0.0) for r in rules)


def _nests(rules):
    return unnested(rules) != list(rules)


def test_the_wider_rule_is_written_without_the_narrower_ones_users():
    for seed in SEEDS:
        rng, V, lits = _table(seed)
        wide = And((_lit(lits, 0, 2), _lit(lits, 1, 3)))
        narrow = And((_lit(lits, 0, 2), _lit(lits, 1, 6)))  # the same and a higher threshold on output 1
        other = And((_lit(lits, 2, 4), _lit(lits, 1, 1)))
        w = rng.normal(0, 1, 3)
        rules = RuleSet.from_formulas([wide, other, narrow], w, literals=lits).formula_rules()
        i, j, k = (next(n for n, r in enumerate(rules) if set(formula_literals(r.formula)) == set(f.children))
                   for f in (wide, other, narrow))
        got = unnested(rules)
        Z = lits.transform_values(V)
        np.testing.assert_allclose(_sum(got, Z), _sum(rules, Z), atol=1e-12)  # the same scores
        assert got[j] is rules[j] and got[k].formula == rules[k].formula
        assert got[k].weight == rules[i].weight + rules[k].weight
        # the wider rule now fires for its users the narrower one does not fire for, and only them
        np.testing.assert_array_equal(got[i].fires(Z), rules[i].fires(Z) & ~rules[k].fires(Z))
        assert len(formula_literals(got[i].formula)) == 3  # output 1 as a range: more than a, at most b
        assert "and at most" in got[i].text
        assert not _nests(got)


def test_pairs_that_do_not_nest_are_left_as_they_are():
    _, V, lits = _table(0)
    a, b, c, d = _lit(lits, 0, 2), _lit(lits, 1, 3), _lit(lits, 2, 4), _lit(lits, 1, 6)
    cases = [
        [And((a, b)), And((a, c, d))],  # two literals more: no single literal to write apart
        [And((a, b)), And((c, d))],  # neither has all of the other's literals
        [Or((a, b)), Or((a, d))],  # not conjunctions
        [And((a, b)), And((a, ~b))],  # disjoint already
    ]
    for formulas in cases:
        rules = RuleSet.from_formulas(formulas, [1.0, -1.0], literals=lits).formula_rules()
        assert unnested(rules) == rules, formulas


def test_a_chain_of_nested_rules_is_written_apart_into_disjoint_rules():
    rng, V, lits = _table(1)
    a = _lit(lits, 0, 2)
    formulas = [And((a, _lit(lits, 1, q))) for q in (1, 4, 7)]
    rules = RuleSet.from_formulas(formulas, [0.5, -0.4, 0.3], literals=lits).formula_rules()
    got = unnested(rules)
    Z = lits.transform_values(V)
    np.testing.assert_allclose(_sum(got, Z), _sum(rules, Z), atol=1e-12)
    fires = np.column_stack([r.fires(Z) for r in got])
    assert fires.sum(axis=1).max() == 1  # no user in two of them


def test_a_scorecard_reads_its_nested_rules_apart_with_the_same_scores():
    # The cancelling pair of make_scenario(1) (1,500 users, random_state=1): +1.18 and -1.16 on rules that
    # differ by one threshold, fitted jointly. Written apart: the same cards, the same scores.
    apart_weights = []
    for seed in SEEDS:
        rng, V, lits = _table(seed)
        x0 = V[:, 0]
        wide = And((_lit(lits, 0, 2), _lit(lits, 1, 3)))
        narrow = And((_lit(lits, 0, 2), _lit(lits, 1, 4)))
        Z = lits.transform_values(V)
        fire = {f: RuleSet.from_formulas([f], [1.0], literals=lits).formula_rules()[0].fires(Z) for f in (wide, narrow)}
        y = 0.8 * (x0 > lits.thresholds[_lit(lits, 0, 5).index]) + 1.2 * (fire[wide] & ~fire[narrow]) + \
            rng.normal(0, 0.2, len(x0))
        rules = RuleSet.from_formulas([_lit(lits, 0, 5), wide, narrow], [0.5, 1.0, -1.0], literals=lits)
        sc = Scorecard.from_rules(rules, V, y).refit(V, y, **fit_options(True))
        assert _nests(list(sc.interactions)), seed  # what the joint refit gives
        got = unnest_interactions(sc, V, y)
        assert not _nests(list(got.interactions)) and len(got.interactions) == len(sc.interactions)
        np.testing.assert_allclose(got.predict(V), sc.predict(V), atol=1e-12)
        written = got.to_rules()
        np.testing.assert_allclose(written.score(written.literal_table().transform_values(V)), sc.predict(V),
                                   atol=1e-12)
        assert [c.name for c in got.cards] == [c.name for c in sc.cards]
        fires = np.column_stack([r.fires(got.literals.transform_values(V)) for r in got.interactions])
        assert fires.sum(axis=1).max() <= 1, seed  # no user in both
        # the pair's weights, jointly fitted, cancel; apart, the thin slice keeps its own effect
        assert np.prod([r.weight for r in sc.interactions]) < 0
        apart_weights.append(sorted(abs(r.weight) for r in got.interactions))
    # the narrower rule's users get little (the teacher adds nothing there), the slice about 1.2
    assert np.median([w[0] for w in apart_weights]) < 0.2 < 0.9 < np.median([w[1] for w in apart_weights])


def test_a_scorecard_without_nested_rules_is_returned_as_it_is():
    rng, V, lits = _table(2)
    y = V[:, 0] / 50 + rng.normal(0, 0.2, len(V))
    rules = RuleSet.from_formulas([_lit(lits, 0, 5), And((_lit(lits, 0, 2), _lit(lits, 2, 3))),
                                   And((_lit(lits, 1, 2), _lit(lits, 2, 6)))], [0.5, 0.3, -0.2], literals=lits)
    sc = Scorecard.from_rules(rules, V, y)
    assert unnest_interactions(sc, V, y) is sc
