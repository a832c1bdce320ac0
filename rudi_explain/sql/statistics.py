"""Statistics and rule sets as SQL: one SELECT that scores every user in the database.

``Statistic.to_sql`` and ``RuleSet.to_sql`` call :func:`statistic_sql` and
:func:`ruleset_sql`. The query reads a long event table (one row per event)
and returns one row per user (every user of the table, sorted by id) with
the values of :meth:`Statistic.evaluate` (SEMANTICS.md, TIME.md): NULL where
the engine gives NaN.

How the table is read
---------------------
* Events of a user are in time order; events at the same time keep their
  input order. A SQL table has no input order, so give ``event_order``: a
  column whose ascending values are the input order (a row number, an
  ingestion sequence). Without it, tied events come in an order the
  database picks, which only matters to statistics that use the order
  (``Top``, ``First``) when a user has several events at one time. Without a
  time column ``event_order`` is required by those statistics.
* Numerical columns: NULL and NaN are both missing (aggregations skip them).
* Categorical columns are compared by their text (``CAST(c AS VARCHAR)``);
  NULL is the category ``<NA>``. Values that ``vocabularies`` lacks are
  unseen: they match no ``RetainBy``/``FilterBy`` value and add to no one-hot
  output; a vocabulary with ``<other>`` (a lumped column) maps them to it,
  as :class:`~rudi_explain.Sequences` does. One-hot outputs (a categorical
  selection) and ``GroupBy`` need the vocabulary; give the training one,
  ``seqs.vocabularies`` or ``literals.vocabularies``, so the outputs line up
  with the model's.
* Rows with a NULL user are ignored.
* Time: a datetime (timestamp) column gives times in days and windows in
  nanoseconds exactly as the engine; a numerical one its own units. Say
  which with ``time_unit`` (or ``schema=seqs``) when a statistic has a time
  aggregation and no ``Within`` tells. The reference time is
  ``reference_time`` or, by default, the latest event time in the table.

Dialects
--------
``"duckdb"`` (run by the tests against the engine), ``"ansi"`` (standard SQL
only: no NaN in floats, and no datetime time arithmetic, which raises) and
``"spark"`` (Spark SQL: backquoted identifiers, backslash-escaped strings;
run by the tests in PySpark's local mode, with ANSI mode on). Anything that
cannot compile raises a ``ValueError`` naming the dialect and the operator.
With ``exact_sums=True`` (DuckDB, Spark) every value equals the engine's to
the bit: sums are added in the engine's event order (``ordered_values``),
at the cost of holding each user's values in memory. By default, and in
standard SQL, ``SUM`` adds in the database's order (spillable, twice as
fast), so sums may differ from the engine's in the last bit.

Quoting is written here rather than through a query builder such as
sqlglot: the statements are a handful of fixed shapes, every identifier and
value goes through :func:`quote_identifier` / :func:`quote_string`, and
numbers through :func:`float_literal` (the shortest text that reads back as
the very float), so no further dependency is needed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd

from rudi_explain.exceptions import InputError
from rudi_explain.sql.checks import check_case_clashes
from rudi_explain.statistics.grammar import Schema
from rudi_explain.statistics.operators import (
    ANY_COLUMN,
    Abs,
    Count,
    FilterBy,
    First,
    GroupBy,
    Max,
    Mean,
    Min,
    Percentile,
    Ptp,
    RetainBy,
    SortBy,
    Std,
    Sum,
    Top,
)
from rudi_explain.statistics.statistic import Statistic
from rudi_explain.statistics.time_operators import TIME_UNITS, MaxGap, MeanGap, Recency, Tenure, Within

__all__ = ["DIALECTS", "statistic_sql", "statistics_sql", "quote_identifier", "quote_string", "float_literal"]

#: The dialects the compiler writes.
DIALECTS = ("duckdb", "ansi", "spark")

_NA = "<NA>"
_OTHER = "<other>"
_NS_PER_DAY = TIME_UNITS["d"]
_TYPES = {
    "duckdb": {"double": "DOUBLE", "text": "VARCHAR"},
    "ansi": {"double": "DOUBLE PRECISION", "text": "VARCHAR"},
    "spark": {"double": "DOUBLE", "text": "STRING"},
}


def _ascending(key: str) -> str:
    """An ORDER BY key as a value sorting the same way ascending (``x DESC`` becomes ``-(x)``)."""
    if key.endswith(" DESC"):
        return f"-({key[:-5]})"
    return key[:-4] if key.endswith(" ASC") else key


# ------------------------------------------------------------------ quoting
def _check_dialect(dialect: str) -> str:
    if dialect not in DIALECTS:
        raise InputError(f"dialect must be one of {DIALECTS}, got {dialect!r}")
    return dialect


def quote_identifier(name: str, dialect: str = "duckdb") -> str:
    """A column or table name as a quoted SQL identifier, safe whatever it holds.

    Double quotes (backquotes for Spark), with the quote character doubled.

    Raises
    ------
    ValueError
        For an empty name or one holding a NUL character (no dialect accepts it).
    """
    _check_dialect(dialect)
    if not isinstance(name, str) or not name:
        raise InputError(f"a SQL identifier must be a non-empty string, got {name!r}")
    if "\x00" in name:
        raise InputError(f"a SQL identifier cannot hold a NUL character: {name!r}")
    if dialect == "spark":
        return "`" + name.replace("`", "``") + "`"
    return '"' + name.replace('"', '""') + '"'


def quote_string(value: str, dialect: str = "duckdb") -> str:
    """A text value as a SQL string literal, safe whatever it holds.

    Single quotes doubled (standard SQL, DuckDB); Spark SQL reads backslash
    escapes and joins adjacent literals (``'a''b'`` is ``ab`` there), so for
    it backslashes and quotes are backslash-escaped instead.
    """
    _check_dialect(dialect)
    value = str(value)
    if "\x00" in value:
        raise InputError(f"a SQL string cannot hold a NUL character: {value!r}")
    if dialect == "spark":
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return "'" + value.replace("'", "''") + "'"


def float_literal(x: float) -> str:
    """A float as an approximate-numeric (DOUBLE) SQL literal that reads back exactly.

    ``repr`` is the shortest text that round-trips; the exponent form
    (``12.5E0``) makes every dialect read it as a double, not a decimal.
    """
    x = float(x)
    if not math.isfinite(x):
        raise InputError(f"SQL has no portable literal for {x!r}")
    text = repr(x)
    if "e" in text:
        mantissa, exponent = text.split("e")
        text = f"{mantissa}E{int(exponent)}"
    else:
        text += "E0"
    return f"({text})" if text.startswith("-") else text


def _table_sql(table: str | Sequence[str], dialect: str) -> str:
    if isinstance(table, str):
        return quote_identifier(table, dialect)
    parts = list(table)
    if not parts:
        raise InputError("table must be a name or a sequence of name parts (schema, table)")
    return ".".join(quote_identifier(p, dialect) for p in parts)


# ------------------------------------------------------------------ options
@dataclass
class _Options:
    dialect: str
    table: str  # already quoted
    user: str
    time: str | None
    event_order: str | None
    vocabularies: dict[str, tuple[str, ...]] | None
    reference_time: Any
    time_unit: str | None
    exact_sums: bool = False

    def q(self, name: str) -> str:
        return quote_identifier(name, self.dialect)

    def s(self, value: str) -> str:
        return quote_string(value, self.dialect)

    @property
    def double(self) -> str:
        return _TYPES[self.dialect]["double"]

    @property
    def text(self) -> str:
        return _TYPES[self.dialect]["text"]

    def as_double(self, expr: str) -> str:
        return f"CAST({expr} AS {self.double})"


def _options(table, user, time, dialect, vocabularies, reference_time, event_order, time_unit, schema,
             exact_sums: bool = False) -> _Options:
    _check_dialect(dialect)
    for what, name in (("user", user), ("time", time), ("event_order", event_order)):
        if name is not None and (not isinstance(name, str) or not name):
            raise InputError(f"{what} must be a column name, got {name!r}")
    if schema is not None:
        schema = Schema.of(schema)
        if vocabularies is None:
            vocabularies = schema.vocabularies
        if time_unit is None:
            time_unit = schema.time_unit
    if time_unit not in (None, "datetime", "number"):
        raise InputError(f"time_unit must be 'datetime', 'number' or None, got {time_unit!r}")
    vocab = None if vocabularies is None else {str(k): tuple(str(v) for v in vs) for k, vs in vocabularies.items()}
    check_case_clashes([user, time, event_order, *(vocab or {}), *(schema.numerical if schema is not None else ())],
                       dialect)
    return _Options(dialect, _table_sql(table, dialect), user, time, event_order, vocab, reference_time, time_unit,
                    bool(exact_sums))


# ------------------------------------------------------------------ compiling one statistic
def _braces(text: str) -> str:
    """``text`` inside an output expression, which ``str.format`` reads (``{a}`` is the aggregate row)."""
    return text.replace("{", "{{").replace("}", "}}")


def _when(conditions: list[str], expr: str) -> str:
    return f"CASE WHEN {' AND '.join(conditions)} THEN {expr} END" if conditions else expr


class _Query:
    """What the statistics of one query share: one scan of the table, the window columns, one GROUP BY.

    Every statistic reads the same source rows, and a row operator
    (``RetainBy``, ``FilterBy``, ``Within``, ``Top``) becomes a condition
    inside the statistic's aggregates (``CASE WHEN``) rather than a CTE of its
    own: K statistics cost one scan and one hash aggregation by user, not K
    scans, K aggregations and K joins. A window function (``Top``, ``First``,
    ``Percentile``, ``MaxGap``) ranks among the rows its statistic keeps by
    partitioning on that condition; one that reads another window's column
    (a ``Top`` after a ``Top``) sits in a later layer. Equal columns, windows
    and aggregates are computed once for all statistics.
    """

    def __init__(self, opts: _Options):
        self.o = opts
        self.columns: dict[tuple[str, str], str] = {}  # (source column, kind) -> internal name
        self.times: dict[str, str] = {}  # time unit -> internal name of the time column in that unit
        self.layers: list[dict[str, str]] = []  # per layer of windows: expression -> internal name
        self.parts: dict[tuple[str, bool], str] = {}  # (aggregate, over the windows?) -> internal name
        self.src = opts.q("_src")
        self.window_columns: set[str] = set()  # the columns the window statistics read (quoted)

    def column(self, column: str, kind: str) -> str:
        key = (column, kind)
        if key not in self.columns:
            self.columns[key] = f"_{'k' if kind == 'categorical' else 'n'}{len(self.columns)}"
        return self.o.q(self.columns[key])

    def time(self, unit: str) -> str:
        """The time column in ``unit``: integer nanoseconds (datetime) or a double (number)."""
        self.times.setdefault(unit, "_td" if unit == "datetime" else "_tf")
        return self.o.q(self.times[unit])

    def window(self, layer: int, expr: str) -> str:
        while len(self.layers) < layer:
            self.layers.append({})
        names = self.layers[layer - 1]
        names.setdefault(expr, f"_w{layer}_{len(names)}")
        return self.o.q(names[expr])

    def part(self, expr: str, windowed: bool = False) -> str:
        """An aggregate by user, as a column of the aggregate row (``{a}`` stands for its alias).

        ``windowed``: it reads the window columns (or the statistic has a window), so it is taken
        over the window layers; the others are taken over the scan itself, whose row order the
        windows do not change (a plain SUM adds in the order it reads).
        """
        self.parts.setdefault((expr, windowed), f"_p{len(self.parts)}")
        return "{a}." + self.o.q(self.parts[expr, windowed])

    def source(self) -> str:
        o = self.o
        q = o.q
        cols = [f"{q(o.user)} AS {q('_u')}"]
        if o.time is not None:
            raw = q(o.time)
            cols.append(f"{raw} AS {q('_t')}")  # orders events
            for unit, internal in self.times.items():
                if unit == "number":
                    expr = o.as_double(raw)
                elif o.dialect == "duckdb":
                    expr = f"epoch_ns({raw})"  # exact integer nanoseconds, as the engine
                else:
                    expr = f"CAST(unix_micros({raw}) AS BIGINT) * 1000"  # spark: timestamps hold microseconds
                cols.append(f"{expr} AS {q(internal)}")
        if o.event_order is not None:
            cols.append(f"{q(o.event_order)} AS {q('_o')}")
        for (column, kind), internal in self.columns.items():
            raw = q(column)
            if kind == "categorical":
                expr = f"COALESCE(CAST({raw} AS {o.text}), {o.s(_NA)})"
                vocab = None if o.vocabularies is None else o.vocabularies.get(column)
                if vocab is not None and _OTHER in vocab:
                    # A lumped column: values the vocabulary lacks join "<other>", as in Sequences.
                    kept = ", ".join(o.s(x) for x in vocab)
                    expr = f"CASE WHEN {expr} IN ({kept}) THEN {expr} ELSE {o.s(_OTHER)} END"
            else:
                x = o.as_double(raw)
                # NULL and NaN are both missing; standard SQL floats have no NaN.
                expr = x if o.dialect == "ansi" else f"CASE WHEN isnan({x}) THEN NULL ELSE {x} END"
            cols.append(f"{expr} AS {q(internal)}")
        return f"SELECT {', '.join(cols)} FROM {o.table} WHERE {q(o.user)} IS NOT NULL"

    @property
    def inline(self) -> tuple[str, ...]:
        """The CTEs to read where used (DuckDB's ``NOT MATERIALIZED``): the scan."""
        return (self.src,) if self.o.dialect == "duckdb" else ()

    def ctes(self) -> tuple[list[tuple[str, str]], str]:
        """The CTEs (source, window layers, the aggregate by user) and the aggregate's name."""
        q = self.o.q
        ctes = [(self.src, self.source())]
        current = self.src
        for i, windows in enumerate(self.layers):
            name = q(f"_w{i + 1}")
            cols = ", ".join(f"{expr} AS {q(internal)}" for expr, internal in windows.items())
            # The first layer keeps only what the window statistics read: every sort carries its rows.
            keep = f"{current}.*" if i else ", ".join(
                [q("_u")] + ([q("_t")] if self.o.time is not None else [])
                + ([q("_o")] if self.o.event_order is not None else []) + sorted(self.window_columns))
            ctes.append((name, f"SELECT {keep}, {cols} FROM {current}"))
            current = name
        plain = [(expr, internal) for (expr, windowed), internal in self.parts.items() if not windowed]
        over = [(expr, internal) for (expr, windowed), internal in self.parts.items() if windowed]
        agg = q("_agg")
        ctes.append((agg, "SELECT " + ", ".join([q("_u")] + [f"{e} AS {q(i)}" for e, i in plain])
                     + f" FROM {self.src} GROUP BY {q('_u')}"))
        if over:  # every user has a row in both (each has events)
            ctes.append((q("_wagg"), "SELECT " + ", ".join([q("_u")] + [f"{e} AS {q(i)}" for e, i in over])
                         + f" FROM {current} GROUP BY {q('_u')}"))
            ctes.append((q("_all"), f"SELECT {agg}.*, " + ", ".join(f"{q('_wagg')}.{q(i)}" for _, i in over)
                         + f" FROM {agg} JOIN {q('_wagg')} ON {agg}.{q('_u')} = {q('_wagg')}.{q('_u')}"))
            agg = q("_all")
        return ctes, agg


class _StatisticCompiler:
    def __init__(self, stat, query: _Query):
        self.stat, self.query, self.o = stat, query, query.o
        self.used: set[str] = set()  # the internal columns the statistic reads

    # -- helpers
    def fail(self, op, why: str) -> ValueError:
        return ValueError(f"cannot compile {op} of {str(self.stat)!r} to dialect {self.o.dialect!r}: {why}")

    def column(self, column: str, kind: str) -> str:
        name = self.query.column(column, kind)
        self.used.add(name)
        return name

    def vocabulary(self, column: str, op) -> tuple[str, ...]:
        vocab = None if self.o.vocabularies is None else self.o.vocabularies.get(column)
        if vocab is None:
            raise self.fail(op, f"needs the categories of {column!r}: pass vocabularies=seqs.vocabularies")
        return vocab

    def is_categorical(self, column: str) -> bool:
        return self.o.vocabularies is not None and column in self.o.vocabularies

    def time_domain(self, op) -> str:
        """'datetime' or 'number' for the time operators."""
        if self.o.time is None:
            raise self.fail(op, "needs a time column: pass time=")
        unit = self.o.time_unit
        if unit is None:
            windows = [w for w in self.stat.operators if isinstance(w, Within)]
            if windows:
                unit = "number" if windows[0].unit is None else "datetime"
            elif self.o.reference_time is not None:
                ref = self.o.reference_time
                unit = "number" if isinstance(ref, (int, float, np.number)) and not isinstance(ref, bool) \
                    else "datetime"
            else:
                raise self.fail(op, "cannot tell a datetime time column from a numerical one: "
                                    "pass time_unit='datetime' (days) or 'number', or schema=seqs")
        if unit == "datetime" and self.o.dialect == "ansi":
            raise self.fail(op, "standard SQL has no portable timestamp arithmetic; use dialect='duckdb' or 'spark'")
        return unit

    def reference(self, unit: str) -> str:
        ref = self.o.reference_time
        if ref is None:
            return f"(SELECT MAX({self.query.time(unit)}) FROM {self.query.src})"
        if unit == "datetime":
            stamp = pd.Timestamp(ref)
            if stamp.tzinfo is not None:
                stamp = stamp.tz_convert("UTC").tz_localize(None)
            return f"CAST({int(stamp.as_unit('ns').value)} AS BIGINT)"
        return float_literal(float(ref))

    # -- the pipeline
    def compile(self) -> list[tuple[str, str]]:
        """Register the statistic's columns, windows and aggregates with the query; its outputs.

        Returns (output name, expression over the aggregate row, with ``{a}`` for its alias).
        """
        o, stat, query = self.o, self.stat, self.query
        q = o.q
        ops = stat.operators
        agg = stat.aggregation
        time_ops = any(isinstance(op, Within) for op in ops) or isinstance(agg, (Recency, Tenure, MeanGap, MaxGap))
        unit = self.time_domain(next(op for op in ops if isinstance(op, (Within, Recency, Tenure, MeanGap, MaxGap)))) \
            if time_ops else ""
        t = query.time(unit) if unit else ""
        if t:
            self.used.add(t)

        # Row operators become conditions on the rows kept (SortBy only changes the order, Abs the
        # values); a window ranks the kept rows among themselves by partitioning on the conditions.
        conds: list[str] = []
        depth = 0  # the layer of the latest window the conditions read

        def kept() -> list[str]:
            return [f"CASE WHEN {' AND '.join(conds)} THEN 1 ELSE 0 END"] if conds else []

        order_keys = ([q("_t")] if o.time is not None else []) + ([q("_o")] if o.event_order is not None else [])
        ascending = list(order_keys)  # the same order as values sorting ascending, NULL nowhere
        absolute = False
        for op in ops[1:-1]:
            if isinstance(op, (RetainBy, FilterBy)):
                col = self.column(op.column, "categorical")
                vocab = None if o.vocabularies is None else o.vocabularies.get(op.column)
                if vocab is not None and op.value not in vocab:
                    if isinstance(op, RetainBy):
                        conds.append("1 = 0")  # matches no event
                else:
                    conds.append(f"{col} {'=' if isinstance(op, RetainBy) else '<>'} {o.s(op.value)}")
            elif isinstance(op, Within):
                span = int(round(op.span)) if unit == "datetime" else None
                ref = self.reference(unit)
                start = f"{ref} - CAST({span} AS BIGINT)" if unit == "datetime" else f"{ref} - {float_literal(op.span)}"
                conds.append(f"{t} > {start} AND {t} <= {ref}")
            elif isinstance(op, SortBy):
                col = self.column(op.column, "numerical")
                direction = "DESC" if op.direction == "desc" else "ASC"
                # NaN (NULL) keys last in both directions; ties keep the order so far (stable).
                order_keys = [f"CASE WHEN {col} IS NULL THEN 1 ELSE 0 END", f"{col} {direction}"] + order_keys
                signed = f"-({col})" if direction == "DESC" else col
                ascending = [order_keys[0], f"COALESCE({signed}, {float_literal(0.0)})"] + ascending
            elif isinstance(op, Top):
                if o.time is None and o.event_order is None:
                    raise self.fail(op, "needs an event order: pass time= or event_order=")
                depth += 1
                rank = query.window(depth, f"ROW_NUMBER() OVER (PARTITION BY {', '.join([q('_u')] + kept())} "
                                           f"ORDER BY {', '.join(order_keys)})")
                conds.append(f"{rank} <= {int(op.k)}")
            elif isinstance(op, Abs):
                absolute = True
            elif isinstance(op, GroupBy):
                pass
            else:
                raise self.fail(op, f"the operator {op.name} has no SQL form")

        # The aggregation.
        group = stat.group
        g = self.column(group, "categorical") if group is not None else None
        groups = list(self.vocabulary(group, ops[-2])) if group is not None else [None]
        selected = stat.selected
        one_hot = (selected != ANY_COLUMN and not agg.ignores_selection and self.is_categorical(selected))
        v = ""  # the selected values; none for an aggregation that ignores the selection
        if not agg.ignores_selection:
            if selected == ANY_COLUMN:
                raise self.fail(agg, "needs a selected column: Select(*) goes with Count and the time aggregations")
            if one_hot:
                v = self.column(selected, "categorical")
                categories = list(self.vocabulary(selected, agg))
            else:
                v = self.column(selected, "numerical")
                if absolute:
                    v = f"ABS({v})"
        partition = [q("_u")] + ([g] if g is not None else []) + kept()
        fr = pr = pn = gap = ""
        # DuckDB takes First as an aggregate by user (arg_min over the order as a row of keys): a
        # window would sort every event of the table. Percentile and MaxGap keep their windows, which
        # spill to disk: sorted lists by user cost as much and must fit in memory.
        grouped = o.dialect == "duckdb"
        key = ascending[0] if len(ascending) == 1 else f"row({', '.join(ascending)})"
        if isinstance(agg, First) and o.time is None and o.event_order is None:
            raise self.fail(agg, "needs an event order: pass time= or event_order=")
        if isinstance(agg, First) and not grouped:
            # The first defined value: rank among the defined values only.
            defined_first = partition + ([] if one_hot else [f"CASE WHEN {v} IS NULL THEN 1 ELSE 0 END"])
            fr = query.window(depth + 1, f"ROW_NUMBER() OVER (PARTITION BY {', '.join(defined_first)} "
                                         f"ORDER BY {', '.join(order_keys)})")
        if isinstance(agg, Percentile) and not one_hot:
            pr = query.window(depth + 1, f"ROW_NUMBER() OVER (PARTITION BY {', '.join(partition)}, CASE WHEN {v} "
                                         f"IS NULL THEN 1 ELSE 0 END ORDER BY {v}) - 1")
            pn = query.window(depth + 1, f"COUNT({v}) OVER (PARTITION BY {', '.join(partition)})")
        if isinstance(agg, MaxGap):
            tie = [q("_o")] if o.event_order is not None else []
            gap = query.window(depth + 1, f"{t} - LAG({t}) OVER (PARTITION BY {', '.join(partition)} "
                                          f"ORDER BY {', '.join([q('_t')] + tie)})")
        windowed = depth > 0 or bool(fr or pr or pn or gap)
        if windowed:
            query.window_columns |= self.used

        def part(expr: str) -> str:
            return query.part(expr, windowed)

        d = o.as_double
        outputs: list[tuple[str, str]] = []
        # Outputs ordered selected category first, then group category (Statistic.output_names).
        cells = [(c, w) for c in (categories if one_hot else [None]) for w in groups]
        names = [", ".join(x for x in (None if c is None else f"{selected}={c}",
                                       None if w is None else f"{group}={w}") if x) for c, w in cells] \
            if (one_hot or group is not None) else [str(stat)]
        if isinstance(agg, Percentile):
            frac_of = float(agg.k) / 100.0  # as the engine: (n - 1) * (k / 100.0)
        for (c, w), out_name in zip(cells, names):
            cond = conds + ([f"{g} = {o.s(w)}"] if w is not None else [])
            if isinstance(agg, (Recency, Tenure, MeanGap, MaxGap)):
                ref = self.reference(unit)
                scale = float_literal(float(_NS_PER_DAY) if unit == "datetime" else 1.0)
                if isinstance(agg, Recency):
                    last = part(f"MAX({_when(cond, t)})")
                    expr = f"{d(f'{ref} - {last}')} / {scale}"
                elif isinstance(agg, Tenure):
                    first = part(f"MIN({_when(cond, t)})")
                    expr = f"{d(f'{ref} - {first}')} / {scale}"
                elif isinstance(agg, MeanGap):
                    first = part(f"MIN({_when(cond, t)})")
                    last = part(f"MAX({_when(cond, t)})")
                    n = part(f"COUNT({_when(cond, '1')})")
                    expr = f"CASE WHEN {n} > 1 THEN {d(f'{last} - {first}')} / {scale} / {d(f'{n} - 1')} END"
                else:
                    expr = part(f"MAX({_when(cond, d(gap) + ' / ' + scale)})")
            elif agg.ignores_selection:
                if not isinstance(agg, Count):
                    raise self.fail(agg, f"the aggregation {agg.name} has no SQL form")
                n = part(f"COUNT({_when(cond, '1')})" if cond else "COUNT(*)")
                expr = d(f"COALESCE({n}, 0)")
            elif one_hot:
                n_all = part(f"COUNT({_when(cond, '1')})" if cond else "COUNT(*)")
                hit = f"{v} = {o.s(cast(str, c))}"  # one-hot: every cell has its category
                if isinstance(agg, First) and grouped:
                    first = part(f"arg_min({v}, {key})" + (f" FILTER (WHERE {' AND '.join(cond)})" if cond else ""))
                    expr = d(f"({first} = {_braces(o.s(cast(str, c)))})")  # NULL without an event
                elif isinstance(agg, First):
                    first = part(f"MAX({_when(cond + [fr + ' = 1'], f'CASE WHEN {hit} THEN 1 ELSE 0 END')})")
                    expr = d(first)
                else:
                    cnt = part(f"COUNT({_when(cond + [hit], '1')})")
                    nd, cd = d(f"COALESCE({n_all}, 0)"), d(f"COALESCE({cnt}, 0)")
                    expr = self.onehot(agg, nd, cd)
            else:
                val = _when(cond, v)
                exact = self.ordered_values(val, order_keys) if isinstance(agg, (Mean, Sum, Std)) else None
                if exact is not None:
                    expr = self.exact_moment(agg, part(exact))
                elif isinstance(agg, Mean):
                    expr = part(f"AVG({val})")
                elif isinstance(agg, Max):
                    expr = part(f"MAX({val})")
                elif isinstance(agg, Min):
                    expr = part(f"MIN({val})")
                elif isinstance(agg, Sum):
                    expr = f"COALESCE({part(f'SUM({val})')}, {float_literal(0.0)})"
                elif isinstance(agg, Std):
                    expr = part(f"STDDEV_SAMP({val})")
                elif isinstance(agg, Ptp):
                    expr = f"{part(f'MAX({val})')} - {part(f'MIN({val})')}"
                elif isinstance(agg, First) and grouped:
                    expr = part(f"arg_min({v}, {key}) FILTER (WHERE {' AND '.join(cond + [f'{v} IS NOT NULL'])})")
                elif isinstance(agg, First):
                    expr = part(f"MAX({_when(cond + [fr + ' = 1'], v)})")
                elif isinstance(agg, Percentile):
                    n = part(f"COUNT({val})")
                    rank = f"{d(pn + ' - 1')} * {float_literal(frac_of)}"
                    lo = f"FLOOR({rank})"
                    hi = f"CASE WHEN {lo} + 1 < {pn} - 1 THEN {lo} + 1 ELSE {pn} - 1 END"
                    a = part(f"MAX({_when(cond + [f'{v} IS NOT NULL', f'{pr} = {lo}'], v)})")
                    b = part(f"MAX({_when(cond + [f'{v} IS NOT NULL', f'{pr} = {hi}'], v)})")
                    expr = self.lerp(f"{d(f'{n} - 1')} * {float_literal(frac_of)}", a, b, f"{n} > 0")
                else:
                    raise self.fail(agg, f"the aggregation {agg.name} has no SQL form")
            outputs.append((out_name, expr))

        return outputs

    def ordered_values(self, val: str, order_keys: list[str]) -> str | None:
        """The user's defined values as an array in the engine's event order, or None.

        Floating-point addition depends on its order: the engine adds each
        user's values one by one in event order (``numpy.bincount``), and a
        plain ``SUM`` adds in whatever order the database reads them, which
        can differ in the last bit (and flip a literal sitting exactly on a
        threshold). Where the dialect has ordered arrays (DuckDB, Spark) the
        values are collected in the same order and added left to right, so
        Sum, Mean and Std equal the engine's to the bit. None without an
        order (no time, no ``event_order``) or in standard SQL.
        """
        if not self.o.exact_sums or not order_keys or self.o.dialect == "ansi":
            return None
        if self.o.dialect == "duckdb":
            return f"LIST({val} ORDER BY {', '.join(order_keys)}) FILTER (WHERE {val} IS NOT NULL)"
        # Spark: (order keys..., value) structs sorted ascending, then the values (COLLECT_LIST skips NULL)
        fields = ", ".join(f"'k{i}', {_ascending(k)}" for i, k in enumerate(order_keys))
        return (f"TRANSFORM(ARRAY_SORT(COLLECT_LIST(CASE WHEN {val} IS NOT NULL THEN "
                f"NAMED_STRUCT({fields}, 'v', {val}) END)), x -> x.v)")

    def exact_moment(self, agg: Any, values: str) -> str:
        """Sum, Mean or Std of an ordered value array, added left to right as the engine does.

        The engine: ``total`` added in order, ``mean = total / count``, then
        the squared deviations ``(v - mean) ** 2`` added in order, and
        ``sqrt(squares / (count - 1))``.
        """
        zero = float_literal(0.0)
        if self.o.dialect == "duckdb":
            total, n = f"LIST_SUM({values})", f"LEN({values})"
            mean = f"({total} / {n})"
            squares = f"LIST_SUM(LIST_TRANSFORM({values}, x -> (x - {mean}) * (x - {mean})))"
        else:  # spark: AGGREGATE folds left to right
            total, n = f"AGGREGATE({values}, CAST(0 AS DOUBLE), (acc, x) -> acc + x)", f"SIZE({values})"
            mean = f"({total} / {n})"
            squares = f"AGGREGATE({values}, CAST(0 AS DOUBLE), (acc, x) -> acc + (x - {mean}) * (x - {mean}))"
        if isinstance(agg, Sum):
            return f"COALESCE({total}, {zero})"
        if isinstance(agg, Mean):
            return f"CASE WHEN {n} > 0 THEN {total} / {n} END"
        return f"CASE WHEN {n} > 1 THEN SQRT({squares} / ({n} - 1)) END"

    def lerp(self, rank: str, a: str, b: str, defined: str) -> str:
        """numpy's linear interpolation, from the nearer end (so frac = 1 gives b exactly)."""
        frac = f"({rank} - FLOOR({rank}))"
        return (f"CASE WHEN {defined} THEN CASE WHEN {frac} >= {float_literal(0.5)} "
                f"THEN {b} - ({b} - {a}) * ({float_literal(1.0)} - {frac}) ELSE {a} + ({b} - {a}) * {frac} END END")

    def onehot(self, agg, n: str, c: str) -> str:
        """The engine's closed forms over the counts of a 0/1 indicator (``reduce_onehot``)."""
        zero, one = float_literal(0.0), float_literal(1.0)
        defined = f"{n} > {zero}"
        if isinstance(agg, Sum):
            return c
        if isinstance(agg, Mean):
            return f"CASE WHEN {defined} THEN {c} / {n} END"
        if isinstance(agg, Max):
            return f"CASE WHEN {defined} THEN CASE WHEN {c} > {zero} THEN {one} ELSE {zero} END END"
        if isinstance(agg, Min):
            return f"CASE WHEN {defined} THEN CASE WHEN {c} = {n} THEN {one} ELSE {zero} END END"
        if isinstance(agg, Ptp):
            return (f"CASE WHEN {defined} THEN CASE WHEN {c} > {zero} AND {c} < {n} THEN {one} ELSE {zero} END END")
        if isinstance(agg, Std):
            var = f"({c} - {c} * {c} / {n}) / ({n} - {one})"
            return (f"CASE WHEN {n} >= {float_literal(2.0)} "
                    f"THEN SQRT(CASE WHEN {var} > {zero} THEN {var} ELSE {zero} END) END")
        if isinstance(agg, Percentile):
            rank = f"({n} - {one}) * {float_literal(float(agg.k) / 100.0)}"  # as the engine: (n - 1) * (k / 100.0)
            lo = f"FLOOR({rank})"
            hi = f"CASE WHEN {lo} + {one} < {n} - {one} THEN {lo} + {one} ELSE {n} - {one} END"
            zeros = f"({n} - {c})"
            a = f"CASE WHEN {lo} >= {zeros} THEN {one} ELSE {zero} END"
            b = f"CASE WHEN {hi} >= {zeros} THEN {one} ELSE {zero} END"
            return self.lerp(rank, a, b, defined)
        raise self.fail(agg, f"the aggregation {agg.name} of a categorical selection has no SQL form")


def _compile(stat, query: _Query) -> list[tuple[str, str]]:
    """Add ``stat`` to ``query``; its outputs (name, expression over the aggregate row ``{a}``)."""
    if not isinstance(stat, Statistic):
        stat = Statistic.parse(str(stat))
    return _StatisticCompiler(stat, query).compile()


def _with(ctes: list[tuple[str, str]], inline: tuple[str, ...] = ()) -> str:
    """``WITH`` the CTEs; DuckDB reads those of ``inline`` where they are used rather than storing
    them (the scan of the table feeds the aggregate and the windows: stored, it would be held whole)."""
    return "WITH " + ",\n".join(f"{name} AS {'NOT MATERIALIZED ' if name in inline else ''}(\n  {body}\n)"
                                 for name, body in ctes)


def _select_by_user(query: _Query, columns: list[tuple[str, str]], user: str) -> str:
    """The query's CTEs, then one row per user (every user with an event, sorted) with ``columns``."""
    q = query.o.q
    ctes, agg = query.ctes()
    a = q("_a")
    cols = [f"{a}.{q('_u')} AS {q(user)}"] + [f"{expr.format(a=a)} AS {q(name)}" for name, expr in columns]
    return f"{_with(ctes, query.inline)}\nSELECT {', '.join(cols)}\nFROM {agg} {a}\nORDER BY {a}.{q('_u')}"


def _unique(names: list[str], what: str) -> None:
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise InputError(f"two output columns would be named {n!r} ({what}): give the user column another name, "
                             "or drop the repeated literal")
        seen.add(n)


# ------------------------------------------------------------------ public entry points
def statistic_sql(stat, table: str | Sequence[str] = "events", user: str = "user_id", time: str | None = "ts",
                  dialect: str = "duckdb", vocabularies: Mapping[str, Sequence[str]] | None = None,
                  reference_time: Any = None, event_order: str | None = None, time_unit: str | None = None,
                  schema: Any = None, exact_sums: bool = False) -> str:
    """One SELECT giving the statistic's values for every user of an event table.

    Parameters
    ----------
    stat : Statistic or str
    table : str or sequence of str, default="events"
        The event table (one row per event); a sequence for a qualified name
        (``("analytics", "events")``).
    user : str, default="user_id"
        The user column; the result's first column, sorted.
    time : str or None, default="ts"
        The column that orders each user's events (timestamps or numbers).
    dialect : {'duckdb', 'ansi', 'spark'}, default='duckdb'
    vocabularies : mapping of str to sequence of str, optional
        Categories of the categorical columns, e.g. ``seqs.vocabularies``:
        needed for a categorical selection (one output per category) and
        ``GroupBy``; values they lack are unseen, as in ``Sequences``.
    reference_time : datetime-like or float, optional
        "Now" of the time operators; by default the latest time in the table.
    event_order : str, optional
        A column giving the input order of events, to break ties in time as
        the engine does (see the module notes).
    time_unit : {'datetime', 'number'}, optional
        The kind of time column, when a time statistic needs it and no
        ``Within`` unit or ``schema`` tells.
    schema : Sequences or Schema, optional
        Supplies ``vocabularies`` and ``time_unit`` when those are not given.
    exact_sums : bool, default=False
        Add each user's values in the engine's event order (DuckDB, Spark),
        so that Sum, Mean and Std equal the engine's to the bit and no
        literal can flip on a value lying exactly on its threshold. It holds
        each user's values in memory (DuckDB cannot spill ordered lists) and
        takes about twice as long; the default ``SUM`` may differ from the
        engine in the last bit (relative 1e-15).

    Returns
    -------
    str
        The query: columns ``user`` then one DOUBLE per output, named as
        :meth:`Statistic.output_names`; NULL where the statistic is undefined.

    Raises
    ------
    ValueError
        Naming the dialect and operator for anything that cannot compile.
    """
    opts = _options(table, user, time, dialect, vocabularies, reference_time, event_order, time_unit, schema,
                    exact_sums)
    query = _Query(opts)
    outputs = _compile(stat, query)
    _unique([user] + [n for n, _ in outputs], "statistic outputs")
    return _select_by_user(query, outputs, user)


def statistics_sql(stats: Sequence[Any], table: str | Sequence[str] = "events", user: str = "user_id",
                   time: str | None = "ts", dialect: str = "duckdb",
                   vocabularies: Mapping[str, Sequence[str]] | None = None, reference_time: Any = None,
                   event_order: str | None = None, time_unit: str | None = None, schema: Any = None,
                   exact_sums: bool = False) -> str:
    """One SELECT giving the values of several statistics for every user, in one pass.

    The K statistics of an explanation at once (one query, one scan of the
    table, rather than K): columns ``user``, then one DOUBLE per output of
    each statistic in turn, named by the statistic for a one-output
    statistic and ``"<statistic> [<output>]"`` otherwise (as
    :func:`ruleset_sql` names its values). Parameters as for
    :func:`statistic_sql`.
    """
    opts = _options(table, user, time, dialect, vocabularies, reference_time, event_order, time_unit, schema,
                    exact_sums)
    query = _Query(opts)
    columns: list[tuple[str, str]] = []
    for stat in stats:
        outputs = _compile(stat, query)
        scalar = len(outputs) == 1 and outputs[0][0] == str(stat)
        columns.extend((str(stat) if scalar else f"{stat} [{out}]", expr) for out, expr in outputs)
    _unique([user] + [n for n, _ in columns], "statistic outputs")
    return _select_by_user(query, columns, user)
