"""Binarize statistics into named literals (equation 10 of the RuDi paper).

Each output of each statistic (one column of values per user) becomes a few
literals ``value > threshold``. Candidate thresholds are quantiles of the
defined training values (the paper's deciles by default; ``n_quantiles=20``
gives every 5th percentile, so that a cut such as "more than 14 payments"
between two deciles can be found), each moved to the roundest number that splits the
training users alike, or moves at most 0.5% of them (SEMANTICS.md). An output
whose training values are all 0 or 1 stays one literal, ``value > 0``. A
literal is false where the value is undefined (NaN), so its negation is true
there. Literals that split the training users exactly as another one does (or
as its complement) are dropped, and so are vacuous ones: true, or false, for
99% of the training users or more (:data:`VACUOUS_SHARE`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from collections.abc import Sequence as SequenceT
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from rudi_explain.exceptions import InputError, StateError
from rudi_explain.rules.formula import LiteralInfo, format_threshold
from rudi_explain.statistics import Count, FilterBy, RetainBy, Statistic
from rudi_explain.validation import check_whole

__all__ = ["Literals", "VACUOUS_SHARE", "is_vacuous", "round_threshold", "statistic_values"]

#: Percentiles of equation 10 (the paper's deciles).
PERCENTILES = tuple(range(0, 101, 10))
#: Candidate quantiles by default: the deciles. 20 quantiles were measured on the demo
#: (benchmarks/bench_rules.py --pruning, 3 seeds): +0.003 held-out fidelity for the
#: unpruned GS-NLN, -0.005 for the pruned default, twice the literals.
N_QUANTILES = 10
#: Share of the training users a rounded threshold may move to the other side.
MOVE_TOLERANCE = 0.005
#: Most significant digits of a rounded threshold (unless no rounder value splits alike).
MAX_DIGITS = 3
#: Kinds of statistic output, which decide how thresholds round and read.
OUTPUT_KINDS = ("binary", "count", "share", "value")
#: A literal true for this share of the training users or more, or false for this share or more, tells a
#: reader nothing ("average ln_wage is more than 0", true for 99.95%): it is never made, moved to, nor used as
#: a card's band edge (where the share is of the users whose value is defined; SEMANTICS.md, "The scorecard").
VACUOUS_SHARE = 0.99

# Aggregations whose value is defined for every user (0 when no event is left).
_ALWAYS_DEFINED = frozenset({"Sum", "Count"})


def is_vacuous(n_true: ArrayLike, n: int | ArrayLike) -> np.ndarray:
    """Whether a split that holds for ``n_true`` of ``n`` users is vacuous (:data:`VACUOUS_SHARE`).

    Parameters
    ----------
    n_true : array-like of int
        Users on one side of each split (those for whom the literal is true).
    n : int or array-like of int
        Users counted (the training users; for a band edge, those whose value is defined).

    Returns
    -------
    ndarray of bool
        True where either side holds :data:`VACUOUS_SHARE` of the users or more (an empty split too).
    """
    n_true = np.asarray(n_true, dtype=np.float64)
    n_all = np.asarray(n, dtype=np.float64)
    # a share of exactly 1 - VACUOUS_SHARE on one side is vacuous: the margin only absorbs rounding
    small = (1.0 - VACUOUS_SHARE) * n_all * (1.0 + 1e-9)
    return (np.minimum(n_true, n_all - n_true) <= small) | (n_all <= 0)


def _check_stop(should_stop: Callable[[], bool] | None, k: int, n: int) -> None:
    """Raise if ``should_stop`` says so before statistic ``k`` of ``n`` is evaluated."""
    if should_stop is not None and should_stop():
        raise StateError(f"stopped on request before statistic {k + 1} of {n}")

class Literals:
    """Named literals ``output > threshold`` over the outputs of statistics.

    Build with :meth:`fit` (from statistics and the training users) or
    :meth:`from_values` (from a precomputed value matrix).

    Candidate thresholds are the distinct quantiles (every ``100 /
    n_quantiles`` percent) of each output's defined training values; each is
    moved to the roundest number (fewest significant digits, at most 3 where
    possible; whole numbers for counts; whole percents for shares) that puts
    the same training users on each side, or moves at most
    ``move_tolerance`` of them. Vacuous literals, true or false for
    :data:`VACUOUS_SHARE` (99%) of the training users or more, are dropped
    (constant ones among them), and so are thresholds that split the training users
    as a lower one does. An output whose training values are all 0 or 1
    gives the single literal ``value > 0``. Of literals whose truth columns
    on the training users are equal (or complements), only the first is
    kept: a student sees both polarities of every literal anyway.

    Attributes
    ----------
    statistics : list of Statistic or None
        The statistics, when built with :meth:`fit`.
    output_names : list of str, length n_outputs
        Name of every statistic output (value column), e.g. the statistic's
        text, or ``card_type=debit`` for one output of a vector statistic.
    output_descriptions : list of str, length n_outputs
        The same in words, from ``Statistic.describe``.
    output_statistic, output_index : ndarray of int, shape (n_outputs,)
        Which statistic an output belongs to, and its position among that
        statistic's outputs.
    output_undefined : ndarray of bool, shape (n_outputs,)
        Whether the output is undefined (NaN) for some training user: only
        then do negated literals read "or undefined".
    output_kind : list of str, length n_outputs
        'binary' (0/1), 'count', 'share' (a fraction of events) or 'value'.
    output_undefined_words : list of str, length n_outputs
        Who the undefined users are, in words ("users with no events where
        channel is online"); empty where no training user is undefined.
    output_min : ndarray of float, shape (n_outputs,)
        The smallest defined training value (NaN if none): where it is not
        negative, ``value <= 0`` reads "is 0"; where it lies above a
        threshold, the literal only tells defined users from the others and
        reads so ("any events where channel is online").
    column : ndarray of int, shape (n_literals,)
        The output each literal thresholds.
    thresholds : ndarray of float, shape (n_literals,)
        Exactly the numbers shown in :attr:`threshold_text`.
    threshold_text : list of str
        Each threshold as shown: the shortest text that reads back as the
        very float used.
    names : list of str, length n_literals
        Literal names in notation, e.g. "count of card_type = debit > 14".
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
        output_kind: SequenceT[str] | None = None,
        output_undefined_words: SequenceT[str] | None = None,
        output_min: ArrayLike | None = None,
        output_unit: SequenceT[str] | None = None,
    ):
        n_out = len(output_names)
        self.column = np.asarray(column, dtype=np.int64).reshape(-1)
        self.thresholds = np.asarray(thresholds, dtype=np.float64).reshape(-1)
        if self.column.shape != self.thresholds.shape:
            raise InputError("column and thresholds must have one entry per literal")
        if self.column.size and (self.column.min() < 0 or self.column.max() >= n_out):
            raise InputError("a literal refers to an output that does not exist")
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
        self.output_kind = [str(k) for k in output_kind] if output_kind is not None else ["value"] * n_out
        bad = [k for k in self.output_kind if k not in OUTPUT_KINDS]
        if bad or len(self.output_kind) != n_out:
            raise InputError(f"output_kind needs one of {OUTPUT_KINDS} per output, got {bad or self.output_kind}")
        self.output_undefined_words = (
            [str(x) for x in output_undefined_words] if output_undefined_words is not None
            else ["users for whom it is undefined" if u else "" for u in self.output_undefined]
        )
        self.output_min = (
            np.array([np.nan if m is None else m for m in np.asarray(output_min, dtype=object).reshape(-1)],
                     dtype=np.float64) if output_min is not None else np.full(n_out, np.nan)
        )
        if self.output_min.size != n_out:
            raise InputError(f"output_min needs one entry per output, got {self.output_min.size}")
        self.output_unit = [str(u) for u in output_unit] if output_unit is not None else [""] * n_out
        if len(self.output_unit) != n_out:
            raise InputError(f"output_unit needs one entry per output, got {len(self.output_unit)}")
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
    def fit(
        cls,
        seqs: Any,
        statistics: SequenceT[Any],
        n_quantiles: int = N_QUANTILES,
        move_tolerance: float = MOVE_TOLERANCE,
        *,
        should_stop: Callable[[], bool] | None = None,
        values: ArrayLike | None = None,
    ) -> Literals:
        """Literals of ``statistics`` with thresholds from the users of ``seqs``.

        Parameters
        ----------
        seqs : Sequences
            The training users.
        statistics : sequence of Statistic or str
            E.g. the output of ``search_statistics``; text is parsed.
        n_quantiles : int, default=10
            Candidate thresholds at every ``100 / n_quantiles`` percent of the
            defined training values; 10 gives the paper's deciles, 20 every
            5th percentile. At most
            ``n_quantiles`` literals per statistic output.
        move_tolerance : float, default=0.005
            Share of the training users a threshold may move across when it
            is rounded; 0 keeps exactly the same users on each side.
        should_stop : callable, optional
            Asked before each statistic is evaluated; ``True`` stops with
            :class:`~rudi_explain.exceptions.StateError` (a caller may raise
            its own exception from it instead).
        values : array-like of shape (n_users, n_outputs), optional
            The statistics' outputs on the users of ``seqs`` when already computed
            (:func:`statistic_values`, or rows of it on a larger Sequences with the
            same vocabularies): they are not evaluated again.

        Returns
        -------
        Literals
        """
        statistics = [_as_statistic(s) for s in statistics]
        if not statistics:
            raise InputError("need at least one statistic to make literals from")
        given = None if values is None else _as_2d(np.asarray(values, dtype=np.float64))
        if given is not None and given.shape[0] != seqs.n_users:
            raise InputError(f"values has {given.shape[0]} rows for {seqs.n_users} users")
        blocks, names, descriptions, stat_of, index_of, kinds, why = [], [], [], [], [], [], []
        done = 0  # columns of the given values taken so far
        for k, stat in enumerate(statistics):
            _check_stop(should_stop, k, len(statistics))
            out_names = list(stat.output_names(seqs))
            if given is None:
                block = _as_2d(stat.evaluate(seqs))
            else:
                block, done = given[:, done:done + len(out_names)], done + len(out_names)
            if block.shape[1] != len(out_names):
                raise InputError(f"statistic {stat} gave {block.shape[1]} outputs for {len(out_names)} names")
            vector = len(out_names) > 1 or stat.is_vector(seqs)
            kind = _statistic_kind(stat, seqs)
            for j, name in enumerate(out_names):
                names.append(name if vector else str(stat))
                descriptions.append(stat.describe(output=name if vector else None, data=seqs))
                stat_of.append(k)
                index_of.append(j)
                kinds.append(kind)
                nan = np.isnan(block[:, j]).any()
                why.append(_undefined_words(stat, name if vector else None, seqs) if nan else "")
            blocks.append(block)
        V = np.concatenate(blocks, axis=1)
        if given is not None and V.shape[1] != given.shape[1]:
            raise InputError(f"values has {given.shape[1]} columns; the statistics have {V.shape[1]} outputs")
        undefined = np.isnan(V).any(axis=0)
        kinds = [_data_kind(V[:, j], kinds[j]) for j in range(V.shape[1])]
        units = [_output_unit(statistics[k], kind, seqs) for k, kind in zip(stat_of, kinds)]
        column, thresholds = _binarize(V, kinds, n_quantiles, move_tolerance)
        return cls(
            column, thresholds, names, descriptions, stat_of, index_of, undefined,
            statistics=statistics, vocabularies={k: list(v) for k, v in seqs.vocabularies.items()},
            output_kind=kinds, output_undefined_words=why, output_min=_column_min(V), output_unit=units,
        )

    @classmethod
    def from_values(
        cls,
        values: ArrayLike,
        names: SequenceT[str] | None = None,
        descriptions: SequenceT[str] | None = None,
        kinds: SequenceT[str] | None = None,
        n_quantiles: int = N_QUANTILES,
        move_tolerance: float = MOVE_TOLERANCE,
        *,
        should_stop: Callable[[], bool] | None = None,
    ) -> Literals:
        """Literals of the columns of a precomputed value matrix.

        Parameters
        ----------
        values : array-like of shape (n_users, n_outputs)
            One column per statistic output; NaN where undefined.
        names, descriptions : sequence of str, optional
            Per column; default ``v0, v1, ...``.
        kinds : sequence of str, optional
            Per column, one of 'binary', 'count', 'share', 'value'; by
            default 'binary' for 0/1 columns, 'count' for whole numbers
            that are never negative, else 'value'.
        n_quantiles, move_tolerance
            As for :meth:`fit`.

        Returns
        -------
        Literals
            Without statistics: :meth:`transform` then needs value matrices.
        """
        V = _as_value_matrix(values)
        n_out = V.shape[1]
        names = list(names) if names is not None else [f"v{j}" for j in range(n_out)]
        if len(names) != n_out:
            raise InputError(f"{len(names)} names for {n_out} columns")
        given = list(kinds) if kinds is not None else [None] * n_out
        if len(given) != n_out:
            raise InputError(f"{len(given)} kinds for {n_out} columns")
        kinds = [_data_kind(V[:, j], given[j]) for j in range(n_out)]
        column, thresholds = _binarize(V, kinds, n_quantiles, move_tolerance)
        return cls(column, thresholds, names, descriptions,
                   output_undefined=np.isnan(V).any(axis=0), output_kind=kinds, output_min=_column_min(V))

    def extended(self, column: SequenceT[int], thresholds: SequenceT[float]) -> Literals:
        """This table with more literals ``output column[i] > thresholds[i]`` appended.

        The existing literals keep their indices, so rules over this table
        keep their meaning over the new one; the outputs and their metadata
        are shared. Used by :func:`rudi_explain.rules.refine.refine_thresholds`.
        """
        new_column = np.asarray(column, dtype=np.int64).reshape(-1)
        new_thresholds = np.asarray(thresholds, dtype=np.float64).reshape(-1)
        return type(self)(
            np.concatenate([self.column, new_column]), np.concatenate([self.thresholds, new_thresholds]),
            self.output_names, self.output_descriptions, self.output_statistic, self.output_index,
            self.output_undefined, statistics=self.statistics, vocabularies=self.vocabularies,
            output_kind=self.output_kind, output_undefined_words=self.output_undefined_words,
            output_min=self.output_min, output_unit=self.output_unit,
        )

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

    def values(self, seqs: Any, *, should_stop: Callable[[], bool] | None = None) -> np.ndarray:
        """The statistic outputs of the users of ``seqs``.

        Parameters
        ----------
        seqs : Sequences
        should_stop : callable, optional
            Asked before each statistic is evaluated, as in :meth:`fit`.

        Returns
        -------
        ndarray of float64, shape (n_users, n_outputs)
            NaN where a statistic is undefined.
        """
        if self.statistics is None:
            raise InputError("these literals were built from values; pass a value matrix instead")
        blocks = []
        for k, stat in enumerate(self.statistics):
            _check_stop(should_stop, k, len(self.statistics))
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
                raise InputError(
                    f"statistic {stat} has no output {missing[0]!r} on these users: build their "
                    "Sequences with vocabularies=literals.vocabularies"
                )
            blocks.append(values[:, [pos[self.output_names[i]] for i in mine]])
        return np.concatenate(blocks, axis=1)

    def transform_values(self, values: ArrayLike, only: ArrayLike | None = None) -> np.ndarray:
        """Literal truth values from a value matrix.

        Parameters
        ----------
        values : array-like of shape (n_users, n_outputs)
            As :meth:`values` returns.
        only : array-like of int, optional
            Compute these literals alone; every other column reads False (for a few rules' literals).

        Returns
        -------
        ndarray of bool, shape (n_users, n_literals)
            False where the value is NaN.
        """
        V = _as_value_matrix(values)
        if V.shape[1] != self.n_outputs:
            raise InputError(f"expected {self.n_outputs} value columns, got {V.shape[1]}")
        if only is not None:
            idx = np.unique(np.asarray(only, dtype=np.int64))
            Z = np.zeros((V.shape[0], self.n_literals), dtype=bool)
            with np.errstate(invalid="ignore"):
                Z[:, idx] = V[:, self.column[idx]] > self.thresholds[idx]  # NaN > t is False
            return Z
        if V.shape[0] < 1000:  # a few users: one comparison costs less than a loop over the outputs
            with np.errstate(invalid="ignore"):
                return V[:, self.column] > self.thresholds  # NaN > t is False
        # One output's values against its literals' thresholds at a time, literal-major: gathering the value
        # of every literal first (n_users x n_literals floats) took several times longer (issue 27).
        Vt = np.ascontiguousarray(V.T)
        out = np.empty((self.n_literals, V.shape[0]), dtype=bool)
        with np.errstate(invalid="ignore"):
            for lo, hi in self._runs():
                np.greater(Vt[self.column[lo]][None, :], self.thresholds[lo:hi, None], out=out[lo:hi])  # NaN: False
        return np.ascontiguousarray(out.T)

    def _runs(self) -> list[tuple[int, int]]:
        """``(start, stop)`` of every run of consecutive literals on one output."""
        c = self.column
        if not c.size:
            return []
        starts = np.flatnonzero(np.r_[True, c[1:] != c[:-1]])
        return list(zip(starts.tolist(), np.r_[starts[1:], c.size].tolist()))

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
        value matrix), ``threshold``, ``can_be_undefined`` (some training
        user is undefined), ``kind`` (of the output).
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
            "kind": [self.output_kind[c] for c in self.column],
        })

    def literal_info(self) -> LiteralInfo:
        """What rules need to merge, negate and show these literals."""
        pipelines = [self.pipeline_text(c) for c in range(self.n_outputs)]  # once per output, not per literal
        return LiteralInfo(
            names=list(self.names),
            column=self.column.copy(),
            thresholds=self.thresholds.copy(),
            base=[self.output_descriptions[c] for c in self.column],
            undefined=self.output_undefined[self.column].copy(),
            threshold_text=list(self.threshold_text),
            kind=[self.output_kind[c] for c in self.column],
            undefined_words=[self.output_undefined_words[c] for c in self.column],
            pipeline=[pipelines[c] for c in self.column],
            minimum=self.output_min[self.column].copy(),
            unit=[self.output_unit[c] for c in self.column],
        )

    def pipeline_text(self, c: int) -> str:
        """Statistic output ``c`` in notation, for hover text and tables.

        ``"Select(amount) | Sum"``, or ``"Select(channel) | Mean [channel=online]"`` for one
        output of a vector-valued statistic; the output's name where the statistics are unknown.
        """
        c = int(c)
        if self.statistics is None:
            return self.output_names[c]
        text = str(self.statistics[int(self.output_statistic[c])])
        return text if self.output_names[c] == text else f"{text} [{self.output_names[c]}]"

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
            "output_kind": list(self.output_kind),
            "output_undefined_words": list(self.output_undefined_words),
            "output_min": [None if np.isnan(m) else float(m) for m in self.output_min],
            "output_unit": list(self.output_unit),
            "column": self.column.tolist(),
            # repr keeps every bit of a float; JSON numbers would too, but not inf/nan
            "thresholds": [float(t) for t in self.thresholds],
        }

    def to_json(self, **kwargs: Any) -> str:
        """The literals as JSON text (no pickle)."""
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_dict(cls, d: dict) -> Literals:
        if d.get("format") != "rudi-explain/literals":
            raise InputError("not a rudi-explain literal table")
        statistics = None
        if d.get("statistics") is not None:
            statistics = [Statistic.parse(t) for t in d["statistics"]]
        return cls(
            d["column"], d["thresholds"], d["output_names"], d["output_descriptions"],
            d["output_statistic"], d["output_index"], d["output_undefined"],
            statistics=statistics, vocabularies=d.get("vocabularies"),
            output_kind=d.get("output_kind"), output_undefined_words=d.get("output_undefined_words"),
            output_min=d.get("output_min"), output_unit=d.get("output_unit"),
        )

    @classmethod
    def from_json(cls, text: str) -> Literals:
        """Read literals written by :meth:`to_json`."""
        return cls.from_dict(json.loads(text))


