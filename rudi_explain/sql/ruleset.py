"""A rule set compiled to one SQL query that scores every user, as ``RuleSet.score`` does.

The statistics are compiled by :mod:`rudi_explain.sql.statistics`; each rule becomes a ``CASE``
on their values, in the same order of operations as the numpy scorer.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from rudi_explain.exceptions import InputError
from rudi_explain.rules.formula import And, Const, Lit, formula_literals
from rudi_explain.rules.ruleset import LinearTerm
from rudi_explain.sql.statistics import _compile, _options, _unique, _users_cte, _with, float_literal

__all__ = ["ruleset_sql"]


def ruleset_sql(rules, table: str | Sequence[str] = "events", user: str = "user_id", time: str | None = "ts",
                dialect: str = "duckdb", literals: Any = None, include_literals: bool = False,
                vocabularies: Mapping[str, Sequence[str]] | None = None, reference_time: Any = None,
                event_order: str | None = None, time_unit: str | None = None, schema: Any = None,
                exact_sums: bool = False) -> str:
    """One SELECT giving every user's statistic values, rule firings and rule score.

    Parameters
    ----------
    rules : RuleSet
    literals : Literals, optional
        The literal table the rules refer to; by default the rule set's own.
    include_literals : bool, default=False
        Also give each literal's truth (0/1) as a column named by the literal.
    vocabularies : mapping, optional
        By default ``literals.vocabularies`` (the training categories).
    table, user, time, dialect, reference_time, event_order, time_unit, schema, exact_sums
        As for :func:`statistic_sql`.

    Returns
    -------
    str
        Columns: ``user``; one DOUBLE per statistic output the rules (and
        literals) use, named by the statistic (``"<statistic> [<output>]"``
        for one output of a vector statistic); ``score`` (the intercept plus
        the weights of the rules that fire, added in rule order as
        ``RuleSet.score`` does); ``rule_1`` ... one 0/1 column per rule as
        ``RuleSet.fires``; with ``include_literals``, one 0/1 column per
        literal as ``Literals.transform``. A literal ``value > t`` is false
        where the value is NULL, its negation true.
    """

    literals = literals if literals is not None else rules.literals
    if literals is None or getattr(literals, "statistics", None) is None:
        raise InputError("to_sql needs the Literals table the rules were learned on (with its statistics): "
                         "pass literals=")
    if vocabularies is None and schema is None:
        vocabularies = literals.vocabularies
    opts = _options(table, user, time, dialect, vocabularies, reference_time, event_order, time_unit, schema,
                    exact_sums)
    q = opts.q

    # Which value columns (outputs) are needed.
    used_lits: set[int] = set()
    needed: set[int] = set()
    for r in rules:
        if isinstance(r, LinearTerm):
            needed.add(int(r.column))
        else:
            used_lits.update(lit.index for lit in formula_literals(r.formula))
    lit_columns = range(literals.n_literals) if include_literals else sorted(used_lits)
    for i in list(used_lits) + list(lit_columns):
        if not 0 <= i < literals.n_literals:
            raise InputError(f"a rule refers to literal {i}, the table has {literals.n_literals}")
        needed.add(int(literals.column[i]))

    # Compile each statistic once, and find each needed output among its outputs.
    by_stat: dict[int, list[int]] = {}
    for c in sorted(needed):
        by_stat.setdefault(int(literals.output_statistic[c]), []).append(c)
    users, users_body = _users_cte(opts)
    ctes = [(users, users_body)]
    joins, value_expr = [], {}
    for k, outs in by_stat.items():
        stat = literals.statistics[k]
        compiled = _compile(stat, opts, f"_s{k}_")
        ctes.extend(compiled.ctes)
        alias = q(f"_a{k}")
        joins.append(f"LEFT JOIN {compiled.agg} {alias} ON {q('_x')}.{q('_u')} = {alias}.{q('_u')}")
        exprs = dict(compiled.outputs)
        scalar = len(compiled.outputs) == 1 and compiled.outputs[0][0] == str(stat)
        for c in outs:
            out = str(stat) if scalar else literals.output_names[c]
            if out not in exprs:
                raise InputError(f"statistic {stat} has no output {out!r} with these vocabularies: "
                                 "pass vocabularies=literals.vocabularies")
            value_expr[c] = exprs[out].format(a=alias)
    value_name = {c: (str(literals.statistics[int(literals.output_statistic[c])]) if
                      literals.output_names[c] == str(literals.statistics[int(literals.output_statistic[c])])
                      else f"{literals.statistics[int(literals.output_statistic[c])]} [{literals.output_names[c]}]")
                  for c in value_expr}
    value_cols = [f"{value_expr[c]} AS {q(f'_v{c}')}" for c in sorted(value_expr)]
    ctes.append((q("_values"), f"SELECT {q('_x')}.{q('_u')} AS {q('_u')}"
                 + "".join(f", {v}" for v in value_cols)
                 + f" FROM {users} {q('_x')} " + " ".join(joins)))

    def literal(i: int) -> str:
        col = q(f"_v{int(literals.column[i])}")
        t = float(literals.thresholds[i])
        if math.isnan(t) or t == math.inf:
            return "(1 = 0)"  # nothing exceeds them, as numpy's comparison
        if t == -math.inf:
            return f"({col} IS NOT NULL)"
        return f"({col} IS NOT NULL AND {col} > {float_literal(t)})"

    def formula(f) -> str:
        if isinstance(f, Lit):
            return f"(NOT {literal(f.index)})" if f.negated else literal(f.index)
        if isinstance(f, Const):
            return "(1 = 1)" if f.value else "(1 = 0)"
        if not f.children:
            return "(1 = 1)" if isinstance(f, And) else "(1 = 0)"
        joiner = " AND " if isinstance(f, And) else " OR "
        return "(" + joiner.join(formula(c) for c in f.children) + ")"

    score = float_literal(rules.intercept)
    fire_cols = []
    for j, r in enumerate(rules):
        w = float_literal(r.weight)
        if isinstance(r, LinearTerm):
            fill = float_literal(r.fill)
            value = f"COALESCE({q(f'_v{int(r.column)}')}, {fill})"
            score = f"{score} + {w} * {value}"
            fires = f"{value} <> {float_literal(0.0)}"
        else:
            fires = formula(r.formula)
            score = f"{score} + CASE WHEN {fires} THEN {w} ELSE {float_literal(0.0)} END"
        fire_cols.append((f"rule_{j + 1}", f"CASE WHEN {fires} THEN 1 ELSE 0 END"))
    cols = [(user, q("_u"))] + [(value_name[c], q(f"_v{c}")) for c in sorted(value_expr)]
    cols.append(("score", score))
    cols.extend(fire_cols)
    if include_literals:
        cols.extend((literals.names[i], f"CASE WHEN {literal(i)} THEN 1 ELSE 0 END") for i in lit_columns)
    _unique([n for n, _ in cols], "values, score, rules and literals")
    select = ", ".join(f"{expr} AS {q(name)}" for name, expr in cols)
    return f"{_with(ctes)}\nSELECT {select}\nFROM {q('_values')}\nORDER BY {q('_u')}"
