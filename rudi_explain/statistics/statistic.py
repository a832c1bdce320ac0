"""A statistic: a valid pipeline of operators, evaluated for many users at once."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from rudi_explain.data.sequences import Sequences
from rudi_explain.exceptions import IndexOutOfRange, InputError, InputTypeError
from rudi_explain.statistics.frame import EventFrame
from rudi_explain.statistics.grammar import PipelineState, Schema
from rudi_explain.statistics.operators import (
    OPERATORS,
    Abs,
    Aggregation,
    Count,
    FilterBy,
    First,
    GroupBy,
    Max,
    Min,
    Operator,
    Percentile,
    RetainBy,
    RowOperator,
    Select,
    SortBy,
    Sum,
    Top,
    quote,
)
from rudi_explain.statistics.readable import MAX_FILTERS, check_grammar, is_readable, readable_reason
from rudi_explain.statistics.text import parse_operators
from rudi_explain.statistics.time_operators import time_phrase

__all__ = ["Statistic", "Pipeline", "next_operators", "candidate_operators"]


class Statistic:
    """A pipeline ``Select | row operators | [GroupBy] | aggregation``.

    Parameters
    ----------
    operators : sequence of Operator
        The pipeline, left to right. Its shape (Select first, one aggregation
        last, GroupBy only before it) is checked here; the columns and values
        are checked against data by :meth:`validate` (and by :meth:`evaluate`).

    Examples
    --------
    >>> s = Statistic.parse("Select(amount) | RetainBy(card_type=debit) | Sum")
    >>> str(s)
    'Select(amount) | RetainBy(card_type=debit) | Sum'
    >>> s.depth
    2
    """

    __slots__ = ("operators", "_key", "_hash")

    def __init__(self, operators: Iterable[Operator]) -> None:
        ops = tuple(operators)
        if not ops:
            raise InputError("a statistic needs at least Select and an aggregation")
        for op in ops:
            if not isinstance(op, Operator):
                raise InputTypeError(f"a statistic is made of operators, got {op!r}")
        if not isinstance(ops[0], Select):
            raise InputError(f"a statistic starts with Select, not {ops[0]}")
        if not isinstance(ops[-1], Aggregation):
            raise InputError(f"a statistic ends with an aggregation (Mean, Sum, ...), not {ops[-1]}")
        for i, op in enumerate(ops[1:-1], start=1):
            if isinstance(op, (Select, Aggregation)):
                raise InputError(f"{op} can only come {'first' if isinstance(op, Select) else 'last'}")
            if isinstance(op, GroupBy) and i != len(ops) - 2:
                raise InputError("GroupBy must come right before the aggregation")
        self.operators: tuple[Operator, ...] = ops
        self._key: tuple | None = None
        self._hash = hash(ops)

    # -------------------------------------------------------------- text form
    @classmethod
    def parse(cls, text: str) -> Statistic:
        """Read the text form, e.g. ``"Select(amount) | Top(5) | Mean"``."""
        return cls(parse_operators(text))

    def __str__(self) -> str:
        return " | ".join(op.to_text() for op in self.operators)

    def __repr__(self) -> str:
        return f"Statistic.parse({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Statistic) and self.operators == other.operators

    def __hash__(self) -> int:
        return self._hash

    def __lt__(self, other: Statistic) -> bool:  # a stable order for reports
        return str(self) < str(other)

    # -------------------------------------------------------------- structure
    @property
    def depth(self) -> int:
        """Number of operators after Select, the aggregation included."""
        return len(self.operators) - 1

    @property
    def selected(self) -> str:
        """The selected column."""
        return self.operators[0].column

    @property
    def aggregation(self) -> Aggregation:
        return self.operators[-1]

    @property
    def group(self) -> str | None:
        """The GroupBy column, or None."""
        op = self.operators[-2] if len(self.operators) > 2 else None
        return op.column if isinstance(op, GroupBy) else None

    @property
    def row_operators(self) -> tuple[RowOperator, ...]:
        return tuple(op for op in self.operators[1:-1] if isinstance(op, RowOperator))

    def validate(self, data: Sequences | Schema) -> Statistic:
        """Check every operator against the columns of ``data``; ``ValueError`` if invalid."""
        reason = _invalid_reason(self.operators, Schema.of(data))
        if reason is not None:
            raise InputError(f"invalid statistic {str(self)!r}: {reason}")
        return self

    def is_valid(self, data: Sequences | Schema) -> bool:
        return _invalid_reason(self.operators, Schema.of(data)) is None

    def is_readable(self, data: Sequences | Schema, max_filters: int = MAX_FILTERS) -> bool:
        """Whether the statistic is in the readable grammar (SEMANTICS.md) for this data."""
        return is_readable(self.operators, Schema.of(data), max_filters)

    @property
    def key(self) -> tuple:
        """Equivalence key: statistics that always give the same values share it.

        Canonical form: filters sorted within each stretch between Top
        operators and placed before SortBy (both keep relative order), Abs
        moved last (it touches values only; SortBy keys are raw), the
        selection of Count ignored, and orderings that cannot change the
        result (SortBy of the selected column then First, Min or Max; SortBy
        then Top then Count) dropped.
        """
        if self._key is None:
            self._key = _equivalence_key(self)
        return self._key

    def equivalent(self, other: Statistic) -> bool:
        return self.key == other.key

    # ------------------------------------------------------------- evaluation
    def evaluate(self, seqs: Sequences, users: np.ndarray | None = None) -> np.ndarray:
        """Values for every user, or for a batch of user indices.

        Parameters
        ----------
        seqs : Sequences
        users : array of int, optional
            Indices into ``seqs.users``; all users when omitted.

        Returns
        -------
        ndarray of float64, shape (n,) or (n, k)
            ``(n,)`` for a scalar statistic, ``(n, k)`` for a vector-valued one
            (categorical selection and/or GroupBy), with ``k`` the length of
            :meth:`output_names`. NaN where the statistic is undefined.
        """
        if not isinstance(seqs, Sequences):
            raise InputTypeError(f"evaluate needs a Sequences, got {type(seqs).__name__}")
        _validate_cached(self, seqs)
        if users is None:
            frame = EventFrame.of_all_users(seqs)
        else:
            idx = np.asarray(users)
            if idx.ndim != 1 or not np.issubdtype(idx.dtype, np.integer):
                raise InputTypeError("users must be a 1-d array of user indices (integers)")
            if len(idx) and (idx.min() < 0 or idx.max() >= seqs.n_users):
                raise IndexOutOfRange(f"user indices must lie in [0, {seqs.n_users})")
            frame = EventFrame.batch(seqs, idx)
        for op in self.operators[1:-1]:
            frame = op.apply(frame)
        return _aggregate(self.aggregation, self.selected, frame)

    def n_outputs(self, data: Sequences | Schema) -> int:
        """Number of values per user (1 for a scalar statistic)."""
        schema = Schema.of(data)
        p = len(schema.vocabularies[self.selected]) if self._one_hot(schema) else 1
        q = len(schema.vocabularies[self.group]) if self.group is not None else 1
        return p * q

    def _one_hot(self, schema: Schema) -> bool:
        """Whether the outputs run over the selected column's categories."""
        return schema.kind(self.selected) == "categorical" and not self.aggregation.ignores_selection

    def is_vector(self, data: Sequences | Schema) -> bool:
        """Whether :meth:`evaluate` gives one column per category."""
        return self._one_hot(Schema.of(data)) or self.group is not None

    def output_names(self, data: Sequences | Schema) -> list[str]:
        """A name for each output: the text for a scalar, ``c=v[, g=w]`` for a vector."""
        schema = Schema.of(data)
        if not self.is_vector(schema):
            return [str(self)]
        selected = [f"{self.selected}={v}" for v in schema.vocabularies[self.selected]] \
            if self._one_hot(schema) else [None]
        groups = [f"{self.group}={w}" for w in schema.vocabularies[self.group]] if self.group else [None]
        return [", ".join(x for x in (s, g) if x) for s in selected for g in groups]

    # ------------------------------------------------------------------ words
    def output_parts(self, output: str | None, data: Sequences | Schema | None = None) -> dict[str, str]:
        """The categories one output stands for, ``{column: value}``.

        With ``data`` the output is looked up by position among
        :meth:`output_names`, so a category containing ``", "`` or ``"="``
        ("New York, NY") is read right; without, the name is parsed.
        """
        if not output:
            return {}
        if data is not None:
            schema = Schema.of(data)
            names = self.output_names(schema)
            if output in names and self.is_vector(schema):
                q = len(schema.vocabularies[self.group]) if self.group is not None else 1
                category, group = divmod(names.index(output), q)
                parts = {}
                if self._one_hot(schema):
                    parts[self.selected] = schema.vocabularies[self.selected][category]
                if self.group is not None:
                    parts[self.group] = schema.vocabularies[self.group][group]
                return parts
        return dict(p.split("=", 1) for p in output.split(", ") if "=" in p)

    def describe(self, output: str | None = None, data: Sequences | Schema | None = None) -> str:
        """Plain English, e.g. "sum of amount over events where card_type is debit".

        Parameters
        ----------
        output : str, optional
            One of :meth:`output_names` of a vector-valued statistic, to
            describe that one value ("share of events with channel = online").
        data : Sequences or Schema, optional
            Tells a categorical selection from a numerical one when no
            ``output`` is given ("share of events per channel category").
        """
        categorical = data is not None and Schema.of(data).kind(self.selected) == "categorical"
        # Time operators have their own words ("days since the last event"), built on these.
        phrase = time_phrase(self, output, categorical, _describe, Schema.of(data) if data is not None else None)
        return phrase if phrase is not None else _describe(self, output, categorical, self.output_parts(output, data))

    def to_json(self) -> str:
        return str(self)

    def to_sql(self, table: str | Sequence[str] = "events", user: str = "user_id", time: str | None = "ts",
               dialect: str = "duckdb", vocabularies=None, reference_time=None, event_order: str | None = None,
               time_unit: str | None = None, schema=None, exact_sums: bool = False) -> str:
        """One SELECT giving this statistic for every user of an event table.

        One row per user (sorted), the user column then one column per
        output (:meth:`output_names`), NULL where undefined. See
        :func:`rudi_explain.sql.statistics.statistic_sql` for the parameters
        (``vocabularies=seqs.vocabularies`` for one-hot and GroupBy outputs,
        ``event_order=`` for ties in time, ``exact_sums=True`` for sums equal
        to the engine's to the bit).
        """
        from rudi_explain.sql.statistics import statistic_sql

        return statistic_sql(self, table=table, user=user, time=time, dialect=dialect, vocabularies=vocabularies,
                             reference_time=reference_time, event_order=event_order, time_unit=time_unit,
                             schema=schema, exact_sums=exact_sums)

    @classmethod
    def from_json(cls, text: str) -> Statistic:
        return cls.parse(text)


