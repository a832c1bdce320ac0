"""Neighbouring bands a reader cannot tell apart become one (rudi_explain.rules.scorecard_fuse)."""

import numpy as np
import pandas as pd
import pytest

from rudi_explain.rules.literals import Literals
from rudi_explain.rules.scorecard import Scorecard
from rudi_explain.rules.scorecard_cards import Band, Card
from rudi_explain.rules.scorecard_fuse import FUSE_SHARE, fuse_near_bands, near_edges


def _card(points, edges, undefined=None):
    return Card(column=0, name="x", edges=tuple(edges), bands=tuple(Band(p) for p in points),
                undefined=None if undefined is None else Band(undefined))


def test_near_edges_are_those_between_bands_within_a_share_of_the_spread():
    card = _card([-0.197, -0.201, -0.210, -0.223, 0.881, 0.886], [1, 2, 3, 4, 5])
    # spread 1.109: 2% is 0.0222; the steps are 0.004, 0.009, 0.013, 1.104, 0.005
    assert near_edges(card) == [0, 1, 2, 4]
    assert near_edges(card, share=0.01) == [0, 1, 4]
    # the undefined band widens the spread it is judged by
    assert near_edges(_card([0.0, 0.05], [1]), share=0.02) == []
    assert near_edges(_card([0.0, 0.05], [1], undefined=5.0), share=0.02) == [0]
    assert near_edges(_card([0.3, 0.3], [1])) == []  # all equal: nothing to read apart, nothing to fuse


@pytest.mark.parametrize("seed", range(4))
def test_a_threshold_cut_into_many_bands_reads_as_its_two_levels_with_the_band_means(seed):
    # y is a step at 50 plus a little noise; the card starts cut at 10, 30, 50, 70 and 90, refitted: its
    # bands below and above 50 are near-equal. Fused, it has the one edge 50, and (one card, no rule) its points
    # are each band's mean teacher score less the mean over all users, as pandas computes them.
    rng = np.random.default_rng(seed)
    v = rng.uniform(0, 100, 4000)
    y = np.where(v > 50, 1.0, -0.5) + rng.normal(0, 0.05, v.size)
    V = v[:, None]
    table = Literals([0, 0, 0, 0, 0], [10.0, 30.0, 50.0, 70.0, 90.0], ["x"])
    card = Card(column=0, name="x", edges=(10.0, 30.0, 50.0, 70.0, 90.0), bands=tuple(Band(0.0) for _ in range(6)))
    fitted = Scorecard([card], [], 0.0, table).refit(V, y, monotone=False)
    assert near_edges(fitted.cards[0], FUSE_SHARE)  # noise left near-equal neighbours
    fused = fuse_near_bands(fitted, V, y)
    (one,) = fused.cards
    assert one.edges == (50.0,)
    frame = pd.DataFrame({"band": np.where(v > 50, 1, 0), "y": y})
    expected = frame.groupby("band")["y"].mean() - y.mean()
    np.testing.assert_allclose([b.points for b in one.bands], expected.to_numpy(), atol=1e-4)
    np.testing.assert_allclose(fused.predict(V), frame.groupby("band")["y"].transform("mean"), atol=1e-4)


def test_a_scorecard_with_no_near_bands_is_returned_as_it_is():
    rng = np.random.default_rng(0)
    v = rng.uniform(0, 100, 2000)
    y = np.select([v <= 30, v <= 60], [-1.0, 0.0], 1.0) + rng.normal(0, 0.01, v.size)
    table = Literals([0, 0], [30.0, 60.0], ["x"])
    card = Card(column=0, name="x", edges=(30.0, 60.0), bands=(Band(0.0), Band(0.0), Band(0.0)))
    fitted = Scorecard([card], [], 0.0, table).refit(v[:, None], y)
    assert fuse_near_bands(fitted, v[:, None], y) is fitted


@pytest.mark.parametrize("seed", range(3))
def test_each_card_keeps_the_form_it_was_fitted_in(seed):
    # The teacher falls then rises across "x", a card fitted free (its validation users chose so), and steps up
    # across "u", fitted monotone; each is cut finer than its levels, its near-equal points as a fit left them.
    # Fused, "x" is still free, its dip kept (a refit choosing forms afresh, with no validation users, can make
    # it monotone and flatten the dip), "u" still monotone.
    rng = np.random.default_rng(seed)
    n = 6000
    x, u = rng.uniform(0, 90, n), rng.uniform(0, 90, n)
    y = np.select([x <= 30, x <= 60], [0.0, -1.0], 1.0) + np.where(u > 45, 0.8, 0.0) + rng.normal(0, 0.05, n)
    V = np.column_stack([x, u])
    edges = (15.0, 30.0, 45.0, 60.0, 75.0)
    table = Literals([0] * 5 + [1] * 5, list(edges) * 2, ["x", "u"])
    near_x = (0.0, 0.001, -1.0, -1.002, 1.0, 1.001)
    near_u = (0.0, 0.001, 0.002, 0.8, 0.801, 0.803)
    cards = [Card(column=0, name="x", edges=edges, bands=tuple(Band(p) for p in near_x), monotone=False),
             Card(column=1, name="u", edges=edges, bands=tuple(Band(p) for p in near_u), monotone=True)]
    fused = {c.name: c for c in fuse_near_bands(Scorecard(cards, [], 0.0, table), V, y).cards}
    assert fused["x"].edges == (30.0, 60.0) and not fused["x"].monotone
    assert fused["u"].edges == (45.0,) and fused["u"].monotone
    # two cards and no rule, each variable independent of the other: each card's steps are its bands' mean
    # teacher score steps, as pandas computes them
    frame = pd.DataFrame({"bx": np.digitize(x, [30.0, 60.0], right=True), "bu": (u > 45).astype(int), "y": y})
    px = [b.points for b in fused["x"].bands]
    assert px[1] < px[0] < px[2]
    np.testing.assert_allclose(np.diff(px), np.diff(frame.groupby("bx")["y"].mean().to_numpy()), atol=0.05)
    pu = [b.points for b in fused["u"].bands]
    np.testing.assert_allclose(pu[1] - pu[0], np.diff(frame.groupby("bu")["y"].mean().to_numpy())[0], atol=0.05)
