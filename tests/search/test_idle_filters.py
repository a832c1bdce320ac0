"""Idle filters: a filter stays only if dropping it changes what the statistic explains on held-out users."""

import numpy as np
import pytest
from scipy.stats import spearmanr

import rudi_explain as rx
from rudi_explain.search.filters import ALIKE, drop_idle_filters, same_ranking, without_each_filter
from rudi_explain.search.statistics_search import StatisticsSearch

SEEDS = range(5)
OTHER = "Select(country) | Mean"  # a second statistic in the model, as a search leaves several


@pytest.fixture(scope="module")
def seqs():
    return rx.datasets.make_payments(1500, random_state=1).sequences()


def _z(v: np.ndarray) -> np.ndarray:
    v = np.arcsinh(np.nan_to_num(np.asarray(v, dtype=float).reshape(len(v), -1)[:, -1]))
    return (v - v.mean()) / v.std()


def _target(seqs, truth: str, seed: int) -> np.ndarray:
    """The truth, a second planted term and noise."""
    truth_values = _z(rx.Statistic.parse(truth).evaluate(seqs))
    other = _z(rx.Statistic.parse(OTHER).evaluate(seqs))  # the share of the last country
    return truth_values + 0.5 * other + np.random.default_rng(seed).normal(0, 0.5, seqs.n_users)


def _after_drop(seqs, chosen: str, truth: str, seed: int) -> str:
    """What ``chosen`` becomes, judged on 600 held-out users after fitting on 600 others."""
    y = _target(seqs, truth, seed)
    order = np.random.default_rng(100 + seed).permutation(seqs.n_users)
    kept, _ = drop_idle_filters([rx.Statistic.parse(chosen), rx.Statistic.parse(OTHER)], seqs, y, order[:600],
                                order[600:1200])
    return str(kept[0])


@pytest.mark.parametrize("chosen", [
    "Select(amount) | FilterBy(merchant_category=pharmacy) | Sum",  # "excluding pharmacy" (6% of payments)
    "Select(amount) | RetainBy(country=home) | Sum",  # "at home" (95% of payments)
    "Select(amount) | RetainBy(country=home) | FilterBy(merchant_category=pharmacy) | Sum",  # both idle
])
def test_a_filter_the_target_does_not_need_is_dropped_in_most_seeds(seqs, chosen):
    truth = "Select(amount) | Sum"
    got = [_after_drop(seqs, chosen, truth, seed) for seed in SEEDS]
    assert sum(g == truth for g in got) >= 4, got


@pytest.mark.parametrize("truth", [
    "Select(amount) | RetainBy(merchant_category=gambling) | Sum",
    "Select(amount) | RetainBy(channel=atm) | FilterBy(country=home) | Sum",  # foreign ATM cash: both needed
    "Select(amount) | FilterBy(channel=atm) | Sum",
])
def test_a_filter_the_target_needs_stays_in_most_seeds(seqs, truth):
    got = [_after_drop(seqs, truth, truth, seed) for seed in SEEDS]
    assert sum(g == truth for g in got) >= 4, got


@pytest.mark.parametrize("truth", [
    "Select(*) | RetainBy(country=other) | Count",  # the number of events abroad: "the number of events" is another
    "Select(amount) | RetainBy(channel=atm) | FilterBy(country=home) | Sum",  # foreign ATM cash, not all foreign spend
])
def test_a_weak_filter_whose_drop_makes_another_statistic_stays_in_most_seeds(seqs, truth):
    # A small part of the target (payments seed 2 of bench_real: the planted share of foreign payments,
    # picked as the number of events abroad, explained 0.005). Its filter cannot clear tolerance plus two
    # standard errors on 600 users, but the form without it ranks the users otherwise: it may lose
    # tolerance and no more (1 and 3 of these 10 seeds kept it when the noise went to every drop).
    gambling = "Select(amount) | RetainBy(merchant_category=gambling) | Sum"
    kept = 0
    for seed in range(10):
        y = _z(rx.Statistic.parse(gambling).evaluate(seqs)) + 0.1 * _z(rx.Statistic.parse(truth).evaluate(seqs)) \
            + np.random.default_rng(seed).normal(0, 0.5, seqs.n_users)
        order = np.random.default_rng(100 + seed).permutation(seqs.n_users)
        got, _ = drop_idle_filters([rx.Statistic.parse(truth), rx.Statistic.parse(gambling)], seqs, y,
                                   order[:600], order[600:1200])
        kept += str(got[0]) == truth
    assert kept >= 6