# ---------------------------------------------------------------- validity
def _fold(operators: Sequence[Operator], schema: Schema) -> tuple[PipelineState, str | None]:
    state = PipelineState()
    for op in operators:
        reason = op.check(state, schema)
        if reason is not None:
            return state, reason
        state = op.advance(state, schema)
    return state, None


def _invalid_reason(operators: Sequence[Operator], schema: Schema) -> str | None:
    state, reason = _fold(operators, schema)
    if reason is None and not state.aggregated:
        reason = "it has no aggregation"
    return reason


def _validate_cached(stat: Statistic, seqs: Sequences) -> None:
    # The search evaluates the same statistics thousands of times: check once per data.
    cache = seqs._cache.setdefault("validated", set())
    if stat not in cache:
        stat.validate(seqs)
        cache.add(stat)


class Pipeline:
    """A partial pipeline under construction, as the search builds it.

    Holds the operators so far and the state they lead to, so that the valid
    next operators are found without re-checking the prefix.
    """

    __slots__ = ("operators", "state")

    def __init__(self, operators: Sequence[Operator] = (), state: PipelineState | None = None,
                 schema: Schema | None = None) -> None:
        self.operators = tuple(operators)
        if state is None:
            if schema is None:
                raise InputError("a Pipeline needs its state or a schema to compute it")
            state, reason = _fold(self.operators, schema)
            if reason:
                raise InputError(f"invalid pipeline: {reason}")
        self.state = state

    def then(self, op: Operator, schema: Schema) -> Pipeline:
        return Pipeline(self.operators + (op,), op.advance(self.state, schema))

    @property
    def complete(self) -> bool:
        return self.state.aggregated

    def statistic(self) -> Statistic:
        return Statistic(self.operators)

    def __str__(self) -> str:
        return " | ".join(op.to_text() for op in self.operators)

    def __hash__(self) -> int:
        return hash(self.operators)

    def __eq__(self, other) -> bool:
        return isinstance(other, Pipeline) and self.operators == other.operators


