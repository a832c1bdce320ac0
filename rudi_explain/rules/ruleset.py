"""Weighted AND/OR rules over literals: structure, simplification, scoring.

A rule is a formula tree (:class:`Lit`, :class:`And`, :class:`Or`) over the
literals of a :class:`~rudi_explain.rules.literals.Literals` table (or over plain
named binary columns), with a real weight. A :class:`RuleSet` scores a user
as its intercept plus the weights of the rules that fire. Rules are kept as
structures: text and JSON are rendered from them, never parsed back to be
applied. Scoring is numpy only.

Negation lives on the literals (the formulas are in negation normal form),
which is what a GS-NLN reads off: its input layer holds every literal and its
complement.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from collections.abc import Sequence as SequenceT
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rudi_explain.exceptions import InputError
from rudi_explain.rules.formula import (
    FALSE,
    TRUE,
    Formula,
    LiteralInfo,
    _sort_key,
    evaluate_formula,
    format_threshold,
    format_weight,
    formula_from_json,
    formula_literals,
    formula_to_json,
    literal_info,
    render,
    simplify,
)
from rudi_explain.rules.literals import Literals
from rudi_explain.rules.values import format_value, slope_text

__all__ = ["Rule", "LinearTerm", "RuleSet"]

# --------------------------------------------------------------------------
# rules and rule sets


@dataclass(frozen=True)
class Rule:
    """One weighted rule: a formula over literals.

    Attributes
    ----------
    formula : Formula
    weight : float
        Added to a user's score when the rule fires.
    literals : tuple of str
        Names of the literals the rule uses (see also ``negated`` and
        ``conditions``).
    n_literals : int
        Number of literal occurrences in the rule.
    text : str
        The rule as people read it.
    """

    formula: Formula
    weight: float
    info: LiteralInfo = field(repr=False, compare=False)

    @property
    def literals(self) -> tuple:
        """Names of the literals the rule uses, as in ``Literals.names``."""
        return tuple(self.info.names[lit.index] for lit in formula_literals(self.formula))

    @property
    def negated(self) -> tuple:
        """Per entry of :attr:`literals`, whether the rule uses its negation."""
        return tuple(lit.negated for lit in formula_literals(self.formula))

    @property
    def conditions(self) -> tuple:
        """Each literal as the rule uses it, in words (see :meth:`LiteralInfo.sentence`)."""
        return tuple(self.info.render_literal(lit) for lit in formula_literals(self.formula))

    @property
    def n_literals(self) -> int:
        return len(formula_literals(self.formula))

    @property
    def text(self) -> str:
        """The rule in words (sentences where the literal table knows its outputs)."""
        return render(self.formula, self.info)

    @property
    def notation(self) -> str:
        """The rule in the pipeline notation (``words > t``), for hover text and tables."""
        return render(self.formula, self.info, words=False)

    def fires(self, Z: np.ndarray) -> np.ndarray:
        return evaluate_formula(self.formula, Z)

    def __str__(self) -> str:
        return f"{format_weight(self.weight)}  {self.text}"


@dataclass(frozen=True)
class LinearTerm:
    """A linear term ``weight * value`` of one statistic output, the value clipped to ``[lo, hi]``.

    What a Lasso on raw statistics learns (no bounds), and the rule form of a
    linear card of a scorecard (bounds: the range it was fitted on). Scored
    beside rules. An undefined (NaN) value counts as ``fill`` (not clipped).

    Attributes
    ----------
    column : int
        Index of the statistic output (a column of ``Literals.values``).
    weight : float
        Per unit of the value.
    fill : float
        Value used where the statistic is undefined.
    name : str
        Text of the statistic output.
    can_be_undefined : bool, default=True
        Whether the output can be undefined (the text then says what counts for it).
    lo, hi : float or None, default=None
        Values below ``lo`` count as ``lo``, above ``hi`` as ``hi``; None: no bound.
    kind, unit : str
        How the output's values are written (``Literals.output_kind``, ``output_unit``).
    """

    column: int
    weight: float
    fill: float
    name: str
    can_be_undefined: bool = True
    lo: float | None = None
    hi: float | None = None
    kind: str = "value"
    unit: str = ""

    def __post_init__(self) -> None:
        for bound in (self.lo, self.hi):
            if bound is not None and math.isnan(bound):
                raise InputError(f"linear term {self.name!r}: a bound is NaN")
        if self.lo is not None and self.hi is not None and not self.lo <= self.hi:
            raise InputError(f"linear term {self.name!r}: lo {self.lo!r} is above hi {self.hi!r}")

    @property
    def clipped(self) -> bool:
        """Whether the value is clipped (a bound is set)."""
        return self.lo is not None or self.hi is not None

    @property
    def literals(self) -> tuple:
        return (self.name,)

    @property
    def n_literals(self) -> int:
        return 1

    def _v(self, x: float) -> str:
        return format_value(x, self.kind, self.unit, exact=True)

    @property
    def text(self) -> str:
        text = f"× {self.name}"
        if self.lo is not None and self.hi is not None:
            # the weight is per 1 of the raw value (a share's per 100%): say it per step as the card does
            text += (f" ({slope_text(self.weight, self.lo, self.hi, self.kind, self.unit)}), "
                     f"from {self._v(self.lo)} to {self._v(self.hi)}")
        elif self.lo is not None:
            text += f", from {self._v(self.lo)}"
        elif self.hi is not None:
            text += f", up to {self._v(self.hi)}"
        if not self.can_be_undefined:
            return text
        fill = self._v(self.fill) if self.clipped else format_threshold(self.fill)
        return f"{text} (undefined counts as {fill})"

    def value(self, V: np.ndarray) -> np.ndarray:
        """The term's value per user: the column clipped to ``[lo, hi]``, ``fill`` where it is NaN."""
        v = V[:, self.column]
        if self.clipped:
            v = np.clip(v, -np.inf if self.lo is None else self.lo, np.inf if self.hi is None else self.hi)
        return np.where(np.isnan(v), self.fill, v)

    def to_dict(self) -> dict:
        d: dict[str, Any] = {"linear": self.column, "weight": self.weight, "fill": self.fill, "name": self.name,
                             "can_be_undefined": self.can_be_undefined}
        if self.clipped:  # a Lasso's terms are saved as before
            d.update(lo=self.lo, hi=self.hi, kind=self.kind, unit=self.unit)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> LinearTerm:
        """Read what :meth:`to_dict` wrote (a term without bounds: an older file's, or a Lasso's)."""
        return cls(int(d["linear"]), _number(d["weight"], "weight"), _number(d["fill"], "fill"), str(d["name"]),
                   bool(d.get("can_be_undefined", True)), _bound(d.get("lo")), _bound(d.get("hi")),
                   str(d.get("kind", "value")), str(d.get("unit", "")))

    def __str__(self) -> str:
        return f"{format_weight(self.weight)}  {self.text}"


