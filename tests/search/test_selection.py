"""Forward selection: statistics kept additively, and those whose effect differs by the strata of the first kept."""

import numpy as np
import pytest

import rudi_explain as rx
from rudi_explain.search.catalog import ColumnScreen, StepModel
from rudi_explain.search.selection import (
    interaction_candidates,
    median_strata,
    split_column,
    stratified_gains,
)
from rudi_explain.search.statistics_search import StatisticsSearch

SEEDS = range(5)
FIRST = "Select(channel) | Mean"
SECOND = "Select(hour) | Mean"
PLAIN = ("Select(*) | Count", "Select(amount) | Mean", "Select(hour) | Max")


@pytest.fixture(scope="module")
def seqs():
    return rx.datasets.make_payments(1000, random_state=3).sequences()


def _z(seqs, text: str) -> np.ndarray:
    v = np.asarray(rx.Statistic.parse(text).evaluate(seqs), dtype=float).reshape(seqs.n_users, -1)[:, 0]
    v = np.nan_to_num(v, nan=float(np.nanmean(v)))
    return (v - v.mean()) / v.std()


def _flipped(seqs, seed: int) -> np.ndarray:
    """SECOND's effect has one sign above FIRST's median and the other below: additively it explains
    next to nothing; split by FIRST's strata it explains as much as FIRST."""
    a, b = _z(seqs, FIRST), _z(seqs, SECOND)
    side = np.where(a > np.median(a), 1.0, -1.0)
    return a + b * side + np.random.default_rng(seed).normal(0, 0.3, seqs.n_users)


def _screen(seqs, texts) -> ColumnScreen:
    return ColumnScreen.build([rx.Statistic.parse(t) for t in texts], seqs, set())


def _kept(search: StatisticsSearch) -> set[str]:
    return {str(st) for st in search.statistics_}


# ------------------------------------------------------------------ the parts
def test_split_column_is_the_column_on_each_stratum_and_the_first_bin_on_the_other(seqs):
    column = _screen(seqs, [SECOND])
    strata = np.random.default_rng(0).random(seqs.n_users) < 0.4
    split = split_column(column, strata)
    assert split.owners == column.owners * 2
    for j, on in ((0, strata), (1, ~strata)):
        assert np.array_equal(split.bins[on, j], column.bins[on, 0])
        assert not split.bins[~on, j].any() and not split.values[~on, j].any()
        assert np.array_equal(split.values[on, j], column.values[on, 0])


def test_a_step_model_of_the_split_column_fits_each_stratum_on_its_own(seqs):
    """Next to the stratum's indicator, the split column's model predicts each user as a step model fitted
    on the user's stratum alone (a per-stratum reference)."""
    column = _screen(seqs, [SECOND])
    strata = _z(seqs, FIRST) > 0
    y = _flipped(seqs, 0)
    indicator = ColumnScreen(column.owners, strata[:, None].astype(np.uint8), np.zeros_like(column.values))
    joint = ColumnScreen.join([indicator, split_column(column, strata)], seqs.n_users)
    predicted = StepModel(joint.bins, joint.values, y).predict(joint.bins, joint.values)
    for on in (strata, ~strata):
        alone = StepModel(column.bins[on], column.values[on], y[on]).predict(column.bins[on], column.values[on])
        # The whisper of ridge differs with the users: equal up to it.
        assert np.allclose(predicted[on], alone, atol=1e-3)


def test_median_strata_splits_near_the_median_or_not_at_all(seqs):
    rows = np.arange(seqs.n_users)
    for text in PLAIN:
        strata = median_strata(_screen(seqs, [text]), rows)
        assert strata is not None and 0.1 <= strata.mean() <= 0.9
    constant = ColumnScreen(_screen(seqs, [FIRST]).owners, np.zeros((seqs.n_users, 1), np.uint8),
                            np.zeros((seqs.n_users, 1, 2), np.float32))
    assert median_strata(constant, rows) is None