_CANDIDATES: dict[int, tuple[Schema, tuple[Operator, ...]]] = {}


def candidate_operators(schema: Schema) -> tuple[Operator, ...]:
    """Every operator instance the registered classes offer for this schema (cached)."""
    hit = _CANDIDATES.get(id(schema))
    if hit is None or hit[0] is not schema:
        ops: list[Operator] = []
        for cls in OPERATORS.values():
            ops.extend(cls.candidates(schema))
        hit = (schema, tuple(ops))
        if len(_CANDIDATES) > 64:
            _CANDIDATES.clear()
        _CANDIDATES[id(schema)] = hit
    return hit[1]


def next_operators(pipeline: Pipeline, schema: Schema, max_depth: int, grammar: str = "paper",
                   max_filters: int = MAX_FILTERS) -> list[Operator]:
    """Operators that can extend ``pipeline`` and still end in a valid statistic
    of depth at most ``max_depth``.

    With ``grammar="readable"`` only operators that keep the pipeline in the
    readable grammar (:mod:`rudi_explain.statistics.readable`) are offered.
    """
    readable = check_grammar(grammar) == "readable"
    state = pipeline.state
    if state.aggregated:
        return []
    out = []
    for op in candidate_operators(schema):
        if isinstance(op, Select) != (state.selected is None):
            continue
        # A non-aggregation must leave room for the aggregation after it.
        needed = 0 if isinstance(op, Select) else (1 if isinstance(op, Aggregation) else 2)
        # After Select(*) nothing can use an order but a Top (no First): keep room for it.
        if state.selected_kind == "any" and not isinstance(op, (Top, Aggregation)) and (
                isinstance(op, SortBy) or state.needs_order_use):
            if isinstance(op, GroupBy):
                continue  # no Top can follow a GroupBy
            needed += 1
        if state.depth + needed > max_depth:
            continue
        if op.check(state, schema) is None and not (readable and readable_reason(op, state, schema, max_filters)):
            out.append(op)
    return out


