"""The search's statistics steady over seeds (issue 26): the sample and its halves cut from a fixed order of the
user ids, and forms of one statistic that rank the users alike resolved to the simplest beyond the noise."""

from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

import rudi_explain as rx
from rudi_explain.search.filters import held_users, user_order
from rudi_explain.search.screened import SAME_RANKS, TIE_Z, ranks_alike, tied_with_best
from rudi_explain.search.statistics_search import StatisticsSearch
from rudi_explain.statistics import Statistic

SEEDS = range(5)


def _reference_alike(a: np.ndarray, b: np.ndarray) -> bool:
    """Spearman over the users both define, and the same users undefined but for at most 1%."""
    da, db = ~np.isnan(a), ~np.isnan(b)
    if np.mean(da != db) > 0.01:
        return False
    rho = spearmanr(a[da & db], b[da & db]).statistic
    return bool(rho >= SAME_RANKS)


@pytest.mark.parametrize("seed", SEEDS)
def test_ranks_alike_is_spearman_over_the_users_both_define(seed):
    rng = np.random.default_rng(seed)
    x = rng.lognormal(0, 1, 500)
    assert ranks_alike(x, np.log(x)) and ranks_alike(x, x ** 3)  # any increasing transform
    assert ranks_alike(x, -x) is False  # the opposite order
    for noise in (0.05, 0.2, 0.3, 0.5, 1.0):  # about both sides of the bar
        y = np.log(x) + rng.normal(0, noise, x.size)
        assert ranks_alike(x, y) == _reference_alike(x, y)
    gaps = x.copy()
    gaps[:50] = np.nan  # undefined for 10% of the users in one form only: not one statistic
    assert ranks_alike(x, gaps) is False and _reference_alike(x, gaps) is False
    both = gaps.copy()
    assert ranks_alike(gaps, both * 2)  # undefined for the same users: judged on the others


def _seqs(ids: np.ndarray, seed: int = 0) -> rx.Sequences:
    rng = np.random.default_rng(seed)
    users = np.repeat(ids, 3)
    events = pd.DataFrame({"user_id": users, "ts": pd.Timestamp("2024-01-01") + pd.to_timedelta(
        np.tile(np.arange(3), ids.size), unit="D"), "amount": rng.random(users.size)})
    return rx.Sequences(events, user="user_id", time="ts", numerical=["amount"])


def test_the_user_order_follows_the_ids_not_their_rows_nor_a_seed():
    ids = np.arange(1000, 1400)
    full = _seqs(ids)
    order = np.asarray(full.users)[user_order(full)]
    assert sorted(order) == sorted(ids) and len(set(order)) == ids.size
    # 80% of the users, as each seed's training users: those in both keep their order
    rng = np.random.default_rng(3)
    part = _seqs(np.sort(rng.choice(ids, 320, replace=False)))
    part_order = np.asarray(part.users)[user_order(part)]
    assert list(part_order) == [u for u in order if u in set(part_order)]
    # string ids too
    named = _seqs(np.array([f"u{i}" for i in ids], dtype=object))
    assert list(np.asarray(named.users)[user_order(named)]) == list(np.asarray(named.users)[user_order(named)])