def statistic_values(seqs: Any, statistics: SequenceT[Any], users: ArrayLike | None = None, *,
                     should_stop: Callable[[], bool] | None = None) -> np.ndarray:
    """The outputs of ``statistics`` on the users of ``seqs``, one column per output, in order.

    What :meth:`Literals.values` gives for a table fitted with these statistics on users sharing the
    vocabularies of ``seqs``. explain() evaluates them on the training users (whose sorted frames the
    search has made already) and on a batch of the held-out users, and fits the thresholds on the
    training users' values (``Literals.fit(..., values=)``): each user's values once.

    Parameters
    ----------
    seqs : Sequences
    statistics : sequence of Statistic or str
    users : array of int, optional
        Indices into ``seqs.users`` (a batch, as ``Statistic.evaluate`` takes it); all users when omitted.
    should_stop : callable, optional
        Asked before each statistic is evaluated, as in :meth:`Literals.fit`.

    Returns
    -------
    ndarray of float64, shape (n_users, n_outputs)
        NaN where a statistic is undefined.
    """
    statistics = [_as_statistic(s) for s in statistics]
    if not statistics:
        raise InputError("need at least one statistic to make literals from")
    idx = None if users is None else np.asarray(users, dtype=np.int64)
    blocks = []
    for k, stat in enumerate(statistics):
        _check_stop(should_stop, k, len(statistics))
        blocks.append(_as_2d(stat.evaluate(seqs, idx)))
    return np.concatenate(blocks, axis=1)


