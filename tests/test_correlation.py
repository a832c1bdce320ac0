"""The search's batch reward and the multiple correlation R."""

import numpy as np
import pytest
from sklearn.linear_model import LinearRegression

from rudi_explain.correlation import batch_reward, multiple_correlation


def test_multiple_correlation_matches_sklearn():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = X @ [1.0, -2.0, 0.0, 0.5] + rng.normal(size=300)
    fitted = LinearRegression().fit(X, y).predict(X)
    assert multiple_correlation(X, y) == pytest.approx(np.corrcoef(fitted, y)[0, 1], rel=1e-9)
    # A list of statistics (scalar and vector) is the same as their columns.
    assert multiple_correlation([X[:, 0], X[:, 1:]], y) == pytest.approx(multiple_correlation(X, y), rel=1e-12)


def test_multiple_correlation_held_out():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 3))
    y = X[:, 0] + rng.normal(size=400)
    model = LinearRegression().fit(X[:200], y[:200])
    want = np.corrcoef(model.predict(X[200:]), y[200:])[0, 1]
    assert multiple_correlation(X[:200], y[:200], test=(X[200:], y[200:])) == pytest.approx(want, rel=1e-9)


def test_nan_filled_with_column_means():
    X = np.array([[1.0], [np.nan], [3.0], [4.0]])
    y = np.array([1.0, 2.0, 3.0, 4.5])
    filled = np.array([[1.0], [8 / 3], [3.0], [4.0]])
    assert multiple_correlation(X, y) == pytest.approx(multiple_correlation(filled, y))


@pytest.mark.parametrize("form", ["split", "adjusted", "paper"])
def test_degenerate_batches_score_zero(form):
    y = np.arange(10.0)
    assert batch_reward(np.full(10, 3.0), y, form) == 0.0
    assert batch_reward(np.full(10, np.nan), y, form) == 0.0
    assert batch_reward(np.full((10, 3), np.nan), y, form) == 0.0
    assert batch_reward(np.arange(10.0), np.ones(10), form) == 0.0
    assert batch_reward(np.array([1.0, 2.0, np.nan]), np.array([1.0, 2.0, 3.0]), form) == 0.0


def test_undefined_users_left_out_and_coverage_weighted():
    x = np.array([1.0, 2.0, np.nan, 4.0, 5.0, 6.0, np.nan, 8.0, 9.0, 10.0] * 2)
    y = np.array([2.0, 4.0, -50.0, 8.0, 10.0, 12.0, 99.0, 16.0, 18.0, 20.0] * 2)
    assert batch_reward(x, y, "paper") == pytest.approx(1.0)
    # The corrected forms weight by sqrt(share defined): 16 of 20 users here.
    assert batch_reward(x, y, "split") == pytest.approx(np.sqrt(0.8))
    assert batch_reward(x, y, "adjusted") == pytest.approx(np.sqrt(0.8))


def test_unknown_form():
    with pytest.raises(ValueError, match="reward form"):
        batch_reward(np.arange(5.0), np.arange(5.0), "r2")


def test_corrected_rewards_do_not_reward_width():
    rng = np.random.default_rng(0)
    means = {form: np.mean([batch_reward(rng.normal(size=(128, 8)), rng.normal(size=128), form, rng)
                            for _ in range(200)]) for form in ("paper", "adjusted", "split")}
    assert 0.2 < means["paper"] < 0.3  # the paper's form: noise in 8 columns scores ~0.25
    assert means["adjusted"] < 0.1 and means["split"] < 0.1
    # A real signal still scores high under every form.
    X = rng.normal(size=(128, 8))
    y = X[:, 0] * 2 + rng.normal(size=128)
    assert all(batch_reward(X, y, form, rng) > 0.7 for form in ("paper", "adjusted", "split"))


def test_split_reward_of_one_column_equals_the_fit_on_a_design_matrix():
    # A one-column statistic takes a shortcut (the fit's prediction is monotone in the column); the
    # reference is the general path, a fit with intercept on one half scored on the other, as
    # sklearn fits it. The same generator draws, the same score, or both 0 where the covariance
    # on the fitting half is 0 to rounding (then the fit's sign is rounding noise).
    rng = np.random.default_rng(5)
    compared = 0
    for case in range(3000):
        n = int(rng.integers(1, 200))
        x = rng.normal(size=n) * 10 ** rng.uniform(-4, 4)
        kind = case % 4
        if kind == 1:
            x[rng.random(n) < 0.5] = np.nan
        elif kind == 2:
            x = rng.integers(0, 2, n).astype(float)
        elif kind == 3:
            x = np.round(x)
        y = rng.normal(size=n) + rng.normal() * np.nan_to_num(x)
        draws_a, draws_b = np.random.default_rng(case), np.random.default_rng(case)
        got = batch_reward(x.reshape(-1, 1) if case % 2 else x, y, "split", draws_a)
        defined = np.isfinite(x)
        xd, yd = x[defined], y[defined]
        if len(yd) < 8 or np.ptp(yd) == 0:
            assert got == 0.0
            continue
        order = draws_b.permutation(len(yd))
        a, b = order[: len(yd) // 2], order[len(yd) // 2:]
        assert draws_a.random() == draws_b.random()  # the same draws taken
        if np.ptp(xd[a]) == 0:
            assert got == 0.0
            continue
        fitted = LinearRegression().fit(xd[a, None], yd[a])
        if abs(fitted.coef_[0]) * np.std(xd[a]) < 1e-9 * np.std(yd[a]):
            continue  # no slope to rounding: either answer is noise
        predicted = fitted.predict(xd[b, None])
        r = np.corrcoef(predicted, yd[b])[0, 1] if np.ptp(xd[b]) > 0 else 0.0
        assert got == pytest.approx(np.sqrt(defined.mean()) * max(r, 0.0), abs=1e-9)
        compared += 1
    assert compared > 1500