def test_the_halves_of_two_runs_on_mostly_the_same_users_mostly_agree():
    """The first half of the order (the choosing users) of two 80% draws of the same users: the users in both
    draws are on the same side for at least 85% of them (a seed's permutation: about 50%)."""
    ids = np.arange(2000)
    agree = []
    for a, b in combinations(SEEDS, 2):
        draws = [np.sort(np.random.default_rng(s).choice(ids, 1600, replace=False)) for s in (a, b)]
        sides = []
        for d in draws:
            seqs = _seqs(d)
            first = set(np.asarray(seqs.users)[user_order(seqs)[: d.size // 2]])
            sides.append(first)
        shared = np.intersect1d(*draws)
        agree.append(np.mean([(u in sides[0]) == (u in sides[1]) for u in shared]))
    assert min(agree) >= 0.85


def test_the_held_out_users_of_the_search_do_not_depend_on_the_seed():
    seqs = _seqs(np.arange(1500))
    held = []
    for seed in SEEDS:
        search = StatisticsSearch(random_state=seed, screen_size=4000)
        search._seqs = seqs
        held.append(held_users(search, np.arange(1500)))
    assert all(np.array_equal(held[0], h) for h in held)
    assert held[0].size == 300 and np.all(np.diff(held[0]) > 0)  # a fifth, sorted


def _hours(seed: int, n_users: int = 800) -> tuple[rx.Sequences, np.ndarray]:
    """Users with 6-9 events; a rare kind ("c", 10% of the events) is mostly not the smallest: "the smallest x"
    and "the smallest x excluding c" rank the users alike but differ for more than 1% of them. The teacher
    reads the smallest x."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(6, 10, n_users)
    users = np.repeat(np.arange(n_users), counts)
    index = np.concatenate([np.arange(c) for c in counts])
    events = pd.DataFrame({"user_id": users, "ts": pd.Timestamp("2024-01-01") + pd.to_timedelta(index, unit="D"),
                           "x": rng.lognormal(3, 0.5, users.size),
                           "kind": rng.choice(["a", "b", "c"], users.size, p=[0.45, 0.45, 0.1])})
    seqs = rx.Sequences(events, user="user_id", time="ts", categorical=["kind"], numerical=["x"])
    v = np.asarray(Statistic.parse("Select(x) | Min").evaluate(seqs), dtype=float)
    return seqs, np.log(v) + rng.normal(0, 0.25, n_users)


def test_each_seed_keeps_the_same_statistics_on_mostly_the_same_users():
    """As explain() does: each seed searches its own 80% of the same users. Over the pairs of 5 seeds, on
    average at least 80% of the statistics are in common (by equivalence key), and "the smallest x" itself
    is kept in at least 4 of 5 seeds."""
    seqs, y = _hours(0)
    keys, plain = [], 0
    for seed in SEEDS:
        train = np.sort(np.random.default_rng(seed).permutation(seqs.n_users)[: int(0.8 * seqs.n_users)])
        found = StatisticsSearch(random_state=seed, n_stats=3, n_simulations=10, beam=2).fit(
            seqs.subset(train), y[train]).statistics_
        keys.append({st.key for st in found})
        plain += any(str(st) == "Select(x) | Min" for st in found)
    common = [0.5 * (len(a & b) / len(a) + len(a & b) / len(b)) for a, b in combinations(keys, 2)]
    assert np.mean(common) >= 0.8
    assert plain >= 4


def _reference_ties(errors: list[np.ndarray], before: np.ndarray, min_gain: float, z: float) -> list[int]:
    gains = [float(np.mean(before - e)) for e in errors]
    b = int(np.argmax(gains))
    out = []
    for i, e in enumerate(errors):
        d = e - errors[b]
        bar = 0.01 * abs(gains[b]) + min_gain + z * d.std(ddof=1) / np.sqrt(d.size)
        if d.mean() <= bar + 1e-9 and (gains[i] >= min_gain - 1e-9 or gains[b] < min_gain):
            out.append(i)
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_ties_with_the_best_are_those_within_the_noise_of_the_per_user_change(seed):
    rng = np.random.default_rng(seed)
    before = rng.exponential(1.0, 400)
    # candidates that remove different shares of each user's error, some alike, some clearly apart
    errors = [before * rng.uniform(lo, lo + 0.1, before.size) for lo in (0.5, 0.52, 0.6, 0.9, 0.995)]
    ties = tied_with_best(errors, before, 0.002)
    assert ties == _reference_ties(errors, before, 0.002, TIE_Z)
    best = int(np.argmax([np.mean(before - e) for e in errors]))
    assert best in ties and 3 not in ties  # the best always; one 40 points worse never
    assert 4 not in ties  # explains under min_gain where the best does not


def test_the_same_of_two_equal_candidates_is_chosen_whatever_the_draw_of_checking_users():
    """Two candidates that explain equally much on every user but for noise: whichever the draw of checking
    users makes the best, both are tied with it (so the search's fixed preference picks the same one), in at
    least 9 of 10 draws; a candidate clearly better is never tied with a worse one."""
    hits = 0
    for seed in range(10):
        rng = np.random.default_rng(seed)
        before = rng.exponential(1.0, 500)
        a, b = before * rng.uniform(0.5, 0.7, 500), before * rng.uniform(0.5, 0.7, 500)
        hits += tied_with_best([a, b], before, 0.002) == [0, 1]
        clear = before * rng.uniform(0.2, 0.3, 500)
        assert tied_with_best([a, clear], before, 0.002) == [1]
    assert hits >= 9
