"""MCTS-SG and the baselines: planted answers, determinism, diversity, cancel, errors."""

import numpy as np
import pandas as pd
import pytest

import rudi_explain as rx
from rudi_explain.correlation import multiple_correlation
from rudi_explain.search.statistics_search import SearchCancelled, SearchProgress, StatisticsSearch, single_aggregations
from rudi_explain.statistics import Schema


@pytest.fixture(scope="module")
def payments():
    demo = rx.datasets.make_payments(1500, random_state=2)
    return demo, demo.sequences()


def corr(a, b):
    ok = np.isfinite(a) & np.isfinite(b)
    return abs(np.corrcoef(a[ok], b[ok])[0, 1])


@pytest.mark.slow
def test_finds_the_only_signal_at_any_seed(payments):
    # A depth-3 statistic with two filters is the whole target: the catalog
    # finds its depth-2 parts and one-edit deepening completes it. A rate over
    # seeds, not one seed's luck.
    _, seqs = payments
    planted = rx.Statistic.parse("Select(amount) | RetainBy(channel=atm) | FilterBy(country=home) | Sum")
    target = planted.evaluate(seqs)
    hits = _hits_over_seeds(seqs, planted, lambda seed: target, max_depth=3)
    assert hits >= 3, hits


def _hits_over_seeds(seqs, planted, target_of, max_depth: int, seeds=(0, 1, 2, 3)) -> int:
    """In how many seeds the one statistic searched for ``target_of(seed)`` is ``planted``
    (the same key, or |r| > 0.99 with its values); each must be readable."""
    values = planted.evaluate(seqs)
    hits = 0
    for seed in seeds:
        found = rx.search_statistics(seqs, target_of(seed), n_stats=1, max_depth=max_depth, random_state=seed)
        assert len(found) == 1 and found[0].is_readable(seqs)
        hits += found[0].key == planted.key or corr(found[0].evaluate(seqs), values) > 0.99
    return hits


@pytest.mark.slow
def test_same_random_state_same_result_and_no_equivalents(payments):
    demo, seqs = payments
    a = rx.search_statistics(seqs, demo.risk, n_stats=6, random_state=4)
    b = rx.search_statistics(seqs, demo.risk, n_stats=6, random_state=4)
    assert a == b
    assert 1 <= len(a) <= 6 and len({s.key for s in a}) == len(a)
    assert all(s.depth <= 4 and s.is_valid(seqs) and s.is_readable(seqs) for s in a)


@pytest.mark.slow
def test_seeds_agree_on_the_statistics(payments):
    # Re-running with another seed must tell the same story: the readable
    # search draws only its sample split from the seed.
    demo, seqs = payments
    runs = [{s.key for s in rx.search_statistics(seqs, demo.risk, n_stats=4, random_state=seed)} for seed in (0, 1, 2)]
    common = set.intersection(*runs)
    assert len(common) >= 0.5 * max(map(len, runs)), runs


@pytest.mark.slow
def test_paper_grammar_is_the_papers_algorithm(payments):
    demo, seqs = payments
    a = rx.search_statistics(seqs, demo.risk, n_stats=3, n_simulations=60, random_state=4, grammar="paper")
    b = rx.search_statistics(seqs, demo.risk, n_stats=3, n_simulations=60, random_state=4, grammar="paper")
    c = rx.search_statistics(seqs, demo.risk, n_stats=3, n_simulations=60, random_state=5, grammar="paper")
    assert a == b and a != c
    assert len(a) == 3 and len({s.key for s in a}) == 3


@pytest.mark.slow
def test_pure_noise_keeps_almost_nothing(payments):
    # Kept only when it explains measurably more on users it was not chosen on:
    # on noise the search stops at once (a rate over seeds).
    _, seqs = payments
    kept = [len(rx.search_statistics(seqs, np.random.default_rng(seed).normal(size=seqs.n_users), n_stats=5,
                                     random_state=seed, catalog=True, n_simulations=50)) for seed in range(3)]
    assert sum(kept) <= 3, kept


