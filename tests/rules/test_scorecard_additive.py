"""The additive scorecard beside the student's, and the choice between them (issue 26), over seeds."""

import numpy as np

from rudi_explain.metrics import fidelity
from rudi_explain.rules.formula import And, Lit, Or
from rudi_explain.rules.literals import Literals, is_vacuous
from rudi_explain.rules.ruleset import RuleSet
from rudi_explain.rules.scorecard_additive import (
    EDGE_QUANTILES,
    additive_scorecard,
    all_output_cards,
    choose_scorecard,
    scorecard_candidates,
)
from rudi_explain.rules.scorecard_budget import scorecard_within_budget
from rudi_explain.rules.scorecard_cards import UNDEFINED

SEEDS = range(8)


def _values(rng, n):
    """Three outputs: a steady one, a stepped one (undefined for a fifth of the users), one the teacher ignores."""
    V = np.column_stack([rng.uniform(0, 100, n), rng.exponential(20, n), rng.normal(0, 1, n)])
    V[rng.random(n) < 0.2, 1] = np.nan
    return V


def _additive_teacher(V, rng):
    step = np.where(np.isnan(V[:, 1]), -0.5, np.where(V[:, 1] > 15, 0.8, 0.0))
    return V[:, 0] / 50 + step + rng.normal(0, 0.2, len(V))


def _case(seed, teacher=_additive_teacher, n=2000):
    """The student's rules read output 0 alone, cut once at its median: output 1 is left out."""
    rng = np.random.default_rng(seed)
    V = _values(rng, n)
    lits = Literals.from_values(V, n_quantiles=10)
    mid = int(np.argmin(np.abs(np.where(lits.column == 0, lits.thresholds, np.inf) - 50)))
    rules = RuleSet.from_formulas([Lit(mid)], [1.0], literals=lits)
    y = teacher(V, rng)
    is_valid = rng.random(n) < 0.2
    return rng, V, lits, y, rules, is_valid


def _band_of(card, v):
    """An independent reference: the band of each value by the card's edges, read one value at a time."""
    out = []
    for x in v:
        if np.isnan(x) and card.undefined is not None:
            out.append(UNDEFINED)
        else:
            x = -np.inf if np.isnan(x) else x
            out.append(sum(x > e for e in card.edges))
    return np.array(out)


def test_every_output_gets_a_card_cut_at_all_its_thresholds():
    rng, V, lits, y, rules, is_valid = _case(0)
    cards = all_output_cards(lits, V)
    assert [c.column for c in cards] == [0, 1, 2]
    for c in cards:
        assert c.edges == tuple(sorted(set(lits.thresholds[lits.column == c.column].tolist())))
        assert (c.undefined is not None) == (c.column == 1)


def test_finer_edges_keep_the_tables_and_add_round_distinct_solid_quantiles():
    for seed in SEEDS:
        rng, V, lits, y, rules, is_valid = _case(seed)
        for plain, finer in zip(all_output_cards(lits, V), all_output_cards(lits, V, EDGE_QUANTILES), strict=True):
            assert plain.column == finer.column and (plain.undefined is None) == (finer.undefined is None)
            assert set(plain.edges) <= set(finer.edges)
            assert len(finer.edges) >= len(plain.edges) + 5  # 19 quantiles offered, a few fall on the table's
            v = np.sort(V[~np.isnan(V[:, finer.column]), finer.column])
            above = v.size - np.searchsorted(v, np.array(finer.edges), side="right")
            new = ~np.isin(finer.edges, plain.edges)
            # no new edge leaves 99% of the defined users on one side, nor splits them as another edge does
            assert not is_vacuous(above[new], v.size).any()
            assert not np.isin(above[new], above[~new]).any()
            assert len(set(above[new].tolist())) == new.sum()
            # round: at most 3 significant digits, as the table's thresholds (SEMANTICS.md)
            assert all(float(f"{e:.3g}") == e for e in np.array(finer.edges)[new])


def _step_teacher(V, rng):
    """A step of output 0 at 75: between the table's deciles (70, 80), at one of the 20 quantiles."""
    return np.where(V[:, 0] > 75, 1.0, 0.0) + np.where(np.isnan(V[:, 1]), -0.3, 0.0) + rng.normal(0, 0.1, len(V))


