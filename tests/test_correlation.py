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