# -------------------------------------------------------------- evaluation
def _aggregate(agg: Aggregation, selected: str, frame: EventFrame) -> np.ndarray:
    seqs = frame.seqs
    n = frame.n_segments
    keys = frame.segment
    rows = None
    q = 1
    if frame.group is not None:
        group_codes = frame.codes(frame.group)
        q = len(seqs.vocabularies[frame.group])
        rows = group_codes >= 0  # events of an unseen group category belong to no group
        keys = keys[rows].astype(np.int64) * q + group_codes[rows]
    n_keys = n * q
    reduce_events = getattr(agg, "reduce_events", None)
    if reduce_events is not None:
        # An aggregation of the events themselves (their times), not of the selected values.
        out = reduce_events(frame, rows, keys, n_keys)
        return out.reshape(n, q) if frame.group is not None else out
    if agg.ignores_selection:
        # Count (and the like) look at which events are left, not at the selection.
        out = agg.reduce(np.zeros(len(keys)), keys, n_keys)
        return out.reshape(n, q) if frame.group is not None else out
    if selected in seqs.values:
        presorted = False
        if agg.sorted_input and frame.group is None and frame.all_users and frame.layout_order:
            frame = frame.sorted_by(selected, absolute=frame.absolute)  # a cached order, filtered
            keys, presorted = frame.segment, True
        values = frame.values(selected)
        if rows is not None:
            values = values[rows]
        if frame.absolute:
            values = np.abs(values)
        if agg.sorted_input and not presorted:
            order = np.lexsort((values, keys))
            values, keys = values[order], keys[order]
        out = agg.reduce(values, keys, n_keys)
        return out.reshape(n, q) if frame.group is not None else out
    codes = frame.codes(selected)
    if rows is not None:
        codes = codes[rows]
    p = len(seqs.vocabularies[selected])
    out = agg.reduce_onehot(codes, keys, n_keys, p)
    if frame.group is not None:
        # Outputs ordered selected category first, then group category.
        out = out.reshape(n, q, p).transpose(0, 2, 1).reshape(n, p * q)
    return np.ascontiguousarray(out, dtype=np.float64)


