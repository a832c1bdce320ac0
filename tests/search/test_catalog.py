"""The short catalog: the k largest / smallest events by a column as one concept."""

import numpy as np
import pandas as pd
import pytest
from reference_impl import varying_new_outputs

import rudi_explain as rx
from rudi_explain.search.catalog import complexity, neighbours, ranked_statistics, short_catalog, simpler_forms
from rudi_explain.statistics import Schema


def _small():
    rng = np.random.default_rng(0)
    n = 60
    lengths = rng.integers(0, 12, n)
    df = pd.DataFrame({"user_id": np.repeat(np.arange(n), lengths), "ts": np.arange(lengths.sum()),
                       "kind": rng.choice(["a", "b", "c"], lengths.sum()),
                       "x": rng.lognormal(size=lengths.sum()), "y": rng.normal(size=lengths.sum())})
    return df, rx.Sequences(df)


def test_ranked_statistics_are_screened_whole_from_depth_3():
    _, seqs = _small()
    texts = {str(s) for s in short_catalog(seqs, max_depth=4)}
    assert "Select(x) | SortBy(x, desc) | Top(5) | Sum" in texts
    assert "Select(y) | SortBy(x, asc) | Top(5) | Mean" in texts
    assert "Select(kind) | SortBy(y, desc) | Top(5) | Mean" in texts
    assert not any("SortBy" in t and "Top" in t for t in map(str, short_catalog(seqs, max_depth=2)))
    ranked = ranked_statistics(Schema.of(seqs))
    assert ranked and all(s.is_readable(seqs) and s.depth == 3 for s in ranked)
    assert not any(s.selected in seqs.vocabularies and s.aggregation.name in ("Max", "Min") for s in ranked)


def test_ranked_statistic_values_match_a_per_user_reference():
    df, seqs = _small()
    for text, column, by, ascending, agg in [
            ("Select(x) | SortBy(x, desc) | Top(5) | Sum", "x", "x", False, "sum"),
            ("Select(y) | SortBy(x, asc) | Top(5) | Mean", "y", "x", True, "mean"),
            ("Select(x) | SortBy(y, desc) | Top(5) | Min", "x", "y", False, "min")]:
        got = rx.Statistic.parse(text).evaluate(seqs)
        top = df.sort_values([by, "ts"], ascending=[ascending, True], kind="stable").groupby("user_id").head(5)
        ref = top.groupby("user_id")[column].agg(agg).reindex(np.asarray(seqs.users))
        defined = ref.notna().to_numpy()
        np.testing.assert_allclose(got[defined], ref.to_numpy()[defined], rtol=1e-9)


def test_one_edit_reaches_the_total_of_the_largest():
    # "The largest amount" -> "the total of the 5 largest amounts" is one step.
    _, seqs = _small()
    schema = Schema.of(seqs)
    near = {str(s) for s in neighbours(rx.Statistic.parse("Select(x) | RetainBy(kind=a) | Max"), schema, 4)}
    assert "Select(x) | RetainBy(kind=a) | SortBy(x, desc) | Top(5) | Sum" in near
    assert "Select(x) | RetainBy(kind=a) | SortBy(y, asc) | Top(5) | Mean" in near
    assert "Select(x) | RetainBy(kind=a) | SortBy(y, asc) | Top(5) | Max" in near


def test_simpler_forms_drop_one_operator_or_take_a_plainer_aggregation():
    _, seqs = _small()
    schema = Schema.of(seqs)

    def simpler(text):
        return {str(s) for s in simpler_forms(rx.Statistic.parse(text), schema)}

    # A count is plainer than a total: "the number of X" is a simpler form of "the total x of X".
    assert simpler("Select(x) | FilterBy(kind=a) | Max") == {"Select(x) | Max", "Select(x) | FilterBy(kind=a) | Sum",
                                                           "Select(*) | FilterBy(kind=a) | Count"}
    # The SortBy | Top pair goes as one edit; Top alone goes too ("the first 5 events").
    assert simpler("Select(x) | RetainBy(kind=a) | SortBy(y, desc) | Top(5) | Mean") == {
        "Select(x) | RetainBy(kind=a) | Mean", "Select(x) | SortBy(y, desc) | Top(5) | Mean",
        "Select(x) | RetainBy(kind=a) | Top(5) | Mean", "Select(x) | RetainBy(kind=a) | SortBy(y, desc) | Top(5) | Sum"}
    # Plainer aggregations at the same depth: the median is less plain than a mean.
    assert simpler("Select(x) | Percentile(50)") == {"Select(x) | Sum", "Select(x) | Mean", "Select(x) | Max",
                                                     "Select(x) | Min", "Select(*) | Count"}
    assert simpler("Select(x) | Sum") == {"Select(*) | Count"}
    assert simpler("Select(*) | RetainBy(kind=b) | Count") == {"Select(*) | Count"}
    # Every simpler form is readable, no deeper, and strictly simpler by depth or aggregation.
    for stat in short_catalog(seqs, max_depth=4):
        for simple in simpler_forms(stat, schema):
            assert simple.is_readable(seqs) and simple.depth <= stat.depth
            assert complexity(simple)[:2] < complexity(stat)[:2] and simple.key != stat.key