def test_the_finer_edges_find_a_step_between_the_tables_thresholds_and_the_choice_takes_them():
    better = chose = 0
    for seed in SEEDS:
        rng, V, lits, _, rules, is_valid = _case(seed)
        y = _step_teacher(V, rng)
        plain = additive_scorecard(rules, V, y, is_valid, max_rules=10)
        finer = additive_scorecard(rules, V, y, is_valid, max_rules=10, quantiles=EDGE_QUANTILES)
        fresh = _values(rng, 3000)
        t = _step_teacher(fresh, rng)
        better += fidelity(t, finer.predict(fresh)) > fidelity(t, plain.predict(fresh)) + 0.005
        candidates = scorecard_candidates(rules, max_rules=10)
        # the plainest first: cards alone, then with the student's interaction rules, the student's last
        assert list(candidates) == ["additive", "additive, finer edges", "additive with interactions", "student"]
        name, scores = choose_scorecard(candidates, V, y, is_valid)
        assert list(scores) == list(candidates)
        chose += name == "additive, finer edges"
    assert better >= 0.9 * len(SEEDS)
    assert chose >= 0.8 * len(SEEDS)


def test_each_user_in_one_band_scores_equal_the_rules_and_signs_explained():
    for seed in SEEDS:
        rng, V, lits, y, rules, is_valid = _case(seed)
        for interactions in (False, True):
            sc = additive_scorecard(rules, V, y, is_valid, max_rules=10, interactions=interactions)
            assert 1 <= len(sc) <= 10
            fresh = _values(rng, 500)
            idx = sc.band_index(fresh)
            for k, card in enumerate(sc.cards):
                assert card.n_bands <= 6
                if card.linear is None:  # each user in exactly the band its value falls in
                    np.testing.assert_array_equal(idx[:, k], _band_of(card, fresh[:, card.column]))
                    pts = np.array([b.points for b in card.bands])
                    und = card.undefined.points if card.undefined is not None else np.nan
                    expected = np.where(idx[:, k] == UNDEFINED, und, pts[np.maximum(idx[:, k], 0)])
                    np.testing.assert_allclose(sc.points(fresh)[:, k], expected, rtol=0, atol=0)
                # centred: the training users' mean points on a card is 0
                assert abs(card.points(V[:, card.column]).mean()) < 1e-9 * max(1.0, np.abs(y).max())
            # the scores are the rules' own
            written = sc.to_rules()
            np.testing.assert_allclose(sc.predict(fresh), written.score(written.matrix(fresh)), rtol=1e-9, atol=1e-9)
            mean = y.mean()
            for card in sc.cards:  # a note exactly where a band's points and its own gap differ in sign
                for b in ([card.undefined] if card.undefined is not None else []) + list(card.bands):
                    gap = None if b.teacher is None else b.teacher - mean
                    differ = gap is not None and abs(b.points) > 1e-9 and abs(gap) > 1e-9 and \
                        (b.points > 0) != (gap > 0)
                    assert differ == (b.note is not None)


def test_the_additive_card_finds_the_statistic_the_student_left_out():
    better = found = 0
    for seed in SEEDS:
        rng, V, lits, y, rules, is_valid = _case(seed)
        student = scorecard_within_budget(rules, V, y, is_valid, max_rules=10, linear=True)
        additive = additive_scorecard(rules, V, y, is_valid, max_rules=10)
        found += 1 in {c.column for c in additive.cards}
        fresh = _values(rng, 3000)
        t = _additive_teacher(fresh, rng)
        better += fidelity(t, additive.predict(fresh)) > fidelity(t, student.predict(fresh)) + 0.01
    assert found == len(SEEDS)
    assert better >= 0.9 * len(SEEDS)


def _interaction_teacher(V, rng):
    """Exactly the student's two interaction rules (either output high, not both: no sum of cards), plus noise."""
    return np.where((V[:, 0] > 50) != (V[:, 2] > 0), 1.0, 0.0) + rng.normal(0, 0.1, len(V))


def _candidates(rules, max_rules=10):
    return {
        "student": lambda V, t, valid: scorecard_within_budget(rules, V, t, valid, max_rules=max_rules, linear=True),
        "additive": lambda V, t, valid: additive_scorecard(rules, V, t, valid, max_rules=max_rules),
    }


