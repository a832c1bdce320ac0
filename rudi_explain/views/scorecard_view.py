"""The scorecard as the front end shows it: cards, interaction rules, and one user's band on each card.

Pure functions from an :class:`~rudi_explain.explanation.Explanation` to plain
dicts (SEMANTICS.md, "The scorecard"). Every text a reader sees is written
here, the one way: a card's rows are :meth:`Card.rows
<rudi_explain.rules.scorecard_cards.Card.rows>` (the text form's own labels and
points, via :func:`~rudi_explain.rules.values.points_text`), values
through :func:`rudi_explain.rules.values.format_value`; the
raw numbers travel beside them only to draw the charts. Nothing here escapes
HTML: the front end puts every string into the page as text, the static copy
escapes it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np

from rudi_explain.audit.cards import output_kind, output_unit, value_text  # one place for a kind's fallback
from rudi_explain.audit.jsonable import json_float
from rudi_explain.audit.user import UserView
from rudi_explain.rules.scorecard_cards import UNDEFINED, Card
from rudi_explain.rules.values import format_value, points_text

if TYPE_CHECKING:
    from rudi_explain.explanation import Explanation
    from rudi_explain.rules.scorecard import Scorecard

__all__ = ["scorecard_state", "user_scorecard", "value_text", "output_kind", "output_unit", "weight_text"]

_num = json_float


def weight_text(weight: float) -> str:
    """An interaction rule's weight as the scorecard's text form writes it (``print(exp.scorecard)``)."""
    return points_text(weight)


def _text_form(sc: Scorecard) -> tuple[str, list[str]]:
    """The base and each interaction rule's weight as ``print(sc)`` writes them, read off that very text
    (so the view says what the text form says, however it writes numbers)."""
    text = sc.text()
    base = re.match(r"score = (\S+) \(base\)", text)
    lines = text.rsplit("\n\n", 1)[-1].splitlines()[1:] if sc.interactions else []
    weights = [line.removesuffix(r.text).strip() if len(lines) == len(sc.interactions) and line.endswith(r.text)
               else weight_text(r.weight) for line, r in zip(lines or [""] * len(sc.interactions), sc.interactions)]
    return (base.group(1) if base else f"{sc.base:.2f}"), weights


def _share_text(share: float) -> str:
    """Share of users as the card rows write it ("<1%" for a few)."""
    return "<1%" if 0 < share < 0.005 else f"{share * 100:.0f}%"


def _exact(card: Card, x: float) -> str:
    """A band edge as the card's labels write it (the exact number)."""
    return format_value(x, card.kind, card.unit, exact=True)


def _card_state(exp: Explanation, k: int, card: Card) -> dict:
    L = exp.literals
    rows = card.rows()
    bands: list[int] = ([UNDEFINED] if card.undefined is not None else []) + list(range(card.n_bands))
    raw = ([card.undefined.points] if card.undefined is not None else []) + \
        ([card.linear.offset] if card.linear is not None else [b.points for b in card.bands])
    out: dict[str, Any] = {
        "index": k,
        "column": int(card.column),
        "statistic": int(L.output_statistic[card.column]) if card.column < len(L.output_statistic) else None,
        "name": card.name,
        "kind": card.kind,
        "unit": card.unit,
        "linear": card.linear is not None,
        "monotone": bool(card.monotone),
        # the rows as print(exp.scorecard) writes them (points via points_text), the raw points beside for charts
        "rows": [{"band": b, "label": label, "points": pts, "users": users, "teacher": teacher, "note": note,
                  "value": _num(p)} for b, p, (label, pts, users, teacher, note) in zip(bands, raw, rows)],
        # the band edges between the value bands, for the step chart's axis (exact, as the labels write them)
        "edges_text": [_exact(card, e) for e in card.edges],
    }
    if card.linear is not None:
        lin = card.linear
        out["line"] = {"lo": _num(lin.lo), "hi": _num(lin.hi),
                       "lo_text": _exact(card, lin.lo), "hi_text": _exact(card, lin.hi),
                       "points_lo": _num(lin.offset), "points_hi": _num(lin.offset + lin.slope * (lin.hi - lin.lo)),
                       "text": card.linear_text()}
    return out


def scorecard_state(exp: Explanation) -> dict | None:
    """The Scorecard view: the base, one card per statistic output, then the interaction rules.

    Each card's ``rows`` are :meth:`Card.rows` value for value (``label``,
    ``points``, ``users``, ``teacher``, ``note``: the text form's strings),
    each with its ``band`` (-1 for undefined) and raw points ``value`` for the
    chart. ``interactions`` hold each rule's text, weight (raw and as the text
    form writes it) and the share of users it fires for. ``choice`` is the
    sentences saying which form of scorecard explain() kept and on what
    evidence (:meth:`~rudi_explain.explanation.scorecard_choice.ScorecardChoice.sentences`:
    each shortened on its own, so none is cut below 500 characters), [] where none was
    weighed. None where the explanation has no scorecard (a rule list).
    """
    sc = getattr(exp, "scorecard", None)
    if sc is None:
        return None
    values = exp.result.values
    fires = sc.fires(values) if sc.interactions else np.zeros((len(values), 0), dtype=bool)
    share = fires.mean(axis=0) if len(values) else np.zeros(fires.shape[1])
    base_text, weights = _text_form(sc)
    choice = getattr(exp.result, "scorecard_choice", None)
    return {
        "headline": sc.text().partition("\n")[0],
        "choice": [] if choice is None else choice.sentences(),
        "base": _num(sc.base),
        "base_text": base_text,
        "cards": [_card_state(exp, k, c) for k, c in enumerate(sc.cards)],
        "interactions": [{"index": j, "text": str(r.text), "weight": _num(r.weight),
                          "weight_text": weights[j], "users": _share_text(float(share[j]))}
                         for j, r in enumerate(sc.interactions)],
    }


def user_scorecard(exp: Explanation, index: int, user: UserView | None = None) -> dict | None:
    """One user on the scorecard: their value, band and points on each card, the interaction rules that fire,
    and the sum check (base + card points + fired interaction weights against the rules' score).

    Read off :class:`~rudi_explain.audit.user.UserView` (``exp.user(id).bands`` and ``score_check``): one
    place works out a user's bands; this writes them for the front end, points via ``points_text``.

    Parameters
    ----------
    exp : Explanation
    index : int
        The user's position among the explained users.
    user : UserView, optional
        That user's view, where the caller has it already.

    Returns
    -------
    dict or None
        None where the explanation has no scorecard.
    """
    sc = getattr(exp, "scorecard", None)
    if sc is None:
        return None
    u = user if user is not None else UserView(exp, index)
    check = u.score_check
    if check is None:
        return None
    cards = [{"index": k, "name": str(r.card), "band": int(r.band_index), "label": str(r.band),
              # a band's points, or on a linear card the user's own, written as the card rows write points
              "points_text": points_text(float(r.points)), "points": _num(r.points), "value": _num(r.value_raw),
              "value_text": str(r.value)}
             for k, r in enumerate(u.bands.itertuples())]
    fired = set(u.interactions.index)
    base_text, weights = _text_form(sc)
    return {
        "base": _num(check["base"]), "base_text": base_text,
        "cards": cards,
        "interactions": [{"index": j, "text": str(r.text), "weight": _num(r.weight), "weight_text": weights[j]}
                         for j, r in enumerate(sc.interactions) if str(r.text) in fired],
        "total": _num(check["total"]), "total_text": points_text(check["total"], sign=False),
        "score": _num(check["score"]), "score_text": points_text(check["score"], sign=False),
        "adds_up": bool(check["holds"]),
    }