def _as_statistic(s: Any) -> Any:
    if isinstance(s, str):
        return Statistic.parse(s)
    return s


def _statistic_kind(stat: Any, seqs: Any) -> str:
    """'count', 'share' or 'value', from the statistic's aggregation and selection."""
    agg = stat.aggregation.name
    categorical = stat.selected in seqs.vocabularies
    if agg == "Count" or (agg == "Sum" and categorical):
        return "count"
    if agg == "Mean" and categorical:
        return "share"
    return "value"


#: aggregations whose value is in the unit of the column they aggregate
_UNIT_KEEPING = ("Sum", "Mean", "Max", "Min", "Median", "Percentile", "First", "Std", "Ptp")


def _output_unit(stat: Any, kind: str, seqs: Any) -> str:
    """The unit of a statistic output: its column's (``seqs.units``) for a
    value measured in it (a total, an average, a largest, ...); "" for counts,
    shares, 0/1 outputs, time statistics (their words say "days") and
    columns without one."""
    units = getattr(seqs, "units", None) or {}
    if kind != "value" or stat.aggregation.name not in _UNIT_KEEPING:
        return ""
    return units.get(stat.selected, "")


def _data_kind(v: np.ndarray, kind: str | None) -> str:
    """The kind of an output given its training values: 0/1 outputs are 'binary'."""
    d = v[~np.isnan(v)]
    if d.size and np.isin(d, (0.0, 1.0)).all():
        return "binary"
    if kind is None:
        whole = d.size > 0 and bool((d == np.round(d)).all()) and bool((d >= 0).all())
        return "count" if whole else "value"
    if kind not in OUTPUT_KINDS:
        raise InputError(f"kind must be one of {OUTPUT_KINDS}, got {kind!r}")
    return kind