def _wide():
    """Three categorical columns of 9 categories: a short catalog of thousands of outputs."""
    rng = np.random.default_rng(1)
    n = 300
    lengths = rng.integers(1, 30, n)
    m = int(lengths.sum())
    df = pd.DataFrame({"user_id": np.repeat(np.arange(n), lengths), "ts": np.arange(m),
                       **{c: rng.choice([f"{c}{i}" for i in range(9)], m) for c in ("a", "b", "c")},
                       "x": rng.lognormal(size=m)})
    return rx.Sequences(df)


def _plain_screen(stats, seqs):
    """Reference: every output evaluated whole, the exact duplicates and constants dropped."""
    from rudi_explain.search.columns import bin_columns, standardize

    kept = varying_new_outputs(stats, seqs)
    owners = [(stat, j) for stat, j, _ in kept]
    X = np.column_stack([v for _, _, v in kept])
    return owners, bin_columns(X), standardize(X)


def test_the_catalog_built_block_by_block_equals_one_built_whole():
    from rudi_explain.search.catalog import ColumnScreen

    seqs = _wide()
    stats = short_catalog(seqs, max_depth=2)
    owners, bins, values = _plain_screen(stats, seqs)
    assert len(owners) > 1200  # crosses several blocks of 512 columns
    screen = ColumnScreen.build(stats, seqs)
    assert [(str(s), j) for s, j in screen.owners] == [(str(s), j) for s, j in owners]
    np.testing.assert_array_equal(screen.bins, bins)
    np.testing.assert_array_equal(screen.values, values)


def test_a_statistic_no_other_shadowed_has_in_the_catalog_the_columns_it_has_alone():
    # The search takes a deepening edit's columns from the catalog where the edit is a catalog statistic;
    # that holds only for statistics none of whose varying outputs another statistic's column took first.
    from rudi_explain.search.catalog import ColumnScreen

    seqs = _wide()
    stats = short_catalog(seqs, max_depth=2)
    shadowed: set = set()
    screen = ColumnScreen.build(stats, seqs, shadowed=shadowed)
    # Reference, by a plain loop: the statistics with a varying output equal to an earlier statistic's.
    expected: set = set()
    varying_new_outputs(stats, seqs, shadowed=expected)
    assert shadowed == expected and 0 < len(expected) < len(stats)
    rng = np.random.default_rng(0)
    for i in rng.choice(len(stats), 150, replace=False):
        stat = stats[i]
        if stat in shadowed:
            continue
        at = [c for c, (st, _) in enumerate(screen.owners) if st is stat]
        alone = ColumnScreen.build([stat], seqs, set())
        assert [j for _, j in alone.owners] == [screen.owners[c][1] for c in at], str(stat)
        np.testing.assert_array_equal(alone.bins, screen.bins[:, at])
        np.testing.assert_array_equal(alone.values, screen.values[:, at])


