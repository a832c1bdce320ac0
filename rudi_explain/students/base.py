"""What every rule student shares: input checks and the fit/rules face.

A student learns from a binary literal matrix (or, for the Lasso on raw
statistics, a value matrix) and the teacher's scores, and hands back its
model as a :class:`~rudi_explain.rules.RuleSet` that scores exactly as the
student does.

Every student is a scikit-learn regressor (:class:`~sklearn.base.BaseEstimator`
and :class:`~sklearn.base.RegressorMixin`): keyword-only hyper-parameters stored
unchanged by ``__init__`` (so ``get_params``, ``set_params`` and
:func:`sklearn.base.clone` work), checked in ``fit``, learned state in
attributes ending in ``_``, and :class:`~rudi_explain.exceptions.NotFittedError`
(scikit-learn's ``NotFittedError``) when used before ``fit``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import DataConversionWarning

from rudi_explain.exceptions import InputError, InputTypeError, NotFittedError, StateError
from rudi_explain.metrics import fidelity

__all__ = [
    "RuleStudent", "FitProgress", "FitStopped", "check_binary_matrix", "check_target", "check_value_matrix",
    "NotFittedError",
]


class FitStopped(StateError):
    """``should_stop`` ended a fit before the student had a model to keep.

    GS-NLN, the sum of trees and the HKL ensemble keep what they learned when
    asked to stop part way; a Bayesian rule list, whose summary needs its
    whole chains, and an HKL path stopped before its first step raise this.
    """


@dataclass(frozen=True)
class FitProgress:
    """What a progress callback receives after each epoch.

    Attributes
    ----------
    epoch : int
        Epochs done so far (1-based).
    epochs : int
        Epochs planned.
    loss : float
        GS-NLN: mean ranking loss over the epoch's mini-batches; the
        baselines (one "epoch"): mean squared error on the training users.
    fidelity : float
        Running fidelity to the teacher on the training users. For GS-NLN,
        of the scores the network gave them during this epoch (with its
        sampled picks, so slightly below that of the final rules early on).
    temperature : float
    learning_rate : float
    seconds : float
        Training time so far.
    """

    epoch: int
    epochs: int
    loss: float
    fidelity: float
    temperature: float
    learning_rate: float
    seconds: float


def check_binary_matrix(X: ArrayLike, name: str = "X") -> np.ndarray:
    """``X`` as a bool matrix, or a clear error.

    Parameters
    ----------
    X : array-like of shape (n_users, n_literals)
        bool, or numbers that are all 0 or 1.

    Returns
    -------
    ndarray of bool, shape (n_users, n_literals)
    """
    if hasattr(X, "n_users") and not isinstance(X, np.ndarray):
        raise InputTypeError(
            f"{name} must be a literal matrix; for Sequences, pass literals.transform(seqs)"
        )
    arr = _dense(X, name)
    _check_2d(arr, name, "n_literals")
    if arr.shape[1] == 0:
        raise InputError(f"{name} has no columns (no literals): {_no_columns(arr)}")
    if arr.dtype == bool:
        return arr
    if not np.issubdtype(arr.dtype, np.number):
        raise InputError(f"{name} must be binary (bool or 0/1), got dtype {arr.dtype}")
    bad = ~((arr == 0) | (arr == 1))  # NaN lands here too
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise InputError(
            f"{name} must be binary (bool or 0/1): {name}[{i}, {j}] = {arr[i, j]!r}; "
            "binarize statistics with rudi_explain.Literals first"
        )
    return arr.astype(bool)


def _dense(X: ArrayLike, name: str) -> np.ndarray:
    """``X`` as a numpy array; sparse and complex input refused with the words scikit-learn uses."""
    from scipy import sparse

    if sparse.issparse(X):
        raise InputTypeError(f"{name} is a sparse matrix, and sparse input is not supported: pass X.toarray()")
    arr = np.asarray(X)
    if np.iscomplexobj(arr):
        raise InputError(f"Complex data not supported: {name} must hold real numbers")
    return arr


def _check_2d(arr: np.ndarray, name: str, columns: str) -> None:
    if arr.ndim == 1:
        raise InputError(f"{name} must be 2-D (n_users, {columns}), got shape {arr.shape}: Reshape your data "
                         f"with {name}.reshape(-1, 1) for one column or {name}.reshape(1, -1) for one user")
    if arr.ndim != 2:
        raise InputError(f"{name} must be 2-D (n_users, {columns}), got shape {arr.shape}")


def _no_columns(arr: np.ndarray) -> str:
    """scikit-learn's words for a matrix without columns."""
    return f"0 feature(s) (shape={arr.shape}) while a minimum of 1 is required."