def _undefined_words(stat: Any, output: str | None, seqs: Any) -> str:
    """Who the users are for whom ``stat`` is undefined, in words.

    The events a statistic aggregates are those its row operators keep (of
    one group, for a GroupBy output); a user is undefined when none are left
    (fewer than two for Std), so they are named as "users with no <those
    events>", from the words of the Count over the same events.
    """
    try:
        # Only the event filters decide whether any event is left (Top keeps at least one).
        std = stat.aggregation.name == "Std"  # needs two values: Top(1) matters there
        ops = [stat.operators[0], *(op for op in stat.row_operators if std or isinstance(op, (RetainBy, FilterBy)))]
        group = stat.group
        if group is not None and output:
            parts = stat.output_parts(output, seqs)
            if group in parts:
                ops.append(RetainBy(group, parts[group]))
        counted = Statistic([*ops, Count()]).describe(data=seqs)
    except (ValueError, TypeError, KeyError):
        return "users for whom it is undefined"
    what = counted[len("number of "):] if counted.startswith("number of ") else None
    if what is None:
        return "users for whom it is undefined"
    if stat.aggregation.name == "Std":
        return f"users with fewer than 2 {what}"
    if not stat.row_operators and group is None and stat.selected not in seqs.vocabularies:
        return f"users with no defined {stat.selected}"
    return f"users with no {what}"


