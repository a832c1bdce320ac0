"""The plain-English describer: one phrase an analyst could write for a statistic.

"total amount over events where card_type is debit", "share of events with
channel = online", "days since the last event where card_type is debit",
"number of events in the last 7 days". Never operator names.

:meth:`Statistic.describe <rudi_explain.statistics.Statistic.describe>` calls
:func:`describe`; the words work on a statistic's operators, so this module
knows no :class:`~rudi_explain.statistics.Statistic` (which imports it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import cast

from rudi_explain.statistics.grammar import Schema
from rudi_explain.statistics.operators import (
    Abs,
    Aggregation,
    Count,
    FilterBy,
    First,
    GroupBy,
    Operator,
    Percentile,
    RetainBy,
    RowOperator,
    Select,
    SortBy,
    Sum,
    Top,
)
from rudi_explain.statistics.text import output_name_parts
from rudi_explain.statistics.time_operators import MaxGap, MeanGap, Recency, Tenure, TimeAggregation, Within

__all__ = ["describe", "time_phrase"]


def describe(operators: Sequence[Operator], output: str | None, categorical: bool, parts: dict[str, str],
             schema: Schema | None = None) -> str:
    """Plain English for the statistic made of ``operators``.

    Parameters
    ----------
    operators : sequence of Operator
        A valid pipeline (``Statistic.operators``).
    output : str or None
        One of the statistic's output names, to describe that one value.
    categorical : bool
        Whether the selected column is categorical (known without an ``output``).
    parts : dict
        The categories ``output`` stands for (``Statistic.output_parts(output, data)``).
    schema : Schema, optional
        Tells a numerical time column (raw "time") from a datetime one ("days").
    """
    # Time operators have their own words ("days since the last event"), built on the others.
    phrase = time_phrase(operators, output, categorical, parts, schema)
    return phrase if phrase is not None else _describe(operators, output, categorical, parts)


# ------------------------------------------------------------------ the pipeline's parts
def _selected(ops: Sequence[Operator]) -> str:
    return cast(Select, ops[0]).column


def _aggregation(ops: Sequence[Operator]) -> Aggregation:
    return cast(Aggregation, ops[-1])


def _group(ops: Sequence[Operator]) -> str | None:
    op = ops[-2] if len(ops) > 2 else None
    return op.column if isinstance(op, GroupBy) else None


def _row_operators(ops: Sequence[Operator]) -> tuple[RowOperator, ...]:
    return tuple(op for op in ops[1:-1] if isinstance(op, RowOperator))


# ------------------------------------------------------------------------- the words
_ORDINAL = {1: "st", 2: "nd", 3: "rd"}


def _percentile_words(k: float) -> str:
    k_text = str(int(k)) if float(k).is_integer() else str(k)
    last = int(k) % 10 if float(k).is_integer() and int(k) % 100 not in (11, 12, 13) else 0
    return f"{k_text}{_ORDINAL.get(last, 'th')} percentile"


def _describe(ops: Sequence[Operator], output: str | None, categorical: bool,
              parts: dict[str, str] | None = None) -> str:
    """One plain-English phrase for a statistic without time operators.

    "total amount over events where merchant_category is gambling",
    "share of events with country = other", "average hour over the 5 events
    with the largest amount among events where channel is online". Without
    ``parts`` the categories are read from the output's name.
    """
    agg = _aggregation(ops)
    selected = _selected(ops)
    group = _group(ops)
    rows = _row_operators(ops)
    absolute = any(isinstance(op, Abs) for op in rows)
    sort = next((op for op in rows if isinstance(op, SortBy)), None)
    top = next((op for op in rows if isinstance(op, Top)), None)
    if parts is None:
        parts = output_name_parts(output)
    category = parts.get(selected)
    group_value = parts.get(group) if group else None

    # Which events: conditions before a Top, the Top itself, conditions after it.
    before: list[str] = []
    after: list[str] = []
    seen_top = False
    for op in rows:
        if isinstance(op, Top):
            seen_top = True
        elif isinstance(op, (RetainBy, FilterBy)):
            verb = "is" if isinstance(op, RetainBy) else "is not"
            (after if seen_top else before).append(f"{op.column} {verb} {op.value}")
    if group_value is not None:  # one output of a GroupBy reads as one more condition
        (after if seen_top else before).append(f"{group} is {group_value}")
    per_group = f", per {group}" if group is not None and group_value is None else ""
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
    if category is not None or categorical or (output and group is None):
        indicator = f"{selected} = {category}" if category is not None else f"each {selected} category"
        if isinstance(agg, Sum) and top is None:
            conds = " and ".join(before + ([f"{selected} is {category}"] if category is not None else []))
            text = (f"number of events where {conds}" if category is not None
                    else f"number of events per {selected} category")
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


# ------------------------------------------------------------------- time operators
def _time_units(schema: Schema | None) -> str:
    return "time" if schema is not None and schema.time_unit == "number" else "days"


def time_phrase(operators: Sequence[Operator], output: str | None, categorical: bool, parts: dict[str, str],
                schema: Schema | None = None) -> str | None:
    """Plain English for a statistic with time operators; None for one without.

    "days since the last event", "average days between events where
    card_type is debit", "number of events in the last 7 days". The words of
    :func:`describe` for the statistic stripped of its time operators are
    kept (the events, the values), the time words added.

    Parameters are as for :func:`describe`.
    """
    ops = tuple(operators)
    window = next((op for op in ops if isinstance(op, Within)), None)
    agg = _aggregation(ops)
    group = _group(ops)
    if window is None and not isinstance(agg, TimeAggregation):
        return None
    rows = [op for op in ops[1:-1] if not isinstance(op, Within)]
    if window is None:
        window_text = ""
    elif any(isinstance(op, Top) for op in ops[1:ops.index(window)]):
        window_text = f", then only those in {window.window_words()}"
    else:
        window_text = f" in {window.window_words()}"
    if not isinstance(agg, TimeAggregation):
        # A value aggregation over a window: the base words, the window before the group part.
        text = _describe((ops[0], *rows, agg), output, categorical)
        if group is not None:
            tail_at = max(text.rfind(", within "), text.rfind(", per "))
            if tail_at >= 0:
                return text[:tail_at] + window_text + text[tail_at:]
        return text + window_text
    # The events in question, as the base describer words a Count over them.
    group_output = None
    group_value = parts.get(group) if group is not None else None
    if group_value is not None:
        group_output = f"{group}={group_value}"
    base = _describe((ops[0], *rows, Count()), group_output, False)
    plural = base[len("number of "):] if base.startswith("number of ") else "events"
    plural += window_text
    scoped = re.match(r"events (?:over|among) (the .*)", plural)
    if scoped:  # a Top: "the last of the first 5 events"
        plural = scoped[1]
        singular = f"of {plural}"
    else:  # "events where ..." -> "event where ...", "debit-card payments" -> "debit-card payment"
        head_end = min(i for i in (*(plural.find(w) for w in (" where ", " in ", " among ", " over ", " with ", ",")),
                                   len(plural)) if i >= 0)
        head = plural[:head_end]
        singular = (head[:-1] if head.endswith("s") else head) + plural[head_end:]
    units = _time_units(schema)
    if isinstance(agg, Recency):
        text = f"{units} since the last {singular}"
    elif isinstance(agg, Tenure):
        text = f"{units} since the first {singular}"
    elif isinstance(agg, MeanGap):
        text = f"average {units} between {plural}"
    elif isinstance(agg, MaxGap):
        text = f"longest gap in {units} between consecutive {plural}"
    else:  # a time aggregation of one's own
        text = f"{agg.words} over {plural}"
    return text
