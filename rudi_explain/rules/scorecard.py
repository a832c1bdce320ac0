"""The scorecard: how an explanation is read (SEMANTICS.md, "The scorecard").

A :class:`Scorecard` is a base, one :class:`~rudi_explain.rules.scorecard_cards.Card`
per statistic output (bands with centred points, or linear) and a few
interaction rules (formulas over literals of two or more outputs, with
weights)::

    score = base + the points of every card + the weights of the interaction rules that fire

:meth:`Scorecard.from_rules` reads one off a fitted additive rule set with
exactly its scores; :meth:`Scorecard.refit` merges bands and refits every
point jointly (monotone where the teacher is, linear where that fits users
it was not chosen on at least as well), after which the scorecard is the
model; :meth:`Scorecard.to_rules` writes it back as a rule set with exactly
its scores.
"""

from __future__ import annotations

import json
from collections.abc import Sequence as SequenceT
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from rudi_explain.exceptions import InputError
from rudi_explain.rules.formula import (
    TRUE,
    And,
    Formula,
    Lit,
    formula_from_json,
    formula_literals,
    formula_to_json,
    literal_info,
)
from rudi_explain.rules.literals import Literals
from rudi_explain.rules.ruleset import LinearTerm, Rule, RuleSet
from rudi_explain.rules.scorecard_cards import Band, Card, Linear
from rudi_explain.rules.scorecard_fit import (
    DEFINED_THRESHOLD,
    MAX_BANDS,
    RIDGE,
    check_values,
    describe,
    fires_of,
    read_off,
    refit,
    scores_of,
)
from rudi_explain.rules.values import points_text

__all__ = ["Scorecard", "DEFINED_THRESHOLD"]


