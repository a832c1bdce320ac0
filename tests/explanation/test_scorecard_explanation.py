"""The scorecard is the explanation (issue 26, part 2): explain()'s model, its text, its file.

explain()'s pruned rules are refitted as a scorecard within ``max_rules`` cards and interaction
rules, and ``exp.rules`` is its rule form: the same scores. Checked over seeds and scenarios
(slow: real searches), and fast on a small explanation built without the search.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_load import rewrite
from tiny import tiny_payments

import rudi_explain as rx
from rudi_explain.rules.formula import Lit, formula_literals
from rudi_explain.rules.literals import Literals
from rudi_explain.rules.ruleset import RuleSet
from rudi_explain.rules.scorecard import Scorecard
from rudi_explain.rules.scorecard_budget import scorecard_within_budget
from rudi_explain.students import LassoLiterals


def _outputs(rule, literals):
    return {int(literals.column[lit.index]) for lit in formula_literals(rule.formula)}


def _check_is_its_scorecard(exp, max_rules):
    """What every explanation must satisfy: the rules are the scorecard, within budget, one card per output."""
    res = exp.result
    sc = exp.scorecard
    assert sc is not None and sc.literals is exp.literals
    # the rules' scores are the scorecard's, for every user (held out too)
    np.testing.assert_allclose(exp.rules.score(exp.rules.matrix(res.values)), sc.predict(res.values), rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_allclose(exp.student_scores.to_numpy(), sc.predict(res.values), rtol=0, atol=1e-12)
    assert 1 <= len(sc) <= max_rules
    # each user is in exactly one band of each card
    idx = sc.band_index(res.values)
    for k, card in enumerate(sc.cards):
        assert card.n_bands <= 6
        v = res.values[:, card.column]
        members = np.column_stack([idx[:, k] == j for j in range(-1, card.n_bands)])
        assert (members.sum(axis=1) == 1).all()
        assert (idx[np.isnan(v), k] == -1).all() and (idx[~np.isnan(v), k] >= 0).all()
    # a statistic output used alone is one card: no two cards, no interaction rule on one output alone
    columns = [c.column for c in sc.cards]
    assert len(columns) == len(set(columns))
    assert all(len(_outputs(r, sc.literals)) >= 2 for r in sc.interactions)
    # and the rules (the rule form) read back as that scorecard
    again = Scorecard.from_rules(exp.rules, res.values[~res.is_test], exp.teacher_scores.to_numpy()[~res.is_test])
    assert [c.column for c in again.cards] == [c.column for c in sc.cards]
    assert [c.edges for c in again.cards] == [c.edges for c in sc.cards]
    assert len(again.interactions) == len(sc.interactions)
    assert "1797693" not in str(exp.rules)  # the "defined" literal is read as the statistic's undefined words


# ------------------------------------------------------------------ explain(), over seeds and scenarios


def _explain(scenario, seed, max_rules):
    make = {"payments": rx.datasets.make_payments, "edits": rx.datasets.make_edits}[scenario]
    demo = make(700, random_state=seed)
    return rx.explain(None, demo.sequences(), scores=demo.risk, background=False, random_state=seed,
                      progress=False, max_rules=max_rules)


@pytest.mark.slow
@pytest.mark.parametrize("scenario, seed, max_rules", [("payments", 0, 10), ("payments", 1, 4), ("edits", 2, 6)])
def test_explain_gives_its_scorecard(scenario, seed, max_rules, tmp_path):
    exp = _explain(scenario, seed, max_rules)
    _check_is_its_scorecard(exp, max_rules)
    text = str(exp)
    assert text.splitlines()[0] == repr(exp) and "\n" not in repr(exp)
    assert exp.scorecard.text() in text and f"{len(exp.scorecard.cards)} card" in repr(exp)
    # the job's last word counts what max_rules counts: cards and interaction rules, not the rule form's rules
    assert exp.history[-1].message.startswith(f"{len(exp.scorecard.cards)} card")
    # the SQL export scores as the scorecard (through the rules)
    assert "CASE" in exp.rules.to_sql() or "WHEN" in exp.rules.to_sql()
    back = rx.load(exp.save(tmp_path / "e.rudi"))
    assert back.scorecard.to_dict() == exp.scorecard.to_dict()
    np.testing.assert_array_equal(back.scorecard.predict(back.result.values), exp.scorecard.predict(exp.result.values))
    # another point of the curve and a moved threshold: still their own scorecard, exactly
    for other in (exp.with_rules(3), exp.with_threshold(0, float(exp.literals.thresholds[0]) + 1)):
        np.testing.assert_allclose(other.scorecard.predict(other.result.values), other.student_scores.to_numpy(),
                                   rtol=0, atol=1e-12)


@pytest.mark.slow
def test_a_rule_list_has_no_scorecard():
    # the planted statistics given, no search: what is checked comes after it (the search's own path
    # with each student is explain()'s, tested above and in tests/students)
    demo = rx.datasets.make_payments(500, random_state=0)
    exp = rx.explain(None, demo.sequences(), scores=demo.risk, background=False, random_state=0, progress=False,
                     student="brl", statistics=[str(s) for s in demo.planted], search=False)
    assert exp.scorecard is None and exp.pruning is None
    assert str(exp).startswith(repr(exp)) and str(exp.rules) in str(exp)


# ------------------------------------------------------------------ the budget step, fast


def _case(seed, n=900):
    """Values, a teacher and additive rules with many single-output rules and some interactions."""
    rng = np.random.default_rng(seed)
    V = np.column_stack([rng.lognormal(3, 1, n), rng.poisson(4, n).astype(float), rng.normal(size=n),
                         rng.random(n), rng.random(n)])
    V[rng.random(n) < 0.15, 0] = np.nan
    y = (0.7 * np.log1p(np.nan_to_num(V[:, 0])) + 0.3 * (V[:, 1] > 5) + 0.2 * V[:, 2]
         + 0.5 * (V[:, 3] > 0.5) * (V[:, 1] > 3) + 0.1 * V[:, 4] + rng.normal(0, 0.3, n))
    lits = Literals.from_values(V)
    Z = lits.transform_values(V)
    rules = LassoLiterals(n_rules=20).fit(Z, y).rules(lits)
    return V, y, rules, rng.random(n) < 0.25


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("max_rules", [1, 2, 3, 10])
def test_budget_counts_cards_and_interaction_rules(seed, max_rules):
    V, y, rules, valid = _case(seed)
    full = Scorecard.from_rules(rules, V, y)
    assert len(full) > 3  # the cases are over the small budgets
    sc = scorecard_within_budget(rules, V, y, valid, max_rules=max_rules)
    assert len(sc) == min(max_rules, len(full))
    back = sc.to_rules()
    np.testing.assert_allclose(back.score(back.matrix(V)), sc.predict(V), rtol=1e-12, atol=1e-12)
    assert all(c.n_bands <= 6 for c in sc.cards)


def test_the_unit_dropped_first_costs_least():
    """Two strong outputs and a weak one: a budget of two keeps the strong ones (rates over seeds)."""
    kept = 0
    for seed in range(8):
        rng = np.random.default_rng(seed)
        V = rng.random((800, 3))
        y = 2 * (V[:, 0] > 0.5) + 1.5 * (V[:, 1] > 0.3) + 0.05 * (V[:, 2] > 0.5) + rng.normal(0, 0.2, 800)
        lits = Literals.from_values(V)
        rules = RuleSet.from_formulas([~Lit(i) for i in range(lits.n_literals)], rng.normal(size=lits.n_literals),
                                      literals=lits)
        sc = scorecard_within_budget(rules, V, y, rng.random(800) < 0.3, max_rules=2)
        kept += sorted(c.column for c in sc.cards) == [0, 1]
    assert kept >= 7


def test_bad_budget_is_named():
    V, y, rules, valid = _case(0, n=200)
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="max_rules"):
            scorecard_within_budget(rules, V, y, valid, max_rules=bad)


# ------------------------------------------------------------------ text, save and load, fast


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    exp = tiny_payments(200)
    return exp, exp.save(tmp_path_factory.mktemp("scorecard") / "tiny.rudi")


def test_print_shows_the_scorecard_after_one_line(tiny):
    exp, _ = tiny
    assert exp.scorecard is not None
    text = str(exp)
    first, _, rest = text.partition("\n\n")
    assert first == repr(exp) and "\n" not in first
    assert rest == exp.scorecard.text()
    assert f"{len(exp.scorecard.cards)} card" in first


def test_save_load_round_trip_is_equal(tiny):
    exp, path = tiny
    back = rx.load(path)
    assert back.scorecard.to_dict() == exp.scorecard.to_dict()
    assert back.scorecard.literals is back.literals
    np.testing.assert_array_equal(back.scorecard.predict(back.result.values), exp.scorecard.predict(exp.result.values))
    np.testing.assert_allclose(back.scorecard.predict(back.result.values), back.student_scores.to_numpy(),
                               rtol=0, atol=1e-12)


def test_an_old_file_without_a_scorecard_loads(tiny, tmp_path):
    exp, path = tiny
    old = rewrite(path, tmp_path / "old.rudi", meta=lambda m: m.pop("scorecard"))
    back = rx.load(old)
    res = back.result
    # read off its rules exactly
    np.testing.assert_allclose(back.scorecard.predict(res.values), back.rules.score(back.rules.matrix(res.values)),
                               rtol=1e-12, atol=1e-12)
    assert back.scorecard.to_dict() == exp.scorecard.to_dict()


def test_a_scorecard_that_is_not_the_rules_is_refused(tiny, tmp_path):
    exp, path = tiny

    def shift(m):
        m["scorecard"]["base"] += 0.5

    bad = rewrite(path, tmp_path / "bad.rudi", meta=shift)
    with pytest.raises(ValueError, match=r"bad\.rudi is damaged: field 'scorecard': the scorecard's scores differ"):
        rx.load(bad)
    broken = rewrite(path, tmp_path / "broken.rudi", meta=lambda m: m.__setitem__("scorecard", {"cards": 3}))
    with pytest.raises(ValueError, match="field 'scorecard'"):
        rx.load(broken)


def test_saved_json_has_the_scorecard_without_a_second_table(tiny):
    import zipfile

    _, path = tiny
    with zipfile.ZipFile(path) as zf:
        meta = json.loads(zf.read("explanation.json"))
    assert meta["scorecard"]["format"] == "rudi-explain/scorecard" and "literals" not in meta["scorecard"]


@pytest.mark.slow
@pytest.mark.parametrize("max_rules", [3, 6])
def test_the_step_starts_where_the_budget_fits_best(max_rules):
    """The scorecard may start from a pruning point with more rules than the default (the budget counts cards):
    within budget, and over seeds at least as faithful on validation users as starting from the default."""
    from rudi_explain.explanation.config import ExplainConfig
    from rudi_explain.explanation.scorecard_step import prune_to_scorecard
    from rudi_explain.metrics import fidelity

    wins = 0
    for seed in range(5):
        V, y, rules, valid = _case(seed, n=700)
        path, sc, back, _ = prune_to_scorecard(rules, V, y, valid, ExplainConfig(max_rules=max_rules))
        assert len(sc) <= max_rules and sc.literals is back.literals
        np.testing.assert_allclose(back.score(back.matrix(V)), sc.predict(V), rtol=1e-12, atol=1e-12)
        from_default = scorecard_within_budget(path.default_rules, V, y, valid, max_rules=max_rules)
        wins += fidelity(y[valid], sc.predict(V[valid])) >= fidelity(y[valid], from_default.predict(V[valid])) - 2e-3
    assert wins >= 4
