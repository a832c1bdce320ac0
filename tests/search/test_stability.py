"""The search's statistics steady over seeds (issue 26): two forms of one statistic (the same aggregation of the
same column) that rank the users alike are resolved to the simplest, give or take the noise of the checking users."""

from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

import rudi_explain as rx
from rudi_explain.search.screened import SAME_RANKS, ranks_alike
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


def _hours(seed: int, n_users: int = 800) -> tuple[rx.Sequences, np.ndarray]:
    """Users with 6-9 events; a rare kind ("c", 4% of the events) is mostly not the smallest: "the smallest x"
    and "the smallest x excluding c" rank the users alike (Spearman about 0.97) but differ for more than 1% of
    them. The teacher reads both equally: which form explains more on the choosing users is luck."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(6, 10, n_users)
    users = np.repeat(np.arange(n_users), counts)
    index = np.concatenate([np.arange(c) for c in counts])
    events = pd.DataFrame({"user_id": users, "ts": pd.Timestamp("2024-01-01") + pd.to_timedelta(index, unit="D"),
                           "x": rng.lognormal(3, 0.5, users.size),
                           "kind": rng.choice(["a", "b", "c"], users.size, p=[0.48, 0.48, 0.04])})
    seqs = rx.Sequences(events, user="user_id", time="ts", categorical=["kind"], numerical=["x"])
    v = np.asarray(Statistic.parse("Select(x) | Min").evaluate(seqs), dtype=float)
    w = np.asarray(Statistic.parse("Select(x) | FilterBy(kind=c) | Min").evaluate(seqs), dtype=float)
    assert ranks_alike(v, w) and np.mean(v == w) < 0.99  # one statistic by its ranking, not by its values
    return seqs, 0.5 * np.log(v) + 0.5 * np.log(w) + rng.normal(0, 0.25, n_users)


@pytest.mark.slow
def test_each_seed_keeps_the_same_statistics_on_mostly_the_same_users():
    """As explain() does: each seed searches its own 80% of the same users. "The smallest x" itself (not the
    filtered form that ranks the users alike) is kept in at least 4 of 5 seeds, and over the pairs of seeds
    at least 80% of the statistics are in common on average (by equivalence key). Without the rule: 60% in
    common, the filtered form kept in 1 of 5 seeds."""
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

