"""Formulas over literals: AND/OR trees, what each literal means, simplification and rendering.

Negation lives on the literals (the formulas are in negation normal form),
which is what a GS-NLN reads off: its input layer holds every literal and its
complement. Scoring is numpy only.
"""

from __future__ import annotations

from collections.abc import Sequence as SequenceT
from dataclasses import dataclass
from typing import Any

import numpy as np

from rudi_explain.exceptions import InputError, StateError
from rudi_explain.rules.values import grouped, percent_text, points_text

__all__ = ["Lit", "And", "Or", "Const", "TRUE", "FALSE", "Formula", "LiteralInfo", "literal_info", "simplify",
           "implies", "render", "format_threshold", "format_weight", "formula_literals", "evaluate_formula"]



# --------------------------------------------------------------------------
# formula trees


@dataclass(frozen=True)
class Lit:
    """Literal ``index`` of the literal table, or its complement if ``negated``."""

    index: int
    negated: bool = False

    def __invert__(self) -> Lit:
        return Lit(self.index, not self.negated)


@dataclass(frozen=True)
class And:
    """Conjunction of its children (true for an empty tuple)."""

    children: tuple


@dataclass(frozen=True)
class Or:
    """Disjunction of its children (false for an empty tuple)."""

    children: tuple


@dataclass(frozen=True)
class Const:
    """A constant truth value; only appears before simplification."""

    value: bool


TRUE = Const(True)
FALSE = Const(False)

Formula = Lit | And | Or | Const


def _sort_key(f: Formula) -> tuple:
    if isinstance(f, Const):
        return (0, int(f.value))
    if isinstance(f, Lit):
        return (1, f.index, int(f.negated))
    kind = 2 if isinstance(f, And) else 3
    return (kind, tuple(_sort_key(c) for c in f.children))


def formula_literals(f: Formula) -> list[Lit]:
    """The literals of a formula, left to right, repeats kept."""
    if isinstance(f, Lit):
        return [f]
    if isinstance(f, Const):
        return []
    out: list[Lit] = []
    for c in f.children:
        out.extend(formula_literals(c))
    return out


def evaluate_formula(f: Formula, Z: np.ndarray) -> np.ndarray:
    """Truth of ``f`` for every row of the boolean literal matrix ``Z``.

    Parameters
    ----------
    f : Formula
    Z : ndarray of bool, shape (n_users, n_literals)

    Returns
    -------
    ndarray of bool, shape (n_users,)
    """
    if isinstance(f, Lit):
        col = Z[:, f.index]
        return ~col if f.negated else col.copy()
    if isinstance(f, Const):
        return np.full(Z.shape[0], f.value, dtype=bool)
    parts = [evaluate_formula(c, Z) for c in f.children]
    if isinstance(f, And):
        return np.logical_and.reduce(parts) if parts else np.ones(Z.shape[0], dtype=bool)
    return np.logical_or.reduce(parts) if parts else np.zeros(Z.shape[0], dtype=bool)


def formula_to_json(f: Formula) -> Any:
    if isinstance(f, Lit):
        return {"lit": f.index, "neg": f.negated}
    if isinstance(f, Const):
        return {"const": f.value}
    key = "and" if isinstance(f, And) else "or"
    return {key: [formula_to_json(c) for c in f.children]}


def formula_from_json(d: Any) -> Formula:
    if not isinstance(d, dict) or len(d) < 1:
        raise InputError(f"not a formula: {d!r}")
    if "lit" in d:
        return Lit(int(d["lit"]), bool(d.get("neg", False)))
    if "const" in d:
        return Const(bool(d["const"]))
    if "and" in d:
        return And(tuple(formula_from_json(c) for c in d["and"]))
    if "or" in d:
        return Or(tuple(formula_from_json(c) for c in d["or"]))
    raise InputError(f"not a formula: {d!r}")


# --------------------------------------------------------------------------
# what the simplifier and the renderer know about each literal


