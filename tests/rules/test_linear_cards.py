"""Linear cards in rule form: rule sets that hold rules and clipped linear terms together (issue 26, item 2).

Scores are checked against a per-user Python reference written from SEMANTICS.md ("The scorecard"): score =
intercept + the weights of the rules that fire + every linear term's ``weight x value clipped to [lo, hi]``
(``fill`` where the value is undefined).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from rudi_explain.exceptions import InputError
from rudi_explain.rules.formula import And, Lit, Or
from rudi_explain.rules.literals import Literals
from rudi_explain.rules.ruleset import LinearTerm, Rule, RuleSet
from rudi_explain.rules.scorecard import Scorecard
from rudi_explain.rules.scorecard_cards import Band, Card, Linear

SEEDS = range(8)


def _values(rng, n):
    """Four outputs: an amount (sometimes undefined), a count, a signed value (sometimes undefined), a share."""
    V = np.column_stack([rng.lognormal(3, 1, n), rng.poisson(4, n).astype(float), rng.normal(size=n), rng.random(n)])
    V[rng.random(n) < 0.15, 0] = np.nan
    V[rng.random(n) < 0.1, 2] = np.nan
    return V


def _new_users(rng, lits, n=300):
    """Fresh users, beyond the training range too, and users exactly on every threshold."""
    V = _values(rng, n) * rng.choice([1.0, 3.0, -2.0], size=(n, 1))
    on = np.full((lits.n_literals, lits.n_outputs), np.nan)
    on[np.arange(lits.n_literals), lits.column] = lits.thresholds
    return np.vstack([V, on])


def _holds(f, v, lits):
    """A formula's truth for one user, from plain Python comparisons (NaN > t is False)."""
    if isinstance(f, Lit):
        x = v[int(lits.column[f.index])]
        return f.negated != (not math.isnan(x) and x > float(lits.thresholds[f.index]))
    results = [_holds(c, v, lits) for c in f.children]
    return all(results) if isinstance(f, And) else any(results)


def _reference(rules, V, lits):
    """Scores and firings user by user, in plain Python."""
    scores, fires = [], []
    for v in V.tolist():
        s, f = rules.intercept, []
        for r in rules:
            if isinstance(r, LinearTerm):
                x = v[r.column]
                if math.isnan(x):
                    x = r.fill
                else:
                    x = x if r.lo is None else max(x, r.lo)
                    x = x if r.hi is None else min(x, r.hi)
                s += r.weight * x
                f.append(x != 0)
            else:
                hit = _holds(r.formula, v, lits)
                s += r.weight if hit else 0.0
                f.append(hit)
        scores.append(s)
        fires.append(f)
    return np.array(scores), np.array(fires, dtype=bool).reshape(len(V), len(rules))


def _mixed(seed, n=600):
    """Random rules (on one output, and interactions) and random linear terms, clipped or not, over one table."""
    rng = np.random.default_rng(seed)
    V = _values(rng, n)
    lits = Literals.from_values(V, n_quantiles=8)
    formulas = []
    for c in (1, 3):
        idx = np.flatnonzero(lits.column == c)
        a, b = sorted(rng.choice(idx, 2, replace=False))
        formulas += [Lit(int(a)), And((Lit(int(a)), ~Lit(int(b))))]
    for _ in range(2):
        picks = rng.choice(lits.n_literals, 3, replace=False)
        formulas.append((And if rng.random() < 0.5 else Or)(tuple(Lit(int(i), bool(rng.integers(2))) for i in picks)))
    rs = RuleSet.from_formulas(formulas, rng.normal(size=len(formulas)), float(rng.normal()), literals=lits)
    terms = [LinearTerm(0, float(rng.normal()) / 20, float(rng.uniform(0, 50)), "amount", True,
                        float(np.nanquantile(V[:, 0], 0.1)), float(np.nanquantile(V[:, 0], 0.9))),
             LinearTerm(2, float(rng.normal()), 0.25, "signed", True, None, 1.0),
             LinearTerm(3, float(rng.normal()), 0.0, "share", False)]  # a Lasso's: no bounds
    # linear terms first, then rules: the order a rule set keeps is the order it is given
    return rng, V, lits, RuleSet([terms[0], *rs.rules[:2], terms[1], *rs.rules[2:], terms[2]], rs.intercept, lits)


# ------------------------------------------------------------------ a rule set of rules and linear terms