def test_the_choice_takes_the_additive_card_where_it_fits_fresh_users_better():
    chose = 0
    for seed in SEEDS:
        rng, V, lits, y, rules, is_valid = _case(seed)
        name, scores = choose_scorecard(_candidates(rules), V, y, is_valid)
        assert set(scores) == {"student", "additive"}
        chose += name == "additive"
    assert chose >= 0.9 * len(SEEDS)


def test_the_choice_keeps_the_students_card_where_its_rule_is_the_teacher():
    kept = 0
    for seed in SEEDS:
        rng = np.random.default_rng(100 + seed)
        V = _values(rng, 2000)
        lits = Literals.from_values(V, n_quantiles=10)
        a = int(np.argmin(np.abs(np.where(lits.column == 0, lits.thresholds, np.inf) - 50)))
        b = int(np.argmin(np.abs(np.where(lits.column == 2, lits.thresholds, np.inf) - 0)))
        rules = RuleSet.from_formulas([And((Lit(a), ~Lit(b))), And((~Lit(a), Lit(b)))], [1.0, 1.0], literals=lits)
        y = _interaction_teacher(V, rng)
        name, _ = choose_scorecard(_candidates(rules), V, y, rng.random(2000) < 0.2)
        kept += name == "student"
    assert kept >= 0.8 * len(SEEDS)


def test_the_choice_is_the_same_for_the_same_users():
    rng, V, lits, y, rules, is_valid = _case(3)
    first = choose_scorecard(_candidates(rules), V, y, is_valid)
    assert choose_scorecard(_candidates(rules), V, y, is_valid) == first
    # too few validation users to choose on: the first candidate
    assert choose_scorecard(_candidates(rules), V, y, np.arange(len(y)) < 5) == ("student", {})


def _interacting_teacher(V, rng):
    """High where outputs 0 and 1 are both high or both low: a crossing no sum of cards can rank."""
    high = np.nan_to_num(V[:, 1], nan=0.0) > 15
    return np.where(high == (V[:, 0] > 50), 1.5, 0.0) + V[:, 0] / 100 + rng.normal(0, 0.2, len(V))


def _interacting_case(seed, n=2000):
    """The student's rules hold the crossing: (output 0 above its median AND output 1 above 15) OR neither."""
    rng, V, lits, _, _, is_valid = _case(seed, n=n)
    mid = int(np.argmin(np.abs(np.where(lits.column == 0, lits.thresholds, np.inf) - 50)))
    at15 = int(np.argmin(np.abs(np.where(lits.column == 1, lits.thresholds, np.inf) - 15)))
    both = Or((And((Lit(mid), Lit(at15))), And((Lit(mid, True), Lit(at15, True)))))
    rules = RuleSet.from_formulas([both], [1.5], literals=lits)
    return V, _interacting_teacher(V, rng), rules, is_valid


def test_interaction_rules_are_kept_only_where_they_earn_the_tie():
    plain = {"additive", "additive, finer edges"}
    additive_kept = interacting_kept = 0
    for seed in SEEDS:
        _, V, _, y, rules, is_valid = _case(seed)
        name, scores = choose_scorecard(scorecard_candidates(rules, max_rules=10), V, y, is_valid, fallback="student")
        additive_kept += name in plain  # a teacher that adds its statistics up reads as cards
        V, y, rules, is_valid = _interacting_case(seed)
        name, scores = choose_scorecard(scorecard_candidates(rules, max_rules=10), V, y, is_valid, fallback="student")
        interacting_kept += name not in plain
        assert max(scores[n] for n in scores if n not in plain) > max(scores[n] for n in plain) + 0.006 or \
            name in plain  # kept only past the tie
    assert additive_kept >= 0.8 * len(SEEDS)
    assert interacting_kept >= 0.8 * len(SEEDS)


def test_too_few_users_keep_the_fallback_and_an_unknown_fallback_is_refused():
    import pytest

    from rudi_explain.exceptions import InputError

    _, V, _, y, rules, is_valid = _case(0, n=300)  # about 60 validation users: no choice
    candidates = scorecard_candidates(rules, max_rules=10)
    assert choose_scorecard(candidates, V, y, is_valid, fallback="student") == ("student", {})
    assert choose_scorecard(candidates, V, y, is_valid) == ("additive", {})
    with pytest.raises(InputError, match="'cards' is not a candidate"):
        choose_scorecard(candidates, V, y, is_valid, fallback="cards")