def _column_min(V: np.ndarray) -> np.ndarray:
    """The smallest defined value of every column of ``V`` (NaN where none is)."""
    defined = ~np.isnan(V)
    out = np.where(defined, V, np.inf).min(axis=0, initial=np.inf)
    return np.where(defined.any(axis=0), out, np.nan)


def _as_2d(values: np.ndarray) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64)
    return values[:, None] if values.ndim == 1 else values


def _as_value_matrix(values: ArrayLike) -> np.ndarray:
    V = np.asarray(values)
    if V.ndim != 2:
        raise InputError(f"expected a value matrix (n_users, n_outputs), got shape {V.shape}")
    if V.dtype != bool and not np.issubdtype(V.dtype, np.number):
        raise InputError(f"values must be numeric, got dtype {V.dtype}")
    V = V.astype(np.float64, copy=False)
    if np.isinf(V).any():
        j = int(np.flatnonzero(np.isinf(V).any(axis=0))[0])
        raise InputError(f"value column {j} has infinite values; a threshold can not be placed")
    return V


def _binarize(
    V: np.ndarray,
    kinds: SequenceT[str],
    n_quantiles: int = N_QUANTILES,
    move_tolerance: float = MOVE_TOLERANCE,
) -> tuple[np.ndarray, np.ndarray]:
    """Rounded quantile thresholds for every column of ``V``, duplicates dropped.

    Returns ``(column, threshold)`` arrays, one entry per literal, ordered by
    column then threshold.
    """
    n, p = V.shape
    if n == 0:
        raise InputError("need at least one user to place thresholds")
    check_whole(n_quantiles, "n_quantiles", min_value=1)
    if not 0 <= move_tolerance < 0.5:
        raise InputError(f"move_tolerance must lie in [0, 0.5), got {move_tolerance!r}")
    percentiles = np.linspace(0, 100, n_quantiles + 1)
    columns: list[np.ndarray] = []
    thresholds: list[np.ndarray] = []
    for j in range(p):  # a loop over statistic outputs, not users
        v = V[:, j]
        v = np.sort(v[~np.isnan(v)])
        if v.size == 0:
            continue  # never defined: no literal can be true
        if kinds[j] == "binary":
            t = np.array([0.0])  # a 0/1 output stays one literal
        else:
            t = np.unique(np.percentile(v, percentiles))
        t = np.array([round_threshold(v, x, n, kinds[j], move_tolerance) for x in t])
        # users strictly above each threshold (NaN counts as not above)
        above = v.size - np.searchsorted(v, t, side="right")
        keep = ~is_vacuous(above, n)  # true (or false) for 99% of the training users or more: dropped
        t, above = t[keep], above[keep]
        # of thresholds that split the users alike, keep the lowest
        t = np.unique(t)
        above = v.size - np.searchsorted(v, t, side="right")
        _, first = np.unique(above, return_index=True)
        t = t[np.sort(first)]
        columns.append(np.full(t.size, j, dtype=np.int64))
        thresholds.append(t)
    if not columns:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    column, threshold = np.concatenate(columns), np.concatenate(thresholds)
    keep = _distinct_literals(V, column, threshold)
    return column[keep], threshold[keep]


