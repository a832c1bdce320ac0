"""A simple, independent per-user implementation of SEMANTICS.md, for tests.

Slow on purpose: plain pandas and Python per user, one operator at a time,
sharing no code with the vectorized engine (only the parsed operators).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from rudi_explain.statistics import (
    Abs,
    FilterBy,
    RetainBy,
    SortBy,
    Top,
)

NA = "<NA>"


def category_text(value) -> str:
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return NA
    return str(value)


def vocabulary(df: pd.DataFrame, column: str) -> list[str]:
    return sorted({category_text(v) for v in df[column]})


def _mask(flags: list[bool]) -> np.ndarray:
    # An empty plain list would select columns, not rows.
    return np.array(flags, dtype=bool)


def _aggregate(name: str, op, values: list[float], n_events: int) -> float:
    """Aggregate numerical values (NaN skipped); ``n_events`` counts every event."""
    vals = [v for v in values if not math.isnan(v)]
    if name == "Count":
        return float(n_events)
    if name == "Sum":
        return float(sum(vals)) if vals else 0.0
    if not vals:
        return math.nan
    if name == "Mean":
        return float(np.mean(vals))
    if name == "Max":
        return max(vals)
    if name == "Min":
        return min(vals)
    if name == "Ptp":
        return max(vals) - min(vals)
    if name == "Std":
        return float(np.std(vals, ddof=1)) if len(vals) > 1 else math.nan
    if name == "First":
        return vals[0]
    if name == "Percentile":
        return float(np.percentile(vals, op.k))
    raise AssertionError(name)


#: Time aggregations: one value per user (per group), whatever the selection.
TIME_AGGREGATIONS = ("Recency", "Tenure", "MeanGap", "MaxGap")
_PANDAS_UNIT = {"s": "s", "min": "min", "h": "h", "d": "D", "w": "W"}


def _time_aggregate(name: str, times: pd.Series, reference) -> float:
    """Recency, Tenure, MeanGap or MaxGap of some event times, in days for datetimes."""
    t = sorted(times.tolist())
    if not t:
        return math.nan

    def units(delta) -> float:
        return delta / pd.Timedelta(days=1) if isinstance(delta, pd.Timedelta) else float(delta)

    gaps = [units(b - a) for a, b in zip(t[:-1], t[1:])]
    if name == "Recency":
        return units(reference - t[-1])
    if name == "Tenure":
        return units(reference - t[0])
    if not gaps:
        return math.nan
    return float(np.mean(gaps)) if name == "MeanGap" else max(gaps)


def _rows(events: pd.DataFrame, stat, time: str | None = None, reference=None) -> tuple[pd.DataFrame, bool]:
    absolute = False
    for op in stat.row_operators:
        if op.name == "Within":
            t = events[time]
            width = pd.Timedelta(op.length, unit=_PANDAS_UNIT[op.unit]) if op.unit else op.length
            events = events[_mask([(v > reference - width) and (v <= reference) for v in t])]
        elif isinstance(op, RetainBy):
            events = events[_mask([category_text(v) == op.value for v in events[op.column]])]
        elif isinstance(op, FilterBy):
            events = events[_mask([category_text(v) != op.value for v in events[op.column]])]
        elif isinstance(op, SortBy):
            keys = events[op.column].to_numpy(dtype=float)
            sign = 1.0 if op.direction == "asc" else -1.0
            order = sorted(range(len(events)),
                           key=lambda i: (math.isnan(keys[i]), 0.0 if math.isnan(keys[i]) else sign * keys[i]))
            events = events.iloc[order]
        elif isinstance(op, Top):
            events = events.iloc[: op.k]
        elif isinstance(op, Abs):
            absolute = True
        else:
            raise AssertionError(op)
    return events, absolute


def reference_evaluate(
    df: pd.DataFrame, stat, *, user: str = "user_id", time: str | None = "ts",
    categorical: list[str], vocabularies: dict[str, list[str]] | None = None, reference_time=None,
) -> np.ndarray:
    """Evaluate ``stat`` per user with pandas; same output layout as the engine.

    Time operators are measured at ``reference_time``, by default the latest
    time in ``df``.
    """
    reference = None
    if time is not None:
        column = df[time]
        if pd.api.types.is_datetime64_any_dtype(column.dtype):
            reference = column.max() if reference_time is None else pd.Timestamp(reference_time)
        else:
            reference = column.max() if reference_time is None else reference_time
    vocab = {c: (list(vocabularies[c]) if vocabularies and c in vocabularies else vocabulary(df, c))
             for c in categorical}
    agg = stat.aggregation
    name = agg.name
    selected = stat.selected
    group = stat.group
    results = []
    for _, events in sorted(df.groupby(user, sort=False), key=lambda kv: kv[0]):
        if time is not None:
            events = events.sort_values(time, kind="stable")
        events, absolute = _rows(events, stat, time, reference)
        parts = [events] if group is None else [
            events[_mask([category_text(v) == w for v in events[group]])] for w in vocab[group]
        ]
        row = []
        if name in TIME_AGGREGATIONS:
            row = [_time_aggregate(name, part[time], reference) for part in parts]
        elif name == "Count":  # one output per user (per group), whatever is selected
            row = [float(len(part)) for part in parts]
        elif selected in categorical:
            for c in vocab[selected]:
                for part in parts:
                    onehot = [1.0 if category_text(v) == c else 0.0 for v in part[selected]]
                    row.append(_aggregate(name, agg, onehot, len(part)))
        else:
            for part in parts:
                values = part[selected].to_numpy(dtype=float)
                if absolute:
                    values = np.abs(values)
                row.append(_aggregate(name, agg, list(values), len(part)))
        results.append(row)
    out = np.array(results, dtype=float)
    scalar = (selected not in categorical or name == "Count") and group is None
    scalar = scalar or (name in TIME_AGGREGATIONS and group is None)
    return out[:, 0] if scalar else out


def varying_new_outputs(stats, seqs, shadowed: set | None = None) -> list[tuple]:
    """The catalog's columns by a plain loop: every output of every statistic evaluated whole, in order, kept
    where it varies (two finite values at least, not one value for everyone) and is no repeat of an earlier
    output's values (rounded to 9 decimals, undefined as infinity); ``[(statistic, output, values)]``.
    ``shadowed`` (a set), where given, receives the statistics with an output repeating another statistic's."""
    out, seen = [], {}
    for stat in stats:
        values = stat.evaluate(seqs).reshape(seqs.n_users, -1)
        for j in range(values.shape[1]):
            v = values[:, j]
            finite = v[np.isfinite(v)]
            if len(finite) < 2 or (finite.min() == finite.max() and len(finite) == len(v)):
                continue
            key = np.where(np.isfinite(v), v, np.inf).round(9).tobytes()
            if key not in seen:
                seen[key] = stat
                out.append((stat, j, v))
            elif shadowed is not None and seen[key] is not stat:
                shadowed.add(stat)
    return out
