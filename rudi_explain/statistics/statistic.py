"""A statistic: a valid pipeline of operators, evaluated for many users at once."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any, cast

import numpy as np

from rudi_explain.data.sequences import Sequences
from rudi_explain.exceptions import IndexOutOfRange, InputError, InputTypeError
from rudi_explain.statistics.describe import describe
from rudi_explain.statistics.frame import EventFrame, FrameCache
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
    RetainBy,
    RowOperator,
    Select,
    SortBy,
    Top,
    quote,
)
from rudi_explain.statistics.readable import MAX_FILTERS, check_grammar, is_readable, readable_reason
from rudi_explain.statistics.text import output_name_parts, parse_operators

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

    __slots__ = ("operators", "_key", "_hash", "_text")

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
        self._text: str | None = None  # the text form, made once: the search compares statistics by it

    # -------------------------------------------------------------- text form
    @classmethod
    def parse(cls, text: str) -> Statistic:
        """Read the text form, e.g. ``"Select(amount) | Top(5) | Mean"``."""
        return cls(parse_operators(text))

    def __str__(self) -> str:
        if self._text is None:
            self._text = " | ".join(op.to_text() for op in self.operators)
        return self._text

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
        return cast(Select, self.operators[0]).column

    @property
    def aggregation(self) -> Aggregation:
        return cast(Aggregation, self.operators[-1])

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
    def evaluate(self, seqs: Sequences, users: np.ndarray | None = None, *,
                 frames: FrameCache | None = None) -> np.ndarray:
        """Values for every user, or for a batch of user indices.

        Parameters
        ----------
        seqs : Sequences
        users : array of int, optional
            Indices into ``seqs.users``; all users when omitted.
        frames : FrameCache, optional
            Frames of row-operator prefixes over all users of ``seqs``, shared with other
            statistics evaluated on them (the same values, each filter applied once). Used
            only without ``users``.

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
        rows = self.operators[1:-1]  # row operators, then maybe GroupBy
        done = 0
        if frames is not None and users is None and frames.seqs is seqs:
            for cut in range(len(rows), 0, -1):  # the longest prefix already applied
                hit = frames.get(rows[:cut])
                if hit is not None:
                    frame, done = hit, cut
                    break
        shared = frames is not None and users is None and frames.seqs is seqs
        for i in range(done, len(rows)):
            frame = cast("RowOperator | GroupBy", rows[i]).apply(frame)
            if shared:
                cast("FrameCache", frames).put(rows[:i + 1], frame)
        if not shared:
            return _aggregate(self.aggregation, self.selected, frame)
        cached = cast("FrameCache", frames)
        if _presorts(self.aggregation, self.selected, frame):
            # The events sorted by the selected column, shared too: the 7 percentiles of one
            # column after one filter sorted the same events 7 times.
            key: tuple = (*rows, ("sorted for", self.selected, frame.absolute))
            ordered = cached.get(key)
            if ordered is None:
                ordered = frame.sorted_by(self.selected, absolute=frame.absolute)
                cached.put(key, ordered)
            return _aggregate(self.aggregation, self.selected, ordered, presorted=True,
                              gather=partial(cached.column, key, ordered))
        return _aggregate(self.aggregation, self.selected, frame, gather=partial(cached.column, tuple(rows), frame))

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
        return output_name_parts(output)

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
        schema = Schema.of(data) if data is not None else None
        categorical = schema is not None and schema.kind(self.selected) == "categorical"
        return describe(self.operators, output, categorical, self.output_parts(output, schema), schema)

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
    layout_cache: dict[Any, Any] = seqs._cache  # the layout's cache holds more than arrays
    cache = layout_cache.setdefault("validated", set())
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
def _presorts(agg: Aggregation, selected: str, frame: EventFrame) -> bool:
    """Whether :func:`_aggregate` sorts ``frame`` by the selected column through the cached order."""
    return bool(agg.sorted_input and frame.group is None and frame.all_users and frame.layout_order
                and selected in frame.seqs.values and _reads_values(agg))


def _reads_values(agg: Aggregation) -> bool:
    """Whether ``agg`` reduces the selected values (not the events' times, nor only which are left)."""
    return getattr(agg, "reduce_events", None) is None and not agg.ignores_selection


def _aggregate(agg: Aggregation, selected: str, frame: EventFrame, presorted: bool = False,
               gather: Callable[[str], np.ndarray] | None = None) -> np.ndarray:
    """One value per segment (and group, category): ``presorted``: ``frame`` is already sorted by
    the selected column (its absolute values after ``Abs``), as :func:`_presorts` would sort it;
    ``gather``: a column of ``frame``'s events by its name (numerical values or category codes),
    kept where statistics share the frame (:meth:`FrameCache.column`)."""
    if gather is None:
        def gather(column: str) -> np.ndarray:
            return frame.values(column) if column in frame.seqs.values else frame.codes(column)
    seqs = frame.seqs
    n = frame.n_segments
    keys = frame.segment
    rows = None
    q = 1
    if frame.group is not None:
        group_codes = gather(frame.group)
        q = len(seqs.vocabularies[frame.group])
        # Events of an unseen group category belong to no group; their places, then gathers
        # (numpy's boolean indexing is several times slower).
        rows = np.flatnonzero(group_codes >= 0)
        keys = keys.take(rows).astype(np.int64) * q + group_codes.take(rows)
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
        if not presorted and agg.sorted_input and frame.group is None and frame.layout_order:
            # A cached order, filtered (all users), or a batch's (through it once the batches add up)
            frame = frame.sorted_by(selected, absolute=frame.absolute)
            keys, presorted = frame.segment, True
            values = frame.values(selected)  # of the sorted frame, not the one gather reads
        else:
            values = gather(selected)
        if rows is not None:
            values = values.take(rows)
        if frame.absolute:
            values = np.abs(values)
        if agg.sorted_input and not presorted:
            order = np.lexsort((values, keys))
            values, keys = values[order], keys[order]
        out = agg.reduce(values, keys, n_keys)
        return out.reshape(n, q) if frame.group is not None else out
    codes = gather(selected)
    if rows is not None:
        codes = codes.take(rows)
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