def test_same_ranking_is_the_lowest_spearman_correlation_of_the_outputs(seqs):
    def reference(a, b):  # scipy's, undefined values put below every value
        a, b = (np.where(np.isnan(v), np.nanmin(v) - 1, v) for v in (a, b))
        return min(spearmanr(a[:, k], b[:, k])[0] for k in range(a.shape[1]))

    stats = ["Select(amount) | Sum", "Select(amount) | FilterBy(merchant_category=pharmacy) | Sum",
             "Select(*) | Count", "Select(*) | RetainBy(country=other) | Count",
             "Select(amount) | RetainBy(channel=atm) | Mean"]  # undefined without ATM payments
    values = {t: np.asarray(rx.Statistic.parse(t).evaluate(seqs), dtype=float).reshape(seqs.n_users, -1) for t in stats}
    for a in stats:
        for b in stats:
            assert same_ranking(values[a], values[b]) == pytest.approx(reference(values[a], values[b]), abs=1e-9)
    assert same_ranking(values[stats[0]], values[stats[1]]) >= ALIKE  # "excluding pharmacy": the same to a reader
    assert same_ranking(values[stats[2]], values[stats[3]]) < ALIKE  # "abroad": another statistic
    share = np.asarray(rx.Statistic.parse("Select(country) | Mean").evaluate(seqs), dtype=float)
    assert same_ranking(share, share) == pytest.approx(1.0)
    assert same_ranking(share, values[stats[0]]) == 0.0  # different outputs
    assert same_ranking(np.ones(seqs.n_users), values[stats[0]]) == 0.0  # constant


def test_only_the_idle_one_of_two_filters_goes(seqs):
    # Gambling spend is the truth; "at home" (95% of payments) is the idle part of the chosen statistic.
    truth = "Select(amount) | RetainBy(merchant_category=gambling) | Sum"
    chosen = "Select(amount) | RetainBy(merchant_category=gambling) | RetainBy(country=home) | Sum"
    got = [_after_drop(seqs, chosen, truth, seed) for seed in SEEDS]
    assert sum(g == truth for g in got) >= 4, got


def test_what_is_tried_and_what_is_kept_as_given(seqs):
    stat = rx.Statistic.parse("Select(amount) | RetainBy(channel=atm) | FilterBy(country=home) | Sum")
    assert [str(s) for s in without_each_filter(stat, seqs)] == [
        "Select(amount) | FilterBy(country=home) | Sum", "Select(amount) | RetainBy(channel=atm) | Sum"]
    # GroupBy(channel) is not allowed beside RetainBy(channel=...): dropping the filter frees it, both are tried.
    grouped = rx.Statistic.parse("Select(amount) | FilterBy(country=home) | GroupBy(channel) | Sum")
    assert [str(s) for s in without_each_filter(grouped, seqs)] == ["Select(amount) | GroupBy(channel) | Sum"]
    truth = "Select(amount) | Sum"
    idle = rx.Statistic.parse("Select(amount) | FilterBy(merchant_category=pharmacy) | Sum")
    y = _target(seqs, truth, 0)
    order = np.random.default_rng(0).permutation(seqs.n_users)
    kept, dropped = drop_idle_filters([idle], seqs, y, order[:600], order[600:], keep={idle.key})
    assert kept == [idle] and dropped == []  # a statistic the user gave is kept as given
    again = drop_idle_filters([idle], seqs, y, order[:600], order[600:])
    assert again == drop_idle_filters([idle], seqs, y, order[:600], order[600:])  # deterministic
    assert again[1] == [(idle, rx.Statistic.parse(truth))]
    # Its filter-free form already chosen: the statistic goes altogether.
    kept, dropped = drop_idle_filters([rx.Statistic.parse(truth), idle], seqs, y, order[:600], order[600:])
    assert kept == [rx.Statistic.parse(truth), None] and dropped == [(idle, None)]


def test_the_search_keeps_a_given_statistic_with_its_filter(seqs):
    # The target is the total amount; the user's statistic leaves pharmacy out, which changes little, and
    # is preferred among the statistics that explain about as much. The search leaves it as given.
    y = _target(seqs, "Select(amount) | Sum", 0)
    idle = "Select(amount) | FilterBy(merchant_category=pharmacy) | Sum"
    search = StatisticsSearch(n_stats=2, given_statistics=[idle], random_state=0).fit(seqs, y)
    assert search.given_ == [rx.Statistic.parse(idle)]
    assert all(chosen != rx.Statistic.parse(idle) for chosen, _ in search.dropped_filters_)
