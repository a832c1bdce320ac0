"""Binarize statistics into named literals (equation 10 of the RuDi paper).

Each output of each statistic (one column of values per user) becomes a few
literals ``value > threshold``, with thresholds at the 0th, 10th, ..., 100th
percentiles of the defined training values. An output whose training values
are all 0 or 1 stays one literal, ``value > 0``. A literal is false where the
value is undefined (NaN), so its negation is true there (SEMANTICS.md).
"""

from __future__ import annotations

import json
from typing import Any, Sequence as SequenceT

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from rudi_explain.rules import LiteralInfo, format_threshold

__all__ = ["Literals"]

#: Percentiles of equation 10.
PERCENTILES = tuple(range(0, 101, 10))

# Aggregations whose value is defined for every user (0 when no event is left).
_ALWAYS_DEFINED = frozenset({"Sum", "Count"})


class Literals:
    """Named literals ``output > threshold`` over the outputs of statistics.

    Build with :meth:`fit` (from statistics and the training users) or
    :meth:`from_values` (from a precomputed value matrix).

    Thresholds are the distinct 0th, 10th, ..., 100th percentiles of each
    output's defined training values (equation 10). Literals that are
    constant on the training users are dropped: the 100th percentile always
    gives one (nobody exceeds the maximum), and so does an output with a
    single value. Of thresholds that split the training users identically,
    only the lowest is kept. An output whose training values are all 0 or 1
    gives the single literal ``value > 0``.

    Attributes
    ----------
    statistics : list of Statistic or None
        The statistics, when built with :meth:`fit`.
    output_names : list of str, length n_outputs
        Name of every statistic output (value column), e.g. the statistic's
        text, or ``card_type=debit`` for one output of a vector statistic.
    output_descriptions : list of str, length n_outputs
        The same in words ("count of card_type = debit").
    output_statistic, output_index : ndarray of int, shape (n_outputs,)
        Which statistic an output belongs to, and its position among that
        statistic's outputs.
    output_undefined : ndarray of bool, shape (n_outputs,)
        Whether the output can be undefined (NaN) for a user.
    column : ndarray of int, shape (n_literals,)
        The output each literal thresholds.
    thresholds : ndarray of float, shape (n_literals,)
    names : list of str, length n_literals
        Readable literal names, e.g. "count of card_type = debit > 14".
    vocabularies : dict or None
        Vocabularies of the training sequences: build new Sequences with
        ``Sequences(..., vocabularies=literals.vocabularies)`` so vector
        statistics have the same outputs.
    """

    def __init__(
        self,
        column: ArrayLike,
        thresholds: ArrayLike,
        output_names: SequenceT[str],
        output_descriptions: SequenceT[str] | None = None,
        output_statistic: ArrayLike | None = None,
        output_index: ArrayLike | None = None,
        output_undefined: ArrayLike | None = None,
        statistics: SequenceT[Any] | None = None,
        vocabularies: dict | None = None,
    ):
        n_out = len(output_names)
        self.column = np.asarray(column, dtype=np.int64).reshape(-1)
        self.thresholds = np.asarray(thresholds, dtype=np.float64).reshape(-1)
        if self.column.shape != self.thresholds.shape:
            raise ValueError("column and thresholds must have one entry per literal")
        if self.column.size and (self.column.min() < 0 or self.column.max() >= n_out):
            raise ValueError("a literal refers to an output that does not exist")
        self.output_names = [str(x) for x in output_names]
        self.output_descriptions = (
            [str(x) for x in output_descriptions] if output_descriptions is not None
            else list(self.output_names)
        )
        self.output_statistic = (
            np.asarray(output_statistic, dtype=np.int64) if output_statistic is not None
            else np.arange(n_out, dtype=np.int64)
        )
        self.output_index = (
            np.asarray(output_index, dtype=np.int64) if output_index is not None
            else np.zeros(n_out, dtype=np.int64)
        )
        self.output_undefined = (
            np.asarray(output_undefined, dtype=bool) if output_undefined is not None
            else np.ones(n_out, dtype=bool)
        )
        self.statistics = list(statistics) if statistics is not None else None
        self.vocabularies = (
            {k: list(v) for k, v in vocabularies.items()} if vocabularies is not None else None
        )
        self.threshold_text = [format_threshold(t) for t in self.thresholds]
        self.names = [
            f"{self.output_descriptions[c]} > {t}" for c, t in zip(self.column, self.threshold_text)
        ]

    # ------------------------------------------------------------ building

    @classmethod
    def fit(cls, seqs: Any, statistics: SequenceT[Any]) -> "Literals":
        """Literals of ``statistics`` with thresholds from the users of ``seqs``.

        Parameters
        ----------
        seqs : Sequences
            The training users.
        statistics : sequence of Statistic or str
            E.g. the output of ``search_statistics``; text is parsed.

        Returns
        -------
        Literals
        """
        statistics = [_as_statistic(s) for s in statistics]
        if not statistics:
            raise ValueError("need at least one statistic to make literals from")
        blocks, names, descriptions, stat_of, index_of, undefined = [], [], [], [], [], []
        for k, stat in enumerate(statistics):
            values = _as_2d(stat.evaluate(seqs))
            out_names = list(stat.output_names(seqs))
            if values.shape[1] != len(out_names):
                raise ValueError(f"statistic {stat} gave {values.shape[1]} outputs for {len(out_names)} names")
            vector = len(out_names) > 1 or stat.is_vector(seqs)
            can_be_nan = _can_be_undefined(stat, seqs)
            for j, name in enumerate(out_names):
                names.append(name if vector else str(stat))
                descriptions.append(stat.describe(output=name if vector else None, data=seqs))
                stat_of.append(k)
                index_of.append(j)
                undefined.append(can_be_nan or bool(np.isnan(values[:, j]).any()))
            blocks.append(values)
        V = np.concatenate(blocks, axis=1)
        column, thresholds = _binarize(V)
        return cls(
            column, thresholds, names, descriptions, stat_of, index_of, undefined,
            statistics=statistics, vocabularies={k: list(v) for k, v in seqs.vocabularies.items()},
        )

    @classmethod
    def from_values(
        cls,
        values: ArrayLike,
        names: SequenceT[str] | None = None,
        descriptions: SequenceT[str] | None = None,
    ) -> "Literals":
        """Literals of the columns of a precomputed value matrix.

        Parameters
        ----------
        values : array-like of shape (n_users, n_outputs)
            One column per statistic output; NaN where undefined.
        names, descriptions : sequence of str, optional
            Per column; default ``v0, v1, ...``.

        Returns
        -------
        Literals
            Without statistics: :meth:`transform` then needs value matrices.
        """
        V = _as_value_matrix(values)
        n_out = V.shape[1]
        names = list(names) if names is not None else [f"v{j}" for j in range(n_out)]
        if len(names) != n_out:
            raise ValueError(f"{len(names)} names for {n_out} columns")
        column, thresholds = _binarize(V)
        return cls(column, thresholds, names, descriptions,
                   output_undefined=np.isnan(V).any(axis=0))

    # ------------------------------------------------------------ applying

    @property
    def n_literals(self) -> int:
        return int(self.column.size)

    @property
    def n_outputs(self) -> int:
        return len(self.output_names)

    def __len__(self) -> int:
        return self.n_literals

    def __repr__(self) -> str:
        return f"<Literals: {self.n_literals} literals over {self.n_outputs} statistic outputs>"

    def values(self, seqs: Any) -> np.ndarray:
        """The statistic outputs of the users of ``seqs``.

        Parameters
        ----------
        seqs : Sequences

        Returns
        -------
        ndarray of float64, shape (n_users, n_outputs)
            NaN where a statistic is undefined.
        """
        if self.statistics is None:
            raise ValueError("these literals were built from values; pass a value matrix instead")
        blocks = []
        for k, stat in enumerate(self.statistics):
            values = _as_2d(stat.evaluate(seqs))
            mine = np.flatnonzero(self.output_statistic == k)
            if values.shape[1] == mine.size:
                blocks.append(values)
                continue
            # The new data's vocabulary differs: line outputs up by name.
            new_names = list(stat.output_names(seqs))
            pos = {n: i for i, n in enumerate(new_names)}
            missing = [self.output_names[i] for i in mine if self.output_names[i] not in pos]
            if missing:
                raise ValueError(
                    f"statistic {stat} has no output {missing[0]!r} on these users: build their "
                    "Sequences with vocabularies=literals.vocabularies"
                )
            blocks.append(values[:, [pos[self.output_names[i]] for i in mine]])
        return np.concatenate(blocks, axis=1)

    def transform_values(self, values: ArrayLike) -> np.ndarray:
        """Literal truth values from a value matrix.

        Parameters
        ----------
        values : array-like of shape (n_users, n_outputs)
            As :meth:`values` returns.

        Returns
        -------
        ndarray of bool, shape (n_users, n_literals)
            False where the value is NaN.
        """
        V = _as_value_matrix(values)
        if V.shape[1] != self.n_outputs:
            raise ValueError(f"expected {self.n_outputs} value columns, got {V.shape[1]}")
        with np.errstate(invalid="ignore"):
            return V[:, self.column] > self.thresholds  # NaN > t is False

    def transform(self, data: Any) -> np.ndarray:
        """Literal truth values for the users of ``data``.

        Parameters
        ----------
        data : Sequences, or array-like of shape (n_users, n_outputs)
            Users (new ones too), or their value matrix.

        Returns
        -------
        ndarray of bool, shape (n_users, n_literals)
        """
        if hasattr(data, "n_users") and not isinstance(data, np.ndarray):
            return self.transform_values(self.values(data))
        return self.transform_values(data)

    # ------------------------------------------------------------ metadata

    def table(self) -> pd.DataFrame:
        """One row per literal: name, statistic, output, threshold.

        Returns
        -------
        DataFrame with columns ``name``, ``statistic`` (index into
        :attr:`statistics`), ``statistic_text``, ``output`` (index among the
        statistic's outputs), ``output_name``, ``column`` (index into the
        value matrix), ``threshold``, ``can_be_undefined``.
        """
        stat_text = (
            [str(self.statistics[k]) for k in self.output_statistic[self.column]]
            if self.statistics is not None else [None] * self.n_literals
        )
        return pd.DataFrame({
            "name": self.names,
            "statistic": self.output_statistic[self.column],
            "statistic_text": stat_text,
            "output": self.output_index[self.column],
            "output_name": [self.output_names[c] for c in self.column],
            "column": self.column,
            "threshold": self.thresholds,
            "can_be_undefined": self.output_undefined[self.column],
        })

    def literal_info(self) -> LiteralInfo:
        """What rules need to merge, negate and show these literals."""
        return LiteralInfo(
            names=list(self.names),
            column=self.column.copy(),
            thresholds=self.thresholds.copy(),
            base=[self.output_descriptions[c] for c in self.column],
            undefined=self.output_undefined[self.column].copy(),
            threshold_text=list(self.threshold_text),
        )

    # ------------------------------------------------------------ persistence

    def to_dict(self) -> dict:
        """A JSON-ready dict; :meth:`from_dict` reads it back."""
        return {
            "format": "rudi-explain/literals",
            "version": 1,
            "statistics": [str(s) for s in self.statistics] if self.statistics is not None else None,
            "vocabularies": self.vocabularies,
            "output_names": self.output_names,
            "output_descriptions": self.output_descriptions,
            "output_statistic": self.output_statistic.tolist(),
            "output_index": self.output_index.tolist(),
            "output_undefined": self.output_undefined.tolist(),
            "column": self.column.tolist(),
            # repr keeps every bit of a float; JSON numbers would too, but not inf/nan
            "thresholds": [float(t) for t in self.thresholds],
        }

    def to_json(self, **kwargs: Any) -> str:
        """The literals as JSON text (no pickle)."""
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_dict(cls, d: dict) -> "Literals":
        if d.get("format") != "rudi-explain/literals":
            raise ValueError("not a rudi-explain literal table")
        statistics = None
        if d.get("statistics") is not None:
            from rudi_explain.statistics import Statistic

            statistics = [Statistic.parse(t) for t in d["statistics"]]
        return cls(
            d["column"], d["thresholds"], d["output_names"], d["output_descriptions"],
            d["output_statistic"], d["output_index"], d["output_undefined"],
            statistics=statistics, vocabularies=d.get("vocabularies"),
        )

    @classmethod
    def from_json(cls, text: str) -> "Literals":
        """Read literals written by :meth:`to_json`."""
        return cls.from_dict(json.loads(text))


