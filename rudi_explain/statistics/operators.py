"""The operators of the statistic language (SEMANTICS.md), with their kernels.

Four kinds of operator make a pipeline, left to right:

* ``Select(c)`` first;
* row operators (``RetainBy``, ``FilterBy``, ``SortBy``, ``Top``, ``Abs``)
  that keep, drop or reorder events, or transform the selected values;
* at most one ``GroupBy`` right before the aggregation;
* one aggregation last (``Mean``, ``Max``, ... ``Percentile(k)``).

Each operator states its validity (``check``: the reason it cannot follow
the pipeline so far, or None), what it does to the pipeline state
(``advance``), its vectorized evaluation, its text form and its words.

Adding an operator
------------------
Subclass :class:`RowOperator` (implement ``apply``) or :class:`Aggregation`
(implement ``reduce``; ``reduce_onehot`` has a generic default), give it a
``name``, and call :func:`register_operator`. Registered operators parse from
text; those whose ``candidates`` yield instances are also tried by the
search. See ``tests/statistics/test_custom_operator.py`` for a worked example.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from rudi_explain.exceptions import InputError, InputTypeError
from rudi_explain.statistics import kernels
from rudi_explain.statistics.frame import EventFrame
from rudi_explain.statistics.grammar import PipelineState, Schema
from rudi_explain.validation import check_real, check_whole

__all__ = [
    "Operator",
    "Select",
    "RowOperator",
    "RetainBy",
    "FilterBy",
    "SortBy",
    "Top",
    "Abs",
    "GroupBy",
    "Aggregation",
    "Mean",
    "Max",
    "Min",
    "Sum",
    "Std",
    "Ptp",
    "Count",
    "First",
    "Percentile",
    "PERCENTILES",
    "OPERATORS",
    "register_operator",
    "quote",
    "ANY_COLUMN",
]

#: The percentiles of the paper's operator set.
PERCENTILES = (5, 10, 25, 50, 75, 90, 95)

#: The column name of ``Select(*)``: events, not the values of a column.
ANY_COLUMN = "*"

_PLAIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*\Z")


def quote(text: str) -> str:
    """A column name or value as it appears in the text form."""
    return text if _PLAIN.match(text) else repr(text)


class Operator:
    """Base of every operator."""

    #: The name in the text form, e.g. ``"RetainBy"``.
    name: ClassVar[str] = ""
    #: 'select', 'row', 'group' or 'aggregation'.
    kind: ClassVar[str] = ""

    def arguments(self) -> list[str]:
        """The argument texts, already quoted."""
        return []

    def to_text(self) -> str:
        store = getattr(self, "__dict__", None)
        text = store.get("_text") if store is not None else None
        if text is None:
            args = self.arguments()
            text = f"{self.name}({', '.join(args)})" if args else self.name
            if store is not None and getattr(getattr(type(self), "__dataclass_params__", None), "frozen", False):
                # A frozen operator's text never changes, and the search reads it in every key
                # it builds: kept beside the fields (equality, hashing and repr read the fields only).
                store["_text"] = text
        return text

    def __str__(self) -> str:
        return self.to_text()

    @classmethod
    def from_arguments(cls, positional: list[Any], keyword: list[tuple[str, Any]]) -> Operator:
        """Build from parsed arguments; ``ValueError`` if they do not fit."""
        if positional or keyword:
            raise InputError(f"{cls.name} takes no arguments")
        return cls()

    def check(self, state: PipelineState, schema: Schema) -> str | None:
        """Why this operator cannot follow ``state``, or None if it can."""
        raise NotImplementedError

    def advance(self, state: PipelineState, schema: Schema) -> PipelineState:
        """The state after this operator (call only once ``check`` passed)."""
        return state.but(depth=state.depth + 1)

    @classmethod
    def candidates(cls, schema: Schema) -> Iterator[Operator]:
        """Instances the search may try (before validity checks)."""
        return iter(())


def _column_check(column: str, schema: Schema, kind: str, op: str) -> str | None:
    found = schema.kind(column)
    if found is None:
        return f"{op}: unknown column {column!r}"
    if found != kind:
        return f"{op}: column {column!r} is {found}, not {kind}"
    return None


def _row_position_check(state: PipelineState, op: str) -> str | None:
    if state.selected is None:
        return f"{op} cannot come before Select"
    if state.aggregated:
        return f"{op} cannot come after the aggregation"
    if state.group is not None:
        return f"{op} cannot come after GroupBy (only an aggregation can)"
    return None


# --------------------------------------------------------------------------- Select
@dataclass(frozen=True)
class Select(Operator):
    """Select a column: numerical values, or a one-hot matrix of categories.

    ``Select(*)`` selects no column: only aggregations that ignore the
    selection (``Count``, the time aggregations) may follow it.
    """

    column: str
    name: ClassVar[str] = "Select"
    kind: ClassVar[str] = "select"

    def arguments(self) -> list[str]:
        return [ANY_COLUMN if self.column == ANY_COLUMN else quote(self.column)]

    @classmethod
    def from_arguments(cls, positional, keyword):
        if len(positional) != 1 or keyword:
            raise InputError("Select takes one column: Select(amount), or Select(*) before Count")
        return cls(str(positional[0]))

    def check(self, state, schema):
        if state.selected is not None:
            return "Select must come first, and only once"
        if self.column != ANY_COLUMN and schema.kind(self.column) is None:
            return f"Select: unknown column {self.column!r}"
        return None

    def advance(self, state, schema):
        kind = "any" if self.column == ANY_COLUMN else schema.kind(self.column)
        return state.but(selected=self.column, selected_kind=kind)

    @classmethod
    def candidates(cls, schema):
        for column in list(schema.vocabularies) + list(schema.numerical):
            yield cls(column)
        yield cls(ANY_COLUMN)


# --------------------------------------------------------------------------- row operators
class RowOperator(Operator):
    """Keeps, drops or reorders events, or transforms the selected values."""

    kind: ClassVar[str] = "row"

    def apply(self, frame: EventFrame) -> EventFrame:
        raise NotImplementedError

    def check(self, state, schema):
        return _row_position_check(state, self.name)


@dataclass(frozen=True)
class _ByValue(RowOperator):
    column: str
    value: str

    def arguments(self):
        return [f"{quote(self.column)}={quote(self.value)}"]

    @classmethod
    def from_arguments(cls, positional, keyword):
        if positional or len(keyword) != 1:
            raise InputError(f"{cls.name} takes one column=value pair: {cls.name}(card_type=debit)")
        column, value = keyword[0]
        return cls(column, str(value))

    def check(self, state, schema):
        reason = super().check(state, schema) or _column_check(self.column, schema, "categorical", self.name)
        if reason:
            return reason
        if self.column == state.selected:
            return f"{self.name} cannot act on the selected column {self.column!r}"
        if self.column in state.filtered:
            return f"{self.name}: column {self.column!r} is already filtered on"
        if self.value not in schema.vocabularies[self.column]:
            return f"{self.name}: {self.value!r} is not a category of {self.column!r}"
        return None

    @classmethod
    def candidates(cls, schema):
        for column, vocab in schema.vocabularies.items():
            for value in vocab:
                yield cls(column, value)

    def _matches(self, frame: EventFrame) -> np.ndarray:
        vocab = frame.seqs.vocabularies[self.column]
        try:
            code = vocab.index(self.value)
        except ValueError:
            # Not in these sequences' vocabulary: matches no event.
            return np.zeros(len(frame), dtype=bool)
        return frame.codes(self.column) == code


@dataclass(frozen=True)
class RetainBy(_ByValue):
    """Keep the events whose categorical column equals a value."""

    name: ClassVar[str] = "RetainBy"

    def advance(self, state, schema):
        return state.but(
            depth=state.depth + 1,
            filtered=state.filtered | {self.column},
            retained=state.retained | {self.column},
        )

    def apply(self, frame):
        return frame.keep(self._matches(frame))


@dataclass(frozen=True)
class FilterBy(_ByValue):
    """Drop the events whose categorical column equals a value."""

    name: ClassVar[str] = "FilterBy"

    def advance(self, state, schema):
        return state.but(depth=state.depth + 1, filtered=state.filtered | {self.column})

    def apply(self, frame):
        return frame.keep(~self._matches(frame))


@dataclass(frozen=True)
class SortBy(RowOperator):
    """Reorder each user's events by a numerical column, stably, NaN last."""

    column: str
    direction: str = "asc"
    name: ClassVar[str] = "SortBy"

    def __post_init__(self):
        if self.direction not in ("asc", "desc"):
            raise InputError(f"SortBy direction must be 'asc' or 'desc', got {self.direction!r}")

    def arguments(self):
        return [quote(self.column), self.direction]

    @classmethod
    def from_arguments(cls, positional, keyword):
        if keyword or not 1 <= len(positional) <= 2:
            raise InputError("SortBy takes a numerical column and a direction: SortBy(amount, desc)")
        return cls(str(positional[0]), str(positional[1]) if len(positional) > 1 else "asc")

    def check(self, state, schema):
        reason = super().check(state, schema) or _column_check(self.column, schema, "numerical", self.name)
        if reason:
            return reason
        if state.sorted_by is not None:
            return "SortBy can be used only once"
        if state.selected_kind == "any" and state.has_top:
            return "after Select(*) an order only matters before a Top"
        return None

    def advance(self, state, schema):
        return state.but(depth=state.depth + 1, sorted_by=self.column, top_after_sort=False)

    @classmethod
    def candidates(cls, schema):
        for column in schema.numerical:
            yield cls(column, "asc")
            yield cls(column, "desc")

    def apply(self, frame):
        return frame.sorted_by(self.column, descending=self.direction == "desc")