def test_simpler_wins_among_equals():
    # The target is a count of one category; a sum of a constant-1 column over the
    # same events gives identical values but is deeper and wordier.
    rng = np.random.default_rng(0)
    n = 600
    lengths = rng.integers(1, 30, n)
    df = pd.DataFrame({"user_id": np.repeat(np.arange(n), lengths), "ts": np.arange(lengths.sum()),
                       "kind": rng.choice(["a", "b", "c"], lengths.sum()), "one": 1.0,
                       "x": rng.lognormal(size=lengths.sum())})
    seqs = rx.Sequences(df)
    target = rx.Statistic.parse("Select(*) | RetainBy(kind=b) | Count").evaluate(seqs)
    target = target + rng.normal(scale=0.1, size=n)
    found = rx.search_statistics(seqs, target, n_stats=1, random_state=0)
    assert str(found[0]) == "Select(*) | RetainBy(kind=b) | Count", found


def test_finds_a_time_statistic():
    # "days since the last event of kind b": recency is a first-class signal.
    rng = np.random.default_rng(3)
    n = 800
    lengths = rng.integers(2, 25, n)
    start = pd.Timestamp("2026-01-01")
    ts = start + pd.to_timedelta(rng.uniform(0, 120, lengths.sum()), unit="D")
    df = pd.DataFrame({"user_id": np.repeat(np.arange(n), lengths), "ts": ts,
                       "kind": rng.choice(["a", "b", "c"], lengths.sum(), p=[0.5, 0.3, 0.2]),
                       "x": rng.lognormal(size=lengths.sum())})
    seqs = rx.Sequences(df)
    planted = rx.Statistic.parse("Select(*) | Recency")
    target = np.log1p(planted.evaluate(seqs))
    hits = 0
    for seed in range(2):
        found = rx.search_statistics(seqs, target, n_stats=2, random_state=seed)
        hits += any(f.key == planted.key or corr(f.evaluate(seqs).reshape(n, -1)[:, 0], target) > 0.95 for f in found)
    assert hits == 2


def test_cancel_is_honoured_within_a_bounded_amount_of_work(payments, monkeypatch):
    # Counted, not timed: the units of work are statistic evaluations. The search asks its progress
    # callback at least every 64 of them (the catalog screen before each chunk of catalog.CHUNK, two chunks
    # in flight), and once the callback says stop it evaluates nothing more: the stop is seen at the very
    # next check.
    demo, seqs = payments
    evaluations = 0
    evaluate = rx.Statistic.evaluate

    def counting(self, *args, **kwargs):
        nonlocal evaluations
        evaluations += 1
        return evaluate(self, *args, **kwargs)

    monkeypatch.setattr(rx.Statistic, "evaluate", counting)
    at_check = []

    def progress(event):
        at_check.append(evaluations)
        return len(at_check) < 4  # stop at the fourth check

    with pytest.raises(SearchCancelled):
        rx.search_statistics(seqs, demo.risk, n_stats=5, progress=progress)
    assert len(at_check) == 4, at_check  # no check after the stop
    assert evaluations - at_check[-1] <= 1, (evaluations, at_check)  # within one unit after it
    assert at_check[-1] > 0 and max(np.diff([0, *at_check])) <= 64, at_check


def test_marking_holds_inside_rollouts_on_a_tiny_space():
    # One numerical column, depth 1: 19 statistics in all. Asking for all of
    # them must return each exactly once, then stop for lack of valid ones.
    df = pd.DataFrame({"user_id": np.repeat(np.arange(40), 3), "ts": np.tile([0, 1, 2], 40),
                       "x": np.random.default_rng(0).normal(size=120)})
    seqs = rx.Sequences(df)
    target = np.random.default_rng(1).normal(size=40)
    search = StatisticsSearch(n_stats=20, max_depth=1, batch_size=16, n_simulations=30, random_state=0,
                              grammar="paper").fit(seqs, target)
    texts = [str(s) for s in search.statistics_]
    # 15 aggregations of x, and the 4 time aggregations of the events (ts is a number).
    assert len(texts) == 19 == len(set(texts))
    assert {s.key for s in search.statistics_} == {s.key for s in single_aggregations(Schema.of(seqs))}


