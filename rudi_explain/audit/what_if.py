"""What-if thresholds: move one literal's threshold and see what the explanation becomes.

:func:`moved_threshold` (``exp.with_threshold(literal, value)``) returns a new
:class:`~rudi_explain.explanation.Explanation` in which one literal reads
``output > value``: its truth column, the rules that use it (their text,
coverage and scores), the held-out fidelity and the fidelity curve are
recomputed; the statistics' values, the teacher and the split are shared and
the original explanation is untouched. :func:`what_if` gives the same figures
as a small JSON-ready dict, for live feedback while a threshold is dragged.

Only the threshold moves: the rules keep their literals and weights (they
are not refitted), so a moved threshold can leave a rule that never fires
(an interval whose ends crossed); :func:`what_if` says so.

A band edge of a scorecard card is a literal too (the one its band rules
read): name it as ``(card, edge)``, the card's index or statistic text and
the edge's value now, or by the literal itself. Moving it moves the edge
and only the card: an interaction rule that reads the same literal keeps
its old threshold, on a copy of the literal added to the table (so it fires
for the same users as before); the band order must stay valid, so an edge
cannot move onto or past its neighbour. A linear card has no edge to move.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import weakref
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from rudi_explain import metrics
from rudi_explain.audit.cards import edge_literal, edge_neighbours, resolve_card, value_text
from rudi_explain.audit.jsonable import json_float as _num
from rudi_explain.exceptions import InputError, InputTypeError
from rudi_explain.explanation.result import FittedState, read_scorecard, score_series
from rudi_explain.rules.formula import And, Lit, Or, format_threshold, formula_literals
from rudi_explain.rules.ruleset import LinearTerm
from rudi_explain.rules.values import format_value

if TYPE_CHECKING:
    from rudi_explain.explanation import Explanation

__all__ = ["moved_threshold", "what_if", "resolve_literal", "rules_using"]


def resolve_literal(exp: Explanation, literal: Any) -> int:
    """The index of a literal of ``exp.literals``, from an index, a name or a statistic output.

    Parameters
    ----------
    exp : Explanation
    literal : int, Lit, str or tuple
        An index into ``exp.literals``; a literal's name (``exp.literals.names``,
        "words > t") or its pipeline notation ("Select(amount) | Count > 14");
        or a statistic output (the statistic's text, its output name or its
        words), which names a literal when the rules use exactly one literal
        on that output (otherwise the message lists them); or a card's band
        edge ``(card, edge)``: the card's index in ``exp.scorecard.cards`` or
        its statistic's text, and the edge's value now
        (:func:`rudi_explain.audit.cards.edge_literal`).

    Raises
    ------
    ValueError
        No such literal, or the text names several (the message lists them).
    TypeError
        Not an int, Lit or str.
    """
    L = exp.literals
    n = L.n_literals
    if isinstance(literal, Lit):
        literal = literal.index
    if isinstance(literal, tuple):
        if len(literal) != 2:
            raise InputTypeError(f"a band edge is (card, edge value), got {literal!r}")
        return edge_literal(exp, literal[0], literal[1])
    if isinstance(literal, (bool, np.bool_)):
        raise InputTypeError(f"a literal is an index, a name or a statistic output, got {literal!r}")
    if isinstance(literal, (int, np.integer)):
        i = int(literal)
        if not 0 <= i < n:
            raise InputError(f"literal {i} does not exist: the explanation has {n} literals (0 to {n - 1})")
        return i
    if not isinstance(literal, str):
        raise InputTypeError(f"a literal is an index, a name or a statistic output, got {type(literal).__name__}")
    text = literal.strip()
    used = rules_using(exp.rules, n)
    in_rules = set(np.flatnonzero(used.any(axis=1)).tolist())
    notation = [f"{L.pipeline_text(int(c))} > {t}" for c, t in zip(L.column, L.threshold_text)]
    named = [i for i in range(n) if text in (L.names[i], notation[i])]
    if named:  # a name used twice (a refined copy of a literal): the one the rules use
        return min(named, key=lambda i: (i not in in_rules, i))
    stats = L.statistics
    outputs = [c for c in range(L.n_outputs) if text in (L.output_names[c], L.output_descriptions[c],
                                                         L.pipeline_text(c))
               or (stats is not None and text == str(stats[int(L.output_statistic[c])]))]
    if not outputs:
        raise InputError(f"no literal or statistic output is called {literal!r}: pass a literal's index, its name "
                         "(exp.literals.names) or a statistic's text")
    on = [i for i in range(n) if int(L.column[i]) in outputs]
    ruled = [i for i in on if i in in_rules]
    pick = ruled if ruled else on
    if len(pick) == 1:
        return pick[0]
    sc = exp.scorecard
    card = next((c for c in sc.cards if c.column in outputs), None) if sc is not None else None
    if card is not None and card.edges:
        edges = ", ".join(format_value(e, card.kind, card.unit, exact=True) for e in card.edges)
        raise InputError(f"{literal!r} is a card with {len(card.edges)} band edge{'s' if len(card.edges) > 1 else ''}"
                         f" ({edges}); pass one as ({resolve_card(exp, literal)}, edge value now), e.g. "
                         f"({resolve_card(exp, literal)}, {card.edges[0]!r}), or a literal by index or name")
    listed = "; ".join(f"{i}: {L.names[i]}" for i in pick[:8])
    raise InputError(f"{literal!r} has {len(pick)} literals{' the rules use' if ruled else ''}; pass one by "
                     f"index or name ({listed}{'; ...' if len(pick) > 8 else ''})")


def rules_using(rules: Any, n_literals: int) -> np.ndarray:
    """Bool matrix (n_literals, n_rules): whether rule k reads literal i."""
    out = np.zeros((n_literals, len(rules)), dtype=bool)
    for k, rule in enumerate(rules):  # a loop over rules, not users
        formula = None if isinstance(rule, LinearTerm) else getattr(rule, "formula", getattr(rule, "antecedent", None))
        if formula is not None:
            for lit in formula_literals(formula):
                out[lit.index, k] = True
    return out


def _finite(exp: Explanation, i: int, value: Any) -> float:
    """``value`` as a finite float, or a ValueError naming the literal and the value."""
    name = exp.literals.names[i]
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(f"the threshold of literal {i} ({name}) must be a number, got {value!r}") from None
    if isinstance(value, (bool, np.bool_)) or not math.isfinite(v):
        raise InputError(f"the threshold of literal {i} ({name}) must be a finite number, got {value!r}")
    return v


def _band_edge(exp: Explanation, i: int, v: float) -> dict | None:
    """Where literal ``i`` is a card's band edge: the card and its bands with the edge at ``v``; else None.

    Raises
    ------
    InputError
        ``v`` is on or past a neighbouring edge (the band order would not be valid): the message names both.
    """
    found = edge_neighbours(exp, i)
    if found is None:
        return None
    card, lo, hi = found
    old = float(exp.literals.thresholds[i])

    def text(x: float) -> str:
        return format_value(x, card.kind, card.unit, exact=True)

    if not lo < v < hi:
        nb = lo if v <= lo else hi
        raise InputError(f"the band edge {text(old)} of card {card.name!r} cannot move to {text(v)}: that is on or "
                         f"past its neighbouring edge {text(nb)} (the bands must stay in order); move it to a "
                         f"value strictly between {text(lo) if math.isfinite(lo) else 'minus infinity'} and "
                         f"{text(hi) if math.isfinite(hi) else 'infinity'}, or move {text(nb)} first")
    edges = tuple(sorted(v if e == old else e for e in card.edges))
    moved = card.with_(edges=edges)
    # only the card moves: an interaction rule that reads the literal keeps its own copy at the old threshold
    kept = [str(exp.rules[k].text) for k in _interactions_reading(exp.rules, exp.literals, i)]
    return {"card": card.name, "from": text(old), "to": text(v), "bands": card.band_labels(),
            "bands_moved": moved.band_labels(), "interactions_kept": kept, "interactions_moved": []}


def _interactions_reading(rules: Any, literals: Any, i: int) -> list[int]:
    """The rules (indices) that read literal ``i`` beside literals of another output: interaction rules."""
    out = []
    for k, r in enumerate(rules):  # a loop over rules, not users
        if isinstance(r, LinearTerm) or not hasattr(r, "formula"):
            continue
        lits = formula_literals(r.formula)
        if i in {x.index for x in lits} and len({int(literals.column[x.index]) for x in lits}) > 1:
            out.append(k)
    return out


def _relabel(f: Any, i: int, j: int) -> Any:
    """Formula ``f`` reading literal ``j`` wherever it read literal ``i``."""
    if isinstance(f, Lit):
        return Lit(j, f.negated) if f.index == i else f
    if isinstance(f, (And, Or)):
        return type(f)(tuple(_relabel(c, i, j) for c in f.children))
    return f


def _split_edge(literals: Any, rules: Any, i: int) -> tuple[Any, Any] | None:
    """Where interaction rules read band edge literal ``i``: a literal table with a copy of ``i`` appended
    (index ``j = n_literals``, the same output and threshold), and a function giving a rule set whose
    interaction rules read ``j`` instead of ``i`` (the card's band rules keep ``i``). None: nothing to split."""
    if not _interactions_reading(rules, literals, i):
        return None
    L = literals
    j = L.n_literals
    table = L.extended([L.column[i]], [L.thresholds[i]])

    def split(rs: Any) -> Any:
        if rs is None:
            return None
        out = copy.copy(rs)
        moved = set(_interactions_reading(rs, L, i))
        out.rules = [dataclasses.replace(r, formula=_relabel(r.formula, i, j)) if k in moved else r
                     for k, r in enumerate(rs.rules)]
        return out

    return table, split


def _with_thresholds(literals: Any, thresholds: np.ndarray) -> Any:
    """The literal table with new thresholds: the same outputs and metadata, new names and text."""
    L = literals
    return type(L)(
        L.column.copy(), thresholds, L.output_names, L.output_descriptions, L.output_statistic, L.output_index,
        L.output_undefined, statistics=L.statistics, vocabularies=L.vocabularies, output_kind=L.output_kind,
        output_undefined_words=L.output_undefined_words, output_min=L.output_min, output_unit=L.output_unit,
    )


def _rebind(rules: Any, literals: Any) -> Any:
    """The same rules (formulas, weights, order, intercept) over another literal table.

    Works for a rule list too (whose constructor differs from RuleSet's), so
    it copies the object rather than building a new one.
    """
    if rules is None:
        return None
    info = literals.literal_info()
    out = copy.copy(rules)
    out.literals, out.info = literals, info
    out.rules = [dataclasses.replace(r, info=info)
                 if dataclasses.is_dataclass(r) and not isinstance(r, type) and hasattr(r, "info") else r
                 for r in rules.rules]
    return out


def _column(state: FittedState, i: int, value: float) -> np.ndarray:
    """Literal ``i``'s truth with threshold ``value``, for every user (false where undefined)."""
    with np.errstate(invalid="ignore"):
        return state.values[:, int(state.literals.column[i])] > value


def moved_threshold(exp: Explanation, literal: Any, value: Any) -> Explanation:
    """A new explanation in which one literal's threshold is ``value`` (``exp.with_threshold``).

    Parameters
    ----------
    exp : Explanation
    literal : int, Lit or str
        See :func:`resolve_literal`.
    value : float
        The new threshold, used exactly as given (not rounded): the raw value, as the statistic computes
        it, so a share is a fraction (0.25 for 25%). The widget's what-if box is the one that takes a
        value the way the card writes it ("25" or "25%"), :func:`rudi_explain.audit.cards.read_value`.

    Returns
    -------
    Explanation
        Sharing the data, statistics' values, teacher scores and split; with
        the new literal table, the rules (and every point of the pruning
        path) over it, their firings and scores. ``report()`` and
        ``fidelity_curve`` are computed afresh from these; the curve's
        validation fidelity is NaN (the validation users are not kept, so it
        cannot be recomputed). ``params["moved_thresholds"]`` lists every move
        (literal, from, to). ``exp`` itself is unchanged.

    Raises
    ------
    ValueError
        No such literal, or a value that is not a finite number.
    """
    state = exp.ready_result("exp.with_threshold()")
    i = resolve_literal(exp, literal)
    v = _finite(exp, i, value)
    edge = _band_edge(exp, i, v)  # a band edge stays between its neighbours
    L = state.literals
    Z = state.literal_matrix
    split = _split_edge(L, state.rules, i) if edge is not None else None
    if split is None:
        def same(rs: Any) -> Any:
            return rs
    else:  # only the card moves: its interaction rules read a copy of the literal, kept where it was
        L, same = split
        Z = np.column_stack([Z, Z[:, i]])
    thresholds = L.thresholds.copy()
    old = float(thresholds[i])
    thresholds[i] = v
    new = _with_thresholds(L, thresholds)
    Z = Z.copy()
    Z[:, i] = _column(state, i, v)
    pruning = state.pruning
    if pruning is not None:
        pruning = dataclasses.replace(
            pruning, unpruned=_rebind(same(pruning.unpruned), new),
            rule_sets=[_rebind(same(rs), new) for rs in pruning.rule_sets],
            fidelity_valid=np.full(len(pruning.fidelity_valid), np.nan))
    moved = _with_rules(
        state, _rebind(same(state.rules), new), literals=new, literal_matrix=Z,
        unpruned_rules=_rebind(same(state.unpruned_rules), new), pruning=pruning,
        moved_thresholds=(*state.moved_thresholds, {"literal": i, "from": old, "to": v}))
    return exp.with_result(moved)


def _with_rules(state: FittedState, rules: Any, **changes: Any) -> FittedState:
    """``state.with_rules``; a set with linear terms (a scorecard's linear cards) reads values, not literals."""
    if not getattr(rules, "reads_values", False):
        return state.with_rules(rules, **changes)
    M = rules.matrix(state.values)
    y = state.teacher_scores
    return dataclasses.replace(
        state, rules=rules, fires=rules.fires(M), student_scores=score_series(rules.score(M), y.index, "student"),
        scorecard=read_scorecard(rules, state.values, y.to_numpy(), state.is_test), **changes)


class _Swapped:
    """A literal matrix with column ``i`` replaced, without copying it: what a formula reads (``Z[:, j]``)."""

    def __init__(self, Z: np.ndarray, i: int, column: np.ndarray) -> None:
        self.Z, self.i, self.column, self.shape = Z, i, column, Z.shape

    def __getitem__(self, key: tuple) -> np.ndarray:
        _, j = key
        return self.column if j == self.i else self.Z[:, j]


def _rescore(state: FittedState, fires_new: dict, i: int, column: np.ndarray, moved_rules: Any) -> np.ndarray:
    """Rule scores with the rules in ``fires_new`` firing anew; the others' firings are the cached ones.

    Only the users for whom one of those rules starts or stops firing are scored again, afresh (by the
    moved rules themselves, so to the bit as a fresh computation: fidelity reads ties); the others keep
    their score. A set with linear terms reads values; a rule list (the first rule that fires decides)
    reads the literal matrix as a set does.
    """
    s = state.student_scores.to_numpy(dtype=np.float64).copy()
    changed = np.zeros(len(s), dtype=bool)
    for k, now in fires_new.items():  # a loop over the rules that read the literal, vectorized over users
        changed |= now != state.fires[:, k]
    rows = np.flatnonzero(changed)
    if not rows.size:
        return s
    if getattr(moved_rules, "reads_values", False):
        s[rows] = moved_rules.score(moved_rules.matrix(state.values[rows]))
    else:
        Z = state.literal_matrix[rows]
        table = getattr(moved_rules, "literals", None)
        # a band edge split off its interaction rules' copy (_split_edge): the copy keeps the old column
        Z = np.column_stack([Z, Z[:, i]]) if table is not None and table.n_literals > Z.shape[1] else Z.copy()
        Z[:, i] = column[rows]
        s[rows] = moved_rules.score(Z)
    return s


#: fidelities of each result on its training and held-out users (a dragged slider asks on every step)
_FIDELITY: weakref.WeakKeyDictionary[FittedState, dict[bytes, float]] = weakref.WeakKeyDictionary()


def _fidelity_now(state: FittedState, who: np.ndarray) -> float:
    """The result's fidelity on ``who``, computed once per result (a result never changes)."""
    cache = _FIDELITY.setdefault(state, {})
    key = who.tobytes()
    if key not in cache:
        y = state.teacher_scores.to_numpy(dtype=np.float64)[who]
        cache[key] = metrics.fidelity(y, state.student_scores.to_numpy(dtype=np.float64)[who])
    return cache[key]


def what_if(exp: Explanation, literal: Any, value: Any) -> dict:
    """Live feedback for a moved threshold: coverage of the rules that use it and held-out fidelity.

    Computed over all users at once (one truth column, the rule scores,
    two fidelities), without building a new explanation: fast enough to run
    on every step of a dragged slider.

    Parameters
    ----------
    exp : Explanation
    literal : int, Lit or str
        See :func:`resolve_literal`.
    value : float
        The proposed threshold.

    Returns
    -------
    dict
        JSON-ready: ``literal``, ``words``, ``threshold`` (now) and ``value``
        (proposed) with their text as code takes it (``threshold_text``,
        ``value_text``) and for people (``threshold_words``, ``value_words``:
        a share as a percent), ``band_edge`` (where the literal is a card's
        band edge: ``card``, ``from``, ``to``, its ``bands`` now and
        ``bands_moved``, ``interactions_kept``, the interaction rules that
        read the same literal and keep its old threshold (only the card
        moves), and ``interactions_moved``, now always empty, kept for older
        pages; else None), ``share_above`` (training and held-out
        users, now and proposed), ``rules`` (one entry per rule using the
        literal: its text now and moved, weight, coverage on training and
        held-out users now and moved, ``can_fire``), ``fidelity_test`` and
        ``fidelity_test_moved`` (held out), ``fidelity_train`` and
        ``fidelity_train_moved``, ``n_changed`` (users whose rule score
        changes), ``warnings``. The fidelities now are computed once per
        explanation; the moved ones, exactly, on every call (on a million
        users the training one is most of the time).
    """
    state = exp.ready_result("what_if()")
    i = resolve_literal(exp, literal)
    v = _finite(exp, i, value)
    band_edge = _band_edge(exp, i, v)
    L = state.literals
    c = int(L.column[i])
    Z = state.literal_matrix
    new_column = _column(state, i, v)
    using = np.flatnonzero(rules_using(state.rules, L.n_literals)[i])
    split = _split_edge(L, state.rules, i) if band_edge is not None else None
    table, same = split if split is not None else (L, lambda rs: rs)
    if split is not None:  # only the card moves: the interaction rules keep the literal where it was
        kept = set(_interactions_reading(state.rules, L, i))
        using = np.array([k for k in using if int(k) not in kept], dtype=np.int64)
    thresholds = table.thresholds.copy()
    thresholds[i] = v
    moved_table = _with_thresholds(table, thresholds)
    moved_info = moved_table.literal_info()
    s_now = state.student_scores.to_numpy(dtype=np.float64)
    # a rule reads the literal matrix by column only: the swapped column stands in for a copy of it
    fires_new = {int(k): cast(Any, state.rules[int(k)]).fires(_Swapped(Z, i, new_column)) for k in using}
    s_new = _rescore(state, fires_new, i, new_column, _rebind(same(state.rules), moved_table))
    y = state.teacher_scores.to_numpy(dtype=np.float64)
    test, train = state.is_test, ~state.is_test
    n_of = {id(train): int(train.sum()), id(test): int(test.sum())}

    def share(col: np.ndarray, who: np.ndarray) -> float | None:
        n = n_of[id(who)]
        return _num(np.count_nonzero(col & who) / n, 4) if n else None

    rules, warnings = [], []
    for k in using:  # a loop over the rules that read this literal
        rule = cast(Any, state.rules[int(k)])
        now = state.fires[:, k]
        after = fires_new[int(k)]
        moved = dataclasses.replace(rule, info=moved_info)
        can_fire = bool(after.any())
        if not can_fire:
            warnings.append(f"rule {k} fires for no user at this threshold")
        rules.append({
            "index": int(k), "text": str(rule.text), "text_moved": str(moved.text), "weight": _num(rule.weight),
            "coverage_train": share(now, train), "coverage_train_moved": share(after, train),
            "coverage_test": share(now, test), "coverage_test_moved": share(after, test),
            "n_fires": int(now.sum()), "n_fires_moved": int(after.sum()), "can_fire": can_fire,
        })
    if not len(using):
        warnings.append("no rule uses this literal: moving it changes no score")
    return {
        "literal": i,
        "name": L.names[i],
        "words": L.output_descriptions[c],
        "threshold": _num(L.thresholds[i], 17),
        "threshold_text": L.threshold_text[i],
        "value": _num(v, 17),
        "value_text": format_threshold(v),  # the number as code takes it (exp.with_threshold(i, 0.05))
        "threshold_words": value_text(L, c, float(L.thresholds[i]), exact=True),  # for people ("5%")
        "value_words": value_text(L, c, v, exact=True),
        "band_edge": band_edge,
        "share_above": {"train": share(Z[:, i], train), "train_moved": share(new_column, train),
                        "test": share(Z[:, i], test), "test_moved": share(new_column, test)},
        "rules": rules,
        "fidelity_test": _num(_fidelity_now(state, test), 6),
        "fidelity_test_moved": _num(metrics.fidelity(y[test], s_new[test]), 6),
        "fidelity_train": _num(_fidelity_now(state, train), 6),
        "fidelity_train_moved": _num(metrics.fidelity(y[train], s_new[train]), 6),
        "n_changed": int((s_new != s_now).sum()),
        "warnings": warnings,
    }