@dataclass(frozen=True)
class Top(RowOperator):
    """Keep the first k events of each user in the current order."""

    k: int = 5
    name: ClassVar[str] = "Top"

    def __post_init__(self):
        if type(self.k) is int and self.k >= 1:
            return  # the common case, without the general check's cost (a search builds thousands)
        check_whole(self.k, "Top(k)", min_value=1)

    def arguments(self):
        return [str(self.k)]  # always written, Top(5) included

    @classmethod
    def from_arguments(cls, positional, keyword):
        if keyword or len(positional) > 1:
            raise InputError("Top takes one whole number: Top(5)")
        if not positional:
            return cls(5)
        try:
            k = int(str(positional[0]))
        except ValueError:
            raise InputError(f"Top takes a whole number of events, got {positional[0]}") from None
        return cls(k)

    def check(self, state, schema):
        reason = super().check(state, schema)
        if reason:
            return reason
        if state.has_top:
            return "Top can be used only once"
        return None

    def advance(self, state, schema):
        return state.but(depth=state.depth + 1, has_top=True, top_after_sort=state.sorted_by is not None)

    @classmethod
    def candidates(cls, schema):
        yield cls(5)

    def apply(self, frame):
        return frame.keep(frame.rank_in_segment() < self.k)


@dataclass(frozen=True)
class Abs(RowOperator):
    """Absolute values of a numerical selection."""

    name: ClassVar[str] = "Abs"

    def check(self, state, schema):
        reason = super().check(state, schema)
        if reason:
            return reason
        if state.selected_kind != "numerical":
            return "Abs applies to a numerical selection only"
        if state.has_abs:
            return "Abs can be used only once"
        return None

    def advance(self, state, schema):
        return state.but(depth=state.depth + 1, has_abs=True)

    @classmethod
    def candidates(cls, schema):
        yield cls()

    def apply(self, frame):
        return replace(frame, absolute=True)


