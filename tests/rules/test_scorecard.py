"""The scorecard (SEMANTICS.md, "The scorecard"): read off rules exactly, refitted, written back, over seeds."""

import math
import re

import numpy as np
import pandas as pd
import pytest

from rudi_explain.exceptions import InputError
from rudi_explain.rules.formula import And, Lit, Or, formula_literals
from rudi_explain.rules.literals import Literals
from rudi_explain.rules.ruleset import RuleSet
from rudi_explain.rules.scorecard import DEFINED_THRESHOLD, Scorecard
from rudi_explain.rules.scorecard_cards import Band, Card, Linear

SEEDS = range(12)


def _values(rng, n):
    """Four outputs: a skewed amount (sometimes undefined), a count, a signed value (sometimes undefined), a share."""
    V = np.column_stack([rng.lognormal(3, 1, n), rng.poisson(4, n).astype(float), rng.normal(size=n), rng.random(n)])
    V[rng.random(n) < 0.15, 0] = np.nan
    V[rng.random(n) < 0.1, 2] = np.nan
    return V


def _teacher(rng, V):
    v0, v2 = np.nan_to_num(V[:, 0]), np.nan_to_num(V[:, 2])
    return (0.7 * np.log1p(v0) - 0.8 * np.isnan(V[:, 0]) + 0.3 * (V[:, 1] > 5) + 0.2 * v2
            + 0.5 * (V[:, 3] > 0.5) * (V[:, 1] > 3) + rng.normal(0, 0.3, V.shape[0]))


def _case(seed, n=1200, n_quantiles=10):
    """Random additive rules over random literals: bands on some outputs (ranges, negations, ORs), interactions."""
    rng = np.random.default_rng(seed)
    V = _values(rng, n)
    lits = Literals.from_values(V, n_quantiles=n_quantiles)
    y = _teacher(rng, V)
    formulas = []
    for c in rng.choice(4, size=int(rng.integers(1, 4)), replace=False):
        idx = np.flatnonzero(lits.column == c)
        for _ in range(int(rng.integers(1, 5))):
            a, b = sorted(rng.choice(idx, 2, replace=False)) if idx.size > 1 else (idx[0], idx[0])
            shape = rng.integers(4)
            formulas.append([Lit(int(a)), ~Lit(int(a)), And((Lit(int(a)), ~Lit(int(b)))),
                             Or((~Lit(int(a)), Lit(int(b))))][shape])
    for _ in range(int(rng.integers(0, 4))):
        picks = rng.choice(lits.n_literals, 3, replace=False)
        parts = tuple(Lit(int(i), bool(rng.integers(2))) for i in picks)
        formulas.append((And if rng.random() < 0.6 else Or)(parts))
    rules = RuleSet.from_formulas(formulas, rng.normal(size=len(formulas)), float(rng.normal()), literals=lits)
    return rng, V, lits, y, rules


def _new_users(rng, lits, n=400):
    """Fresh users, beyond the training range too, and users exactly on every threshold."""
    V = _values(rng, n) * rng.choice([1.0, 3.0], size=(n, 1))
    on = np.full((lits.n_literals, lits.n_outputs), np.nan)
    on[np.arange(lits.n_literals), lits.column] = lits.thresholds
    return np.vstack([V, on])


def _single_output(rule, lits):
    return {int(lits.column[x.index]) for x in formula_literals(rule.formula)}


# ------------------------------------------------------------------ read-off


@pytest.mark.parametrize("seed", SEEDS)
def test_read_off_scores_equal_the_rules(seed):
    rng, V, lits, y, rules = _case(seed)
    sc = Scorecard.from_rules(rules, V, y)
    for W in (V, _new_users(rng, lits)):
        np.testing.assert_allclose(sc.predict(W), rules.score(lits.transform_values(W)), rtol=0, atol=1e-12)


