"""Correlation of statistics with a target: the search's reward and Table 3's metric.

A scalar statistic is scored by the absolute Pearson correlation with the
target (the paper's equation 4); a vector-valued one by the coefficient of
multiple correlation R of a least-squares fit (equation 5). On small batches
R is inflated by the number of columns (pure noise in 8 columns scores about
0.25 on 128 users), so the default reward fits on one half of the batch and
scores the correlation on the other half.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rudi_explain.exceptions import InputError

__all__ = ["REWARDS", "batch_reward", "multiple_correlation", "design_matrix"]

#: Reward forms: 'split' (fit on one half of the batch, correlation on the
#: other; the search's default), 'adjusted' (R from the adjusted R^2), 'paper'
#: (plain |correlation| or R, equations 4 and 5).
REWARDS = ("split", "adjusted", "paper")


def design_matrix(values: np.ndarray | Sequence[np.ndarray], means: np.ndarray | None = None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Columns of one or more statistics, NaN filled, ready for least squares.

    Returns ``(X, defined, means)``: ``X`` of shape (n, k) with NaN replaced
    by the column mean (``means`` if given, e.g. training means), ``defined``
    the rows where at least one value was defined, and the means used.
    """
    if isinstance(values, np.ndarray):
        X = values.reshape(len(values), -1).astype(np.float64, copy=True)
    else:
        X = np.column_stack([np.asarray(v, dtype=np.float64).reshape(len(v), -1) for v in values])
    finite = np.isfinite(X)
    defined: np.ndarray = np.asarray(finite.any(axis=1))
    if means is None:
        with np.errstate(invalid="ignore"):
            counts = finite.sum(axis=0)
            sums = np.where(finite, X, 0.0).sum(axis=0)
            means = np.where(counts > 0, sums / np.maximum(counts, 1), 0.0)
    X[~finite] = np.broadcast_to(means, X.shape)[~finite]
    return X, defined, means


