"""The scorecard as the audit tools read it: a user's band on a card, a card's band edges as literals.

A card's band edges are the thresholds of the literals that its band rules
read (``exp.rules`` is ``scorecard.to_rules()``: one rule per band, each a
range of the card's own literals); :func:`edge_literal` finds the literal
that is one edge, so a what-if move of that literal moves the edge.
:func:`value_text` writes a statistic's value the one way
(:func:`rudi_explain.rules.values.format_value`).
"""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

import numpy as np

from rudi_explain.exceptions import InputError, InputTypeError
from rudi_explain.rules.formula import format_threshold, formula_literals
from rudi_explain.rules.ruleset import LinearTerm
from rudi_explain.rules.scorecard_cards import UNDEFINED, Card
from rudi_explain.rules.scorecard_fit import DEFINED_THRESHOLD
from rudi_explain.rules.values import format_value, percent_text

if TYPE_CHECKING:
    from rudi_explain.explanation import Explanation

__all__ = ["value_text", "output_kind", "output_unit", "input_text", "input_scale", "read_value", "band_label",
           "card_on", "resolve_card", "card_literals", "edge_literal", "edge_neighbours"]

#: Relative tolerance within which a given edge value names a card's edge (a value typed from its text).
EDGE_MATCH = 1e-9


def value_text(literals: Any, column: int, value: Any, exact: bool = False) -> str:
    """Statistic output ``column``'s ``value`` written the one way (a share as a percent, a count whole).

    ``exact`` writes the very number (a threshold) instead of 3 significant digits; None and NaN read
    "undefined". A table saved before kinds and units writes plain values.
    """
    return format_value(np.nan if value is None else float(value), output_kind(literals, column),
                        output_unit(literals, column), exact=exact)


def output_kind(literals: Any, column: int) -> str:
    """Statistic output ``column``'s kind ("share", "count", ...); "value" for a table saved before kinds."""
    kinds = getattr(literals, "output_kind", None)
    return str(kinds[column]) if kinds is not None else "value"


def output_unit(literals: Any, column: int) -> str:
    """Statistic output ``column``'s unit ("EUR"); "" where it has none or the table predates units."""
    units = getattr(literals, "output_unit", None)
    return str(units[column]) if units is not None else ""


def input_scale(literals: Any, column: int) -> int:
    """What a value is multiplied by to be typed the way the card writes it: 100 for a share, else 1."""
    return 100 if output_kind(literals, column) == "share" else 1


def input_text(literals: Any, column: int, value: Any) -> str:
    """The exact number a reader types for ``value`` of output ``column``: a share in percent, no unit.

    ``input_text`` then :func:`read_value` gives ``value`` back exactly (0.108 -> "10.8" -> 0.108).
    """
    x = float(value)
    if output_kind(literals, column) != "share" or not math.isfinite(x):
        return format_threshold(x)  # as code writes a threshold: exact, no exponent unless huge
    if abs(x) >= 1e19:  # the "is defined" threshold, -1.8e308: exact, and not 311 digits long
        return str((Decimal(repr(x)) * 100).normalize())
    return percent_text(str(np.format_float_positional(x, unique=True, trim="-"))).replace(",", "")


def read_value(literals: Any, column: int, text: Any) -> float:
    """A value of output ``column`` typed the way its card writes it, as the raw number code takes.

    A share is typed in percent ("25" and "25%" are 0.25); other values in their unit, which may
    follow the number ("1,200 EUR"). Thousands separators are ignored. The percent is divided
    exactly (in decimal), so "10.8" reads as the float 0.108.

    Raises
    ------
    InputError
        Not a number.
    """
    raw = str(text).strip()
    s = raw
    unit = output_unit(literals, column)
    share = output_kind(literals, column) == "share"
    if share:
        s = s.removesuffix("%").rstrip()
    elif unit and s.endswith(unit):
        s = s[: -len(unit)].rstrip()
    s = s.replace(",", "").replace("\u2009", "").replace(" ", "")
    try:
        d = Decimal(s)
    except InvalidOperation:
        d = Decimal("NaN")
    x = float(d / 100) if share and d.is_finite() else float(d)
    if not s or not math.isfinite(x):  # 1e999 too: a finite decimal past the floats
        how = "a percent (25 or 25% for 25%)" if share else f"a number{f' in {unit}' if unit else ''}"
        raise InputError(f"type {how}, got {raw!r}")
    return x


def band_label(card: Card, index: int) -> str:
    """The words of band ``index`` of ``card`` (:data:`UNDEFINED` for the undefined band)."""
    if index == UNDEFINED:
        return card.undefined_label()
    return card.band_labels()[int(index)]


def card_on(scorecard: Any, column: int) -> Card | None:
    """The card that reads statistic output ``column``; None where none does (or there is no scorecard)."""
    if scorecard is None:
        return None
    for card in scorecard.cards:
        if card.column == int(column):
            return card
    return None