# --------------------------------------------------------------------------- GroupBy
@dataclass(frozen=True)
class GroupBy(Operator):
    """Aggregate separately within each category of a categorical column."""

    column: str
    name: ClassVar[str] = "GroupBy"
    kind: ClassVar[str] = "group"

    def arguments(self):
        return [quote(self.column)]

    @classmethod
    def from_arguments(cls, positional, keyword):
        if len(positional) != 1 or keyword:
            raise InputError("GroupBy takes one categorical column: GroupBy(channel)")
        return cls(str(positional[0]))

    def check(self, state, schema):
        reason = _row_position_check(state, self.name) or _column_check(self.column, schema, "categorical", self.name)
        if reason:
            return reason
        if self.column == state.selected:
            return f"GroupBy cannot group by the selected column {self.column!r}"
        if self.column in state.retained:
            return f"GroupBy cannot group by {self.column!r}: RetainBy already fixes it"
        return None

    def advance(self, state, schema):
        return state.but(depth=state.depth + 1, group=self.column)

    @classmethod
    def candidates(cls, schema):
        for column in schema.vocabularies:
            yield cls(column)

    def apply(self, frame):
        return replace(frame, group=self.column)


# --------------------------------------------------------------------------- aggregations
class Aggregation(Operator):
    """The last operator: one value per user (and per group / category)."""

    kind: ClassVar[str] = "aggregation"
    #: Words for the description, e.g. "mean".
    words: ClassVar[str] = ""
    #: Whether :meth:`reduce` wants the values of each key sorted ascending
    #: (NaN last), e.g. for order statistics; the engine then provides them
    #: sorted, reusing cached orders where it can.
    sorted_input: ClassVar[bool] = False
    #: Whether the value depends only on which events are left, not on the
    #: selected column (``Count``): one output per user (per group), and
    #: the only kind of aggregation allowed after ``Select(*)``.
    ignores_selection: ClassVar[bool] = False

    def check(self, state, schema):
        if state.selected is None:
            return f"{self.name} cannot come before Select"
        if state.aggregated:
            return "a pipeline has exactly one aggregation"
        if state.selected_kind == "any" and not self.ignores_selection:
            return f"{self.name} needs a selected column: Select(*) only goes with Count and the time aggregations"
        if state.needs_order_use and not isinstance(self, First):
            return "SortBy must be followed by Top or First (otherwise it changes nothing)"
        return None

    def advance(self, state, schema):
        return state.but(depth=state.depth + 1, aggregated=True)

    @classmethod
    def candidates(cls, schema):
        yield cls()

    def reduce(self, values: np.ndarray, keys: np.ndarray, n_keys: int) -> np.ndarray:
        """One value per key from numerical ``values``; shape (n_keys,)."""
        raise NotImplementedError

    def reduce_onehot(self, codes: np.ndarray, keys: np.ndarray, n_keys: int, n_categories: int) -> np.ndarray:
        """One value per (key, category) of a one-hot selection; shape (n_keys, n_categories).

        The default builds each one-hot column and calls :meth:`reduce`;
        built-in aggregations override it with closed forms from counts.
        """
        out = np.empty((n_keys, n_categories))
        for j in range(n_categories):  # a loop over categories, not users
            column, column_keys = (codes == j).astype(np.float64), keys
            if self.sorted_input:
                order = np.lexsort((column, keys))
                column, column_keys = column[order], keys[order]
            out[:, j] = self.reduce(column, column_keys, n_keys)
        return out