# ---------------------------------------------------------- equivalence key
def _canonical_filter(op: Operator) -> Operator:
    """A filter in its canonical spelling (``Within(24h)`` is ``Within(1d)``)."""
    canonical = getattr(op, "canonical", None)
    return canonical() if canonical is not None else op


def _equivalence_key(stat: Statistic) -> tuple:
    ops = list(stat.operators[1:-1])
    agg = stat.aggregation
    selected = stat.selected
    group = stat.group
    rows = [op for op in ops if not isinstance(op, GroupBy)]
    has_abs = any(isinstance(op, Abs) for op in rows)
    rows = [op for op in rows if not isinstance(op, Abs)]
    top_at = next((i for i, op in enumerate(rows) if isinstance(op, Top)), None)
    before = rows if top_at is None else rows[:top_at]
    after = [] if top_at is None else rows[top_at + 1:]
    top = None if top_at is None else rows[top_at]

    def canonical(stretch: list[Operator]) -> list[Operator]:
        filters = sorted((_canonical_filter(op) for op in stretch
                          if isinstance(op, (RetainBy, FilterBy)) or getattr(op, "event_filter", False)), key=str)
        sorts = [op for op in stretch if isinstance(op, SortBy)]
        return filters + sorts

    before, after = canonical(before), canonical(after)
    sort = next((op for op in before + after if isinstance(op, SortBy)), None)
    sort_in_before = sort is not None and sort in before
    # SortBy(x) on the selected x then First / Min / Max: the order picks the extreme.
    if sort is not None and sort.column == selected and not has_abs:
        extreme = Min() if sort.direction == "asc" else Max()
        if isinstance(agg, First) and not (sort_in_before and top is not None):
            agg = extreme
            before = [op for op in before if op is not sort]
            after = [op for op in after if op is not sort]
        elif sort_in_before and top is not None and not after and type(agg) in (type(extreme), First):
            agg, top = extreme, None
            before = [op for op in before if op is not sort]
    # SortBy then Top then Count: only how many are left matters, not which.
    if isinstance(agg, Count) and sort_in_before and top is not None and not after and group is None:
        before = [op for op in before if op is not sort]
    head = "Select(*)" if agg.ignores_selection else str(Select(selected))
    if agg.ignores_selection:
        has_abs = False
    parts = [head, *map(str, before)]
    if top is not None:
        parts.append(str(top))
    parts.extend(map(str, after))
    if has_abs:
        parts.append("Abs")
    if group is not None:
        parts.append(f"GroupBy({quote(group)})")
    parts.append(str(agg))
    return tuple(parts)


# -------------------------------------------------------------------- words
_ORDINAL = {1: "st", 2: "nd", 3: "rd"}


def _percentile_words(k: float) -> str:
    k_text = str(int(k)) if float(k).is_integer() else str(k)
    last = int(k) % 10 if float(k).is_integer() and int(k) % 100 not in (11, 12, 13) else 0
    return f"{k_text}{_ORDINAL.get(last, 'th')} percentile"