@dataclass
class LiteralInfo:
    """Per-literal facts the rules need, in one place.

    Built from a :class:`~rudi_explain.literals.Literals` table (which knows
    the statistic output and threshold behind each literal) or from plain
    names (then every literal stands alone and none is merged with another).

    Attributes
    ----------
    names : list of str, length n_literals
        Text of each literal, e.g. ``"count of card_type = debit > 14"``.
    column : ndarray of int, shape (n_literals,)
        Which statistic output a literal thresholds; -1 when unknown. Literals
        of one column are merged by the simplifier.
    thresholds : ndarray of float, shape (n_literals,)
        The literal is ``column value > threshold``.
    base : list of str or None
        Text of the column value ("count of card_type = debit"), used to show
        a negated literal as ``<=`` and intervals as ``a < x <= b``.
    undefined : ndarray of bool, shape (n_literals,)
        Whether the value can be undefined (NaN); then a negated literal is
        shown with "or undefined", as it is also true there.
    unit : list of str, optional
        The unit written after a literal's threshold in sentences ("EUR"),
        "" where the value has none.
    """

    names: list
    column: np.ndarray
    thresholds: np.ndarray
    base: list | None = None
    undefined: np.ndarray | None = None
    threshold_text: list | None = None
    kind: list | None = None
    undefined_words: list | None = None
    pipeline: list | None = None
    minimum: np.ndarray | None = None
    unit: list | None = None

    @classmethod
    def from_names(cls, names: SequenceT[str]) -> LiteralInfo:
        n = len(names)
        return cls(
            names=[str(x) for x in names],
            column=np.full(n, -1, dtype=np.int64),
            thresholds=np.full(n, np.nan),
        )

    @property
    def n_literals(self) -> int:
        return len(self.names)

    @property
    def has_words(self) -> bool:
        """Whether literals can be said as sentences (the literal table gave their kinds)."""
        return self.kind is not None and self.base is not None

    def render_literal(self, lit: Lit) -> str:
        """The literal as the rule uses it: a sentence when kinds are known, else notation."""
        if self.has_words and self.column[lit.index] >= 0:
            return self.sentence(lit)
        return self.notation(lit)

    def notation(self, lit: Lit) -> str:
        """The literal in the pipeline notation: ``words > t``, ``words <= t or undefined``."""
        if not lit.negated:
            return self.names[lit.index]
        if self.base is None or self.column[lit.index] < 0 or np.isnan(self.thresholds[lit.index]):
            return f"NOT {self.names[lit.index]}"
        text = f"{self.base[lit.index]} <= {self._t(lit.index)}"
        if self.undefined is not None and self.undefined[lit.index]:
            text += " or undefined"
        return text

    def sentence(self, lit: Lit) -> str:
        """The literal as an English sentence, built on the statistic output's words.

        "number of events where channel is online is more than 14", "no
        events where channel is online", "share of events with channel = atm
        is at most 12%", "any event has card_type = credit", "total amount
        over events where merchant_category is games is 0" (at most 0, for an
        output no training user has below 0), "total amount is more than 400
        EUR" (with the unit of the column, where it has one). A negated literal
        on an output that some training users lack says who they are and that
        they count as below (the literal holds for them).
        """
        i = lit.index
        words = self._base()[i]
        if np.isnan(self.thresholds[i]):  # no value exceeds NaN (as numpy compares): a constant literal
            return f"{words}: always holds" if lit.negated else f"{words} is more than undefined (never holds)"
        kind = self._kinds()[i]
        t = self._t(i)
        zero = self.thresholds[i] == 0
        if kind == "binary" or (kind == "count" and zero):
            text = _yes_no(words, not lit.negated, kind)
        elif kind == "share":
            pct = percent_text(t)
            text = f"{words} is {'at most' if lit.negated else 'more than'} {pct}%" if not (zero and lit.negated) \
                else f"{words} is 0%"
        elif (defined := self._defined_only(i, lit.negated)) is not None:
            return defined  # the literal only tells users with such events from those without
        elif zero and lit.negated and self.minimum is not None and self.minimum[i] >= 0:
            text = f"{words} is 0"  # never negative: "at most 0" is "is 0" ("total spent on games is 0")
        else:
            text = f"{words} is {'at most' if lit.negated else 'more than'} {grouped(t)}{self._unit(i)}"
        if lit.negated and self.undefined is not None and self.undefined[i]:
            who = self.undefined_words[i] if self.undefined_words is not None and self.undefined_words[i] \
                else "users for whom it is undefined"
            text += f" ({who} count as below)"
        return text

    def _defined_only(self, i: int, negated: bool) -> str | None:
        """Words for a literal every defined training user is above: "any X" / "no X", else None."""
        if self.minimum is None or self.undefined is None or not self.undefined[i] \
                or not self.minimum[i] > self.thresholds[i] or self.undefined_words is None:
            return None
        who = self.undefined_words[i]
        for prefix, yes, no in (("users with no ", "any ", "no "),
                                ("users with fewer than 2 ", "at least 2 ", "fewer than 2 ")):
            if who.startswith(prefix):
                rest = who[len(prefix):]
                return f"{no if negated else yes}{rest}"
        return None

    def render_interval(self, low: Lit, high: Lit) -> str:
        """``low`` is ``x > a``, ``high`` is ``NOT x > b`` with a < b."""
        if self.has_words:
            i, j = low.index, high.index
            words = self._base()[i]
            kind = self._kinds()[i]
            if kind == "share":
                return f"{words} is more than {percent_text(self._t(i))}% and at most {percent_text(self._t(j))}%"
            if kind == "count" and self.thresholds[j] == self.thresholds[i] + 1:
                return f"{words} is exactly {grouped(self._t(j))}"
            return f"{words} is more than {grouped(self._t(i))} and at most {grouped(self._t(j))}{self._unit(i)}"
        return self.notation_interval(low, high)

    def notation_interval(self, low: Lit, high: Lit) -> str:
        return f"{self._t(low.index)} < {self._base()[low.index]} <= {self._t(high.index)}"

    def _unit(self, i: int) -> str:
        """" EUR" after a threshold of literal ``i``, "" without a unit."""
        return f" {self.unit[i]}" if self.unit is not None and self.unit[i] else ""

    def _base(self) -> list:
        """The words of each literal's value; intervals and sentences need them."""
        if self.base is None:
            raise StateError("these literals are plain names: no words for their values")
        return self.base

    def _kinds(self) -> list:
        """The kind of each literal's value; sentences need them."""
        if self.kind is None:
            raise StateError("these literals are plain names: no kinds for their values")
        return self.kind

    def _t(self, i: int) -> str:
        if self.threshold_text is not None:
            return self.threshold_text[i]
        return format_threshold(self.thresholds[i])


