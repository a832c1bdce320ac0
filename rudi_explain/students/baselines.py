"""The RuDi paper's rule-distillation baselines (Table 4), as rule students.

- :class:`LassoStatistics`: a Lasso on the raw statistic values, its penalty
  tuned so that about ``R`` weights are nonzero. Its "rules" are linear terms
  ``weight * value``.
- :class:`LassoLiterals`: the same on the binary literals ("Lasso (Binary)");
  each nonzero weight is a one-literal rule.
- :class:`CARTRules`: a regression tree on the literals with at most ``R``
  leaves; each leaf is the conjunction of the literals on its path, weighted
  by the leaf's value.

All three return a :class:`~rudi_explain.rules.RuleSet` that scores exactly
as the fitted model predicts.
"""

from __future__ import annotations

import numbers
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from rudi_explain.exceptions import InputError
from rudi_explain.rules.formula import TRUE, And, Lit, literal_info
from rudi_explain.rules.ruleset import LinearTerm, RuleSet
from rudi_explain.students.base import (
    FitProgress,
    RuleStudent,
    check_binary_matrix,
    check_target,
    check_value_matrix,
)
from rudi_explain.validation import check_random_state_seed, check_real, check_whole

__all__ = ["LassoStatistics", "LassoLiterals", "CARTRules"]


def _check_lasso_params(student: Any) -> None:
    check_whole(student.n_rules, "n_rules", min_value=1)
    check_whole(student.n_alphas, "n_alphas", min_value=1)


def _lasso_with_budget(X: np.ndarray, y: np.ndarray, n_nonzero: int, n_alphas: int):
    """Lasso on standardized columns with about ``n_nonzero`` nonzero weights.

    Walks the regularization path from the largest penalty down and keeps the
    last solution with at most ``n_nonzero`` nonzero weights.

    Returns ``(coef, intercept, alpha)`` on the original column scale.
    """
    from sklearn.linear_model import lasso_path

    mean = X.mean(axis=0)
    std = X.std(axis=0)
    usable = std > 0
    Xs = (X[:, usable] - mean[usable]) / std[usable]
    yc = y - y.mean()
    coef = np.zeros(X.shape[1])
    if not usable.any():
        return coef, float(y.mean()), float("nan")
    # the path's grid, as sklearn makes it: from the smallest penalty that
    # zeroes every weight down to 1e-4 of it, log-spaced
    alpha_max = np.abs(Xs.T @ yc).max() / Xs.shape[0]
    grid = np.geomspace(alpha_max, alpha_max * 1e-4, n_alphas)
    alphas, path, _ = lasso_path(Xs, yc, alphas=grid)
    nnz = (path != 0).sum(axis=0)
    ok = np.flatnonzero(nnz <= n_nonzero)
    k = int(ok[-1]) if ok.size else 0
    coef[usable] = path[:, k] / std[usable]
    intercept = float(y.mean() - coef @ mean)
    return coef, intercept, float(alphas[k])