def _empty_to_nan(values: np.ndarray, n: np.ndarray, minimum: int = 1) -> np.ndarray:
    values[n < minimum] = np.nan
    return values


@dataclass(frozen=True)
class Mean(Aggregation):
    name: ClassVar[str] = "Mean"
    words: ClassVar[str] = "mean"

    def reduce(self, values, keys, n_keys):
        return kernels.segment_mean(values, keys, n_keys)

    def reduce_onehot(self, codes, keys, n_keys, n_categories):
        n, c = kernels.onehot_counts(codes, keys, n_keys, n_categories)
        with np.errstate(invalid="ignore", divide="ignore"):
            return _empty_to_nan(c / n[:, None], n)


@dataclass(frozen=True)
class Max(Aggregation):
    name: ClassVar[str] = "Max"
    words: ClassVar[str] = "maximum"

    def reduce(self, values, keys, n_keys):
        return kernels.segment_max(values, keys, n_keys)

    def reduce_onehot(self, codes, keys, n_keys, n_categories):
        n, c = kernels.onehot_counts(codes, keys, n_keys, n_categories)
        return _empty_to_nan((c > 0).astype(np.float64), n)


@dataclass(frozen=True)
class Min(Aggregation):
    name: ClassVar[str] = "Min"
    words: ClassVar[str] = "minimum"

    def reduce(self, values, keys, n_keys):
        return kernels.segment_min(values, keys, n_keys)

    def reduce_onehot(self, codes, keys, n_keys, n_categories):
        n, c = kernels.onehot_counts(codes, keys, n_keys, n_categories)
        return _empty_to_nan((c == n[:, None]).astype(np.float64), n)


@dataclass(frozen=True)
class Sum(Aggregation):
    name: ClassVar[str] = "Sum"
    words: ClassVar[str] = "sum"

    def reduce(self, values, keys, n_keys):
        return kernels.segment_sum(values, keys, n_keys)

    def reduce_onehot(self, codes, keys, n_keys, n_categories):
        return kernels.onehot_counts(codes, keys, n_keys, n_categories)[1]


@dataclass(frozen=True)
class Std(Aggregation):
    name: ClassVar[str] = "Std"
    words: ClassVar[str] = "standard deviation"

    def reduce(self, values, keys, n_keys):
        return kernels.segment_std(values, keys, n_keys)

    def reduce_onehot(self, codes, keys, n_keys, n_categories):
        n, c = kernels.onehot_counts(codes, keys, n_keys, n_categories)
        with np.errstate(invalid="ignore", divide="ignore"):
            var = (c - c * c / n[:, None]) / (n[:, None] - 1)
        return _empty_to_nan(np.sqrt(np.maximum(var, 0.0)), n, minimum=2)


@dataclass(frozen=True)
class Ptp(Aggregation):
    name: ClassVar[str] = "Ptp"
    words: ClassVar[str] = "range (max - min)"

    def reduce(self, values, keys, n_keys):
        return kernels.segment_max(values, keys, n_keys) - kernels.segment_min(values, keys, n_keys)

    def reduce_onehot(self, codes, keys, n_keys, n_categories):
        n, c = kernels.onehot_counts(codes, keys, n_keys, n_categories)
        return _empty_to_nan(((c > 0) & (c < n[:, None])).astype(np.float64), n)