def check_value_matrix(X: ArrayLike, name: str = "X") -> np.ndarray:
    """``X`` as a float matrix (NaN allowed: undefined statistics).

    Parameters
    ----------
    X : array-like of shape (n_users, n_outputs)
        Numbers (bool too); NaN allowed, infinity not.

    Returns
    -------
    ndarray of float64, shape (n_users, n_outputs)
    """
    arr = _dense(X, name)
    _check_2d(arr, name, "n_outputs")
    if arr.shape[1] == 0:
        raise InputError(f"{name} has no columns: {_no_columns(arr)}")
    if arr.dtype != bool and not np.issubdtype(arr.dtype, np.number):
        raise InputError(f"{name} must be numeric, got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if np.isinf(arr).any():
        raise InputError(f"{name} has infinite values")
    return arr


def check_target(y: ArrayLike, n_users: int, name: str = "y") -> np.ndarray:
    """Teacher scores as float64, checked against the number of users.

    Parameters
    ----------
    y : array-like of shape (n_users,) or (n_users, 1)
        Finite numbers, not all equal.
    n_users : int
        Rows of ``X``.

    Returns
    -------
    ndarray of float64, shape (n_users,)
    """
    if y is None:
        raise InputError(f"a rule student requires y to be passed, but the target {name} is None: "
                         "give the teacher's scores")
    arr = np.asarray(y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        warnings.warn("A column-vector y was passed when a 1d array was expected; it is read as one score "
                      "per user", DataConversionWarning, stacklevel=3)
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise InputError(f"{name} must be 1-D (one teacher score per user), got shape {arr.shape}")
    if arr.dtype != bool and not np.issubdtype(arr.dtype, np.number):
        raise InputError(f"{name} must be numeric, got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if arr.size != n_users:
        raise InputError(f"X has {n_users} users (rows) but {name} has {arr.size} scores")
    bad = ~np.isfinite(arr)
    if bad.any():
        raise InputError(
            f"{name} has {int(bad.sum())} NaN or infinite score(s), the first for user row "
            f"{int(np.flatnonzero(bad)[0])}"
        )
    if n_users < 2:
        raise InputError(f"need at least two users to learn an order, got n_samples = {n_users}")
    if np.all(arr == arr[0]):
        raise InputError(f"{name} is constant: the teacher gives every user the same score")
    return arr


class RuleStudent(RegressorMixin, BaseEstimator):
    """Base class: a scikit-learn regressor that learns rules to mimic teacher scores.

    Subclasses take their hyper-parameters as keyword-only ``__init__``
    arguments stored unchanged, check them in ``fit(X, y)`` (which returns
    ``self`` and sets ``n_features_in_``), and implement ``rules(literals)``
    returning a :class:`~rudi_explain.rules.RuleSet`. ``predict`` scores with
    those rules, so a student and its rules never disagree; ``score`` is
    scikit-learn's R^2 of ``predict``, :meth:`fidelity` the pairwise agreement.

    Attributes
    ----------
    input_kind : str
        ``"literals"`` for a bool literal matrix, ``"values"`` for raw
        statistic values (:class:`~rudi_explain.students.LassoStatistics`).
    """

    #: "literals" for a bool literal matrix, "values" for raw statistic values
    input_kind = "literals"

    def __sklearn_is_fitted__(self) -> bool:
        """Whether ``fit`` has completed (what :func:`sklearn.utils.validation.check_is_fitted` asks)."""
        return hasattr(self, "n_features_in_")

    def _check_fitted(self) -> None:
        if not self.__sklearn_is_fitted__():
            raise NotFittedError(f"{type(self).__name__} is not fitted yet; call fit first")

    def __repr__(self, N_CHAR_MAX: int = 700) -> str:
        # Every hyper-parameter, defaults included (scikit-learn's shows only those changed).
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params(deep=False).items())
        return f"{type(self).__name__}({args})"

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = self.input_kind == "values"
        return tags

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Student scores for the rows of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_users, n_features)

        Returns
        -------
        ndarray of float64, shape (n_users,)
        """
        self._check_fitted()
        return self.rules().score(np.asarray(X))

    def fidelity(self, X: ArrayLike, y: ArrayLike) -> float:
        """Fidelity of the student's scores to teacher scores ``y``.

        Parameters
        ----------
        X : array-like of shape (n_users, n_features)
        y : array-like of shape (n_users,)
            Teacher scores.

        Returns
        -------
        float
            The share of pairs of users the student orders as the teacher does.
        """
        return fidelity(y, self.predict(X))

    def rules(self, literals: Any = None) -> Any:  # pragma: no cover - abstract
        """The fitted model as a :class:`~rudi_explain.rules.RuleSet` (each student says how)."""
        raise NotImplementedError

    def _report(self, progress: Any, X: np.ndarray, y: np.ndarray, seconds: float) -> None:
        """One progress event for a student fitted in one go."""
        if progress is None:
            return
        s = self.predict(X)
        progress(FitProgress(epoch=1, epochs=1, loss=float(np.mean((s - y) ** 2)),
                             fidelity=fidelity(y, s), temperature=float("nan"),
                             learning_rate=float("nan"), seconds=seconds))