def test_stratified_gains_see_an_effect_that_flips_sign_and_additive_gains_do_not(seqs):
    screen = _screen(seqs, [SECOND, "Select(amount) | Max"])
    rows = np.arange(seqs.n_users)
    for seed in SEEDS:
        y = _flipped(seqs, seed)
        residual = y - _z(seqs, FIRST)
        strata = _z(seqs, FIRST) > np.median(_z(seqs, FIRST))
        total = float(y.var())
        additive = screen.gains(residual - residual.mean(), rows, total)
        split = stratified_gains(screen, residual, rows, strata, total)
        assert additive[0] < 0.05 < split[0]  # the flipped statistic, half the variance split
        assert split[1] < 0.02  # an unrelated one stays near nothing either way


def test_interaction_candidates_skip_what_is_taken_and_give_one_column_per_statistic(seqs):
    screen = _screen(seqs, [SECOND, "Select(amount) | Max", "Select(hour) | Min", "Select(card_type) | Mean"])
    rows = np.arange(seqs.n_users)
    y = _flipped(seqs, 0)
    strata = _z(seqs, FIRST) > np.median(_z(seqs, FIRST))
    order = interaction_candidates(screen, y - _z(seqs, FIRST), rows, strata, float(y.var()), 0.002, 10, set(),
                                   lambda st: (st.depth,))
    assert order and str(screen.owners[order[0]][0]) == SECOND
    assert len({screen.owners[i][0] for i in order}) == len(order)
    taken = {(SECOND, 0)}
    order = interaction_candidates(screen, y - _z(seqs, FIRST), rows, strata, float(y.var()), 0.002, 10, taken,
                                   lambda st: (st.depth,))
    assert all((str(screen.owners[i][0]), screen.owners[i][1]) not in taken for i in order)
    assert len(interaction_candidates(screen, y - _z(seqs, FIRST), rows, strata, float(y.var()), 0.002, 1, set(),
                                      lambda st: (st.depth,))) <= 1


# ------------------------------------------------------------------ the search
@pytest.mark.slow
def test_the_search_keeps_a_statistic_whose_effect_flips_between_strata(seqs):
    """Additively the second statistic explains nothing: without the split form the search kept only
    the first in seeds 0-2 (check R^2 0.48); now it keeps both in at least 4 of 5 seeds."""
    hits = 0
    for seed in SEEDS:
        search = StatisticsSearch(random_state=seed, n_stats=4).fit(seqs, _flipped(seqs, seed))
        kept = _kept(search)
        hits += FIRST in kept and SECOND in kept
    assert hits >= 4


#: A lighter search for the sum of plain aggregates (55 s of the suite at the defaults on 1,000 users):
#: the plain aggregates are found by the catalog at depth 3 with one candidate deepened, the last
#: MCTS try (after they are kept, against noise) stays short, and the idle-filter pass has no filter
#: to judge. Measured on 700 users over seeds 0-4: all 3 kept in every seed (the defaults on 1,000:
#: all 3 in every seed too).
LIGHT = {"max_depth": 3, "beam": 1, "n_simulations": 10, "n_contenders": 5, "polish_rounds": 0,
         "drop_idle_filters": False}


@pytest.fixture(scope="module")
def small_seqs():
    return rx.datasets.make_payments(700, random_state=3).sequences()


@pytest.mark.slow
def test_the_search_keeps_most_of_a_sum_of_plain_aggregates(small_seqs):
    """A teacher that is a sum of k plain aggregates: at least k - 1 of them kept in at least 4 of 5 seeds
    (n_stats above k: the search has to stop by itself, and a blend such as the sum of amounts,
    count x mean, must not stand in for two of them)."""
    seqs = small_seqs
    k = len(PLAIN)
    hits = 0
    for seed in SEEDS:
        y = sum(_z(seqs, t) for t in PLAIN) + np.random.default_rng(seed).normal(0, 0.3, seqs.n_users)
        kept = _kept(StatisticsSearch(random_state=seed, n_stats=6, **LIGHT).fit(seqs, y))
        hits += sum(t in kept for t in PLAIN) >= k - 1
    assert hits >= 4
