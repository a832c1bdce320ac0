"""The readable grammar: the statistics an analyst can say aloud (SEMANTICS.md).

The paper's grammar allows pipelines that evaluate fine and mean nothing to a
reader: the standard deviation of a 0/1 indicator, the absolute value of a
column that is never negative, four filters in a row. The readable grammar is
the paper's with these extra rules, stated one operator at a time so that the
search can apply them while it builds a pipeline:

* on a categorical selection, only ``Sum``, ``Mean``, ``Max``, ``Min`` and
  ``First`` (count, share, any, all, first);
* aggregations that ignore the selection (``Count``, the time aggregations)
  only after ``Select(*)``, so one count has one form;
* ``Abs`` only on a column with negative values in the data;
* at most ``max_filters`` event filters (``RetainBy`` and ``FilterBy``);
* no ``FilterBy`` before a ``GroupBy`` on the same column, no ``SortBy``
  after ``Select(*)`` (nothing but a count can follow it, and a count does
  not depend on the order);
* no ``Count`` after ``Top(k)`` (it is only the count capped at k).
"""

from __future__ import annotations

from collections.abc import Iterable

from rudi_explain.exceptions import InputError
from rudi_explain.statistics.grammar import PipelineState, Schema
from rudi_explain.statistics.operators import (
    ANY_COLUMN,
    Abs,
    Aggregation,
    FilterBy,
    GroupBy,
    Operator,
    RetainBy,
    Select,
    SortBy,
)

__all__ = ["GRAMMARS", "MAX_FILTERS", "readable_reason", "check_grammar", "is_readable"]

#: The grammars the search, the baselines and explain() accept.
GRAMMARS = ("readable", "paper")

#: Event filters allowed in a readable statistic, unless a parameter raises it.
MAX_FILTERS = 2

#: Aggregations of a 0/1 indicator that read as one phrase: count, share, any, all, first.
INDICATOR_AGGREGATIONS = frozenset({"Sum", "Mean", "Max", "Min", "First"})


def check_grammar(grammar: str) -> str:
    """``grammar`` itself, or a ``ValueError`` naming the choices."""
    if grammar not in GRAMMARS:
        raise InputError(f"grammar must be one of {GRAMMARS}, got {grammar!r}")
    return grammar


def readable_reason(op: Operator, state: PipelineState, schema: Schema, max_filters: int = MAX_FILTERS) -> str | None:
    """Why ``op`` after ``state`` leaves the readable grammar, or None.

    Call it only for operators that are valid in the paper's grammar
    (``op.check(state, schema) is None``).
    """
    if isinstance(op, Select):
        return None
    if isinstance(op, Aggregation):
        if op.ignores_selection:
            if state.selected != ANY_COLUMN:
                return f"{op.name} ignores the selection: write Select(*) | ... | {op.name}"
            if op.name == "Count" and state.has_top:
                return "a count after Top(k) is only the count capped at k"
            return None
        if state.selected_kind == "categorical" and op.name not in INDICATOR_AGGREGATIONS:
            return f"{op.name} of a 0/1 indicator cannot be said in words"
        return None
    if isinstance(op, Abs) and state.selected not in schema.signed:
        return f"Abs of {state.selected!r}, which is never negative, changes nothing"
    if isinstance(op, (RetainBy, FilterBy)) and len(state.filtered) >= max_filters:
        return f"more than {max_filters} event filters"
    if isinstance(op, GroupBy) and op.column in state.filtered:
        return f"GroupBy({op.column}) after a filter on the same column"
    if isinstance(op, SortBy) and state.selected_kind == "any":
        return "a SortBy before a count changes nothing"
    return None


def is_readable(operators: Iterable[Operator], schema: Schema, max_filters: int = MAX_FILTERS) -> bool:
    """Whether a valid pipeline stays within the readable grammar."""
    state = PipelineState()
    for op in operators:
        if op.check(state, schema) is not None or readable_reason(op, state, schema, max_filters) is not None:
            return False
        state = op.advance(state, schema)
    return state.aggregated