class Scorecard:
    """A base, cards and interaction rules over a literal table.

    Parameters
    ----------
    cards : sequence of Card
        One per statistic output (no two on one output).
    interactions : sequence of Rule
        Rules over literals of two or more outputs of ``literals``.
    base : float
        The score of a user with 0 points on every card whom no interaction rule fires for.
    literals : Literals
        The literal table: the outputs the cards read (columns of the value
        matrix) and the literals the interaction rules use.

    Attributes
    ----------
    cards : tuple of Card
    interactions : tuple of Rule
    base : float
    literals : Literals
    """

    def __init__(self, cards: SequenceT[Card], interactions: SequenceT[Rule] = (), base: float = 0.0,
                 literals: Literals | None = None):
        if literals is None or not isinstance(literals, Literals):
            raise InputError("a scorecard needs the Literals table its cards and rules read")
        self.cards = tuple(cards)
        self.interactions = tuple(interactions)
        self.base = float(base)
        self.literals = literals
        seen: set[int] = set()
        for card in self.cards:
            if not 0 <= card.column < literals.n_outputs:
                raise InputError(f"card {card.name!r} reads output {card.column}; the table has "
                                 f"{literals.n_outputs}")
            if card.column in seen:
                raise InputError(f"two cards read output {card.column} ({card.name!r}): one output is one card")
            seen.add(card.column)
        for r in self.interactions:
            if any(lit.index >= literals.n_literals for lit in formula_literals(r.formula)):
                raise InputError(f"interaction rule {r.text!r} refers to a literal the table does not have")

    # -- building -----------------------------------------------------------

    @classmethod
    def from_rules(cls, rules: RuleSet, values: ArrayLike, y: ArrayLike) -> Scorecard:
        """Read a scorecard off an additive rule set: exactly the same scores.

        Every rule whose literals all read one statistic output becomes part
        of that output's card: its band edges are the union of those
        literals' thresholds, and a band's points are the sum of the weights
        of those rules that fire in it (constant on the band). A linear term
        clipped to ``[lo, hi]`` (as :meth:`to_rules` writes one) becomes a
        linear card, with the rules on its output that tell only defined
        from undefined values. Rules over two or more outputs become
        interaction rules, weights unchanged. Points are centred on the
        users given (their mean points is 0 on every card; the base absorbs
        the shift).

        Parameters
        ----------
        rules : RuleSet
            Additive rules over a :class:`~rudi_explain.rules.literals.Literals` table
            (not a rule list; linear terms only with both bounds).
        values : array-like of shape (n_users, n_outputs)
            The training users' statistic outputs (``Literals.values``), NaN where undefined.
        y : array-like of shape (n_users,)
            Their teacher scores: each band's mean, and the sign notes.

        Returns
        -------
        Scorecard
            ``predict(V)`` equals ``rules.score(rules.matrix(V))`` for any value matrix ``V`` (to rounding
            where a card is linear).

        Raises
        ------
        InputError
            A linear term without both bounds, or an output read both by a linear term and by band rules.
        """
        V = np.asarray(values)
        if not rules.has_linear:
            base, cards, interactions = read_off(rules, V)
            return cls.from_parts(base, cards, interactions, rules.literal_table(), values, y)
        if type(rules).score is not RuleSet.score:
            raise InputError(f"a {type(rules).__name__} is not a sum of rules: only an additive RuleSet reads as "
                             "a scorecard")
        table = rules.literal_table()
        part = RuleSet([r for r in rules if isinstance(r, Rule)], rules.intercept, table)
        base, cards, interactions = read_off(part, V)
        terms = [r for r in rules if isinstance(r, LinearTerm)]
        by_column = {c.column: c for c in cards}
        for term in terms:
            by_column[term.column] = _linear_card(term, by_column.get(term.column), table, V)
        if len(terms) != len({t.column for t in terms}):
            raise InputError("two linear terms read one statistic output: one output is one card")
        return cls.from_parts(base, [by_column[c] for c in sorted(by_column)], interactions, table, values, y)

    @classmethod
    def from_parts(cls, base: float, cards: list[Card], interactions: list[Rule], table: Literals,
                   values: ArrayLike, y: ArrayLike) -> Scorecard:
        """The scorecard of fitted (uncentred) parts, described on these users: each card's points centred
        (the base takes the shift: the same scores), every band's share and mean teacher score, the sign
        notes; cards in the order of how much they move scores, interaction rules by weight."""
        base, cards = describe(base, cards, interactions, table, np.asarray(values), np.asarray(y))
        cards.sort(key=lambda c: (-_spread(c), c.column))  # the card that moves scores most first
        interactions = sorted(interactions, key=lambda r: -abs(r.weight))
        return cls(cards, interactions, base, table)

    def refit(self, values: ArrayLike, y: ArrayLike, *, is_valid: ArrayLike | None = None,
              max_bands: int = MAX_BANDS, ridge: float = RIDGE, monotone: bool = True,
              linear: bool = True, split: bool = True) -> Scorecard:
        """Fewer bands, and every point refitted jointly: the scorecard as the model.

        1. Where a card has more than ``max_bands`` value bands, adjacent
           bands are merged, the one costing least training error first
           (empty bands always); the undefined band stays its own.
        2. All points (every card's bands, the interaction rules' weights,
           the base) are fitted by least squares on the users, with a small
           ridge. A card whose teacher mean rises (falls) steadily across its
           bands gets points that do too, unless ``is_valid`` users say the
           free fit is better; a card is linear (``slope x value clipped to
           its outer band edges``) where that fits them at least as well.
           A band card gains band edges at the literal table's thresholds
           (to at most ``max_bands`` value bands) where each fits the
           ``is_valid`` users clearly better (``split``).
        3. Adjacent bands left with equal points are merged, points are
           centred, and bands whose points and gap differ in sign get a note.

        Parameters
        ----------
        values : array-like of shape (n_users, n_outputs)
            The training users' statistic outputs.
        y : array-like of shape (n_users,)
            Their teacher scores.
        is_valid : array-like of bool, shape (n_users,), optional
            Validation users: they choose each card's form (monotone or free,
            bands or linear), fitted on the others; the chosen forms are then
            fitted on all users. Without them every card is bands, monotone
            where the teacher is.
        max_bands : int, default=6
        ridge : float, default=1e-6
            Penalty per user on every point (not the base).
        monotone : bool, default=True
            False: no card is fitted monotone.
        linear : bool, default=True
            False: no card is linear.
        split : bool, default=True
            Band cards gain band edges (thresholds of the literal table, to at
            most ``max_bands`` value bands) where each lowers the ``is_valid``
            users' squared error by more than ``SPLIT_SE`` (1.5) standard errors. Without
            ``is_valid`` users, no edge is added.

        Returns
        -------
        Scorecard
        """
        V, t = check_values(np.asarray(values), np.asarray(y), self.literals)
        assert t is not None  # y was given
        base, cards, interactions = refit(self.base, list(self.cards), list(self.interactions), self.literals,
                                          V, t, None if is_valid is None else np.asarray(is_valid),
                                          max_bands=max_bands, ridge=ridge, monotone=monotone, linear=linear,
                                          split=split)
        return self.from_parts(base, cards, interactions, self.literals, V, t)

    @classmethod
    def fit(cls, rules: RuleSet, values: ArrayLike, y: ArrayLike, *, is_valid: ArrayLike | None = None,
            **options: Any) -> Scorecard:
        """``Scorecard.from_rules(rules, values, y).refit(values, y, is_valid=is_valid, **options)``."""
        return cls.from_rules(rules, values, y).refit(values, y, is_valid=is_valid, **options)

    # -- users --------------------------------------------------------------

    def _values(self, data: Any) -> np.ndarray:
        if not isinstance(data, np.ndarray) and hasattr(data, "n_users"):
            return self.literals.values(data)
        V, _ = check_values(np.asarray(data), None, self.literals)
        return V

    def band_index(self, data: Any) -> np.ndarray:
        """Each user's band on each card: int array (n_users, n_cards), -1 for the undefined band.

        Parameters
        ----------
        data : Sequences or array-like of shape (n_users, n_outputs)
            Users, or their value matrix (NaN where undefined).
        """
        V = self._values(data)
        return np.column_stack([c.band_index(V[:, c.column]) for c in self.cards]) if self.cards \
            else np.zeros((V.shape[0], 0), dtype=np.int64)

    def points(self, data: Any) -> np.ndarray:
        """Each user's points on each card: float array (n_users, n_cards)."""
        V = self._values(data)
        return np.column_stack([c.points(V[:, c.column]) for c in self.cards]) if self.cards \
            else np.zeros((V.shape[0], 0))

    def fires(self, data: Any) -> np.ndarray:
        """Which interaction rules fire for which users: bool array (n_users, n_interactions)."""
        return fires_of(self.interactions, self.literals, self._values(data))

    def predict(self, data: Any) -> np.ndarray:
        """Scores: base + every card's points + the weights of the interaction rules that fire.

        Parameters
        ----------
        data : Sequences or array-like of shape (n_users, n_outputs)
            Users, or their value matrix (NaN where undefined).

        Returns
        -------
        ndarray of float64, shape (n_users,)
        """
        V = self._values(data)
        return scores_of(self.base, self.cards, [r.weight for r in self.interactions], V,
                         fires_of(self.interactions, self.literals, V))

    # -- rules --------------------------------------------------------------

    def to_rules(self) -> RuleSet:
        """The scorecard as a rule set with exactly its scores.

        One rule per band, a literal range (``NOT x > t1``, ``x > t1 AND NOT
        x > t2``, ..., ``x > tm``) weighted by the band's points, plus the
        interaction rules; the base is the intercept. Where a card's undefined
        band has other points than its lowest band, the literal table is
        extended with ``x > DEFINED_THRESHOLD`` ("x is defined") and the rule
        ``NOT x > DEFINED_THRESHOLD`` ("x is undefined") adds the difference
        (undefined users fire the lowest band's rule too); band edges the
        table lacks are added too. The old literals keep their indices, and
        :meth:`from_rules` reads the result back as this scorecard.

        A linear card is a :class:`~rudi_explain.rules.ruleset.LinearTerm`
        ``slope x value clipped to [lo, hi]`` (undefined counts as ``lo``)
        with ``offset - slope x lo`` in the intercept, and, where its
        undefined band has other points than ``offset``, the rule "x is
        undefined" weighted by the difference. Its scores are the
        scorecard's to rounding (the intercept gathers the offsets).
        """
        table = self.literals
        index: dict[tuple[int, float], int] = {}
        for i, (c, t) in enumerate(zip(table.column.tolist(), table.thresholds.tolist())):
            index.setdefault((int(c), float(t)), i)
        wanted: list[tuple[int, float]] = []
        for card in self.cards:
            wanted.extend((card.column, float(e)) for e in card.edges)
            if _needs_defined(card):
                wanted.append((card.column, DEFINED_THRESHOLD))
        missing = list(dict.fromkeys(k for k in wanted if k not in index))
        if missing:
            table = table.extended([c for c, _ in missing], [t for _, t in missing])
            for j, key in enumerate(missing):
                index[key] = self.literals.n_literals + j
        formulas: list[Formula] = []
        weights: list[float] = []
        for card in self.cards:
            c = card.column
            lits = [Lit(index[(c, float(e))]) for e in card.edges]
            defined = Lit(index[(c, DEFINED_THRESHOLD)]) if _needs_defined(card) else None
            if card.linear is not None:
                if defined is not None and card.undefined is not None:
                    formulas.append(~defined)
                    weights.append(card.undefined.points - card.linear.offset)
                continue
            for k, band in enumerate(card.bands):
                parts: list[Formula] = []
                if k > 0:
                    parts.append(lits[k - 1])
                if k < len(lits):
                    parts.append(~lits[k])
                elif k == 0:
                    parts.append(TRUE)
                formulas.append(parts[0] if len(parts) == 1 else And(tuple(parts)))
                weights.append(band.points)
            if defined is not None and card.undefined is not None:
                # undefined users also fire the lowest band's rule ("at most t1, or undefined"): this rule adds
                # the rest, so that no rule reads the literal "defined" itself (its threshold is no number to show)
                formulas.append(~defined)
                weights.append(card.undefined.points - card.bands[0].points)
        for r in self.interactions:
            formulas.append(r.formula)
            weights.append(r.weight)
        terms, base = [], self.base
        for card in self.cards:
            lin = card.linear
            if lin is not None:
                base += lin.offset - lin.slope * lin.lo
                terms.append(LinearTerm(card.column, lin.slope, lin.lo, card.name, card.undefined is not None,
                                        lin.lo, lin.hi, card.kind, card.unit))
        rules = RuleSet.from_formulas(formulas, weights, base, literals=table)
        return RuleSet([*rules.rules, *terms], rules.intercept, table) if terms else rules

    # -- text ---------------------------------------------------------------

    def __len__(self) -> int:
        """Cards and interaction rules: the units ``max_rules`` counts."""
        return len(self.cards) + len(self.interactions)

    def __repr__(self) -> str:
        return f"<Scorecard: {len(self.cards)} cards, {len(self.interactions)} interaction rules>"

    def text(self) -> str:
        """Every card (SEMANTICS.md's text form), then the interaction rules and the base."""
        parts = [f"score = {self.base:.2f} (base) + the points of each card"
                 + (" + the interaction rules that fire" if self.interactions else "")]
        parts.extend(c.text() for c in self.cards)
        if self.interactions:
            parts.append("points  interaction rule (fires when it holds)\n"
                         + "\n".join(f"{points_text(r.weight):>6}  {r.text}" for r in self.interactions))
        return "\n\n".join(parts)

    def __str__(self) -> str:
        return self.text()

    # -- persistence --------------------------------------------------------

    def to_dict(self, literals: bool = True) -> dict:
        """A JSON-ready dict; :meth:`from_dict` reads it back with every float exact.

        Parameters
        ----------
        literals : bool, default=True
            False: without the literal table (a file that holds it already
            gives it back to :meth:`from_dict`).
        """
        d = {
            "format": "rudi-explain/scorecard", "version": 1, "base": self.base,
            "cards": [c.to_dict() for c in self.cards],
            "interactions": [{"formula": formula_to_json(r.formula), "weight": r.weight} for r in self.interactions],
        }
        return {**d, "literals": self.literals.to_dict()} if literals else d

    def mismatch(self, rules: Any, values: ArrayLike) -> str | None:
        """Where these users' scores are not the rules' own, why (a scorecard saved beside its rules); else None.

        Parameters
        ----------
        rules : RuleSet
            Rules over this scorecard's literal table (or one that extends it).
        values : array-like of shape (n_users, n_outputs)

        Returns
        -------
        str or None
            A sentence naming the first user (by position) whose scores differ.
        """
        V = self._values(np.asarray(values))
        own, theirs = self.predict(V), rules.score(rules.matrix(V))
        bad = np.flatnonzero(~np.isclose(own, theirs, rtol=1e-9, atol=1e-9))
        if not bad.size:
            return None
        return (f"the scorecard's scores differ from the rules' (user {bad[0]}: {own[bad[0]]!r} against "
                f"{theirs[bad[0]]!r}): they were not saved together")

    def to_json(self, **kwargs: Any) -> str:
        """The scorecard as JSON text (no pickle)."""
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_dict(cls, d: dict, literals: Literals | None = None) -> Scorecard:
        """Read a scorecard written by :meth:`to_dict`.

        Parameters
        ----------
        d : dict
        literals : Literals, optional
            The table its cards and rules read, for a dict written without
            one (``to_dict(literals=False)``); it must have every output and
            literal they use.
        """
        if not isinstance(d, dict) or d.get("format") != "rudi-explain/scorecard":
            raise InputError("not a rudi-explain scorecard")
        literals = Literals.from_dict(d["literals"]) if literals is None else literals
        info = literal_info(literals)
        rules = [Rule(formula_from_json(r["formula"]), float(r["weight"]), info) for r in d.get("interactions", ())]
        return cls([Card.from_dict(c) for c in d.get("cards", ())], rules, float(d["base"]), literals)

    @classmethod
    def from_json(cls, text: str) -> Scorecard:
        """Read a scorecard written by :meth:`to_json`."""
        return cls.from_dict(json.loads(text))