@pytest.mark.slow
def test_residual_target_drives_later_statistics(payments):
    _, seqs = payments
    first = rx.Statistic.parse("Select(amount) | RetainBy(merchant_category=gambling) | Sum").evaluate(seqs)
    second = rx.Statistic.parse("Select(hour) | Mean").evaluate(seqs)
    second = np.nan_to_num(second, nan=np.nanmean(second))
    target = (first - first.mean()) / first.std() + (second - np.nanmean(second)) / np.nanstd(second)
    # The first statistic takes one planted part; the second is searched
    # against the residual, so it picks up the other part, not more of the first.
    # A rate over four seeds, not one seed's luck (every seed took both parts, r = 1.0, when written).
    hits, seen = 0, []
    for seed in range(4):
        found = StatisticsSearch(n_stats=2, max_depth=2, n_simulations=250, random_state=seed,
                                 grammar="paper").fit(seqs, target)
        values = [s.evaluate(seqs) for s in found.statistics_]
        r = np.array([[multiple_correlation(v, planted) for planted in (first, second)] for v in values])
        taken = int(r[0].argmax())
        both = len(values) == 2 and r[0, taken] > 0.9 and r[1, 1 - taken] > 0.4 and r[1, taken] < 0.2
        hits += both and multiple_correlation(values, target) > 0.75
        seen.append(np.round(r, 3).tolist())
    assert hits >= 3, seen


def test_progress_events_and_cancel(payments):
    demo, seqs = payments
    events = []

    def progress(event):
        events.append(event)
        return len(events) < 3

    with pytest.raises(SearchCancelled) as info:
        rx.search_statistics(seqs, demo.risk, n_stats=5, n_simulations=400, progress=progress, grammar="paper")
    assert len(events) == 3
    assert all(isinstance(e, SearchProgress) for e in events)
    assert events[0].statistic == 1 and events[0].n_stats == 5 and events[0].simulation == 100
    assert events[-1].best and 0 <= events[-1].best_reward <= 1
    assert isinstance(info.value.statistics, list)


@pytest.mark.parametrize("method", ["random", "lasso", "gbm"])
def test_baselines(method, payments):
    demo, seqs = payments
    found = rx.search_statistics(seqs, demo.risk, n_stats=5, method=method, random_state=0)
    assert len(found) == 5 and len({s.key for s in found}) == 5
    assert all(s.is_valid(seqs) and s.depth <= 4 for s in found)
    if method != "random":  # selection from single aggregations: depth 1, and informative
        assert all(s.depth == 1 for s in found)
        assert rx.metrics.multiple_correlation([s.evaluate(seqs) for s in found], demo.risk.to_numpy()) > 0.5


def test_single_aggregations_catalogue(payments):
    _, seqs = payments
    stats = single_aggregations(Schema.of(seqs))
    # 6 columns x 15 aggregations, Count counted once, and the 4 time aggregations.
    assert len(stats) == 6 * 15 - 5 + 4
    assert sum(s.aggregation.name == "Count" for s in stats) == 1
    # Readable: no std, range or percentile of a 0/1 indicator (4 categorical
    # columns x 9 of those), no Abs anywhere at depth 1.
    readable = single_aggregations(Schema.of(seqs), "readable")
    assert len(readable) == len(stats) - 4 * 9
    assert all(s.is_readable(seqs) for s in readable)


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(n_stats=0), ValueError, "n_stats must be a whole number >= 1"),
    (dict(max_depth=0), ValueError, "max_depth must be"),
    (dict(batch_size=0), ValueError, "batch_size must be"),
    (dict(method="grid"), ValueError, "method must be one of"),
    (dict(reward="r2"), ValueError, "reward must be one of"),
    (dict(grammar="plain"), ValueError, "grammar must be one of"),
    (dict(screen_columns=0), ValueError, "screen_columns must be a whole number >= 1"),
])
def test_bad_arguments(kwargs, error, message, payments):
    demo, seqs = payments
    with pytest.raises(error, match=message):
        rx.search_statistics(seqs, demo.risk, **kwargs)


def test_bad_targets(payments):
    demo, seqs = payments
    with pytest.raises(ValueError, match=r"the target values must have one value per user \(1500\)"):
        rx.search_statistics(seqs, demo.risk.to_numpy()[:-1])
    y = demo.risk.to_numpy().copy()
    y[[3, 7]] = np.nan
    with pytest.raises(ValueError,
                       match="the target values have NaN or infinite values for 2 users: 'u000003', 'u000007'"):
        rx.search_statistics(seqs, y)
    with pytest.raises(ValueError, match="constant"):
        rx.search_statistics(seqs, np.ones(seqs.n_users))
    with pytest.raises(ValueError, match="the target values lack 1 of the 1500 users: 'u000000'"):
        rx.search_statistics(seqs, demo.risk.iloc[1:])
    with pytest.raises(TypeError, match="needs a Sequences"):
        rx.search_statistics(demo.events, demo.risk)


