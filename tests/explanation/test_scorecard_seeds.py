"""What issue 26 says the scorecard must show, end to end through explain(), over seeds and cases.

Payments, edits and planted scenarios (benchmarks/planted.py) are explained at their defaults; on every
explanation:

- no band's points contradict its own gap (mean teacher score in the band minus the mean over the training
  users) without a note on the band that says why;
- no literal of the rules, and no band edge, is true or false for 99% of the training users or more (for a band
  edge: of those whose value is defined; the undefined band is exempt);
- each user is in exactly one band per card, as an independent per-user loop over the band edges places them;
- no two neighbouring bands of a card have points within 2% of the card's spread;
- the scorecard's scores are the rules' scores and the student's, for every user;
- a statistic output used alone is one card, never several rules (no interaction rule on one output alone);
- no interaction rule fires for 90% of the training users or more.

Every share, mean and band is recomputed here from the statistic values with plain numpy and Python.
"""

from __future__ import annotations

import functools
import math
import sys
from pathlib import Path

import numpy as np
import pytest

import rudi_explain as rx
from rudi_explain.rules.formula import formula_literals

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from planted import make_scenario  # noqa: E402

#: Users per case: what the issue measures on.
N_USERS = 2000
#: Thresholds of the "defined" literal (the scorecard's undefined band in rule form) are no band edge.
DEFINED_BELOW = -1e300

#: One case runs in the fast suite (about 10 s on a quiet machine: one explain()); the others are slow. Five
#: cases of three families (payments 1 and edits 1 passed too; dropped to keep make test under 20 minutes).
CASES = [
    pytest.param(("payments", 0), id="payments-0"),
    pytest.param(("edits", 0), id="edits-0", marks=pytest.mark.slow),
    # before issue 26's item 4, two interaction rules of this one fired for 90% of the training users or more
    pytest.param(("payments", 3), id="payments-3", marks=pytest.mark.slow),
    pytest.param(("planted", 0), id="planted-0", marks=pytest.mark.slow),
    pytest.param(("planted", 1), id="planted-1", marks=pytest.mark.slow),
]


@functools.cache
def _explained(name: str, seed: int):
    """(sequences, explanation) of one case, explained once for every test of this module."""
    if name == "payments":
        data = rx.datasets.make_payments(N_USERS, random_state=seed)
        seqs, scores = data.sequences(), data.risk
    elif name == "edits":
        data = rx.datasets.make_edits(N_USERS, random_state=seed)
        seqs, scores = data.sequences(), data.risk
    else:
        sc = make_scenario(seed, n_users=N_USERS)
        seqs = rx.Sequences(sc.events, user="user_id", time="ts", categorical=sc.categorical,
                            numerical=sc.numerical)
        scores = sc.scores
    exp = rx.explain(None, seqs, scores=scores, background=False, progress=False, random_state=seed)
    return seqs, exp


def _training(case):
    """The explanation, its training users' value matrix (over exp.literals' outputs) and teacher scores."""
    seqs, exp = _explained(*case)
    train = ~np.asarray(exp.is_test)
    V = exp.literals.values(seqs)
    y = exp.teacher_scores.to_numpy()
    return seqs, exp, V, train, y


def _band_of(card, value: float) -> int:
    """One user's band on a card, from its edges alone: -1 undefined, else how many edges the value is above."""
    if math.isnan(value):
        return -1 if card.undefined is not None else 0
    if card.linear is not None:
        return 0
    k = 0
    for e in card.edges:
        if value > e:
            k += 1
    return k


@pytest.mark.parametrize("case", CASES)
def test_each_user_is_in_exactly_one_band_of_each_card(case):
    seqs, exp, V, train, y = _training(case)
    sc = exp.scorecard
    assert sc is not None and len(sc.cards) >= 1
    idx = sc.band_index(V)
    for k, card in enumerate(sc.cards):
        mine = np.array([_band_of(card, float(v)) for v in V[:, card.column]])  # a loop over users, on purpose
        np.testing.assert_array_equal(idx[:, k], mine)
        assert mine.min() >= -1 and mine.max() <= card.n_bands - 1
        # every training user is counted in one band: the shares add up to 1
        shares = [b.share for b in card.bands] if card.linear is None else [card.linear.share]
        shares += [card.undefined.share] if card.undefined is not None else []
        assert sum(shares) == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize("case", CASES)
def test_no_two_neighbouring_bands_have_points_a_reader_cannot_tell_apart(case):
    # bands within 2% of their card's spread (largest points less smallest, the undefined band's included) are
    # one band: a planted threshold reads as two levels, not six bands of noise
    seqs, exp, V, train, y = _training(case)
    for card in exp.scorecard.cards:
        if card.linear is not None:
            continue
        points = [b.points for b in card.bands]
        every = points + ([card.undefined.points] if card.undefined is not None else [])
        spread = max(every) - min(every)
        for a, b in zip(points, points[1:]):
            assert abs(b - a) >= 0.02 * spread, (card.name, points)