def _number(x: Any, what: str) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise InputError(f"a linear term's {what} must be a number, got {type(x).__name__}")
    try:
        return float(x)
    except OverflowError:
        raise InputError(f"a linear term's {what} is too large") from None


def _bound(x: Any) -> float | None:
    return None if x is None else _number(x, "bound")


class RuleSet:
    """A weighted set of rules over literals (and linear terms of outputs), and an intercept.

    A user's score is ``intercept + sum of the weights of the rules that
    fire + sum of the linear terms``. Build one with :meth:`from_formulas`
    (which simplifies) or get it from a student's ``rules(literals)``.

    The sum is taken per statistic output, as a scorecard reads it: the
    rules and linear terms that read one output only (its card) are added
    up first, then every card in order of its first rule, then the other
    rules (interaction rules) in order. The SQL export adds in the same
    order, so that its scores equal these to the last bit.

    A rule set with linear terms reads statistic values, not literals
    (:attr:`reads_values`): :meth:`score` and :meth:`fires` then take the
    value matrix (:meth:`matrix` gives what they read).

    Parameters
    ----------
    rules : list of Rule or LinearTerm
        Kept in the order given (``from_formulas`` sorts by |weight|).
    intercept : float
    literals : Literals, LiteralInfo, list of str or None
        The literal table the rules refer to. A
        :class:`~rudi_explain.rules.literals.Literals` table lets :meth:`score`
        take :class:`~rudi_explain.Sequences` directly.
    n_literals : int, optional
        Number of literals when ``literals`` is None.
    """

    def __init__(
        self,
        rules: SequenceT[Rule | LinearTerm],
        intercept: float = 0.0,
        literals: Any = None,
        n_literals: int | None = None,
    ):
        self.literals: Literals | None = literals if _is_literals_table(literals) else None
        self.info = literal_info(literals, n_literals)
        self.rules = list(rules)
        self.intercept = float(intercept)
        #: Whether some term is linear: then :meth:`score` and :meth:`fires` read statistic values.
        self.has_linear = any(isinstance(r, LinearTerm) for r in self.rules)
        #: Whether every term is linear (a Lasso's): no formula over literals at all.
        self.linear = self.has_linear and all(isinstance(r, LinearTerm) for r in self.rules)
        for r in self.rules:
            if not isinstance(r, (Rule, LinearTerm)):
                raise InputError(f"a RuleSet holds Rules and LinearTerms, got {type(r).__name__}")
            if isinstance(r, LinearTerm) and self.literals is not None and not 0 <= r.column < self.literals.n_outputs:
                raise InputError(f"linear term {r.name!r} reads output {r.column}; the table has "
                                 f"{self.literals.n_outputs}")

    @property
    def reads_values(self) -> bool:
        """Whether :meth:`score` and :meth:`fires` read the value matrix (some term is linear), not literals."""
        return self.has_linear

    # -- construction -------------------------------------------------------

    @classmethod
    def from_formulas(
        cls,
        formulas: SequenceT[Formula],
        weights: SequenceT[float] | np.ndarray,
        intercept: float = 0.0,
        literals: Any = None,
        n_literals: int | None = None,
    ) -> RuleSet:
        """Simplify weighted formulas into a rule set that scores the same.

        Each formula is simplified (:func:`simplify`); constant ones move into
        the intercept (true) or vanish (false); equal formulas are merged by
        adding their weights; rules whose weight is zero are dropped. Rules
        are sorted by decreasing |weight|.

        Parameters
        ----------
        formulas : sequence of Formula, length n_rules
        weights : array-like of shape (n_rules,)
        intercept : float
        literals : Literals, list of str or None
        n_literals : int, optional

        Returns
        -------
        RuleSet
        """
        weights = np.asarray(weights, dtype=np.float64).reshape(-1)
        if len(formulas) != weights.size:
            raise InputError(f"{len(formulas)} formulas but {weights.size} weights")
        info = literal_info(literals, n_literals)
        total: dict[Formula, float] = {}
        b = float(intercept)
        for f, w in zip(formulas, weights):
            s = simplify(f, info)
            if s == TRUE:
                b += float(w)
            elif s == FALSE:
                continue
            else:
                total[s] = total.get(s, 0.0) + float(w)
        rules = [Rule(f, w, info) for f, w in total.items() if w != 0.0]
        rules.sort(key=lambda r: (-abs(r.weight), _sort_key(r.formula)))
        out = cls(rules, b, literals if literals is not None else info, n_literals)
        return out

    def with_literals(self, literals: Any) -> RuleSet:
        """The same rules over another literal table that keeps their literals' indices.

        For a table extended with more literals (as threshold refinement
        does): scores over its literal matrix equal this rule set's over the
        old one.

        Raises
        ------
        ValueError
            If a rule refers to a literal the table does not have.
        """
        info = literal_info(literals)
        for r in self.rules:
            if isinstance(r, Rule):
                bad = [lit.index for lit in formula_literals(r.formula) if lit.index >= info.n_literals]
                if bad:
                    raise InputError(f"a rule refers to literal {bad[0]}, the table has {info.n_literals}")
        rules = [Rule(r.formula, r.weight, info) if isinstance(r, Rule) else r for r in self.rules]
        return type(self)(rules, self.intercept, literals)

    # -- inspection ---------------------------------------------------------

    def __len__(self) -> int:
        return len(self.rules)

    def __getitem__(self, i: int) -> Rule | LinearTerm:
        return self.rules[i]

    def __iter__(self) -> Iterator[Rule | LinearTerm]:
        return iter(self.rules)

    @property
    def n_literals(self) -> list[int]:
        """Literal occurrences per rule."""
        return [r.n_literals for r in self.rules]

    @property
    def max_literals(self) -> int:
        return max(self.n_literals, default=0)

    def literal_table(self) -> Literals:
        """The :class:`~rudi_explain.rules.literals.Literals` table of the rules.

        Raises
        ------
        InputError
            Rules over plain literal names, without a table.
        """
        if self.literals is None:
            raise InputError("these rules are over literal names, not a Literals table: give the table")
        return self.literals

    def formula_rules(self) -> list[Rule]:
        """The rules over literals, in order: what pruning, threshold refinement and swaps work on.

        Raises
        ------
        InputError
            A rule set with linear terms: what works on formulas alone would drop them.
        """
        if self.has_linear:
            raise InputError("this rule set has linear terms of statistics, not only formulas over literals")
        return [r for r in self.rules if isinstance(r, Rule)]

    @property
    def formulas(self) -> list[Formula]:
        """The formula of each rule, in order (see :meth:`formula_rules`)."""
        return [r.formula for r in self.formula_rules()]

    @property
    def weights(self) -> np.ndarray:
        return np.array([r.weight for r in self.rules], dtype=np.float64)

    def __str__(self) -> str:
        # largest effect first: a bounded linear term's weight is per unit of its value (a share's per 100%),
        # so it is ranked by what it adds over its range, as its card shows
        order = sorted(range(len(self.rules)), key=lambda i: -_reach(self.rules[i]))
        lines = [str(self.rules[i]) for i in order]
        lines.append(f"{format_weight(self.intercept)}  (intercept)")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<RuleSet: {len(self)} rules, max {self.max_literals} literals per rule>"

    # -- scoring ------------------------------------------------------------

    def matrix(self, values: Any) -> np.ndarray:
        """What :meth:`score` and :meth:`fires` read, from a value matrix.

        Parameters
        ----------
        values : array-like of shape (n_users, n_outputs)
            Statistic outputs (``Literals.values``), NaN where undefined.

        Returns
        -------
        ndarray
            ``values`` for a rule set with linear terms (:attr:`reads_values`),
            else the literal matrix ``literals.transform_values(values)``.
        """
        if self.reads_values:
            return self._matrix(np.asarray(values, dtype=np.float64))
        return self.literal_table().transform_values(values)

    def _matrix(self, data: Any) -> np.ndarray:
        """Literal matrix (rules only) or value matrix (with linear terms) for ``data``."""
        if not isinstance(data, np.ndarray) and hasattr(data, "n_users"):
            if self.literals is None:
                raise InputError(
                    "this RuleSet was built without a Literals table; pass the literal matrix"
                )
            values = self.literals.values(data)
            return values if self.reads_values else self.literals.transform_values(values)
        X = np.asarray(data)
        if X.ndim != 2:
            raise InputError(f"expected a 2-D matrix, got shape {X.shape}")
        if self.reads_values:
            if X.dtype == bool:
                raise InputError("this rule set has linear terms: pass the value matrix (Literals.values), not "
                                 "the literal matrix (RuleSet.matrix gives what it reads)")
            need = (self.literals.n_outputs if self.literals is not None and not self.linear
                    else 1 + max(r.column for r in self.rules if isinstance(r, LinearTerm)))
            if (X.shape[1] != need) if not self.linear else (X.shape[1] < need):
                raise InputError(f"the value matrix has {X.shape[1]} columns, the rules read {need} statistic "
                                 "outputs")
            return X.astype(np.float64, copy=False)
        if X.shape[1] != self.info.n_literals:
            raise InputError(
                f"the literal matrix has {X.shape[1]} columns, the rules use {self.info.n_literals} literals"
            )
        if X.dtype != bool:
            if np.isnan(X.astype(np.float64)).any() or not np.isin(X, (0, 1)).all():
                raise InputError("the literal matrix must be binary (bool or 0/1)")
            X = X.astype(bool)
        return X

    def _literals_of(self, M: np.ndarray) -> np.ndarray | None:
        """The literal matrix the rules read, from what :meth:`_matrix` gave (None: no rule reads one)."""
        if not self.reads_values:
            return M
        if self.linear:
            return None
        return self.literal_table().transform_values(M)

    def groups(self) -> list[tuple[int, list[int]]]:
        """The order :meth:`score` adds in: ``(output, term indices)`` per card, then ``(-1, [i])`` per other rule.

        A card is every rule and linear term that reads one statistic output
        only (in the order of its first term); every other rule is its own
        group, in order.
        """
        cards: dict[int, list[int]] = {}
        others: list[tuple[int, list[int]]] = []
        column = self.info.column
        for k, r in enumerate(self.rules):
            if isinstance(r, LinearTerm):
                cards.setdefault(int(r.column), []).append(k)
                continue
            cols = {int(column[lit.index]) for lit in formula_literals(r.formula)}
            if len(cols) == 1 and min(cols) >= 0:
                cards.setdefault(cols.pop(), []).append(k)
            else:
                others.append((-1, [k]))
        return list(cards.items()) + others

    def group_points(self, members: SequenceT[int], values: np.ndarray, *, linear: bool = True) -> np.ndarray:
        """One group's points (see :meth:`groups`) per user, added as :meth:`score` adds them.

        Parameters
        ----------
        members : sequence of int
            The group's terms (indices into the rule set).
        values : ndarray of shape (n_users, n_outputs)
            The users' statistic outputs (the SQL export passes one value per band).
        linear : bool, default=True
            False: the rules' part only (the weights that fire), without the linear terms.

        Returns
        -------
        ndarray of float64, shape (n_users,)
        """
        V = np.asarray(values, dtype=np.float64)
        needs_literals = any(isinstance(self.rules[k], Rule) for k in members)
        Z = self.literal_table().transform_values(V) if needs_literals else None
        return self._group_points(members, Z, V, V.shape[0], linear=linear)

    def _group_points(self, members: SequenceT[int], Z: np.ndarray | None, V: np.ndarray | None,
                      n: int, linear: bool = True) -> np.ndarray:
        """One group's points per user: its rules' weights that fire (in order), then its linear terms."""
        out = np.zeros(n, dtype=np.float64)
        for k in members:
            r = self.rules[k]
            if isinstance(r, Rule):
                assert Z is not None
                out[r.fires(Z)] += r.weight
        if not linear:
            return out
        for k in members:
            r = self.rules[k]
            if isinstance(r, LinearTerm):
                assert V is not None
                out += r.weight * r.value(V)
        return out

    def fires(self, data: Any) -> np.ndarray:
        """Which rules fire for which users.

        Parameters
        ----------
        data : Sequences or ndarray
            Users, or their literal matrix of shape (n_users, n_literals);
            for a rule set with linear terms, their value matrix of shape
            (n_users, n_outputs) (:meth:`matrix`). A linear term "fires"
            where its value is nonzero.

        Returns
        -------
        ndarray of bool, shape (n_users, n_rules)
        """
        M = self._matrix(data)
        Z = self._literals_of(M)
        out = np.zeros((M.shape[0], len(self.rules)), dtype=bool)
        for k, r in enumerate(self.rules):
            if isinstance(r, LinearTerm):
                out[:, k] = r.value(M) != 0
            else:
                assert Z is not None  # a set with a rule has literals
                out[:, k] = r.fires(Z)
        return out

    def score(self, data: Any) -> np.ndarray:
        """Rule scores: intercept plus the weights of the rules that fire, plus the linear terms.

        Added card by card (:meth:`groups`), as the SQL export adds.

        Parameters
        ----------
        data : Sequences or ndarray
            As for :meth:`fires`.

        Returns
        -------
        ndarray of float64, shape (n_users,)
        """
        M = self._matrix(data)
        Z = self._literals_of(M)
        V = M if self.reads_values else None
        n = M.shape[0]
        s = np.full(n, self.intercept, dtype=np.float64)
        for _, members in self.groups():
            r = self.rules[members[0]]
            if len(members) == 1 and isinstance(r, Rule):  # 0 + w is w: no array needed
                assert Z is not None
                s[r.fires(Z)] += r.weight
            else:
                s += self._group_points(members, Z, V, n)
        return s

    # -- persistence --------------------------------------------------------

    def to_dict(self) -> dict:
        """A JSON-ready dict; :meth:`from_dict` reads it back."""
        lit: dict[str, Any]
        if self.literals is not None:
            lit = {"literals": self.literals.to_dict()}
        else:
            lit = {"names": list(self.info.names)}
        rules = []
        for r in self.rules:
            if isinstance(r, LinearTerm):
                rules.append(r.to_dict())
            else:
                rules.append({"formula": formula_to_json(r.formula), "weight": r.weight})
        return {"format": "rudi-explain/ruleset", "version": 1, "intercept": self.intercept,
                "rules": rules, **lit}

    def to_json(self, **kwargs: Any) -> str:
        """The rule set as JSON text (no pickle)."""
        return json.dumps(self.to_dict(), **kwargs)

    def to_sql(self, table: Any = "events", user: str = "user_id", time: str | None = "ts",
               dialect: str = "duckdb", literals: Any = None, include_literals: bool = False,
               **options: Any) -> str:
        """One SELECT giving every user's statistic values, rule firings and score.

        Columns: the user, each statistic output the rules use, ``score``
        (as :meth:`score`), ``rule_1`` ... (0/1, as :meth:`fires`) and, with
        ``include_literals``, each literal's truth (0/1). See
        :func:`rudi_explain.sql.statistics.ruleset_sql` for ``options``
        (``vocabularies``, ``reference_time``, ``event_order``, ``time_unit``,
        ``schema``).
        """
        from rudi_explain.sql.ruleset import ruleset_sql

        return ruleset_sql(self, table=table, user=user, time=time, dialect=dialect, literals=literals,
                           include_literals=include_literals, **options)

    @classmethod
    def from_dict(cls, d: dict) -> RuleSet:
        if d.get("format") != "rudi-explain/ruleset":
            raise InputError("not a rudi-explain rule set")
        if "literals" in d:
            literals: Any = Literals.from_dict(d["literals"])
        else:
            literals = list(d["names"])
        info = literal_info(literals)
        rules: list[Rule | LinearTerm] = []
        for r in d["rules"]:
            if "linear" in r:
                rules.append(LinearTerm.from_dict(r))
            else:
                rules.append(Rule(formula_from_json(r["formula"]), float(r["weight"]), info))
        return cls(rules, d["intercept"], literals)

    @classmethod
    def from_json(cls, text: str) -> RuleSet:
        """Read a rule set written by :meth:`to_json`."""
        return cls.from_dict(json.loads(text))


def _is_literals_table(x: Any) -> bool:
    return x is not None and hasattr(x, "transform_values") and hasattr(x, "literal_info")


def _reach(rule: Any) -> float:
    """The most a rule or term moves a score: its weight, or a bounded linear term's over its range."""
    if isinstance(rule, LinearTerm) and rule.lo is not None and rule.hi is not None:
        return abs(rule.weight) * (rule.hi - rule.lo)
    return abs(rule.weight)