def _varies(scale: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Whether each column whose centred norm is ``scale`` varies, beyond rounding, among the values ``X``."""
    return np.asarray(scale > 1e-12 * max(1.0, float(np.abs(X).max(initial=0.0))))


class _LeastSquares:
    """A least-squares fit with intercept on standardized columns; constant columns dropped."""

    def __init__(self, X: np.ndarray, y: np.ndarray) -> None:
        self.mean = X.mean(axis=0)
        centred = X - self.mean
        self.scale = np.sqrt((centred * centred).sum(axis=0))
        self.keep = _varies(self.scale, X)
        self.intercept = float(y.mean())
        self.rank = 0
        self.beta = np.zeros(int(self.keep.sum()))
        if self.keep.any():
            Z = centred[:, self.keep] / self.scale[self.keep]
            self.beta, _, self.rank, _ = np.linalg.lstsq(Z, y - self.intercept, rcond=None)
            self.rank = int(self.rank)

    def predict(self, X: np.ndarray) -> np.ndarray:
        Z = (X[:, self.keep] - self.mean[self.keep]) / self.scale[self.keep]
        return Z @ self.beta + self.intercept


def _pearson(a: np.ndarray, b: np.ndarray) -> float:
    a = a - a.mean()
    b = b - b.mean()
    denom = np.sqrt((a @ a) * (b @ b))
    return float(a @ b / denom) if denom > 0 else 0.0


def batch_reward(values: np.ndarray, target: np.ndarray, form: str = "split",
                 rng: np.random.Generator | None = None) -> float:
    """Reward of a statistic's values on one batch: a number in [0, 1], never NaN.

    Parameters
    ----------
    values : ndarray of shape (B,) or (B, k)
    target : ndarray of shape (B,)
    form : {'split', 'adjusted', 'paper'}, default='split'
    rng : Generator, optional
        For the random halves of ``'split'``.

    Users where the statistic is undefined (all NaN) are left out of the fit;
    in a vector statistic a NaN next to defined values is filled with its
    column's batch mean. The corrected forms weight the result by the square
    root of the share of users left in (the paper's form does not). A
    degenerate batch (fewer than 3 users left, a constant statistic or
    target) scores 0.
    """
    if form not in REWARDS:
        raise InputError(f"reward form must be one of {REWARDS}, got {form!r}")
    if form == "split" and isinstance(values, np.ndarray) and values.size == len(values):
        # one column, the search's usual case, without building a design matrix (a quarter of the time)
        return _split_reward_one(values.reshape(-1).astype(np.float64, copy=False), target, rng)
    X, defined, _ = design_matrix(values)
    X, y = X[defined], target[defined]
    n = len(y)
    if n < 3 or np.ptp(y) == 0:
        return 0.0
    if form == "paper":
        fit = _LeastSquares(X, y)
        return abs(_pearson(fit.predict(X), y)) if fit.rank else 0.0
    # Undefined users are left out of the fit, but a statistic defined for a
    # few users only must not win by a lucky fit on them: weight by
    # sqrt(coverage), which is what the correlation over all users would give
    # with undefined values set to the mean.
    coverage = np.sqrt(n / len(defined))
    if form == "split":
        if n < 8:
            return 0.0
        order = (rng or np.random.default_rng(0)).permutation(n)
        a, b = order[: n // 2], order[n // 2:]
        fit = _LeastSquares(X[a], y[a])
        return coverage * max(_pearson(fit.predict(X[b]), y[b]), 0.0) if fit.rank else 0.0
    fit = _LeastSquares(X, y)
    if fit.rank == 0 or n - fit.rank - 1 <= 0:
        return 0.0
    r = abs(_pearson(fit.predict(X), y))
    adjusted = 1.0 - (1.0 - r * r) * (n - 1) / (n - fit.rank - 1)
    return coverage * float(np.sqrt(adjusted)) if adjusted > 0 else 0.0


def _split_reward_one(x: np.ndarray, target: np.ndarray, rng: np.random.Generator | None) -> float:
    """:func:`batch_reward`'s 'split' form of one column: the same draws and the same score.

    The fit on one half predicts ``intercept + beta * (x - mean) / scale``, an increasing (beta > 0) or
    decreasing function of ``x``, so its correlation on the other half is that of ``x``, signed by beta.
    """
    defined = np.isfinite(x)
    x, y = x[defined], target[defined]
    n = len(y)
    if n < 8 or np.ptp(y) == 0:
        return 0.0
    order = (rng or np.random.default_rng(0)).permutation(n)
    a, b = order[: n // 2], order[n // 2:]
    xa = x[a]
    centred = xa - xa.mean()
    scale = np.sqrt(centred @ centred)
    if not _varies(scale, xa):  # (a 0-d answer for one column)
        return 0.0  # a constant column: the fit has rank 0
    ya = y[a]
    slope = centred @ (ya - ya.mean())
    if slope == 0.0:
        return 0.0  # a constant prediction
    r = _pearson(x[b], y[b])
    return float(np.sqrt(n / len(defined))) * max(r if slope > 0 else -r, 0.0)


def multiple_correlation(values: np.ndarray | Sequence[np.ndarray], target: np.ndarray, *,
                         test: tuple[np.ndarray | Sequence[np.ndarray], np.ndarray] | None = None) -> float:
    """Coefficient of multiple correlation R of a least-squares fit (Table 3's metric).

    Parameters
    ----------
    values : ndarray of shape (n, k) or list of (n,) / (n, k_i) arrays
        Statistics' values (NaN filled with the column mean).
    target : ndarray of shape (n,)
    test : (values, target), optional
        Held-out users: the fit on ``values`` predicts them, and R is the
        correlation of prediction and target there (NaN filled with the
        training means).

    Returns
    -------
    float
        R in [0, 1] (held out: the correlation, which can be negative).
    """
    y = np.asarray(target, dtype=np.float64)
    X, _, means = design_matrix(values)
    if len(X) != len(y):
        raise InputError(f"values have {len(X)} rows but the target has {len(y)}")
    if not np.isfinite(y).all():
        raise InputError("the target has NaN or infinite values")
    fit = _LeastSquares(X, y)
    if test is None:
        return abs(_pearson(fit.predict(X), y))
    X_test, _, _ = design_matrix(test[0], means=means)
    return _pearson(fit.predict(X_test), np.asarray(test[1], dtype=np.float64))