def _yes_no(words: str, holds: bool, kind: str) -> str:
    """A 0/1 output, or a count against 0, as "any ..." / "no ..."."""
    for prefix in ("number of ", "count of "):
        if words.startswith(prefix):
            rest = words[len(prefix):]
            return f"any {rest}" if holds else f"no {rest}"
    if words.startswith("whether "):
        rest = words[len("whether "):]
        if rest.startswith("any "):
            return rest if holds else f"no {rest[4:]}"
        return rest if holds else f"not: {rest}"
    if words.startswith("any "):
        return words if holds else f"no {words[4:]}"
    if kind == "count":
        return f"{words} is more than 0" if holds else f"{words} is 0 (none)"
    return f"{words}: yes" if holds else f"{words}: no"


def format_threshold(t: float) -> str:
    """A threshold as people read it: no exponent, and exactly the number used.

    The shortest decimal that reads back as the very same float; thresholds
    are rounded when literals are made (:mod:`rudi_explain.literals`), so
    this is short ("0.34", "750"), never a truncation of the value used.
    """
    t = float(t)
    if np.isnan(t):
        return "nan"
    if np.isinf(t):  # "x > -inf": the value is defined (a scorecard's undefined band, rules/scorecard.py)
        return "inf" if t > 0 else "-inf"
    if abs(t) >= 1e21:  # e.g. the scorecard's "is defined" threshold, -1.8e308: exact, and not 309 digits long
        return repr(t)
    if t == int(t) and abs(t) < 1e15:
        return str(int(t))
    return np.format_float_positional(t, unique=True, trim="-")


def literal_info(literals: Any, n_literals: int | None = None) -> LiteralInfo:
    """Turn a Literals table, a list of names or None into :class:`LiteralInfo`."""
    if isinstance(literals, LiteralInfo):
        return literals
    if literals is None:
        if n_literals is None:
            raise InputError("need the number of literals to name them")
        return LiteralInfo.from_names([f"x{i}" for i in range(n_literals)])
    if hasattr(literals, "literal_info"):
        return literals.literal_info()
    names = list(literals)
    return LiteralInfo.from_names(names)


# --------------------------------------------------------------------------
# simplification


def implies(a: Lit, b: Lit, info: LiteralInfo) -> bool:
    """Whether literal ``a`` being true forces ``b`` true, on any input."""
    if a == b:
        return True
    ca, cb = info.column[a.index], info.column[b.index]
    if ca < 0 or ca != cb or a.negated != b.negated:
        return False
    ta, tb = info.thresholds[a.index], info.thresholds[b.index]
    # x > ta implies x > tb when ta >= tb; (x <= ta or NaN) implies (x <= tb or NaN) when ta <= tb
    return ta >= tb if not a.negated else ta <= tb


def _merge_column(lits: list[Lit], conj: bool, info: LiteralInfo) -> list[Lit] | Const:
    """Merge literals thresholding one column inside an AND (``conj``) or an OR.

    AND keeps the largest ``>`` threshold and the smallest ``<=`` one, and is
    false when they leave no room; OR keeps the smallest ``>`` and the largest
    ``<=`` threshold, and is true when they cover every value. NaN is handled
    by construction: ``x > t`` is false there and ``NOT x > t`` true.
    """
    th = info.thresholds
    pos = [x for x in lits if not x.negated]
    neg = [x for x in lits if x.negated]
    pick = max if conj else min
    pick_neg = min if conj else max
    p = pick(pos, key=lambda x: (th[x.index], x.index)) if pos else None
    q = pick_neg(neg, key=lambda x: (th[x.index], x.index)) if neg else None
    if p is not None and q is not None:
        if conj and th[p.index] >= th[q.index]:
            return FALSE  # x > a and x <= b with a >= b
        if not conj and th[p.index] <= th[q.index]:
            return TRUE  # x > a or x <= b (or NaN) with a <= b covers all
    return [x for x in (p, q) if x is not None]


