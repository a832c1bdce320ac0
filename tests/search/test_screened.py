"""The screened search's forms: each statistic in its simplest spelling, and forms that agree on nearly every user
resolved to the simplest whatever the sample (issue 26, stability over seeds)."""

import numpy as np
import pandas as pd
import pytest

import rudi_explain as rx
from rudi_explain.search.catalog import complexity, short_catalog
from rudi_explain.search.screened import paired_loss, simplest_spelling
from rudi_explain.search.statistics_search import StatisticsSearch
from rudi_explain.statistics import Schema, SortBy, Statistic

SEEDS = range(5)


@pytest.fixture(scope="module")
def payments():
    return rx.datasets.make_payments(300, random_state=1).sequences()


def test_the_simplest_spelling_has_the_same_key_and_values_and_is_never_deeper(payments):
    schema = Schema.of(payments)
    catalog = short_catalog(payments, "readable", 3)
    respelled = 0
    for stat in catalog:
        plain = simplest_spelling(stat, schema)
        assert plain.key == stat.key
        assert complexity(plain)[:2] <= complexity(stat)[:2]
        if plain is not stat:
            respelled += 1
            a = np.asarray(stat.evaluate(payments), dtype=float)
            b = np.asarray(plain.evaluate(payments), dtype=float)
            assert np.array_equal(a, b, equal_nan=True)
    assert respelled >= 2  # the largest and the smallest amount at least


@pytest.mark.parametrize("order, plain", [("desc", "Max"), ("asc", "Min")])
def test_the_first_value_sorted_by_itself_reads_as_the_largest_or_smallest(payments, order, plain):
    stat = Statistic.parse(f"Select(amount) | SortBy(amount, {order}) | First")
    assert str(simplest_spelling(stat, Schema.of(payments))) == f"Select(amount) | {plain}"
    other = Statistic.parse(f"Select(hour) | SortBy(amount, {order}) | First")  # no simpler spelling
    assert simplest_spelling(other, Schema.of(payments)) is other
    assert any(isinstance(op, SortBy) for op in other.operators)


def test_paired_loss_is_the_mean_difference_and_its_standard_error():
    rng = np.random.default_rng(0)
    a, b = rng.random(400), rng.random(400)
    lost, se = paired_loss(a, b)
    d = a - b
    assert lost == pytest.approx(d.mean(), abs=1e-8)
    assert se == pytest.approx(d.std(ddof=1) / np.sqrt(d.size), abs=1e-8)
    assert paired_loss(a, a) == (0.0, 0.0)


def _few_events(seed: int, n_users: int = 900) -> rx.Sequences:
    """Users with 1-5 events (a handful with more), as CDNOW's customers: "the largest amount of the first 5
    events" equals "the largest amount" for nearly every user."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, 6, n_users)
    many = rng.choice(n_users, n_users // 200, replace=False)
    counts[many] = rng.integers(6, 12, many.size)
    users = np.repeat(np.arange(n_users), counts)
    index = np.concatenate([np.arange(c) for c in counts])  # each user's events in time order
    ts = pd.Timestamp("2024-01-01") + pd.to_timedelta(index * 20 + rng.integers(0, 20, users.size), unit="D")
    amount = rng.lognormal(3, 1, users.size).round(2)
    late = index >= 5
    amount[late] *= 20  # the few users with more than 5 events: their later amounts are the largest
    events = pd.DataFrame({"user_id": users, "ts": ts, "amount": amount,
                           "kind": rng.choice(["a", "b"], users.size)})
    return rx.Sequences(events, user="user_id", time="ts", categorical=["kind"], numerical=["amount"])


def test_a_form_equal_on_nearly_every_user_resolves_to_the_simplest_whatever_the_seed():
    """A teacher of the largest amount of the first 5 events, which equals the largest amount for 99.5% of the
    users: kept as "the largest amount" in at least 4 of 5 seeds, not as the deeper form nor as a longer
    spelling of it."""
    plain, deep = Statistic.parse("Select(amount) | Max"), Statistic.parse("Select(amount) | Top(5) | Max")
    hits = 0
    for seed in SEEDS:
        seqs = _few_events(seed)
        v = np.asarray(deep.evaluate(seqs), dtype=float)
        y = np.log(v) + np.random.default_rng(seed).normal(0, 0.3, seqs.n_users)
        kept = StatisticsSearch(random_state=seed, n_stats=2, n_simulations=10, beam=1).fit(seqs, y).statistics_
        hits += any(str(st) == str(plain) for st in kept)
    assert hits >= 4


@pytest.mark.slow  # 30 searches: about 13 s of CPU
def test_a_pure_noise_target_on_a_small_sample_keeps_a_statistic_in_few_seeds():
    """On a small sample the beam's runners-up are checked when the best fails (search.screened.SMALL_SAMPLE):
    that must not let noise through. A target of random values over 300 users keeps a statistic in at most
    3 of 30 seeds (2 measured, 1.5% of 200 seeds over the wage panel; the bar is ~5%)."""
    seqs = rx.datasets.make_payments(300, random_state=1).sequences()
    hits = 0
    for seed in range(30):
        y = np.random.default_rng(seed).normal(size=seqs.n_users)
        hits += len(StatisticsSearch(random_state=seed, n_stats=3, n_simulations=10).fit(seqs, y).statistics_) > 0
    assert hits <= 3
