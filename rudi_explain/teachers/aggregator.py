"""Sequences to a flat per-user table of every single aggregation.

:class:`SequenceAggregator` is a scikit-learn transformer whose input is a
:class:`~rudi_explain.data.sequences.Sequences` (not a matrix): it evaluates every
depth-1 statistic ``Select(column) | Aggregation`` with the vectorized engine
and stacks the results, one row per user. This is the seed paper's LightGBM
teacher input ("all aggregation operators ... to transform raw sequences into
tabular forms") and the feature table of its Lasso and LightGBM search
baselines, so that

    make_pipeline(SequenceAggregator(), HistGradientBoostingClassifier())

fits on sequences directly.

The target ``y`` of such a pipeline must line up with ``seqs.users`` (sorted
user ids): scikit-learn's ``Pipeline`` hands the same ``y`` to the last step,
which reads it by position, and no transformer can reorder it there. So
:meth:`SequenceAggregator.fit` checks the order it can check: a Series (or
DataFrame) indexed by user id must hold exactly those users in that order
(``y.reindex(seqs.users)`` makes one), and a bare array, whose order cannot
be checked, is refused unless the aggregator is built with
``in_users_order=True``.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence as SequenceT
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from rudi_explain.data.alignment import check_order, name_users, reindex_series
from rudi_explain.data.sequences import UNSEEN_CODE, Sequences
from rudi_explain.exceptions import InputError, InputTypeError
from rudi_explain.statistics import PERCENTILES, Aggregation, Count, Select, Statistic

__all__ = ["SequenceAggregator", "align_vocabularies", "NUMERICAL_AGGREGATIONS", "CATEGORICAL_AGGREGATIONS"]

#: Aggregations applied to each numerical column by default (``Count`` is
#: added once for the whole table: it does not depend on the column).
NUMERICAL_AGGREGATIONS: tuple[str, ...] = (
    "Mean", "Max", "Min", "Sum", "Std", "Ptp", "First", *(f"Percentile({k})" for k in PERCENTILES),
)
#: Aggregations applied to the one-hot matrix of each categorical column by
#: default: the share (``Mean``) and the count (``Sum``) of each category.
CATEGORICAL_AGGREGATIONS: tuple[str, ...] = ("Mean", "Sum")


def _parse_aggregation(text: str) -> Aggregation:
    """``"Mean"`` or ``"Percentile(90)"`` as an Aggregation instance."""
    # Parse through a throw-away pipeline so that the text form is the one
    # of the statistic language (and custom aggregations work too).
    stat = Statistic.parse(f"Select(x) | {text}")
    if len(stat.operators) != 2:
        raise InputError(f"{text!r} is not a single aggregation")
    return stat.aggregation


def align_vocabularies(seqs: Sequences, vocabularies: Mapping[str, SequenceT[str]]) -> Sequences:
    """The same sequences with categorical codes into other vocabularies.

    A model fitted on one :class:`Sequences` reads category codes as positions
    in *its* vocabularies; sequences built later without
    ``vocabularies=train.vocabularies`` may number the categories otherwise.
    This recodes them (categories the given vocabularies lack become unseen,
    code ``-1``) and returns ``seqs`` itself when nothing differs.

    Parameters
    ----------
    seqs : Sequences
    vocabularies : mapping of str to sequence of str
        Target vocabulary of each categorical column. Every column named here
        must be a categorical column of ``seqs``.

    Returns
    -------
    Sequences
        Shares every array but the recoded ``codes`` with ``seqs``.
    """
    changed: dict[str, tuple[np.ndarray, tuple[str, ...]]] = {}
    for column, target in vocabularies.items():
        if column not in seqs.vocabularies:
            raise InputError(
                f"categorical column {column!r} is missing from the sequences; "
                f"their categorical columns are {seqs.categorical}"
            )
        target = tuple(target)
        own = seqs.vocabularies[column]
        if own == target:
            continue
        position = {v: i for i, v in enumerate(target)}
        # One extra slot maps the unseen code (-1, the last slot) to unseen.
        remap = np.array([position.get(v, UNSEEN_CODE) for v in own] + [UNSEEN_CODE], dtype=np.int32)
        changed[column] = (remap[seqs.codes[column]], target)
    if not changed:
        return seqs
    new = object.__new__(Sequences)
    new.__dict__.update(seqs.__dict__)
    new.codes = dict(seqs.codes)
    new.vocabularies = dict(seqs.vocabularies)
    for column, (codes, target) in changed.items():
        new.codes[column] = codes
        new.vocabularies[column] = target
    new._user_position = None
    new._cache = {}  # cached orders and schemas belong to the old codes
    return new


class SequenceAggregator(TransformerMixin, BaseEstimator):
    """Every single aggregation of every column, one row per user.

    For each numerical column: ``Mean``, ``Max``, ``Min``, ``Sum``, ``Std``,
    ``Ptp``, ``First`` and ``Percentile(k)`` for k in 5, 10, 25, 50, 75, 90,
    95; ``Count`` (the number of events) once; for each categorical column the
    share (``Mean``) and count (``Sum``) of each category. Values follow
    SEMANTICS.md (NaN values skipped; NaN where an aggregation is undefined).

    Parameters
    ----------
    numerical_aggregations : sequence of str or None, default=None
        Aggregations of each numerical column, in the text form of the
        statistic language. None: :data:`NUMERICAL_AGGREGATIONS`.
    categorical_aggregations : sequence of str or None, default=None
        Aggregations of the one-hot matrix of each categorical column. None:
        :data:`CATEGORICAL_AGGREGATIONS`.
    count : bool, default=True
        Whether to add the number of events (``Select(c) | Count``) once.
    fill_value : float or None, default=None
        What undefined values (NaN) become. None keeps NaN, which
        ``HistGradientBoosting*`` handle natively; use e.g. 0.0 for
        estimators that do not.
    in_users_order : bool, default=False
        Whether a bare array ``y`` given to :meth:`fit` (and so to the
        pipeline's last step) may be read by position in ``X.users`` order.
        By default only a Series indexed by user id is accepted, and only in
        that order (see the module's notes: a Pipeline cannot reorder ``y``).

    Attributes
    ----------
    statistics_ : list of Statistic
        The statistics evaluated, in column-block order.
    feature_names_out_ : ndarray of str, shape (n_features_out,)
        ``str(statistic)`` for a scalar statistic, ``"str(statistic)[c=v]"``
        for category ``v`` of a categorical one.
    feature_statistic_ : ndarray of int, shape (n_features_out,)
        Index into :attr:`statistics_` of each output column.
    feature_output_ : ndarray of int, shape (n_features_out,)
        Index of each output column within its statistic's outputs
        (:meth:`Statistic.output_names`).
    vocabularies_ : dict of str to tuple of str
        Vocabularies learned in ``fit``; ``transform`` recodes other
        sequences to them (unseen categories add to no one-hot column).
    categorical_, numerical_ : list of str
        Columns learned in ``fit``.
    n_features_out_ : int

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.ensemble import HistGradientBoostingClassifier
    >>> data = make_payments(500)                               # doctest: +SKIP
    >>> model = make_pipeline(SequenceAggregator(), HistGradientBoostingClassifier())
    >>> seqs = data.sequences()                                  # doctest: +SKIP
    >>> model.fit(seqs, data.labels.reindex(seqs.users))          # doctest: +SKIP
    """

    def __init__(
        self,
        *,
        numerical_aggregations: SequenceT[str] | None = None,
        categorical_aggregations: SequenceT[str] | None = None,
        count: bool = True,
        fill_value: float | None = None,
        in_users_order: bool = False,
    ) -> None:
        self.numerical_aggregations = numerical_aggregations
        self.categorical_aggregations = categorical_aggregations
        self.count = count
        self.fill_value = fill_value
        self.in_users_order = in_users_order

    # ------------------------------------------------------------------ fit
    def fit(self, X: Sequences, y: Any = None) -> SequenceAggregator:
        """Learn the columns and vocabularies of ``X`` and build the statistics.

        Parameters
        ----------
        X : Sequences
        y : Series or DataFrame indexed by user id, array-like, or None
            Not used here, but a Pipeline gives the same ``y`` to its last
            step by position, so its order is checked: a Series must hold
            exactly ``X.users`` in that order; a bare array is refused unless
            ``in_users_order=True`` (then it must have one row per user).

        Returns
        -------
        self

        Raises
        ------
        ValueError
            If ``y`` is a bare array and ``in_users_order`` is false, or is
            indexed by ids that are missing, extra, repeated or out of order
            (naming them).
        """
        seqs = self._check_sequences(X)
        if y is not None:
            self._check_target(y, seqs)
        if self.fill_value is not None and not np.isscalar(self.fill_value):
            raise InputTypeError(f"fill_value must be a number or None, got {self.fill_value!r}")
        num_aggs = [_parse_aggregation(a) for a in
                    (NUMERICAL_AGGREGATIONS if self.numerical_aggregations is None else self.numerical_aggregations)]
        cat_aggs = [_parse_aggregation(a) for a in
                    (CATEGORICAL_AGGREGATIONS if self.categorical_aggregations is None
                     else self.categorical_aggregations)]
        self.categorical_ = list(seqs.categorical)
        self.numerical_ = list(seqs.numerical)
        self.vocabularies_ = {c: tuple(seqs.vocabularies[c]) for c in self.categorical_}
        stats: list[Statistic] = []
        for column in self.numerical_:
            stats += [Statistic((Select(column), agg)) for agg in num_aggs if not isinstance(agg, Count)]
        for column in self.categorical_:
            stats += [Statistic((Select(column), agg)) for agg in cat_aggs if not isinstance(agg, Count)]
        if self.count:
            # Count ignores the selection; a numerical one keeps it scalar.
            column = (self.numerical_ or self.categorical_)[0]
            stats.append(Statistic((Select(column), Count())))
        for stat in stats:
            stat.validate(seqs)
        self.statistics_ = stats
        names, which, output = [], [], []
        for i, stat in enumerate(stats):
            outs = stat.output_names(seqs)
            vector = stat.is_vector(seqs)
            if isinstance(stat.aggregation, Count) and vector:
                # A categorical Count repeats the event count per category: keep one.
                outs, vector = outs[:1], False
            for j, out in enumerate(outs):
                names.append(f"{stat}[{out}]" if vector else str(stat))
                which.append(i)
                output.append(j)
        self.feature_names_out_ = np.asarray(names, dtype=object)
        self.feature_statistic_ = np.asarray(which, dtype=np.int64)
        self.feature_output_ = np.asarray(output, dtype=np.int64)
        self.n_features_out_ = len(names)
        return self

    # ------------------------------------------------------------ transform
    def transform(self, X: Sequences) -> np.ndarray:
        """The per-user table.

        Parameters
        ----------
        X : Sequences
            Must hold the columns seen in ``fit``; its categories are recoded
            to the fitted vocabularies (so the columns are the same whatever
            categories ``X`` has).

        Returns
        -------
        ndarray of float64, shape (n_users, n_features_out)
            Rows line up with ``X.users``.
        """
        check_is_fitted(self, "statistics_")
        seqs = self._check_sequences(X)
        missing = [c for c in self.numerical_ if c not in seqs.values]
        missing += [c for c in self.categorical_ if c not in seqs.vocabularies]
        if missing:
            raise InputError(
                f"column {missing[0]!r} seen in fit is missing from the sequences "
                f"(categorical {seqs.categorical}, numerical {seqs.numerical})"
            )
        seqs = align_vocabularies(seqs, self.vocabularies_)
        blocks = []
        for i, stat in enumerate(self.statistics_):
            values = stat.evaluate(seqs).reshape(seqs.n_users, -1)
            blocks.append(values[:, self.feature_output_[self.feature_statistic_ == i]])
        out = np.hstack(blocks) if blocks else np.empty((seqs.n_users, 0))
        if self.fill_value is not None:
            out[np.isnan(out)] = self.fill_value
        return out

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """Names of the output columns; see :attr:`feature_names_out_`.

        Returns
        -------
        ndarray of str, shape (n_features_out,)
        """
        check_is_fitted(self, "statistics_")
        return self.feature_names_out_.copy()

    # ---------------------------------------------------------------- utils
    def _check_target(self, y: Any, seqs: Sequences) -> None:
        """Refuse a ``y`` the pipeline's last step would read out of ``seqs.users`` order."""
        source = "the target values y"
        try:
            check_order(y, seqs.users, source, bool(self.in_users_order))
        except ValueError as err:
            raise InputError(f"{err}; in a pipeline, say so with SequenceAggregator(in_users_order=True)") from None
        if isinstance(y, (pd.Series, pd.DataFrame)):
            reindex_series(y, seqs.users, source)  # missing, extra or repeated ids: errors naming them
            ids = y.index.to_numpy()
            # Same ids (checked above) but in another order: the last step would read them by position.
            moved = np.flatnonzero(np.asarray(ids, dtype=object) != np.asarray(seqs.users, dtype=object))
            if moved.size:
                raise InputError(
                    f"{source} are indexed by user id but not in the order of the sequences' users "
                    f"(first out of place: position {moved[0]} holds {name_users(ids[moved[:1]])}, the "
                    f"users have {name_users(seqs.users[moved[:1]])}); a scikit-learn Pipeline gives y to its "
                    "last step by position, so pass y.reindex(seqs.users)")
            return
        n = len(y) if hasattr(y, "__len__") else -1
        if n != seqs.n_users:
            raise InputError(f"{source} must have one row per user ({seqs.n_users}), got {n}")

    @staticmethod
    def _check_sequences(X: Any) -> Sequences:
        if not isinstance(X, Sequences):
            raise InputTypeError(
                f"SequenceAggregator transforms a rudi_explain.Sequences, got {type(X).__name__}; "
                "build one with rx.Sequences(events, user=..., time=...)"
            )
        return X

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # The input is a Sequences, not an array: skip the array checks.
        tags.input_tags.two_d_array = False
        tags.input_tags.allow_nan = True
        tags.requires_fit = True
        return tags
