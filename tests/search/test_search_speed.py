"""What makes stage 1 faster must not change what it finds (issue 27): shared frames, cached gains."""

import numpy as np
import pandas as pd

import rudi_explain as rx
from rudi_explain.search.catalog import ColumnScreen, short_catalog
from rudi_explain.statistics.frame import FrameCache


def _events(seed=0, n=300):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 30, n)
    m = int(lengths.sum())
    x = rng.lognormal(size=m)
    x[rng.random(m) < 0.05] = np.nan
    df = pd.DataFrame({"user_id": np.repeat(np.arange(n), lengths), "ts": np.arange(m),
                       **{c: rng.choice([f"{c}{i}" for i in range(6)], m) for c in ("a", "b")},
                       "x": x, "y": rng.normal(size=m)})
    return rx.Sequences(df)


def test_statistics_sharing_frames_give_the_values_they_give_alone():
    seqs = _events()
    stats = short_catalog(seqs, max_depth=4)
    assert len({s.operators[1:-1] for s in stats}) > 20  # many prefixes, each shared by many statistics
    roomy, tight = FrameCache(seqs), FrameCache(seqs, max_bytes=20_000)  # tight: frames dropped all along
    for stat in stats:
        alone = stat.evaluate(seqs)
        np.testing.assert_array_equal(stat.evaluate(seqs, frames=roomy), alone, err_msg=str(stat))
        np.testing.assert_array_equal(stat.evaluate(seqs, frames=tight), alone, err_msg=str(stat))
    assert 0 < len(tight) < len(roomy)
    # A cache over other users is not used for these (nor filled).
    other = FrameCache(_events(seed=1))
    stat = next(s for s in stats if s.depth == 2 and s.operators[1].name == "RetainBy")
    np.testing.assert_array_equal(stat.evaluate(seqs, frames=other), stat.evaluate(seqs))
    assert len(other) == 0


def test_a_catalog_built_with_shared_frames_equals_one_built_without():
    seqs = _events(seed=2)
    stats = short_catalog(seqs, max_depth=4)
    plain = ColumnScreen.build(stats, seqs)
    shared = ColumnScreen.build(stats, seqs, frames=FrameCache(seqs, max_bytes=200_000))
    assert [(str(s), j) for s, j in shared.owners] == [(str(s), j) for s, j in plain.owners]
    np.testing.assert_array_equal(shared.bins, plain.bins)
    np.testing.assert_array_equal(shared.values, plain.values)


def _reference_gains(screen, residual, rows, total_var, columns=None):
    """Each column alone: the adjusted correlation ratio of its bins, or the adjusted R^2 of the
    better of its two lines, whichever is more; as a share of the target's variance."""
    r = residual - residual.mean()
    n, ss = len(rows), float(r @ r)
    out = []
    for j in range(len(screen)) if columns is None else columns:
        bins = screen.bins[rows, j]
        between = sum(r[bins == b].sum() ** 2 / (bins == b).sum() for b in np.unique(bins))
        df = len(np.unique(bins)) - 1
        stepped = 1 - (1 - between / ss) * (n - 1) / max(n - df - 1, 1)
        r2 = 0.0
        for line in range(2):
            x = screen.values[rows, j, line].astype(np.float64)
            x = x - x.mean()
            if x @ x > 0:
                r2 = max(r2, (r @ x) ** 2 / (ss * (x @ x)))
        straight = 1 - (1 - r2) * (n - 1) / max(n - 2, 1)
        out.append(max(stepped, straight) * ss / n / total_var)
    return np.array(out)


def test_gains_cached_by_rows_match_each_column_scored_alone():
    seqs = _events(seed=3)
    screen = ColumnScreen.build(short_catalog(seqs, max_depth=2), seqs)
    assert len(screen) > 1024  # more than one block of columns
    rng = np.random.default_rng(4)
    halves = [np.sort(rng.permutation(seqs.n_users)[:150]) for _ in range(2)]
    picks = rng.choice(len(screen), 40, replace=False)
    for step in range(3):  # the same rows again with other residuals: the cached parts serve them
        for rows in halves:
            residual = screen.values[rows][:, picks[step], 0] + rng.normal(size=len(rows))
            got = screen.gains(residual, rows, 1.7)
            want = _reference_gains(screen, residual, rows, 1.7, columns=picks)
            np.testing.assert_allclose(got[picks], want, rtol=1e-9, atol=1e-12)
            assert np.all(np.isfinite(got))
    # A column constant on the rows explains nothing, however the rounding of a centred residual falls.
    rows = halves[0]
    values = rng.normal(size=(seqs.n_users, 1, 2)).astype(np.float32)
    values[rows] = 0.3
    constant = ColumnScreen([(screen.owners[0][0], 0)], np.zeros((seqs.n_users, 1), np.uint8), values)
    for _ in range(5):
        assert constant.gains(rng.normal(size=len(rows)) + 1e3, rows, 1.0).tolist() == [0.0]