def _distinct_literals(V: np.ndarray, column: np.ndarray, threshold: np.ndarray) -> np.ndarray:
    """Indices of the literals whose truth column on the training users is new.

    A literal equal to an earlier one, or to an earlier one's complement,
    adds nothing a student could use (both polarities are its inputs).
    """
    with np.errstate(invalid="ignore"):
        Z = V[:, column] > threshold
    packed = np.packbits(Z, axis=0)
    flipped = np.packbits(~Z, axis=0)
    seen: set[bytes] = set()
    keep = []
    for i in range(Z.shape[1]):  # a loop over literals; the columns are hashed whole
        key = min(packed[:, i].tobytes(), flipped[:, i].tobytes())
        if key not in seen:
            seen.add(key)
            keep.append(i)
    return np.asarray(keep, dtype=np.int64)


def _significant_digits(k: int) -> int:
    """Significant digits of ``k * 10**e`` for any e: those of k without trailing zeros."""
    return 0 if k == 0 else len(str(abs(k)).rstrip("0"))


def round_threshold(v: np.ndarray, t: float, n: int, kind: str, tolerance: float) -> float:
    """The roundest threshold splitting the sorted values ``v`` (almost) as ``t`` does.

    ``x > r`` must leave the same users on each side as ``x > t``, or move at
    most ``floor(tolerance * n)`` of the ``n`` training users (undefined ones
    included in ``n``; they are never above). Among the numbers allowed, the
    one with the fewest significant digits wins, then the one moving the
    fewest users, then the one nearest ``t``. Counts get whole numbers and
    shares whole percents where such a number is allowed.

    Parameters
    ----------
    v : ndarray of float, sorted ascending
        The output's defined values on the training users.
    t : float
        The threshold to round.
    n : int
        The training users, undefined ones included (the tolerance is a share of them).
    kind : {"value", "count", "share", "binary"}
        What the output holds; a binary output's threshold is returned as it is.
    tolerance : float
        The share of the ``n`` users the rounded threshold may move across it.

    Returns
    -------
    float
        The float nearest a short decimal, so its shortest text is that decimal; ``t`` itself where no
        rounder number is allowed, or where ``t`` is at or beyond the values' ends.
    """
    if kind == "binary":
        return float(t)
    c = int(np.searchsorted(v, t, side="right"))  # users at or below t
    if c >= v.size or c < 1:  # at or above the largest value: constant, dropped later
        return float(t)
    m = int(np.floor(tolerance * n))
    c_min = max(c - m, 1)  # never below the smallest value (nobody at or below it otherwise)
    c_max = min(c + m, v.size - 1)  # never at or above the largest (nobody above it)
    lo, hi = float(v[c_min - 1]), float(v[c_max])  # allowed: lo <= r < hi
    if not lo < hi:
        return float(t)
    for min_exponent in ((0,) if kind == "count" else (-2,) if kind == "share" else ()) + (None,):
        r = _roundest_in(lo, hi, float(t), v, c, min_exponent)
        if r is not None:
            return _at_most_three_digits(r, v)
    return _at_most_three_digits(float(t), v)