def resolve_card(exp: Explanation, card: Any) -> int:
    """The index into ``exp.scorecard.cards`` of a card: an index, or its statistic output named in text.

    The text may be the card's name (its output in words), the output's name or
    pipeline notation, or its statistic's text.

    Raises
    ------
    InputError
        No scorecard, no such card.
    """
    sc = exp.scorecard
    if sc is None:
        raise InputError("this explanation has no scorecard (its rules are no sum: a rule list): it has no cards")
    n = len(sc.cards)
    if isinstance(card, (bool, np.bool_)):
        raise InputTypeError(f"a card is its index or its statistic's text, got {card!r}")
    if isinstance(card, (int, np.integer)):
        if not 0 <= int(card) < n:
            raise InputError(f"card {int(card)} does not exist: the scorecard has {n} cards (0 to {n - 1})")
        return int(card)
    if isinstance(card, Card):
        for k, c in enumerate(sc.cards):
            if c.column == card.column:
                return k
        raise InputError(f"the card {card.name!r} is not one of this scorecard's")
    if not isinstance(card, str):
        raise InputTypeError(f"a card is its index or its statistic's text, got {type(card).__name__}")
    text = card.strip()
    L = exp.literals
    stats = L.statistics
    for k, c in enumerate(sc.cards):
        col = c.column
        if text in (c.name, L.output_names[col], L.output_descriptions[col], L.pipeline_text(col)) or (
                stats is not None and text == str(stats[int(L.output_statistic[col])])):
            return k
    names = "; ".join(f"{k}: {c.name}" for k, c in enumerate(sc.cards[:8]))
    raise InputError(f"no card reads {card!r}: pass a card's index or its statistic's text ({names})")


def card_literals(rules: Any, literals: Any) -> dict[int, set[int]]:
    """Per statistic output: the literals read by the rules over that output alone (its card's band rules)."""
    out: dict[int, set[int]] = {}
    for rule in rules:  # a loop over rules, not users
        if isinstance(rule, LinearTerm) or not hasattr(rule, "formula"):
            continue
        lits = {lit.index for lit in formula_literals(rule.formula)}
        cols = {int(literals.column[i]) for i in lits}
        if len(cols) == 1:
            out.setdefault(cols.pop(), set()).update(lits)
    return out


def edge_literal(exp: Explanation, card: Any, edge: Any) -> int:
    """The literal of ``exp.literals`` that is band edge ``edge`` of ``card``: moving it moves the edge.

    Parameters
    ----------
    exp : Explanation
    card : int or str
        See :func:`resolve_card`.
    edge : float
        The edge's current value (as the card writes it: a share as a fraction, 0.05 for "5%").

    Raises
    ------
    InputError
        A linear card (no edges), or no edge at that value (the message lists the card's edges).
    """
    k = resolve_card(exp, card)
    sc = exp.scorecard
    assert sc is not None  # resolve_card says so otherwise
    c = sc.cards[k]
    if c.linear is not None:
        raise InputError(f"card {c.name!r} is linear ({c.linear_text()}): it has no band edge to move")
    if not c.edges:
        raise InputError(f"card {c.name!r} has one band: it has no band edge to move")
    try:
        e = float(edge)
    except (TypeError, ValueError):
        raise InputError(f"a band edge is a number (the edge's value now), got {edge!r}") from None
    edges = np.asarray(c.edges, dtype=np.float64)
    near = np.flatnonzero(np.isclose(edges, e, rtol=EDGE_MATCH, atol=0.0)) if math.isfinite(e) \
        else np.zeros(0, dtype=np.int64)
    if not len(near):
        listed = ", ".join(format_value(x, c.kind, c.unit, exact=True) for x in edges)
        raise InputError(f"card {c.name!r} has no band edge at {format_value(e, c.kind, c.unit, exact=True)}; "
                         f"its edges are {listed}")
    t = float(edges[near[0]])
    L = exp.literals
    mine = card_literals(exp.rules, L).get(c.column, set())
    at = sorted(i for i in mine if float(L.thresholds[i]) == t)
    if not at:  # a scorecard read off rules that lost it: cannot happen for exp.rules = scorecard.to_rules()
        raise InputError(f"no literal of the rules is the edge {format_value(t, c.kind, c.unit, exact=True)} "
                         f"of card {c.name!r}")
    return at[0]


def edge_neighbours(exp: Explanation, i: int) -> tuple[Card, float, float] | None:
    """Where literal ``i`` is a band edge of a card: the card and its neighbouring edges (±inf at the ends).

    None where literal ``i`` is no card's edge (it is read only by interaction rules, or by none).
    """
    L = exp.literals
    c = int(L.column[i])
    card = card_on(exp.scorecard, c)
    if card is None or card.linear is not None or i not in card_literals(exp.rules, L).get(c, set()):
        return None
    t = float(L.thresholds[i])
    if t == DEFINED_THRESHOLD or t not in card.edges:
        return None
    edges = list(card.edges)
    j = edges.index(t)
    lo = edges[j - 1] if j > 0 else -math.inf
    hi = edges[j + 1] if j + 1 < len(edges) else math.inf
    return card, lo, hi