def simplify(f: Formula, info: LiteralInfo) -> Formula:
    """An equivalent, smaller formula in canonical form.

    Folds constants (A and true = A, A or false = A), flattens nested
    operators of one kind, removes duplicates, turns A and not A into false
    (A or not A into true), merges literals on one statistic output
    (x > 3 and x > 7 = x > 7; or: x > 3), drops children absorbed by a
    sibling (A and (A or B) = A, also through thresholds), and sorts
    children so that equal formulas compare equal.

    Parameters
    ----------
    f : Formula
    info : LiteralInfo

    Returns
    -------
    Formula
        ``TRUE`` or ``FALSE`` for a constant formula.
    """
    if isinstance(f, (Lit, Const)):
        return f
    conj = isinstance(f, And)
    op = And if conj else Or
    kids: list[Formula] = []
    for c in f.children:
        c = simplify(c, info)
        if isinstance(c, op):
            kids.extend(c.children)
        else:
            kids.append(c)
    absorbing, neutral = (FALSE, TRUE) if conj else (TRUE, FALSE)
    if any(c == absorbing for c in kids):
        return absorbing
    kids = [c for c in kids if c != neutral]
    lits = {c for c in kids if isinstance(c, Lit)}
    if any(~x in lits for x in lits):
        return absorbing
    # merge literals of one column
    by_col: dict[int, list[Lit]] = {}
    others: list[Formula] = []
    for c in dict.fromkeys(kids):  # dedupe, keep order
        if isinstance(c, Lit) and info.column[c.index] >= 0:
            by_col.setdefault(int(info.column[c.index]), []).append(c)
        else:
            others.append(c)
    merged_lits: list[Lit] = [c for c in others if isinstance(c, Lit)]
    # The constants are gone (the absorbing one returned, the neutral one dropped): the rest is And / Or.
    subs = [c for c in others if isinstance(c, (And, Or))]
    for group in by_col.values():
        m = _merge_column(group, conj, info)
        if isinstance(m, Const):
            return m
        merged_lits.extend(m)
    # absorption: in an AND, a sub-OR implied by a sibling literal is true;
    # in an OR, a sub-AND implying a sibling literal is redundant.
    kept_subs: list[And | Or] = []
    for s in subs:
        s_lits = [c for c in s.children if isinstance(c, Lit)]
        if conj:
            redundant = any(implies(a, b, info) for a in merged_lits for b in s_lits)
        else:
            redundant = any(implies(b, a, info) for a in merged_lits for b in s_lits)
        if not redundant and s not in kept_subs:
            kept_subs.append(s)
    kids = sorted([*merged_lits, *kept_subs], key=_sort_key)
    if not kids:
        return neutral
    if len(kids) == 1:
        return kids[0]
    return op(tuple(kids))


# --------------------------------------------------------------------------
# rendering


def render(f: Formula, info: LiteralInfo, top: bool = True, words: bool = True) -> str:
    """Readable text of a formula; sub-formulas in parentheses.

    ``words=False`` gives the pipeline notation (``x > 3``) instead of
    sentences, for hover text and tables.
    """
    if isinstance(f, Const):
        return "always" if f.value else "never"
    if isinstance(f, Lit):
        return info.render_literal(f) if words else info.notation(f)
    conj = isinstance(f, And)
    parts: list[str] = []
    children = list(f.children)
    if conj and info.base is not None:
        # show x > a AND x <= b on one column as a < x <= b
        cols: dict[int, list[Lit]] = {}
        for c in children:
            if isinstance(c, Lit) and info.column[c.index] >= 0:
                cols.setdefault(int(info.column[c.index]), []).append(c)
        for group in cols.values():
            pos = [x for x in group if not x.negated]
            neg = [x for x in group if x.negated]
            if len(pos) == 1 and len(neg) == 1:
                parts.append(info.render_interval(pos[0], neg[0]) if words
                             else info.notation_interval(pos[0], neg[0]))
                children = [c for c in children if c not in (pos[0], neg[0])]
    for c in children:
        text = render(c, info, top=False, words=words)
        if isinstance(c, (And, Or)) or (isinstance(c, Lit) and " or undefined" in text):
            text = f"({text})"  # keep "or undefined" from reading as part of the formula
        parts.append(text)
    return (" AND " if conj else " OR ").join(parts)


def format_weight(w: float) -> str:
    """A rule's weight as every view writes it: signed, 3 significant digits.

    See :func:`~rudi_explain.rules.values.points_text`.
    """
    return points_text(w, sign=True)

