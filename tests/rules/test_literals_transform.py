"""Literals.transform_values against an element-by-element reference (issue 27: computed literal-major)."""

import numpy as np
import pytest

from rudi_explain.rules.literals import Literals


def _reference(V: np.ndarray, lits: Literals) -> np.ndarray:
    """Literal j of user i: the value of j's output above j's threshold; NaN never is."""
    out = np.zeros((V.shape[0], lits.n_literals), dtype=bool)
    for i in range(V.shape[0]):
        for j in range(lits.n_literals):
            v = V[i, lits.column[j]]
            out[i, j] = bool(not np.isnan(v) and v > lits.thresholds[j])
    return out


@pytest.mark.parametrize("n_users", [40, 1500])  # below and above the size where the loop over outputs starts
def test_transform_values_matches_the_reference(n_users):
    for seed in range(3):
        rng = np.random.default_rng(seed)
        V = np.round(rng.normal(size=(n_users, 4)) * 10, 1)
        V[rng.random(V.shape) < 0.15] = np.nan
        lits = Literals.from_values(V, n_quantiles=10)
        # new users, values on the thresholds too
        W = np.round(rng.normal(size=(n_users, 4)) * 10, 1)
        W[: lits.n_literals, lits.column[: n_users]] = lits.thresholds[: n_users]
        W[rng.random(W.shape) < 0.1] = np.nan
        Z = lits.transform_values(W)
        assert Z.dtype == bool and Z.shape == (n_users, lits.n_literals)
        np.testing.assert_array_equal(Z, _reference(W, lits))


def test_only_computes_the_literals_asked_and_false_elsewhere():
    rng = np.random.default_rng(0)
    V = rng.normal(size=(1200, 3))
    V[rng.random(V.shape) < 0.1] = np.nan
    lits = Literals.from_values(V, n_quantiles=8)
    full = lits.transform_values(V)
    for only in ([0], [lits.n_literals - 1, 2, 2], list(range(0, lits.n_literals, 3))):
        Z = lits.transform_values(V, only=only)
        asked = np.zeros(lits.n_literals, dtype=bool)
        asked[only] = True
        np.testing.assert_array_equal(Z[:, asked], full[:, asked])
        assert not Z[:, ~asked].any()
