"""A rule set compiled to one SQL query that scores every user, as ``RuleSet.score`` does.

The statistics are compiled by :mod:`rudi_explain.sql.statistics`. The score is written as a
scorecard reads (SEMANTICS.md, "The scorecard"): the base, plus one ``CASE`` per card (its bands
in order, the undefined band first; a linear card as ``slope * LEAST(GREATEST(value, lo), hi)``),
plus one ``CASE`` per interaction rule, each after a comment naming it. The sums are taken in the
order of ``RuleSet.score`` (:meth:`RuleSet.groups`), every band's points computed by the same numpy
code, so the scores are equal to the last bit.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rudi_explain.exceptions import InputError
from rudi_explain.rules.formula import And, Const, Lit, formula_literals
from rudi_explain.rules.ruleset import LinearTerm, Rule
from rudi_explain.rules.scorecard_cards import Card, Linear
from rudi_explain.rules.scorecard_fit import DEFINED_THRESHOLD
from rudi_explain.rules.values import format_value
from rudi_explain.sql.statistics import _compile, _options, _Query, _unique, _with, float_literal

__all__ = ["ruleset_sql", "sql_comment"]


def sql_comment(text: str) -> str:
    """``text`` as a block comment no text can leave.

    Control characters (newlines among them) become spaces, and every
    ``/*`` and ``*/`` (a nested comment opens in DuckDB, PostgreSQL and
    Spark) gets a space between its two characters.
    """
    out = "".join(" " if unicodedata.category(ch).startswith("C") else ch for ch in str(text))
    while "/*" in out or "*/" in out:
        out = out.replace("/*", "/ *").replace("*/", "* /")
    return f"/* {out} */"


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
        ``RuleSet.score`` does: one ``CASE`` per card, then per interaction rule,
        each with a comment naming it); ``rule_1`` ... one 0/1 column per rule as
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
    query = _Query(opts)  # every statistic in one scan and one aggregation by user
    a = q("_a")
    value_expr = {}
    for k, outs in by_stat.items():
        stat = literals.statistics[k]
        outputs = _compile(stat, query)
        exprs = dict(outputs)
        scalar = len(outputs) == 1 and outputs[0][0] == str(stat)
        for c in outs:
            out = str(stat) if scalar else literals.output_names[c]
            if out not in exprs:
                raise InputError(f"statistic {stat} has no output {out!r} with these vocabularies: "
                                 "pass vocabularies=literals.vocabularies")
            value_expr[c] = exprs[out].format(a=a)
    ctes, agg = query.ctes()
    value_name = {c: (str(literals.statistics[int(literals.output_statistic[c])]) if
                      literals.output_names[c] == str(literals.statistics[int(literals.output_statistic[c])])
                      else f"{literals.statistics[int(literals.output_statistic[c])]} [{literals.output_names[c]}]")
                  for c in value_expr}
    value_cols = [f"{value_expr[c]} AS {q(f'_v{c}')}" for c in sorted(value_expr)]
    ctes.append((q("_values"), f"SELECT {a}.{q('_u')} AS {q('_u')}" + "".join(f", {v}" for v in value_cols)
                 + f" FROM {agg} {a}"))

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

    zero = float_literal(0.0)

    def clipped(term: LinearTerm) -> str:
        """The term's value where it is defined: the column clipped to [lo, hi]."""
        v = q(f"_v{int(term.column)}")
        lo = None if term.lo is None else float_literal(term.lo)
        hi = None if term.hi is None else float_literal(term.hi)
        if opts.dialect == "ansi":  # LEAST and GREATEST are not in every ANSI engine
            parts = ([f"WHEN {v} < {lo} THEN {lo}"] if lo is not None else []) + \
                    ([f"WHEN {v} > {hi} THEN {hi}"] if hi is not None else [])
            return f"(CASE {' '.join(parts)} ELSE {v} END)" if parts else v
        if lo is not None:
            v = f"GREATEST({v}, {lo})"
        if hi is not None:
            v = f"LEAST({v}, {hi})"
        return v

    def term_value(term: LinearTerm) -> str:
        v = q(f"_v{int(term.column)}")
        return f"(CASE WHEN {v} IS NULL THEN {float_literal(term.fill)} ELSE {clipped(term)} END)"

    def fv(c: int, x: float) -> str:
        return format_value(x, literals.output_kind[c], literals.output_unit[c], exact=True)

    def band_labels(c: int, edges: list[float]) -> list[str]:
        """Each band in words, as a card writes it; the band below "defined" holds no real value."""
        if edges and edges[0] == DEFINED_THRESHOLD:
            rest = band_labels(c, edges[1:])
            return ["the lowest number (counts as undefined)", *(["every defined value"] if rest == ["every value"]
                                                                  else rest)]
        if not edges:
            return ["every value"]
        return [f"at most {fv(c, edges[0])}",
                *(f"more than {fv(c, a)} and at most {fv(c, b)}" for a, b in zip(edges, edges[1:])),
                f"more than {fv(c, edges[-1])}"]

    def linear_words(c: int, term: LinearTerm) -> str:
        """"+0.00743 per 10 EUR, from 0 EUR to 140 EUR", as a linear card writes it."""
        if term.lo is not None and term.hi is not None and term.hi > term.lo:
            card = Card(c, term.name, literals.output_kind[c], literals.output_unit[c], (), (),
                        linear=Linear(term.weight, term.lo, term.hi))
            return card.linear_text()
        bounds = (f" from {fv(c, term.lo)}" if term.lo is not None else "") + \
            (f" to {fv(c, term.hi)}" if term.hi is not None else "")
        return f"{term.weight:+.3g} x the value{bounds}"

    def undefined_words(c: int) -> str:
        who = literals.output_undefined_words[c] if literals.output_undefined_words else ""
        who = who[len("users with "):] if who.startswith("users with ") else who
        return f"undefined ({who})" if who else "undefined"

    def card_case(c: int, members: list[int]) -> str:
        """One card: a CASE over its bands (undefined first), each band's points as numpy adds them."""
        v = q(f"_v{c}")
        # thresholds NaN and +inf are never exceeded: no band edge
        edges = sorted({t for k in members if isinstance(rules[k], Rule) for lit in formula_literals(rules[k].formula)
                        if not math.isnan(t := float(literals.thresholds[lit.index])) and t != math.inf})
        # one value per band (a band's literals all read it as they read the band), then undefined
        reps = [*edges, float(np.nextafter(edges[-1], np.inf)) if edges else 0.0]
        W = np.full((len(reps) + 1, literals.n_outputs), np.nan)
        W[:-1, c] = reps
        part = rules.group_points(members, W, linear=False)  # the rules' points, band by band
        full_nan = float(rules.group_points(members, W[-1:])[0])  # undefined: rules and linear terms
        terms = [rules[k] for k in members if isinstance(rules[k], LinearTerm)]

        def band(p: float) -> str:
            expr = "" if p == 0.0 and terms else float_literal(p)
            for t in terms:
                expr = f"{expr} + {float_literal(t.weight)} * {clipped(t)}" if expr else \
                    f"{float_literal(t.weight)} * {clipped(t)}"
            return expr

        labels = band_labels(c, edges)
        if terms:
            lin = ", ".join(linear_words(c, t) for t in terms)
            labels = [f"{label}: {lin}" for label in labels]
        # a literal "v > -inf" reads as "v is defined" in SQL (see literal()): the band "at most -inf" is empty
        branches = [(f"{v} <= {float_literal(e)}", k) for k, e in enumerate(edges) if e != -math.inf]
        top = len(edges)
        nan_is_first = not terms and full_nan == float(part[branches[0][1] if branches else top])
        undefined = f"WHEN {v} IS NULL THEN {float_literal(full_nan)} {sql_comment(undefined_words(c))}"
        whens = [] if nan_is_first else [undefined]
        for i, (test, k) in enumerate(branches):
            test = f"{v} IS NULL OR {test}" if i == 0 and nan_is_first else test
            whens.append(f"WHEN {test} THEN {band(float(part[k]))} {sql_comment(labels[k])}")
        last = f"{band(float(part[top]))} {sql_comment(labels[top])}"
        return f"CASE {' '.join(whens)} ELSE {last} END" if whens else f"({last})"

    score = float_literal(rules.intercept) + f" {sql_comment('base')}"
    for c, members in rules.groups():
        if c >= 0:
            name = literals.output_descriptions[c] if literals.output_descriptions else literals.output_names[c]
            score += f"\n  + {sql_comment(f'card: {name}')} {card_case(c, members)}"
        else:
            r = rules[members[0]]
            score += (f"\n  + {sql_comment(f'rule: {r.text}')} CASE WHEN {formula(r.formula)} "
                      f"THEN {float_literal(r.weight)} ELSE {zero} END")
    fire_cols = []
    for j, r in enumerate(rules):
        fires = f"{term_value(r)} <> {zero}" if isinstance(r, LinearTerm) else formula(r.formula)
        fire_cols.append((f"rule_{j + 1}", f"CASE WHEN {fires} THEN 1 ELSE 0 END"))
    cols = [(user, q("_u"))] + [(value_name[c], q(f"_v{c}")) for c in sorted(value_expr)]
    cols.append(("score", score))
    cols.extend(fire_cols)
    if include_literals:
        cols.extend((literals.names[i], f"CASE WHEN {literal(i)} THEN 1 ELSE 0 END") for i in lit_columns)
    _unique([n for n, _ in cols], "values, score, rules and literals")
    select = ", ".join(f"{expr} AS {q(name)}" for name, expr in cols)
    return f"{_with(ctes, query.inline)}\nSELECT {select}\nFROM {q('_values')}\nORDER BY {q('_u')}"