def test_a_column_limit_keeps_the_outputs_that_explain_most_alone():
    from rudi_explain.search.catalog import ColumnScreen

    seqs = _wide()
    stats = short_catalog(seqs, max_depth=2)
    whole = ColumnScreen.build(stats, seqs)
    rng = np.random.default_rng(2)
    for trial in range(3):
        # A target made of three outputs of the catalog, plus noise.
        picks = rng.choice(len(whole), 3, replace=False)
        y = whole.values[:, picks, 0].sum(axis=1) + rng.normal(scale=0.5, size=seqs.n_users)
        rows = np.sort(rng.choice(seqs.n_users, seqs.n_users // 2, replace=False))
        limit = 300 + 200 * trial  # trimmed several times while building
        gains = whole.gains(y[rows] - y[rows].mean(), rows, float(y[rows].var()))
        # Reference ranking: largest gain (to 6 decimals) first, ties to the earlier column.
        ranked = sorted(range(len(whole)), key=lambda i: (-round(float(gains[i]), 6), i))[:limit]
        expected = [whole.owners[i] for i in sorted(ranked)]
        limited = ColumnScreen.build(stats, seqs, max_columns=limit, target=y, rows=rows)
        assert len(limited) == limit
        assert [(str(s), j) for s, j in limited.owners] == [(str(s), j) for s, j in expected]
        kept = np.array(sorted(ranked))
        np.testing.assert_array_equal(limited.bins, whole.bins[:, kept])
        assert all((str(whole.owners[p][0]), whole.owners[p][1]) in {(str(s), j) for s, j in limited.owners}
                   for p in picks)


def test_a_column_limit_needs_a_target():
    import pytest

    from rudi_explain.search.catalog import ColumnScreen

    seqs = _wide()
    with pytest.raises(ValueError, match="max_columns needs the target"):
        ColumnScreen.build(short_catalog(seqs, max_depth=1), seqs, max_columns=10)


def test_gains_are_the_same_whatever_the_bytes_kept_gathered_on_the_rows(monkeypatch):
    # The first blocks of a screen keep their bin indices on the choosing rows
    # (catalog._GATHER_BYTES); the blocks beyond gather them at every scoring. The gains are the
    # same, bit for bit, with none kept, some blocks kept and all kept, on the first scoring and
    # on later ones read from the cache, and on other rows.
    import rudi_explain.search.catalog as catalog_module
    from rudi_explain.search.catalog import ColumnScreen

    rng = np.random.default_rng(7)
    n, m = 300, 2500  # three blocks of columns
    bins = rng.integers(0, 10, size=(n, m)).astype(np.uint8)
    values = rng.normal(size=(n, m, 2)).astype(np.float32)
    stat = short_catalog(rx.datasets.make_payments(20, random_state=1).sequences(), max_depth=1)[0]
    owners = [(stat, j) for j in range(m)]
    halves = [np.sort(rng.permutation(n)[:140]) for _ in range(2)]
    residuals = [rng.normal(size=140) for _ in range(3)]
    got = {}
    for budget in (0, 140 * 1024 * 8, 2**40):  # none, one block's indices, all
        monkeypatch.setattr(catalog_module, "_GATHER_BYTES", budget)
        screen = ColumnScreen(list(owners), bins, values)
        got[budget] = [screen.gains(r, rows, 1.3, n_jobs=1).tobytes() for r in residuals for rows in halves]
    assert got[0] == got[140 * 1024 * 8] == got[2**40]


def test_gains_on_rows_within_kept_rows_equal_gains_gathered_afresh():
    # The selection's strata are rows within the choosing rows: their parts are taken from the
    # choosing rows' kept indices and lines (within=...), with the same gains bit for bit as a screen
    # that gathers them from its own arrays, kept or not.
    import rudi_explain.search.catalog as catalog_module
    from rudi_explain.search.catalog import ColumnScreen

    rng = np.random.default_rng(11)
    n, m = 400, 1500
    bins = rng.integers(0, 10, size=(n, m)).astype(np.uint8)
    values = rng.normal(size=(n, m, 2)).astype(np.float32)
    stat = short_catalog(rx.datasets.make_payments(20, random_state=1).sequences(), max_depth=1)[0]
    owners = [(stat, j) for j in range(m)]
    rows = np.sort(rng.permutation(n)[:250])
    for seed in range(3):
        part = np.random.default_rng(seed).random(rows.size) < 0.4
        r = rng.normal(size=int(part.sum()))
        reused = ColumnScreen(list(owners), bins, values)
        reused.gains(rng.normal(size=rows.size), rows, 1.0, n_jobs=1)  # the choosing rows' parts kept
        fresh = ColumnScreen(list(owners), bins, values)
        got = reused.gains(r, rows[part], 1.0, n_jobs=2, within=(rows, part))
        np.testing.assert_array_equal(got, fresh.gains(r, rows[part], 1.0, n_jobs=1))
        assert catalog_module._rows_key(rows[part]) in reused._on_rows  # taken once, then cached
        np.testing.assert_array_equal(got, reused.gains(r, rows[part], 1.0, within=(rows, part)))


@pytest.mark.slow  # 4,000 users: fewer leave every single column's sums equal either way
def test_each_screen_built_side_by_side_equals_its_statistic_built_alone():
    # build_each bins a few statistics' columns as one block; each screen must be, bit for bit,
    # the screen of its statistic built alone: the same owners, bins and lines (a single column's
    # sums taken as numpy takes a block of one), whatever the number of workers. Edits of catalog
    # statistics give scalar and constant statistics (no column at all), the catalog vector ones.
    from rudi_explain.search.catalog import ColumnScreen
    from rudi_explain.statistics.frame import FrameCache

    seqs = rx.datasets.make_payments(4000, random_state=2).sequences()
    schema = Schema.of(seqs)
    catalog = short_catalog(seqs, max_depth=2)
    edits = list({s.key: s for st in catalog[::60] for s in neighbours(st, schema, 3)}.values())[:120]
    vectors = [s for s in catalog if s.is_vector(schema)][::7][:30]  # one column per category
    stats = [s for pair in zip(edits, vectors) for s in pair] + edits[len(vectors):]
    alone = [ColumnScreen.build([s], seqs, set(), frames=FrameCache(seqs), n_jobs=1) for s in stats]
    assert sum(len(a) == 1 for a in alone) >= 10 and sum(len(a) > 1 for a in alone) >= 10
    for n_jobs in (1, 2):
        each = ColumnScreen.build_each(stats, seqs, frames=FrameCache(seqs), n_jobs=n_jobs)
        assert len(each) == len(stats)
        for a, b in zip(alone, each):
            assert a.owners == b.owners
            assert a.bins.tobytes() == b.bins.tobytes() and a.values.tobytes() == b.values.tobytes()
            assert a.bins.shape == b.bins.shape and a.values.shape == b.values.shape