def _as_statistic(s: Any) -> Any:
    if isinstance(s, str):
        from rudi_explain.statistics import Statistic

        return Statistic.parse(s)
    return s


def _can_be_undefined(stat: Any, seqs: Any) -> bool:
    """Whether a statistic can be NaN for some user (SEMANTICS.md).

    Sum and Count never are. Std is with fewer than two values. The others
    are when no value may be left: events removed by RetainBy/FilterBy, an
    empty group, or NaN values of a numerical column. A categorical
    selection with neither keeps at least one event (every user has one).
    """
    agg = stat.aggregation.name
    if agg in _ALWAYS_DEFINED:
        return False
    if agg == "Std" or stat.group is not None:
        return True
    if any(op.name in ("RetainBy", "FilterBy") for op in stat.row_operators):
        return True
    return stat.selected not in seqs.vocabularies


def _as_2d(values: np.ndarray) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64)
    return values[:, None] if values.ndim == 1 else values


def _as_value_matrix(values: ArrayLike) -> np.ndarray:
    V = np.asarray(values)
    if V.ndim != 2:
        raise ValueError(f"expected a value matrix (n_users, n_outputs), got shape {V.shape}")
    if V.dtype != bool and not np.issubdtype(V.dtype, np.number):
        raise ValueError(f"values must be numeric, got dtype {V.dtype}")
    V = V.astype(np.float64, copy=False)
    if np.isinf(V).any():
        j = int(np.flatnonzero(np.isinf(V).any(axis=0))[0])
        raise ValueError(f"value column {j} has infinite values; a threshold can not be placed")
    return V


def _binarize(V: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Thresholds of equation 10 for every column of ``V``.

    Returns ``(column, threshold)`` arrays, one entry per literal, ordered by
    column then threshold.
    """
    n, p = V.shape
    if n == 0:
        raise ValueError("need at least one user to place thresholds")
    columns: list[np.ndarray] = []
    thresholds: list[np.ndarray] = []
    for j in range(p):  # a loop over statistic outputs, not users
        v = V[:, j]
        v = np.sort(v[~np.isnan(v)])
        if v.size == 0:
            continue  # never defined: no literal can be true
        if np.isin(v, (0.0, 1.0)).all():
            t = np.array([0.0])  # a 0/1 output stays one literal
        else:
            t = np.unique(np.percentile(v, PERCENTILES))
        # users strictly above each threshold (NaN counts as not above)
        above = v.size - np.searchsorted(v, t, side="right")
        keep = (above > 0) & (above < n)  # not constant on the training users
        # thresholds with no training value between them split users alike
        keep[1:] &= above[1:] != above[:-1]
        t = t[keep]
        columns.append(np.full(t.size, j, dtype=np.int64))
        thresholds.append(t)
    if not columns:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    return np.concatenate(columns), np.concatenate(thresholds)
