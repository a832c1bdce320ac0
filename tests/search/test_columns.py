"""The search's columns (rudi_explain.search.columns): deciles and standardized lines."""

import numpy as np

from rudi_explain.search.columns import bin_columns, standardize


def test_bins_put_undefined_users_below_every_cut_as_literals_do():
    # A literal "value > t" is false where the value is undefined (SEMANTICS.md), so the
    # screen's step model must not tell undefined users apart from the lowest values either:
    # for every decile cut, the users above it by bin are those above it by value.
    rng = np.random.default_rng(3)
    X = rng.lognormal(size=(500, 6))
    X[:, 1] = rng.integers(0, 2, 500)  # 0/1 with undefined users: "any X among Y events"
    X[:, 2] = rng.integers(0, 5, 500)
    for j in range(6):
        X[rng.random(500) < 0.1 + 0.1 * j, j] = np.nan
    bins = bin_columns(X)
    for j in range(X.shape[1]):
        v = X[:, j]
        for k in range(10):
            above_by_bin = bins[:, j] > k
            if not above_by_bin.any():
                continue
            # the cut between bin k and k+1: the largest value of bins <= k
            cut = np.nanmax(np.where(bins[:, j] <= k, v, np.nan)) if (bins[:, j] <= k).any() else -np.inf
            np.testing.assert_array_equal(above_by_bin, np.where(np.isfinite(v), v > cut, False))
    assert (bins[np.isnan(X)] == 0).all()


def test_lines_are_the_values_and_their_clipped_tails_standardized_over_defined_users():
    # Against a plain per-column reference: mean 0 and scale 1 over the defined values, 0 where
    # undefined; the second line clipped at the defined values' 1st and 99th percentile ranks.
    rng = np.random.default_rng(5)
    X = rng.lognormal(sigma=2.0, size=(400, 4))
    X[rng.random((400, 4)) < 0.2] = np.nan
    Z = standardize(X)
    for j in range(X.shape[1]):
        v = X[:, j]
        ok = np.isfinite(v)
        ordered = np.sort(v[ok])
        last = ok.sum() - 1
        lo, hi = ordered[int(np.floor(0.01 * last))], ordered[int(np.ceil(0.99 * last))]
        for line, w in ((0, v[ok]), (1, np.clip(v[ok], lo, hi))):
            expected = (w - w.mean()) / w.std()
            np.testing.assert_allclose(Z[ok, j, line], expected, rtol=1e-4, atol=1e-5)
            assert (Z[~ok, j, line] == 0).all()
