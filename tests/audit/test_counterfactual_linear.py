"""The counterfactual moves a linear card's value (issue 26, left-out 2).

A linear card adds ``slope x (clip(value, lo, hi) - lo)``: the counterfactual proposes the smallest move of
the value that reaches the target on its own, clipped to ``lo..hi``, and names it on the card by its points.
Checked against an independent reference: the proposed value put into the user's statistic values, scored by
``exp.rules.score`` (the rules' own scoring of values), and the needed value against the line solved by hand.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scorecard_swap import with_scorecard
from tiny import tiny_payments

from rudi_explain.rules.scorecard import Scorecard
from rudi_explain.rules.scorecard_cards import Linear
from rudi_explain.rules.values import points_text

SEEDS = (3, 4, 5)


def linear_on_card(a, k, slope_sign=1.0):
    """``a`` with card ``k`` made linear over the 10th to 90th percentile of its training values."""
    sc = a.scorecard
    card = sc.cards[k]
    V = a.result.values
    v = V[~a.is_test, card.column]
    lo, hi = (float(x) for x in np.nanpercentile(v, [10, 90]))
    hi = max(hi, lo + 1.0)
    lin = card.with_(edges=(), bands=(), linear=Linear(slope_sign * 3.0 / (hi - lo), lo, hi, -0.1))
    sc2 = Scorecard([lin if c is card else c for c in sc.cards], sc.interactions, sc.base, sc.literals)
    return with_scorecard(a, sc2), lin


@pytest.fixture(scope="module")
def cases():
    out = []
    for seed in SEEDS:
        a = tiny_payments(300, random_state=seed)
        for k in range(len(a.scorecard.cards)):
            for sign in (1.0, -1.0):
                out.append(linear_on_card(a, k, sign))
    return out


def test_a_linear_cards_proposed_value_gives_the_claimed_score(cases):
    moved = 0
    for b, lin in cases:
        V = b.result.values
        train = ~b.is_test
        s_train = b.student_scores.to_numpy()[train]
        for uid in b.sequences.users[::20]:
            u = b.user(uid)
            for direction in ("below", "above"):
                cf = u.counterfactual(50, direction, edit_events=False)
                rows = cf.changes[cf.changes["linear"].astype(bool)] if len(cf.changes) else cf.changes
                if not cf.found or not len(rows):
                    continue
                # the reference: the proposed values put into the user's statistics, scored by the rules
                x = V[u.index].copy()
                for r in cf.changes.itertuples():
                    x[int(r.output)] = r.value_needed
                score = float(b.rules.score(b.rules.matrix(x[None, :]))[0])
                assert score == pytest.approx(cf.new_score, rel=1e-12, abs=1e-12)
                target = float(np.percentile(s_train, 50))
                assert (score < target) if direction == "below" else (score > target)
                r = rows.iloc[0]
                assert int(r["output"]) == lin.column and lin.linear.lo <= r["value_needed"] <= lin.linear.hi
                # the smallest move: the line solved by hand, just past the target (a count: a whole number)
                L = b.literals
                w = lin.linear.slope
                now = min(max(float(V[u.index, lin.column]), lin.linear.lo), lin.linear.hi)
                aim = now + (target - float(b.student_scores.iloc[u.index])) / w
                if cf.n_literals == 0 and len(cf.changes) == 1:
                    whole = L.output_kind[lin.column] == "count"
                    assert abs(r["value_needed"] - aim) <= (1.0 if whole else 1e-9 * max(1.0, abs(aim)))
                    # one step less far would not reach the target
                    back = r["value_needed"] + (1.0 if whole else 0.0) * (1 if r["value_needed"] < now else -1)
                    if whole:
                        x[lin.column] = back
                        s_back = float(b.rules.score(b.rules.matrix(x[None, :]))[0])
                        assert not ((s_back < target) if direction == "below" else (s_back > target))
                # named on the card the way a band is: its points now and needed, as the card computes them
                pts = b.scorecard.cards[next(j for j, c in enumerate(b.scorecard.cards)
                                             if c.column == lin.column)].points(
                    np.array([V[u.index, lin.column], r["value_needed"]]))
                want = (f"{points_text(pts[0])} points", f"{points_text(pts[1])} points")
                assert (r["band_now"], r["band_needed"]) == want
                assert f"on its linear card, from {r['band_now']} to {r['band_needed']}" in cf.summary()
                moved += 1
    assert moved >= 8, moved


def test_a_target_past_the_cards_bound_is_not_reached_by_the_card_alone(cases):
    """Past lo or hi the card adds nothing: a move there is clipped to the bound, never beyond."""
    seen = 0
    for b, lin in cases:
        for uid in b.sequences.users[::40]:
            cf = b.user(uid).counterfactual(99 if lin.linear.slope > 0 else 1, "above", max_literals=1,
                                            edit_events=False)
            for r in cf.changes.itertuples():
                if r.linear:
                    assert lin.linear.lo <= r.value_needed <= lin.linear.hi
                    seen += 1
            if cf.found:
                assert cf.new_score > cf.target_score
            assert not math.isnan(cf.score)
    assert seen >= 1