def _needs_defined(card: Card) -> bool:
    if card.undefined is None:
        return False
    lowest = card.bands[0].points if card.linear is None else card.linear.offset
    return card.undefined.points != lowest


def _linear_card(term: LinearTerm, rules_card: Card | None, table: Literals, V: np.ndarray) -> Card:
    """The linear card of ``term`` and of the rules on its output (``rules_card``, read off: no band edges)."""
    c = term.column
    if term.lo is None or term.hi is None or not (np.isfinite(term.lo) and np.isfinite(term.hi)):
        raise InputError(f"the linear term {term.name!r} has no finite bounds: a linear card is clipped to the "
                         "range it was fitted on")
    if rules_card is not None and rules_card.edges:
        raise InputError(f"output {c} ({term.name!r}) is read by a linear term and by band rules: one output is "
                         "one card, bands or linear")
    defined = 0.0 if rules_card is None else rules_card.bands[0].points
    undefined = defined if rules_card is None or rules_card.undefined is None else rules_card.undefined.points
    lin = Linear(term.weight, term.lo, term.hi, defined + term.weight * term.lo)
    u = undefined + term.weight * term.fill
    can_be_undefined = bool(table.output_undefined[c]) or bool(np.isnan(V[:, c]).any())
    band = Band(u) if can_be_undefined or (rules_card is not None and rules_card.undefined is not None) \
        or u != lin.offset else None
    return Card(column=c, name=table.output_descriptions[c], kind=table.output_kind[c], unit=table.output_unit[c],
                edges=(), bands=(), undefined=band,
                undefined_words=table.output_undefined_words[c] if band is not None else "", linear=lin)


def _spread(card: Card) -> float:
    """How far a card moves scores: the share-weighted mean absolute points."""
    total = 0.0 if card.undefined is None else card.undefined.share * abs(card.undefined.points)
    if card.linear is not None:
        lin = card.linear
        return total + lin.share * abs(lin.slope) * (lin.hi - lin.lo) / 2
    return total + sum(b.share * abs(b.points) for b in card.bands)