def _describe(stat: Statistic, output: str | None, categorical: bool, parts: dict[str, str] | None = None) -> str:
    """One plain-English phrase that an analyst could write (never operator names).

    "total amount over events where merchant_category is gambling",
    "share of events with country = other", "average hour over the 5 events
    with the largest amount among events where channel is online".
    """
    agg = stat.aggregation
    selected = stat.selected
    rows = stat.row_operators
    absolute = any(isinstance(op, Abs) for op in rows)
    sort = next((op for op in rows if isinstance(op, SortBy)), None)
    top = next((op for op in rows if isinstance(op, Top)), None)
    if parts is None:
        parts = stat.output_parts(output)
    category = parts.get(selected)
    group_value = parts.get(stat.group) if stat.group else None

    # Which events: conditions before a Top, the Top itself, conditions after it.
    before, after, seen_top = [], [], False
    for op in rows:
        if isinstance(op, Top):
            seen_top = True
        elif isinstance(op, (RetainBy, FilterBy)):
            verb = "is" if isinstance(op, RetainBy) else "is not"
            (after if seen_top else before).append(f"{op.column} {verb} {op.value}")
    if group_value is not None:  # one output of a GroupBy reads as one more condition
        (after if seen_top else before).append(f"{stat.group} is {group_value}")
    per_group = f", per {stat.group}" if stat.group is not None and group_value is None else ""
    where = " and ".join(before)
    if top is not None:
        if sort is not None and rows.index(sort) < rows.index(top):
            size = "largest" if sort.direction == "desc" else "smallest"
            scope = f"the {top.k} events with the {size} {sort.column}"
        else:
            scope = f"the first {top.k} events"
        if where:
            scope += f" among events where {where}"
        if after:
            scope += ", then only those where " + " and ".join(after)
    else:
        scope = f"events where {where}" if where else ""

    if isinstance(agg, Count) or agg.ignores_selection:
        if top is None:
            return f"number of events where {where}{per_group}" if where else f"number of events{per_group}"
        return f"number of events among {scope}{per_group}"

    # A categorical selection reads as a 0/1 indicator "c = v".
    if category is not None or categorical or (output and stat.group is None):
        indicator = f"{selected} = {category}" if category is not None else f"each {selected} category"
        if isinstance(agg, Sum) and top is None:
            conds = " and ".join(before + ([f"{selected} is {category}"] if category is not None else []))
            text = f"number of events where {conds}" if category is not None else f"number of events per {selected} category"
            if category is None and where:
                text += f" among events where {where}"
            return text + per_group
        subject = {
            "Sum": f"number of events with {indicator}",
            "Mean": f"share of events with {indicator}",
            "Max": f"whether any event has {indicator}",
            "Min": f"whether every event has {indicator}",
            "First": f"whether the first event has {indicator}",
        }.get(agg.name)
        if subject is None:  # the paper's grammar only
            words = _percentile_words(agg.k) if isinstance(agg, Percentile) else agg.words
            subject = f"{words} of [{indicator}]"
        return (f"{subject} among {scope}" if scope else subject) + per_group

    target = f"absolute {selected}" if absolute else selected
    if isinstance(agg, First):
        if sort is not None and top is None:
            extreme = "smallest" if sort.direction == "asc" else "largest"
            subject = f"{target} of the event with the {extreme} {sort.column}"
        else:
            subject = f"{target} of the first event"
        link = "among"
    else:
        if isinstance(agg, Percentile):
            subject = "median " + target if float(agg.k) == 50 else f"{_percentile_words(agg.k)} of {target}"
        else:
            subject = {
                "Sum": f"total {target}", "Mean": f"average {target}", "Max": f"largest {target}",
                "Min": f"smallest {target}", "Std": f"standard deviation of {target}",
                "Ptp": f"range of {target} (largest minus smallest)",
            }.get(agg.name, f"{agg.words} of {target}")
        link = "among" if agg.name in ("Max", "Min") else "over"
    return (f"{subject} {link} {scope}" if scope else subject) + per_group