def _at_most_three_digits(r: float, v: np.ndarray) -> float:
    """``r`` itself if it has at most 3 significant digits, else ``r`` to 3 of them
    (SEMANTICS.md caps the digits; on dense values that moves more than the
    tolerance), unless that would leave every user on one side."""
    short = float(f"{r:.3g}")
    if short == r:
        return r
    below = int(np.searchsorted(v, short, side="right"))
    return short if 1 <= below < v.size else r


def _roundest_in(lo: float, hi: float, t: float, v: np.ndarray, c: int, min_exponent: int | None) -> float | None:
    """The roundest decimal in ``[lo, hi)`` (see :func:`round_threshold`), or None."""
    if lo <= 0.0 < hi:
        return 0.0
    top = int(np.floor(np.log10(max(abs(lo), abs(hi))))) + 1
    bottom = -17 if min_exponent is None else min_exponent
    best: tuple | None = None
    found_at = None
    for e in range(top, bottom - 1, -1):
        if found_at is not None and e < found_at - 2:
            break  # finer steps only add digits
        step = 10.0 ** e
        ks = {int(np.floor(t / step)), int(np.ceil(t / step)), int(np.ceil(lo / step)), int(np.floor(hi / step))}
        for k in ks:
            r = float(f"{k}e{e}")  # the float nearest the decimal k * 10**e
            if not lo <= r < hi:
                continue
            moved = abs(int(np.searchsorted(v, r, side="right")) - c)
            key = (_significant_digits(k), moved, abs(r - t))
            if best is None or key < best[0]:
                best = (key, r)
            if found_at is None:
                found_at = e
    return None if best is None else best[1]