class LassoStatistics(RuleStudent):
    """Lasso on raw statistic values (the paper's "Lasso" baseline).

    Undefined values (NaN) are replaced by the column's training mean.
    Columns are standardized for the penalty; weights are reported per unit
    of the original value.

    Parameters
    ----------
    n_rules : int, default=20
        Target number of nonzero weights (``R``); the penalty is the smallest
        on the path that keeps at most this many.
    n_alphas : int, default=100
        Penalties tried along the path.

    Attributes
    ----------
    coef_ : ndarray of shape (n_outputs,)
    intercept_ : float
    fill_ : ndarray of shape (n_outputs,)
        Value used for an undefined statistic.
    scale_ : ndarray of shape (n_outputs,)
        Standard deviation of each column (undefined values filled), which
        orders the terms in :meth:`rules`.
    alpha_ : float
        The chosen penalty (on standardized columns).
    n_features_in_ : int
    """

    input_kind = "values"

    def __init__(self, *, n_rules: int = 20, n_alphas: int = 100):
        self.n_rules = n_rules
        self.n_alphas = n_alphas

    def _check_params(self) -> None:
        """Check the hyper-parameters (``fit`` does; ``explain`` before any work)."""
        _check_lasso_params(self)

    def fit(self, X: ArrayLike, y: ArrayLike,
            progress: Callable[[FitProgress], Any] | None = None) -> LassoStatistics:
        """Fit on a value matrix.

        Parameters
        ----------
        X : array-like of shape (n_users, n_outputs)
            Statistic values, e.g. ``literals.values(seqs)``; NaN allowed.
        y : array-like of shape (n_users,)
            Teacher scores.

        progress : callable, optional
            Called once, after fitting, with a :class:`FitProgress`.

        Returns
        -------
        self
        """
        start = time.perf_counter()
        self._check_params()
        V = check_value_matrix(X)
        yv = check_target(y, V.shape[0])
        with np.errstate(all="ignore"):
            fill = np.nanmean(V, axis=0)
        fill = np.where(np.isnan(fill), 0.0, fill)
        Vf = np.where(np.isnan(V), fill, V)
        self.coef_, self.intercept_, self.alpha_ = _lasso_with_budget(Vf, yv, self.n_rules, self.n_alphas)
        self.fill_ = fill
        self.scale_ = Vf.std(axis=0)
        self.n_features_in_ = V.shape[1]
        self._report(progress, V, yv, time.perf_counter() - start)
        return self

    def rules(self, literals: Any = None) -> RuleSet:
        """The linear terms as a :class:`RuleSet` (largest |weight * spread| first).

        Parameters
        ----------
        literals : Literals or list of str, optional
            Gives each value column its name (``literals.output_descriptions``).

        Returns
        -------
        RuleSet
            One linear term ``weight * value`` per nonzero weight.
        """
        self._check_fitted()
        if hasattr(literals, "output_descriptions"):
            names = list(literals.output_descriptions)
        elif literals is not None:
            names = list(literals)
        else:
            names = [f"v{j}" for j in range(self.n_features_in_)]
        if len(names) != self.n_features_in_:
            raise InputError(f"{len(names)} names for {self.n_features_in_} value columns")
        nz = np.flatnonzero(self.coef_)
        undefined = (
            literals.output_undefined if hasattr(literals, "output_undefined")
            else np.ones(self.n_features_in_, dtype=bool)
        )
        terms = [
            LinearTerm(int(j), float(self.coef_[j]), float(self.fill_[j]), names[j], bool(undefined[j]))
            for j in nz
        ]
        # largest typical contribution first: |weight| times the value's spread
        terms.sort(key=lambda r: -abs(r.weight) * self.scale_[r.column])
        info = literals if hasattr(literals, "transform_values") else names
        return RuleSet(terms, self.intercept_, info, n_literals=len(names))

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Scores for the rows of the value matrix ``X``.

        Parameters
        ----------
        X : array-like of shape (n_users, n_outputs)
            Statistic values; NaN allowed (filled with ``fill_``).

        Returns
        -------
        ndarray of float64, shape (n_users,)
        """
        self._check_fitted()
        V = check_value_matrix(X)
        if V.shape[1] != self.n_features_in_:
            raise InputError(f"X has {V.shape[1]} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input")
        return self.rules().score(V)


class LassoLiterals(RuleStudent):
    """Lasso on the binary literals (the paper's "Lasso (Binary)" baseline).

    Parameters
    ----------
    n_rules : int, default=20
        Target number of nonzero weights, i.e. one-literal rules.
    n_alphas : int, default=100
        Penalties tried along the path.

    Attributes
    ----------
    coef_ : ndarray of shape (n_literals,)
    intercept_ : float
    alpha_ : float
    n_features_in_ : int
    """

    def __init__(self, *, n_rules: int = 20, n_alphas: int = 100):
        self.n_rules = n_rules
        self.n_alphas = n_alphas

    def _check_params(self) -> None:
        """Check the hyper-parameters (``fit`` does; ``explain`` before any work)."""
        _check_lasso_params(self)

    def fit(self, X: ArrayLike, y: ArrayLike,
            progress: Callable[[FitProgress], Any] | None = None) -> LassoLiterals:
        """Fit on a literal matrix and teacher scores.

        Parameters
        ----------
        X : array-like of bool, shape (n_users, n_literals)
        y : array-like of shape (n_users,)
            Teacher scores.
        progress : callable, optional
            Called once, after fitting, with a :class:`FitProgress`.

        Returns
        -------
        self
        """
        start = time.perf_counter()
        self._check_params()
        Xb = check_binary_matrix(X)
        yv = check_target(y, Xb.shape[0])
        self.coef_, self.intercept_, self.alpha_ = _lasso_with_budget(
            Xb.astype(np.float64), yv, self.n_rules, self.n_alphas
        )
        self.n_features_in_ = Xb.shape[1]
        self._report(progress, Xb, yv, time.perf_counter() - start)
        return self

    def rules(self, literals: Any = None) -> RuleSet:
        """One rule per nonzero weight: the literal itself.

        Parameters
        ----------
        literals : Literals or list of str, optional
            Names the literals.

        Returns
        -------
        RuleSet
        """
        self._check_fitted()
        nz = np.flatnonzero(self.coef_)
        return RuleSet.from_formulas(
            [Lit(int(j)) for j in nz], self.coef_[nz], self.intercept_,
            literals=literals, n_literals=self.n_features_in_,
        )

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Rule scores for the rows of the literal matrix ``X``.

        Parameters
        ----------
        X : array-like of bool, shape (n_users, n_literals)

        Returns
        -------
        ndarray of float64, shape (n_users,)
        """
        self._check_fitted()
        return self.rules().score(check_binary_matrix(X))


class CARTRules(RuleStudent):
    """A regression tree on the literals with at most ``R`` leaves (CART).

    Each leaf becomes one rule: the AND of the literals (or their negations)
    on the path to it, weighted by the leaf's mean teacher score. The leaves
    partition the users, so exactly one rule fires for each.

    Parameters
    ----------
    n_rules : int, default=20
        Maximum number of leaves (``max_leaf_nodes``; 1 is taken as 2).
    min_samples_leaf : int or float, default=1
        Fewest training users in a leaf; a float in (0, 1) is a share of
        them, as in :class:`~sklearn.tree.DecisionTreeRegressor`.
    random_state : int or None, default=0

    Attributes
    ----------
    tree_ : sklearn.tree.DecisionTreeRegressor
    n_features_in_ : int
    """

    def __init__(self, *, n_rules: int = 20, min_samples_leaf: int | float = 1, random_state: int | None = 0):
        self.n_rules = n_rules
        self.min_samples_leaf = min_samples_leaf
        self.random_state = random_state

    def _check_params(self) -> None:
        """Check the hyper-parameters (``fit`` does; ``explain`` before any work)."""
        check_whole(self.n_rules, "n_rules", min_value=1)
        leaf = self.min_samples_leaf
        if isinstance(leaf, numbers.Integral) and not isinstance(leaf, bool):
            check_whole(leaf, "min_samples_leaf", min_value=1)
        else:
            check_real(leaf, "min_samples_leaf", min_value=0.0, max_value=1.0, include_min=False,
                       include_max=False)
        check_random_state_seed(self.random_state)

    def fit(self, X: ArrayLike, y: ArrayLike,
            progress: Callable[[FitProgress], Any] | None = None) -> CARTRules:
        """Fit on a literal matrix and teacher scores.

        Parameters
        ----------
        X : array-like of bool, shape (n_users, n_literals)
        y : array-like of shape (n_users,)
            Teacher scores.
        progress : callable, optional
            Called once, after fitting, with a :class:`FitProgress`.

        Returns
        -------
        self
        """
        from sklearn.tree import DecisionTreeRegressor

        start = time.perf_counter()
        self._check_params()
        Xb = check_binary_matrix(X)
        yv = check_target(y, Xb.shape[0])
        max_leaves = max(int(self.n_rules), 2)  # sklearn needs at least 2
        self.tree_ = DecisionTreeRegressor(
            max_leaf_nodes=max_leaves, min_samples_leaf=self.min_samples_leaf,
            random_state=self.random_state,
        ).fit(Xb, yv)
        self.n_features_in_ = Xb.shape[1]
        self._report(progress, Xb, yv, time.perf_counter() - start)
        return self

    def leaf_formulas(self) -> tuple[list, np.ndarray]:
        """The path formula and value of every leaf.

        Returns
        -------
        formulas : list of Formula
        values : ndarray of float64, shape (n_leaves,)
        """
        self._check_fitted()
        t = self.tree_.tree_
        formulas, values = [], []
        stack: list[tuple[int, tuple]] = [(0, ())]
        while stack:
            node, path = stack.pop()
            left, right = t.children_left[node], t.children_right[node]
            if left == -1:
                formulas.append(And(path) if path else TRUE)
                values.append(float(t.value[node].reshape(-1)[0]))
                continue
            f = int(t.feature[node])  # binary feature: left is "<= 0.5", i.e. false
            stack.append((right, path + (Lit(f),)))
            stack.append((left, path + (Lit(f, True),)))
        return formulas, np.array(values)

    def rules(self, literals: Any = None) -> RuleSet:
        """One conjunction rule per leaf, weighted by the leaf value.

        Parameters
        ----------
        literals : Literals or list of str, optional
            Names the literals.

        Returns
        -------
        RuleSet
        """
        formulas, values = self.leaf_formulas()
        literal_info(literals, self.n_features_in_)  # checks the names
        return RuleSet.from_formulas(formulas, values, 0.0, literals=literals, n_literals=self.n_features_in_)

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Rule scores for the rows of the literal matrix ``X``.

        Parameters
        ----------
        X : array-like of bool, shape (n_users, n_literals)

        Returns
        -------
        ndarray of float64, shape (n_users,)
        """
        self._check_fitted()
        return self.rules().score(check_binary_matrix(X))