@pytest.mark.parametrize("seed", SEEDS)
def test_mixed_rule_sets_score_as_a_per_user_reference(seed):
    rng, V, lits, rules = _mixed(seed)
    assert rules.has_linear and rules.reads_values and not rules.linear
    for W in (V, _new_users(rng, lits)):
        want, want_fires = _reference(rules, W, lits)
        np.testing.assert_allclose(rules.score(W), want, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(rules.fires(W), want_fires)
        np.testing.assert_array_equal(rules.score(rules.matrix(W)), rules.score(W))


def test_a_linear_term_clips_to_its_bounds_and_fills_undefined_values_unclipped():
    v = np.array([[-10.0], [0.0], [2.0], [5.0], [7.5], [10.0], [99.0], [np.nan]])
    term = LinearTerm(0, 2.0, 50.0, "x", True, 0.0, 10.0)
    np.testing.assert_array_equal(term.value(v), [0.0, 0.0, 2.0, 5.0, 7.5, 10.0, 10.0, 50.0])
    np.testing.assert_array_equal(LinearTerm(0, 2.0, -1.0, "x", True, None, 5.0).value(v),
                                  [-10.0, 0.0, 2.0, 5.0, 5.0, 5.0, 5.0, -1.0])
    np.testing.assert_array_equal(LinearTerm(0, 2.0, -1.0, "x", True, 3.0).value(v),
                                  [3.0, 3.0, 3.0, 5.0, 7.5, 10.0, 99.0, -1.0])
    np.testing.assert_array_equal(LinearTerm(0, 2.0, -1.0, "x").value(v), [-10.0, 0.0, 2.0, 5.0, 7.5, 10.0, 99.0, -1.0])
    rules = RuleSet([term], 1.0, ["x"])
    np.testing.assert_array_equal(rules.score(v), 1.0 + 2.0 * np.array([0, 0, 2, 5, 7.5, 10, 10, 50.0]))
    with pytest.raises(InputError, match="lo 3.0 is above hi 1.0"):
        LinearTerm(0, 1.0, 0.0, "x", True, 3.0, 1.0)
    with pytest.raises(InputError, match="NaN"):
        LinearTerm(0, 1.0, 0.0, "x", True, float("nan"), 1.0)


def test_a_linear_term_says_its_range_with_the_one_value_formatter():
    term = LinearTerm(0, 0.002, 0.0, "total amount", True, 0.0, 5000.0, "value", "EUR")
    assert term.text == "× total amount (+0.2 per 100 EUR), from 0 EUR to 5,000 EUR (undefined counts as 0 EUR)"
    # the weight is per 1 of the raw share (100%): the text says it per 1% as the card does
    share = LinearTerm(1, 0.5, 0.1, "share of games payments", False, 0.05, 0.4, "share")
    assert share.text == "× share of games payments (+0.005 per 1%), from 5% to 40%"


def test_a_mixed_rule_set_refuses_the_literal_matrix_and_formula_only_work():
    _, V, lits, rules = _mixed(0, n=100)
    with pytest.raises(InputError, match="value matrix"):
        rules.score(lits.transform_values(V))
    with pytest.raises(InputError, match="columns"):
        rules.score(V[:, :2])
    with pytest.raises(InputError, match="linear terms"):
        rules.formula_rules()
    with pytest.raises(InputError, match="reads output 7"):
        RuleSet([LinearTerm(7, 1.0, 0.0, "x")], 0.0, lits)


@pytest.mark.parametrize("seed", range(3))
def test_mixed_rule_sets_round_trip_through_json_exactly(seed):
    rng, V, lits, rules = _mixed(seed)
    back = RuleSet.from_json(rules.to_json())
    W = _new_users(rng, lits)
    np.testing.assert_array_equal(back.score(W), rules.score(W))
    assert [str(r) for r in back] == [str(r) for r in rules]
    assert back.to_dict() == rules.to_dict()


def test_linear_terms_without_bounds_are_saved_as_before_and_older_files_load():
    old = {"format": "rudi-explain/ruleset", "version": 1, "intercept": 0.5, "names": ["a", "b"],
           "rules": [{"linear": 0, "weight": 2.0, "fill": 1.0, "name": "a", "can_be_undefined": True},
                     {"linear": 1, "weight": -1.0, "fill": 0.0, "name": "b"}]}
    rules = RuleSet.from_dict(old)
    assert rules.linear and rules.has_linear
    assert all(r.lo is None and r.hi is None for r in rules)
    assert rules.to_dict()["rules"] == [{**old["rules"][0]}, {**old["rules"][1], "can_be_undefined": True}]
    V = np.array([[1.0, 2.0], [np.nan, 100.0]])
    np.testing.assert_array_equal(rules.score(V), [0.5 + 2.0 - 2.0, 0.5 + 2.0 - 100.0])


@pytest.mark.parametrize("bad, message", [({"lo": "0"}, "bound must be a number"),
                                          ({"lo": 5.0, "hi": 1.0}, "above hi"),
                                          ({"lo": 10 ** 400}, "too large"),
                                          ({"weight": None}, "weight must be a number")])
def test_damaged_linear_terms_are_refused_by_name(bad, message):
    d = {"format": "rudi-explain/ruleset", "version": 1, "intercept": 0.0, "names": ["a"],
         "rules": [{"linear": 0, "weight": 1.0, "fill": 0.0, "name": "a", **bad}]}
    with pytest.raises(InputError, match=message):
        RuleSet.from_json(json.dumps(d))


# ------------------------------------------------------------------ a scorecard's linear cards in rule form


def _scorecard(seed):
    """A scorecard with linear cards (with and without an undefined band), band cards and interaction rules."""
    rng = np.random.default_rng(seed)
    V = _values(rng, 800)
    lits = Literals.from_values(V, n_quantiles=6)
    q = lambda c, p: float(np.nanquantile(V[:, c], p))  # noqa: E731
    cards = [
        Card(0, "amount", unit="EUR", edges=(), bands=(),
             linear=Linear(float(rng.normal()) / 10, q(0, 0.05), q(0, 0.95), float(rng.normal())),
             undefined=Band(float(rng.normal())), undefined_words="users with no payments"),
        Card(1, "count", kind="count", edges=(2.0, 5.0), bands=tuple(Band(float(p)) for p in rng.normal(size=3))),
        Card(2, "signed", edges=(), bands=(), linear=Linear(float(rng.normal()), -1.0, 1.5, float(rng.normal())),
             undefined=None if seed % 2 else Band(float(rng.normal()))),
        Card(3, "share", kind="share", edges=(), bands=(), linear=Linear(float(rng.normal()), 0.1, 0.9, 0.0)),
    ]
    picks = [int(np.flatnonzero(lits.column == c)[1]) for c in (1, 3)]
    rule = Rule(And((Lit(picks[0]), ~Lit(picks[1]))), float(rng.normal()), lits.literal_info())
    return rng, V, lits, Scorecard(cards, [rule], float(rng.normal()), lits)


def _reference_points(sc, V):
    """A scorecard's scores user by user from SEMANTICS.md, in plain Python."""
    out = []
    for v in V.tolist():
        s = sc.base
        for card in sc.cards:
            x = v[card.column]
            if math.isnan(x) and card.undefined is not None:
                s += card.undefined.points
            elif card.linear is not None:
                lin = card.linear
                x = lin.lo if math.isnan(x) else x
                s += lin.offset + lin.slope * (min(max(x, lin.lo), lin.hi) - lin.lo)
            else:
                k = sum(1 for e in card.edges if not math.isnan(x) and x > e)
                s += card.bands[k].points
        lits = sc.literals
        s += sum(r.weight for r in sc.interactions if _holds(r.formula, v, lits))
        out.append(s)
    return np.array(out)


@pytest.mark.parametrize("seed", SEEDS)
def test_to_rules_gives_exactly_the_scorecards_scores(seed):
    rng, V, lits, sc = _scorecard(seed)
    rules = sc.to_rules()
    assert sum(isinstance(r, LinearTerm) for r in rules) == 3 and rules.has_linear
    for W in (V, _new_users(rng, lits)):
        want = _reference_points(sc, W)
        np.testing.assert_allclose(sc.predict(W), want, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(rules.score(W), want, rtol=1e-12, atol=1e-12)
    # read back: the same cards (centred), the same scores
    back = Scorecard.from_rules(rules, V, V[:, 1])
    assert sorted(c.column for c in back.cards if c.linear is not None) == [0, 2, 3]
    for card in back.cards:
        if card.linear is not None:
            orig = next(c for c in sc.cards if c.column == card.column)
            assert (card.linear.slope, card.linear.lo, card.linear.hi) == \
                (orig.linear.slope, orig.linear.lo, orig.linear.hi)
            assert (card.undefined is None) == (orig.undefined is None and not np.isnan(V[:, card.column]).any())
    W = _new_users(rng, lits)
    np.testing.assert_allclose(back.predict(W), sc.predict(W), rtol=1e-12, atol=1e-12)
    assert back.mismatch(rules, W) is None


@pytest.mark.parametrize("seed", SEEDS)
def test_refitted_linear_cards_keep_their_scores_in_rule_form(seed):
    """Cards chosen linear by refit (validation users), written as rules and read back: the same scores."""
    rng = np.random.default_rng(seed)
    n = 1500
    V = _values(rng, n)
    y = (0.02 * np.clip(np.nan_to_num(V[:, 0], nan=10.0), 5, 60) - 0.5 * np.isnan(V[:, 0]) + 0.4 * V[:, 1]
         + 0.3 * (V[:, 3] > 0.5) + rng.normal(0, 0.1, n))
    lits = Literals.from_values(V, n_quantiles=10)
    rules = RuleSet.from_formulas([Lit(int(i)) for i in range(lits.n_literals)], rng.normal(size=lits.n_literals),
                                  literals=lits)
    sc = Scorecard.fit(rules, V, y, is_valid=rng.random(n) < 0.3, linear=True)
    as_rules = sc.to_rules()
    W = _new_users(rng, lits)
    for X in (V, W):
        np.testing.assert_allclose(as_rules.score(X), sc.predict(X), rtol=1e-10, atol=1e-10)
    back = Scorecard.from_rules(as_rules, V, y)
    np.testing.assert_allclose(back.predict(W), sc.predict(W), rtol=1e-10, atol=1e-10)
    assert sorted((c.column, c.linear is not None) for c in back.cards) == \
        sorted((c.column, c.linear is not None) for c in sc.cards)


def test_linear_cards_are_chosen_where_the_teacher_is_linear_in_most_seeds():
    chosen = 0
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        n = 1500
        V = _values(rng, n)
        y = 0.03 * np.clip(np.nan_to_num(V[:, 0], nan=0.0), 0, 80) + rng.normal(0, 0.05, n)
        lits = Literals.from_values(V, n_quantiles=10)
        idx = np.flatnonzero(lits.column == 0)
        rules = RuleSet.from_formulas([Lit(int(i)) for i in idx], rng.normal(size=idx.size), literals=lits)
        sc = Scorecard.fit(rules, V, y, is_valid=rng.random(n) < 0.3, linear=True)
        chosen += any(c.column == 0 and c.linear is not None for c in sc.cards)
        np.testing.assert_allclose(sc.to_rules().score(V), sc.predict(V), rtol=1e-10, atol=1e-10)
    assert chosen >= 0.75 * len(SEEDS)


def test_read_off_refuses_what_is_not_one_card_per_output():
    _, V, lits, _ = _mixed(0, n=100)
    unbounded = RuleSet([LinearTerm(0, 1.0, 0.0, "amount")], 0.0, lits)
    with pytest.raises(InputError, match="no finite bounds"):
        Scorecard.from_rules(unbounded, V, V[:, 1])
    band = int(np.flatnonzero(lits.column == 0)[0])
    both = RuleSet([LinearTerm(0, 1.0, 0.0, "amount", True, 0.0, 10.0),
                    Rule(Lit(band), 1.0, lits.literal_info())], 0.0, lits)
    with pytest.raises(InputError, match="by a linear term and by band rules"):
        Scorecard.from_rules(both, V, V[:, 1])


def test_json_of_a_scorecard_with_linear_cards_is_exact():
    rng, V, lits, sc = _scorecard(1)
    back = Scorecard.from_json(sc.to_json())
    W = _new_users(rng, lits)
    np.testing.assert_array_equal(back.predict(W), sc.predict(W))
    np.testing.assert_array_equal(back.to_rules().score(W), sc.to_rules().score(W))


def test_a_linear_card_and_its_undefined_rule_are_added_as_one_card():
    # score adds card by card (RuleSet.groups), as the SQL export's one CASE per card does
    _, V, lits, sc = _scorecard(0)
    rules = sc.to_rules()
    groups = dict((c, m) for c, m in rules.groups() if c >= 0)
    assert sorted(groups) == [0, 1, 2, 3]
    for c in (0, 2):  # linear cards with an undefined band: the term and the rule "undefined"
        kinds = sorted(type(rules[k]).__name__ for k in groups[c])
        assert kinds == ["LinearTerm", "Rule"]
    assert [type(rules[k]).__name__ for k in groups[3]] == ["LinearTerm"]
    assert [len(m) for c, m in rules.groups() if c < 0] == [1]  # the interaction rule alone


def test_the_rules_list_ranks_a_bounded_linear_term_by_what_it_adds_over_its_range():
    # -1.70 per 100% over 0-18.2% moves a score by 0.31; +0.5 per 100% over 0-100% by 0.5: the second first,
    # though its weight is smaller
    narrow = LinearTerm(0, -1.70, 0.0, "share of fashion payments", False, 0.0, 0.182, "share")
    wide = LinearTerm(1, 0.5, 0.0, "share of games payments", False, 0.0, 1.0, "share")
    lines = str(RuleSet([narrow, wide], 0.0, ["x", "y"])).splitlines()
    assert [line.split("× ")[1].split(" (")[0] for line in lines[:2]] == ["share of games payments",
                                                                         "share of fashion payments"]