def _holds(f, x):
    """A formula's truth for one user, from plain Python comparisons (NaN > t is False)."""
    if isinstance(f, Lit):
        return f.negated != bool(x["v"][x["column"][f.index]] > x["t"][f.index])
    results = [_holds(c, x) for c in f.children]
    return all(results) if isinstance(f, And) else any(results)


@pytest.mark.parametrize("seed", range(4))
def test_read_off_against_a_per_user_reference(seed):
    """Each user in exactly one band per card; a card's points are its rules' weights, constant on a band, centred."""
    rng, V, lits, y, rules = _case(seed, n=300)
    sc = Scorecard.from_rules(rules, V, y)
    bands = sc.band_index(V)
    rows = []
    for u in range(V.shape[0]):
        for j, card in enumerate(sc.cards):
            x = float(V[u, card.column])
            edges = [-math.inf, *card.edges, math.inf]
            inside = [k for k in range(len(edges) - 1) if edges[k] < x <= edges[k + 1]]
            if math.isnan(x):
                inside = [-1] if card.undefined is not None else [0]
            assert len(inside) == 1 and inside[0] == bands[u, j]
            user = {"v": V[u].tolist(), "column": lits.column.tolist(), "t": lits.thresholds.tolist()}
            raw = sum(r.weight for r in rules if _single_output(r, lits) == {card.column} and _holds(r.formula, user))
            rows.append({"user": u, "card": j, "band": inside[0], "raw": raw})
    df = pd.DataFrame(rows)
    assert (df.groupby(["card", "band"])["raw"].nunique() == 1).all()  # a rule on one output: constant on a band
    df["expected"] = df["raw"] - df.groupby("card")["raw"].transform("mean")
    got = sc.points(V)
    np.testing.assert_allclose(got[df["user"], df["card"]], df["expected"], rtol=0, atol=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_statistic_used_alone_is_one_card_never_several_rules(seed):
    rng, V, lits, y, rules = _case(seed)
    sc = Scorecard.from_rules(rules, V, y)
    alone = set().union(*(s for s in (_single_output(r, lits) for r in rules) if len(s) == 1))
    assert sorted(c.column for c in sc.cards) == sorted(alone)
    assert all(len(_single_output(r, lits)) >= 2 for r in sc.interactions)
    assert len(sc) == len(sc.cards) + len(sc.interactions)
    for card in sc.cards:  # the band edges are the rules' own thresholds
        used = {float(lits.thresholds[x.index]) for r in rules if _single_output(r, lits) == {card.column}
                for x in formula_literals(r.formula)}
        assert set(card.edges) == used


# ------------------------------------------------------------------ what holds for read-off and refit alike


def _both(seed, **refit):
    rng, V, lits, y, rules = _case(seed, n_quantiles=20)
    sc = Scorecard.from_rules(rules, V, y)
    is_valid = rng.random(len(y)) < 0.25
    return rng, V, lits, y, rules, sc, sc.refit(V, y, is_valid=is_valid, **refit)


@pytest.mark.parametrize("seed", SEEDS)
def test_points_are_centred_and_bands_say_their_users(seed):
    rng, V, lits, y, rules, sc, ref = _both(seed)
    for card_set in (sc, ref):
        P, B = card_set.points(V), card_set.band_index(V)
        assert np.abs(P.mean(axis=0)).max() <= 1e-12 * max(1.0, np.abs(P).max())
        for j, card in enumerate(card_set.cards):
            shown = [card.undefined] if card.undefined is not None else []
            shown += list(card.bands) if card.linear is None else []
            keys = ([-1] if card.undefined is not None else []) + list(range(len(card.bands)))
            for key, band in zip(keys, shown):
                members = B[:, j] == key
                assert band.share == pytest.approx(members.mean(), abs=1e-15)
                assert (band.teacher is None) == (not members.any())
                if members.any():
                    assert band.teacher == pytest.approx(y[members].mean(), abs=1e-12)
            assert math.isclose(sum(b.share for b in shown) + (card.linear.share if card.linear else 0), 1.0)


def _contradictions(sc, y):
    """(band, has note) for every band whose points and gap differ in sign."""
    mean, out = y.mean(), []
    for card in sc.cards:
        for b in ([card.undefined] if card.undefined is not None else []) + list(card.bands):
            gap = None if b.teacher is None else b.teacher - mean
            differ = gap is not None and abs(b.points) > 1e-9 and abs(gap) > 1e-9 and (b.points > 0) != (gap > 0)
            out.append((differ, b.note is not None))
    return out


def test_no_band_contradicts_its_gap_without_a_note():
    n_differ = 0
    for seed in SEEDS:
        rng, V, lits, y, rules, sc, ref = _both(seed)
        for differ, noted in _contradictions(sc, y) + _contradictions(ref, y):
            assert differ == noted  # a note exactly where points and gap differ in sign
            n_differ += differ
    assert n_differ >= 5  # random rules often contradict: the check above is not vacuous


def test_a_note_names_what_accounts_for_the_band():
    """A band whose users are mostly in another card's band gets that band named."""
    rng = np.random.default_rng(0)
    n = 4000
    a = rng.random(n)
    b = a + rng.normal(0, 0.05, n)  # b follows a closely
    V = np.column_stack([a, b])
    lits = Literals.from_values(V, names=["a", "b"], descriptions=["alpha", "beta"])
    y = 2.0 * (a > 0.5) + rng.normal(0, 0.1, n)
    ia, ib = (int(np.argmin(np.where(lits.column == c, np.abs(lits.thresholds - 0.5), np.inf))) for c in (0, 1))
    # beta's band carries the effect, alpha's high band pulls the wrong way
    rules = RuleSet.from_formulas([Lit(ib), Lit(ia)], [2.5, -0.4], literals=lits)
    sc = Scorecard.from_rules(rules, V, y)
    alpha = next(c for c in sc.cards if c.name == "alpha")
    high = alpha.bands[-1]
    assert high.points < 0 < high.teacher - y.mean()
    assert high.note is not None and "of beta" in high.note and "mostly" in high.note


# ------------------------------------------------------------------ refit


@pytest.mark.parametrize("seed", SEEDS)
def test_refit_has_at_most_six_bands_and_a_card_per_output(seed):
    rng, V, lits, y, rules, sc, ref = _both(seed)
    assert all(c.n_bands <= 6 for c in ref.cards)
    assert sorted(c.column for c in ref.cards) == sorted(c.column for c in sc.cards)
    assert len(ref.interactions) == len(sc.interactions)


def test_many_bands_are_merged_to_six():
    rng = np.random.default_rng(3)
    n = 3000
    V = np.column_stack([rng.lognormal(3, 1, n), rng.random(n)])
    lits = Literals.from_values(V, n_quantiles=20)
    y = np.sin(np.log1p(V[:, 0])) + rng.normal(0, 0.1, n)
    idx = np.flatnonzero(lits.column == 0)
    rules = RuleSet.from_formulas([Lit(int(i)) for i in idx], rng.normal(size=idx.size), literals=lits)
    sc = Scorecard.from_rules(rules, V, y)
    assert len(sc.cards) == 1 and sc.cards[0].n_bands > 15
    ref = sc.refit(V, y)
    assert ref.cards[0].n_bands <= 6 and set(ref.cards[0].edges) <= set(sc.cards[0].edges)


def _dummy_lstsq_error(sc, V, y):
    """Least squares on one-hot band dummies of every card and the interaction indicators (numpy's lstsq)."""
    B = sc.band_index(V)
    cols = [np.ones(len(y))]
    for j in range(len(sc.cards)):
        for key in np.unique(B[:, j]):
            cols.append((B[:, j] == key).astype(float))
    cols.extend(sc.fires(V).T.astype(float))
    A = np.column_stack(cols)
    x = np.linalg.lstsq(A, y, rcond=None)[0]
    return np.mean((A @ x - y) ** 2)


@pytest.mark.parametrize("seed", range(6))
def test_refit_is_the_joint_least_squares_fit(seed):
    """Free bands, no ridge: the refit's training error is the one-hot least squares optimum over the read-off's
    bands less those cut off by a vacuous edge (1% of the defined users or fewer on one side)."""
    rng, V, lits, y, rules = _case(seed)
    sc = Scorecard.from_rules(rules, V, y)
    ref = sc.refit(V, y, monotone=False, linear=False, ridge=0.0, max_bands=100)
    err = np.mean((ref.predict(V) - y) ** 2)
    solid = Scorecard([c.with_(edges=_solid(c, V), bands=tuple(Band(0.0) for _ in range(len(_solid(c, V)) + 1)))
                       for c in sc.cards], sc.interactions, sc.base, sc.literals)
    assert err == pytest.approx(_dummy_lstsq_error(solid, V, y), rel=1e-9)
    if all(_solid(c, V) == c.edges for c in sc.cards):
        assert err <= np.mean((sc.predict(V) - y) ** 2) + 1e-12


def _solid(card, V):
    """The card's edges with more than 1% of the defined users on each side (and whose literal is no vacuous one)."""
    v = V[:, card.column]
    d = v[~np.isnan(v)]
    keep = []
    for e in card.edges:
        below, above = int((d <= e).sum()), int((d > e).sum())
        if min(below, above) > 0.01 * d.size and 0.01 * v.size < above < 0.99 * v.size:
            keep.append(e)
    return tuple(keep)


def _monotone_direction(card):
    means = [b.teacher for b in card.bands if b.teacher is not None]
    d = np.diff(means)
    return 1 if (d >= 0).all() else -1 if (d <= 0).all() else 0


def test_monotone_where_the_teacher_is():
    """Without validation users, every card whose teacher mean rises (falls) across its bands has rising (falling)
    points, though the rules read off were not monotone."""
    n_monotone, n_rules_not = 0, 0
    for seed in SEEDS:
        rng, V, lits, y, rules = _case(seed)
        sc = Scorecard.from_rules(rules, V, y)
        n_rules_not += sum(_monotone_direction(c) != 0 and not _is_monotone(c, _monotone_direction(c))
                           for c in sc.cards)
        ref = sc.refit(V, y, linear=False)
        for card in ref.cards:
            direction = _monotone_direction(card)
            if direction:
                n_monotone += 1
                assert card.monotone and _is_monotone(card, direction)
    assert n_monotone >= len(SEEDS) and n_rules_not >= 3  # the check bites: the read-off was often not monotone


def _is_monotone(card, direction):
    p = np.diff([b.points for b in card.bands])
    return bool((p * direction >= -1e-12).all())


def test_validation_users_may_free_a_card_from_monotony():
    """x1 follows x2: the teacher's mean rises across x1's bands, yet with x2's card beside it x1 lowers the
    score. Validation users free x1's card (its points then contradict its gaps: notes); where x1 truly adds, it
    stays monotone."""
    freed, kept, noted = 0, 0, 0
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        n = 3000
        x2 = rng.random(n)
        x1 = x2 + rng.normal(0, 0.1, n)
        V = np.column_stack([x1, x2])
        lits = Literals.from_values(V)
        rules = RuleSet.from_formulas([Lit(int(i)) for i in range(lits.n_literals)],
                                      rng.normal(size=lits.n_literals), literals=lits)
        is_valid = rng.random(n) < 0.3
        for sign in (-1, 1):
            y = 2 * x2 + sign * 0.6 * x1 + rng.normal(0, 0.1, n)
            ref = Scorecard.from_rules(rules, V, y).refit(V, y, is_valid=is_valid, linear=False)
            card1 = next(c for c in ref.cards if c.column == 0)
            assert _monotone_direction(card1) == 1  # the teacher's mean rises across x1's bands either way
            if sign < 0:
                freed += not card1.monotone
                noted += any(b.note for b in card1.bands)
            else:
                kept += card1.monotone and _is_monotone(card1, 1)
    # notes: 32 of 40 seeds (36 before bands of 1% of users or fewer went: a one-user band often contradicted)
    assert freed >= 0.9 * len(SEEDS) and noted >= 0.6 * len(SEEDS)
    assert kept >= 0.9 * len(SEEDS)


def test_linear_cards_where_the_teacher_acts_steadily():
    linear_when_linear, linear_when_step = 0, 0
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        n = 3000
        x = rng.uniform(0, 100, n)
        V = x[:, None]
        lits = Literals.from_values(V, n_quantiles=10)
        rules = RuleSet.from_formulas([Lit(int(i)) for i in range(lits.n_literals)],
                                      rng.normal(size=lits.n_literals), literals=lits)
        is_valid = rng.random(n) < 0.3
        for teacher, counter in ((0.02 * np.clip(x, 10, 90), "linear"), (1.0 * (x > 50), "step")):
            y = teacher + rng.normal(0, 0.05, n)
            ref = Scorecard.from_rules(rules, V, y).refit(V, y, is_valid=is_valid)
            is_linear = ref.cards[0].linear is not None
            if counter == "linear":
                linear_when_linear += is_linear
                if is_linear:
                    assert ref.cards[0].linear.slope == pytest.approx(0.02, rel=0.1)
            else:
                linear_when_step += is_linear
    assert linear_when_linear >= 0.9 * len(SEEDS)
    assert linear_when_step <= 0.1 * len(SEEDS)


# ------------------------------------------------------------------ to_rules, JSON


@pytest.mark.parametrize("seed", SEEDS)
def test_to_rules_scores_as_the_scorecard(seed):
    rng, V, lits, y, rules, sc, ref = _both(seed, linear=False)
    W = _new_users(rng, lits)
    for card_set in (sc, ref):
        back = card_set.to_rules()
        for X in (V, W):
            np.testing.assert_allclose(back.score(back.literals.transform_values(X)), card_set.predict(X),
                                       rtol=0, atol=1e-12)
        # one rule per band: a literal range on one output; interactions as they were
        n_cards = sum(len(_single_output(r, back.literals)) == 1 for r in back)
        assert n_cards <= sum(c.n_bands + (c.undefined is not None) for c in card_set.cards)


def test_to_rules_tells_undefined_from_the_lowest_band():
    rng = np.random.default_rng(1)
    V = rng.lognormal(2, 1, (800, 1))
    V[:200] = np.nan
    lits = Literals.from_values(V)
    y = np.where(np.isnan(V[:, 0]), -1.0, 0.3 * np.log(np.nan_to_num(V[:, 0], nan=1.0)))
    rules = RuleSet.from_formulas([Lit(int(i)) for i in range(lits.n_literals)], np.ones(lits.n_literals),
                                  literals=lits)
    ref = Scorecard.from_rules(rules, V, y).refit(V, y, linear=False)
    card = ref.cards[0]
    assert card.undefined.points < card.bands[0].points - 0.5  # the undefined users apart
    back = ref.to_rules()
    assert back.literals.n_literals == lits.n_literals + 1 and back.literals.thresholds[-1] == DEFINED_THRESHOLD
    W = np.vstack([V, [[np.nan], [0.0], [-5.0]]])
    np.testing.assert_allclose(back.score(back.literals.transform_values(W)), ref.predict(W), rtol=0, atol=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_rule_form_reads_back_as_the_same_scorecard(seed):
    """explain() keeps a scorecard as its rule form (exp.rules): reading that off gives the scorecard again."""
    rng, V, lits, y, rules, sc, ref = _both(seed, linear=False)
    back = ref.to_rules()
    again = Scorecard.from_rules(back, V, y)
    assert [(c.column, c.edges) for c in again.cards] == [(c.column, c.edges) for c in ref.cards]
    for a, b in zip(again.cards, ref.cards):
        np.testing.assert_allclose([x.points for x in a.bands], [x.points for x in b.bands], rtol=0, atol=1e-12)
        assert (a.undefined is None) == (b.undefined is None)
        if a.undefined is not None:
            assert abs(a.undefined.points - b.undefined.points) <= 1e-12
    # "the output is defined" is only read negated ("undefined"): "more than -1.8e308" is no band a reader can use
    assert not any(DEFINED_THRESHOLD in {float(back.literals.thresholds[lit.index])
                                         for lit in formula_literals(r.formula) if not lit.negated}
                   for r in back)


def test_a_linear_card_has_a_rule_form_with_its_scores():
    # more cases, undefined values and several seeds: tests/rules/test_linear_cards.py
    card = Card(0, "x", edges=(), bands=(), linear=Linear(0.1, 2.0, 10.0, offset=-0.3))
    lits = Literals.from_values(np.arange(20.0)[:, None])
    sc = Scorecard([card], base=1.0, literals=lits)
    rules = sc.to_rules()
    V = np.arange(-5.0, 25.0)[:, None]
    np.testing.assert_allclose(rules.score(rules.matrix(V)), 1.0 - 0.3 + 0.1 * (np.clip(V[:, 0], 2, 10) - 2))
    np.testing.assert_allclose(rules.score(rules.matrix(V)), sc.predict(V))


@pytest.mark.parametrize("seed", range(6))
def test_json_round_trip_is_exact(seed):
    rng, V, lits, y, rules, sc, ref = _both(seed)
    W = _new_users(rng, lits)
    for card_set in (sc, ref):
        back = Scorecard.from_json(card_set.to_json())
        assert back.to_dict() == card_set.to_dict()
        assert str(back) == str(card_set)
        assert np.array_equal(back.predict(W), card_set.predict(W))


# ------------------------------------------------------------------ text


def test_card_text_as_semantics_writes_it():
    card = Card(3, "largest amount among events where industry is games", kind="value", unit="EUR",
                edges=(60.0, 360.0), bands=(Band(-0.08, 0.09, 0.33), Band(0.21, 0.22, 0.52), Band(0.45, 0.13, 0.71)),
                undefined=Band(-0.17, 0.56, 0.31), undefined_words="users with no events where industry is games")
    lines = card.text().splitlines()
    assert len({len(line) for line in lines}) == 1  # lined up: every column ends where its header does
    assert re.fullmatch(r"largest amount among events where industry is games\s+points   users   teacher", lines[0])
    rows = [re.fullmatch(r"  (\S.*?)\s+([+-]\d+\.\d+)\s+(\d+%)\s+(\d+\.\d\d)", line).groups() for line in lines[1:]]
    # points as every view writes them (points_text: three significant digits, at most three decimals)
    assert rows == [("undefined (no events where industry is games)", "-0.170", "56%", "0.31"),
                    ("at most 60 EUR", "-0.080", "9%", "0.33"),
                    ("more than 60 EUR and at most 360 EUR", "+0.210", "22%", "0.52"),
                    ("more than 360 EUR", "+0.450", "13%", "0.71")]


def test_band_labels_use_the_one_value_formatter():
    share = Card(0, "share of payments abroad", kind="share", edges=(0.05, 0.19), bands=(Band(0), Band(0), Band(0)))
    assert share.band_labels() == ["at most 5%", "more than 5% and at most 19%", "more than 19%"]
    count = Card(0, "number of payments", kind="count", edges=(0.0, 2.0, 3.0, 1200.0), bands=(Band(0),) * 5)
    assert count.band_labels() == ["0", "more than 0 and at most 2", "exactly 3", "more than 3 and at most 1,200",
                                   "more than 1,200"]
    lin = Card(0, "total amount", unit="EUR", edges=(), bands=(), linear=Linear(0.0002, 0.0, 5000.0))
    assert lin.linear_text() == "+0.02 per 100 EUR, from 0 to 5,000 EUR"


# ------------------------------------------------------------------ bad input


def test_bad_input_is_named():
    rng, V, lits, y, rules = _case(0)

    class FirstMatch(RuleSet):
        def score(self, data):
            return super().score(data)

    with pytest.raises(InputError, match="not a sum of rules"):
        Scorecard.from_rules(FirstMatch(list(rules), 0.0, lits), V, y)
    with pytest.raises(InputError, match=r"shape \(n_users, 4\)"):
        Scorecard.from_rules(rules, V[:, :3], y)
    with pytest.raises(InputError, match="teacher scores for"):
        Scorecard.from_rules(rules, V, y[:-1])
    with pytest.raises(InputError, match="is_valid has"):
        Scorecard.from_rules(rules, V, y).refit(V, y, is_valid=np.ones(3, bool))


# ------------------------------------------------------------------ real students


def _payments(seed):
    from rudi_explain.datasets import make_payments

    demo = make_payments(1500, random_state=seed)
    seqs = demo.sequences()
    lits = Literals.fit(seqs, demo.planted)
    V = lits.values(seqs)
    y = demo.risk.loc[seqs.users].to_numpy()
    return lits, V, y


@pytest.mark.parametrize("seed", range(2))
def test_real_students_rules_read_as_scorecards(seed):
    """A Lasso over literals (one-literal rules: all cards) and CART paths (interactions) on the payments demo."""
    from rudi_explain.students.baselines import CARTRules, LassoLiterals

    lits, V, y = _payments(seed)
    Z = lits.transform_values(V)
    is_valid = np.random.default_rng(seed).random(len(y)) < 0.25
    for student in (LassoLiterals(n_rules=12), CARTRules(n_rules=8, random_state=seed)):
        rules = student.fit(Z[~is_valid], y[~is_valid]).rules(lits)
        sc = Scorecard.from_rules(rules, V[~is_valid], y[~is_valid])
        np.testing.assert_allclose(sc.predict(V), rules.score(Z), rtol=0, atol=1e-12)
        ref = sc.refit(V[~is_valid], y[~is_valid])
        assert all(c.n_bands <= 6 for c in ref.cards)
        for differ, noted in _contradictions(ref, y[~is_valid]):
            assert differ == noted
        if isinstance(student, LassoLiterals):
            assert not sc.interactions and len(sc.cards) == len({c for r in rules for c in _single_output(r, lits)})
        back = ref.to_rules()
        np.testing.assert_allclose(back.score(back.literals.transform_values(V)), ref.predict(V), rtol=0, atol=1e-12)


@pytest.mark.slow
def test_a_rule_list_reads_off_exactly():
    """BRL's list scores as a sum of disjoint rules (each antecedent AND NOT the ones before): it reads off too."""
    from rudi_explain.students.brl import BayesianRuleList

    lits, V, y = _payments(0)
    Z = lits.transform_values(V)
    p = (y > np.median(y)).astype(float)
    rules = BayesianRuleList(random_state=0).fit(Z, p.astype(int)).rules(lits)
    assert len(rules) >= 1
    sc = Scorecard.from_rules(rules, V, p)
    np.testing.assert_allclose(sc.predict(V), rules.score(Z), rtol=0, atol=1e-12)


@pytest.mark.slow
def test_explain_rules_read_as_a_scorecard():
    """explain()'s own rules (GS-NLN, pruned and refined) on the payments demo: read off exactly, refitted."""
    import rudi_explain as rx

    demo = rx.datasets.make_payments(800, random_state=0)
    exp = rx.explain(None, demo.events, user="user_id", time="ts", scores=demo.risk, background=False,
                     random_state=0, progress=False)
    res = exp.result
    train = ~res.is_test
    y = res.teacher_scores.to_numpy()
    sc = Scorecard.from_rules(res.rules, res.values[train], y[train])
    np.testing.assert_allclose(sc.predict(res.values), res.rules.score(res.rules.matrix(res.values)),
                               rtol=0, atol=1e-12)
    ref = sc.refit(res.values[train], y[train], is_valid=np.random.default_rng(0).random(train.sum()) < 0.2)
    assert all(c.n_bands <= 6 for c in ref.cards) and len(ref) == len(sc)
    for differ, noted in _contradictions(sc, y[train]) + _contradictions(ref, y[train]):
        assert differ == noted