@pytest.mark.slow
def test_finds_the_total_of_the_largest_payments(payments):
    # "The total of the 5 largest payments" is one phrase to an analyst and one
    # statistic of the short catalog; simpler near relatives (the largest payment,
    # its range) explain less on the checking users. A rate over seeds.
    _, seqs = payments
    planted = rx.Statistic.parse("Select(amount) | SortBy(amount, desc) | Top(5) | Sum")
    values = planted.evaluate(seqs)

    def target_of(seed: int) -> np.ndarray:
        noise = np.random.default_rng(seed).normal(scale=0.3, size=len(values))
        return (values - values.mean()) / values.std() + noise

    hits = _hits_over_seeds(seqs, planted, target_of, max_depth=4)
    assert hits >= 3, hits


@pytest.mark.slow
def test_a_plain_statistic_beats_its_correlated_decoys(payments):
    # The largest payment, next to two other planted terms: its deeper or wordier
    # relatives (its standard deviation, its range, the std of the 5 largest) correlate
    # 0.85+ with it and can look better on the users they were chosen on; none explains
    # measurably more on the others, so the plain one is kept and no decoy beside it.
    # A rate over seeds: without the check against simpler forms (catalog.simpler_forms
    # giving nothing) a decoy is kept on most of these seeds (3 of 5).
    # MCTS-SG, which only sees what the catalog leaves, runs short here (the test's time).
    _, seqs = payments
    parts = [("Select(amount) | Max", 1.0), ("Select(amount) | FilterBy(channel=pos) | Mean", 0.8),
             ("Select(hour) | Mean", 0.6)]
    planted = rx.Statistic.parse(parts[0][0])
    columns = []
    for text, weight in parts:
        v = rx.Statistic.parse(text).evaluate(seqs)
        z = np.clip(v, *np.nanquantile(v, [0.01, 0.99]))
        columns.append(weight * np.nan_to_num((z - np.nanmean(z)) / np.nanstd(z)))
    signal = np.sum(columns, axis=0)
    values = planted.evaluate(seqs)
    hits = 0
    for seed in range(5):
        target = signal + 0.15 * signal.std() * np.random.default_rng(seed).normal(size=len(signal))
        found = rx.search_statistics(seqs, target, n_stats=6, random_state=seed, n_simulations=20, n_contenders=0,
                                     polish_rounds=0)
        r = [1.0 if s.key == planted.key else corr(s.evaluate(seqs).reshape(len(values), -1)[:, 0], values)
             for s in found]
        hits += any(c > 0.99 for c in r) and not any(0.85 < c <= 0.99 for c in r)
    assert hits >= 4, hits


@pytest.mark.slow
def test_a_catalog_beyond_its_column_limit_keeps_what_explains_the_target(payments):
    # With room for 150 of the catalog's outputs only, the planted depth-2 statistic must still be
    # among those held (it explains the target alone best) and be found: a rate over seeds.
    _, seqs = payments
    planted = rx.Statistic.parse("Select(amount) | RetainBy(channel=atm) | Sum")
    values = planted.evaluate(seqs)
    hits = 0
    for seed in range(3):
        target = values + np.random.default_rng(seed).normal(scale=values.std(), size=len(values))
        search = StatisticsSearch(n_stats=1, max_depth=2, random_state=seed, screen_columns=150).fit(seqs, target)
        assert search.catalog_columns_ == 150 < search.catalog_outputs_
        hits += search.statistics_[0].key == planted.key or corr(search.statistics_[0].evaluate(seqs), values) > 0.99
    assert hits >= 2, hits


def test_the_search_runs_on_one_blas_thread(payments, monkeypatch):
    # its least-squares fits are small: a second BLAS thread waking for each cost more than it saved
    # (the search took 1.5x as long on two busy cores); the statistics are the same either way
    from threadpoolctl import threadpool_info, threadpool_limits

    demo, seqs = payments
    threads = []
    original = StatisticsSearch._accept

    def accept(self, *args):
        threads.extend(lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas")
        return original(self, *args)

    monkeypatch.setattr(StatisticsSearch, "_accept", accept)
    with threadpool_limits(limits=2, user_api="blas"):
        StatisticsSearch(n_stats=1, n_simulations=20, random_state=0).fit(seqs[:300], demo.risk.iloc[:300])
    assert threads and set(threads) == {1}