@dataclass(frozen=True)
class Count(Aggregation):
    name: ClassVar[str] = "Count"
    words: ClassVar[str] = "number"
    ignores_selection: ClassVar[bool] = True

    def reduce(self, values, keys, n_keys):
        return kernels.segment_count(keys, n_keys)

    def reduce_onehot(self, codes, keys, n_keys, n_categories):
        n = kernels.segment_count(keys, n_keys)
        return np.repeat(n[:, None], n_categories, axis=1)


@dataclass(frozen=True)
class First(Aggregation):
    name: ClassVar[str] = "First"
    words: ClassVar[str] = "first"

    def reduce(self, values, keys, n_keys):
        return kernels.segment_first(values, keys, n_keys)

    def reduce_onehot(self, codes, keys, n_keys, n_categories):
        first = np.full(n_keys, len(codes), dtype=np.int64)
        np.minimum.at(first, keys, np.arange(len(codes), dtype=np.int64))
        has = first < len(codes)
        out = np.full((n_keys, n_categories), np.nan)
        out[has] = 0.0
        rows = np.flatnonzero(has)
        code = codes[first[has]]
        seen = code >= 0  # an unseen first category is an all-zero row
        out[rows[seen], code[seen]] = 1.0
        return out


@dataclass(frozen=True)
class Percentile(Aggregation):
    k: float = 50
    name: ClassVar[str] = "Percentile"
    words: ClassVar[str] = "percentile"
    sorted_input: ClassVar[bool] = True

    def __post_init__(self):
        if type(self.k) in (int, float) and 0 <= self.k <= 100:
            return  # the common case, without the general check's cost (NaN and the rest are checked)
        check_real(self.k, "Percentile(k)", min_value=0, max_value=100)

    def arguments(self):
        k = self.k
        return [str(int(k)) if float(k).is_integer() else repr(float(k))]

    @classmethod
    def from_arguments(cls, positional, keyword):
        if keyword or len(positional) != 1:
            raise InputError("Percentile takes one number: Percentile(90)")
        try:
            value = float(str(positional[0]))
        except ValueError:
            raise InputError(f"Percentile takes a number from 0 to 100, got {positional[0]}") from None
        if not value == value:  # NaN
            raise InputError(f"Percentile takes a number from 0 to 100, got {positional[0]}")
        return cls(int(value) if value.is_integer() else value)

    @classmethod
    def candidates(cls, schema):
        for k in PERCENTILES:
            yield cls(k)

    def reduce(self, values, keys, n_keys):
        return kernels.segment_percentile(values, keys, n_keys, float(self.k), presorted=True)

    def reduce_onehot(self, codes, keys, n_keys, n_categories):
        n, c = kernels.onehot_counts(codes, keys, n_keys, n_categories)
        # Sorted 0/1 values: n - c zeros, then c ones; interpolate as numpy does.
        rank = (n - 1)[:, None] * (float(self.k) / 100.0)
        lo = np.floor(rank)
        hi = np.minimum(lo + 1, (n - 1)[:, None])
        zeros = (n[:, None] - c)
        a = (lo >= zeros).astype(np.float64)
        b = (hi >= zeros).astype(np.float64)
        frac = rank - lo
        with np.errstate(invalid="ignore"):
            out = np.where(frac >= 0.5, b - (b - a) * (1 - frac), a + (b - a) * frac)
        return _empty_to_nan(out, n)


#: Every operator by its text name.
OPERATORS: dict[str, type[Operator]] = {}


def register_operator(cls: type[Operator]) -> type[Operator]:
    """Make an operator class known to the parser (and to the search, through
    its ``candidates``). Usable as a class decorator."""
    if not (isinstance(cls, type) and issubclass(cls, Operator)):
        raise InputTypeError("register_operator takes a subclass of Operator")
    if not cls.name or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", cls.name):
        raise InputError(f"operator class {cls.__name__} needs a name made of letters, digits and _")
    if cls.kind not in ("row", "aggregation"):
        raise InputError("a new operator must subclass RowOperator or Aggregation")
    existing = OPERATORS.get(cls.name)
    if existing is not None and existing is not cls:
        raise InputError(f"an operator named {cls.name!r} is already registered")
    OPERATORS[cls.name] = cls
    return cls


for _cls in (Select, RetainBy, FilterBy, SortBy, Top, Abs, GroupBy, Mean, Max, Min, Sum, Std, Ptp, Count, First,
             Percentile):
    OPERATORS[_cls.name] = _cls
