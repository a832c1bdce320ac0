"""One-edit neighbours of a statistic in the paper's full grammar (the readable grammar's are
:func:`rudi_explain.search.catalog.neighbours`), for polishing a statistic MCTS-SG committed."""

from __future__ import annotations

from collections.abc import Collection

from rudi_explain.search.catalog import distinct_statistics
from rudi_explain.statistics import Schema, Statistic, candidate_operators
from rudi_explain.statistics.operators import Operator

__all__ = ["paper_neighbours"]


def paper_neighbours(stat: Statistic, schema: Schema, max_depth: int, marked: Collection[tuple]) -> list[Statistic]:
    """Valid statistics one edit from ``stat`` (an operator swapped for another of its kind, a row
    operator dropped or inserted), within ``max_depth``, none equivalent to ``stat`` or in ``marked``."""
    ops = list(stat.operators)
    candidates = candidate_operators(schema)
    variants: list[list[Operator]] = []
    for i, op in enumerate(ops):
        for other in candidates:  # the same kind of operator in this place
            if other.kind == op.kind and other != op:
                variants.append(ops[:i] + [other] + ops[i + 1:])
        if op.kind == "row":
            variants.append(ops[:i] + ops[i + 1:])
    if stat.depth < max_depth:
        for i in range(1, len(ops)):
            for other in candidates:
                if other.kind == "row":
                    variants.append(ops[:i] + [other] + ops[i:])
    return distinct_statistics(variants, lambda c: c.depth <= max_depth and c.is_valid(schema),
                               exclude={stat.key, *marked})