@pytest.mark.parametrize("case", CASES)
def test_the_scorecards_scores_are_the_rules_and_the_students(case):
    seqs, exp, V, train, y = _training(case)
    card_scores = exp.scorecard.predict(V)
    np.testing.assert_allclose(card_scores, exp.rules.score(seqs), rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(card_scores, exp.student_scores.to_numpy(), rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("case", CASES)
def test_no_band_contradicts_its_gap_without_a_note(case):
    seqs, exp, V, train, y = _training(case)
    sc = exp.scorecard
    Vt, yt = V[train], y[train]
    mean, tol = float(yt.mean()), 1e-9 * max(1.0, float(np.abs(yt).max()))
    checked = 0
    for card in sc.cards:
        band = np.array([_band_of(card, float(v)) for v in Vt[:, card.column]])
        rows = [(-1, card.undefined)] if card.undefined is not None else []
        if card.linear is None:
            rows += list(enumerate(card.bands))
        for key, b in rows:
            members = band == key
            if not members.any():
                continue
            gap = float(yt[members].mean()) - mean
            assert b.teacher == pytest.approx(float(yt[members].mean()), rel=1e-9, abs=1e-9)
            if abs(b.points) > tol and abs(gap) > tol and (b.points > 0) != (gap > 0):
                checked += 1
                assert b.note, f"{card.name}: band {key} has points {b.points:+.3f} against its gap {gap:+.3f}"
        if card.linear is not None:
            d = ~np.isnan(Vt[:, card.column])
            x = np.clip(Vt[d, card.column], card.linear.lo, card.linear.hi)
            if d.sum() > 1 and x.std() > 0:
                corr = float(np.corrcoef(x, yt[d])[0, 1])
                if abs(card.linear.slope) > tol and abs(corr) > 1e-9 and (card.linear.slope > 0) != (corr > 0):
                    assert card.linear.note, f"{card.name}: slope {card.linear.slope:+.3g} against corr {corr:+.2f}"


def _rule_literals(exp) -> list[int]:
    """Indices of the literals the rules use (linear terms read no literal)."""
    used = set()
    for r in exp.rules.rules:
        if hasattr(r, "formula"):
            used.update(lit.index for lit in formula_literals(r.formula))
    return sorted(used)


@pytest.mark.parametrize("case", CASES)
def test_no_literal_or_band_edge_is_true_or_false_for_99_percent_of_the_training_users(case):
    seqs, exp, V, train, y = _training(case)
    table = exp.rules.literal_table()
    Vt = table.values(seqs)[train]
    n = int(train.sum())
    for i in _rule_literals(exp):
        t = float(table.thresholds[i])
        if t < DEFINED_BELOW:
            continue  # "the output is defined": the undefined band in rule form, exempt
        v = Vt[:, int(table.column[i])]
        true = int(np.sum(v[~np.isnan(v)] > t))
        assert 0.01 * n < true < 0.99 * n, f"{table.names[i]}: true for {true} of {n} training users"
    # the whole literal table too (the student's literals, refined ones, band edges)
    V_all = exp.literals.values(seqs)[train]
    for c, t in zip(exp.literals.column, exp.literals.thresholds):
        if t < DEFINED_BELOW:
            continue
        true = int(np.sum(V_all[:, c][~np.isnan(V_all[:, c])] > t))
        assert 0.01 * n < true < 0.99 * n
    for card in exp.scorecard.cards:
        v = V_all[:, card.column]
        d = v[~np.isnan(v)]
        for e in card.edges:
            below = int(np.sum(d <= e))
            assert 0.01 * d.size < below < 0.99 * d.size, f"{card.name}: edge {e} has {below} of {d.size} below"


@pytest.mark.parametrize("case", CASES)
def test_a_statistic_used_alone_is_one_card_and_no_interaction_fires_for_90_percent(case):
    seqs, exp, V, train, y = _training(case)
    sc = exp.scorecard
    columns = [c.column for c in sc.cards]
    assert len(columns) == len(set(columns))  # one card per output
    for r in sc.interactions:
        outputs = {int(sc.literals.column[lit.index]) for lit in formula_literals(r.formula)}
        assert len(outputs) >= 2, f"the interaction rule {r.text!r} reads one output: it belongs on a card"
        fires = r.fires(sc.literals.transform_values(V[train]))
        assert fires.mean() < 0.9, f"{r.text!r} fires for {fires.mean():.1%} of the training users"
    # the rule form: every rule on one output alone belongs to that output's card
    for r in exp.rules.rules:
        if hasattr(r, "formula"):
            outputs = {int(exp.rules.literal_table().column[lit.index]) for lit in formula_literals(r.formula)}
            assert len(outputs) >= 2 or outputs <= set(columns)


@pytest.mark.slow
def test_no_two_interaction_rules_nest_with_cancelling_weights():
    # make_scenario(1) at 1,500 users, random_state=1: the scorecard held "total at most 25 AND average more
    # than 17.5" at +1.18 and the same with "more than 18" at -1.16 (two large effects that net +0.02 for
    # nearly all their users). Checked on firing: no rule's training users are all another's with weights
    # that cancel (opposite signs, their sum under half the smaller).
    sc_ = make_scenario(1, n_users=1500)
    seqs = rx.Sequences(sc_.events, user="user_id", time="ts", categorical=sc_.categorical, numerical=sc_.numerical)
    exp = rx.explain(None, seqs, scores=sc_.scores, background=False, progress=False, random_state=1)
    sc = exp.scorecard
    train = ~np.asarray(exp.is_test)
    Z = sc.literals.transform_values(exp.literals.values(seqs)[train])
    fires = [r.fires(Z) for r in sc.interactions]
    assert len(fires) >= 2
    for i, a in enumerate(sc.interactions):
        for j, b in enumerate(sc.interactions):
            inside = fires[j].any() and not (fires[j] & ~fires[i]).any() and (fires[i] & ~fires[j]).any()
            cancel = a.weight * b.weight < 0 and abs(a.weight + b.weight) < 0.5 * min(abs(a.weight), abs(b.weight))
            assert not (inside and cancel), (a.text, a.weight, b.text, b.weight)
    # the thin slice the pair told apart reads as one rule of its own
    assert any("more than 17.5 and at most 18" in r.text for r in sc.interactions), [r.text for r in sc.interactions]
