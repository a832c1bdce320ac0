"""Counterfactuals in the rules' language: the smallest change that moves one user's rule score.

``exp.user(uid).counterfactual(target_percentile=50, direction="below")``
searches changes to the values of the statistic outputs the rules read, for
the one that moves the user's rule score below (or above) that percentile of
the training users' rule scores, and says it in the literals' own words.

What "smallest" means
---------------------
A statistic output matters to the rules only through the literals on it, so
its possible values fall into *bands* between the thresholds the rules use;
moving the value to another band flips every rule literal in between. A
candidate change moves some outputs to other bands. The search takes, in
order: the fewest rule literals flipped; then the smallest distance, the
sum over the changed outputs of how far the value moves in that output's
own training distribution (the difference of its empirical quantiles, 0 to
1); then the largest margin past the target. It is exhaustive up to
``max_literals`` flips: every combination of band moves of that total cost is
scored at once (vectorized: candidates are rows of a value matrix), level by
level, stopping at the first level that reaches the target.

The value each changed output needs is the nearest one in its new band:
the threshold itself when the value must come down ("at most 14"); when it
must go up, the next whole number for a count and otherwise the smallest
training value in the band ("more than 14" reads 15 for a count).

Events
------
Where a changed output counts events (``Count``, or ``Sum`` of a categorical
one-hot), the change is also said in events ("2 fewer events where channel
is online"). When every change is "fewer events", the change is carried out
(:class:`EventEdit`): the most recent matching events are dropped from the
user's sequence, the statistics and the rule score are evaluated again on
what is left (other statistics may move too: the edit is real, not the
literal change), and when the explanation holds its model, the teacher
scores the edited events.
"""

from __future__ import annotations

import dataclasses
import html
import math
from dataclasses import dataclass, field
from itertools import combinations
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from rudi_explain.audit.attributions import TeacherUnavailable, output_events, teacher_of
from rudi_explain.audit.cards import band_label, card_on, value_text
from rudi_explain.audit.event_sets import sequences_of_events
from rudi_explain.audit.jsonable import json_float as _num
from rudi_explain.audit.ranks import percentile, percentile_of, percentile_words
from rudi_explain.audit.what_if import rules_using
from rudi_explain.data.sequences import Sequences
from rudi_explain.exceptions import InputError
from rudi_explain.explanation.result import FittedState
from rudi_explain.rules.formula import Lit
from rudi_explain.rules.ruleset import LinearTerm
from rudi_explain.rules.values import points_text
from rudi_explain.validation import check_whole

if TYPE_CHECKING:
    from rudi_explain.explanation import Explanation

__all__ = ["Counterfactual", "EventEdit", "counterfactual", "DIRECTIONS", "MAX_CANDIDATES"]

DIRECTIONS = ("below", "above")
#: Candidate changes scored at most; beyond, the search stops and says so.
MAX_CANDIDATES = 2_000_000
#: Candidates scored in one block (bounds memory: a block is a value matrix).
CHUNK = 20_000


@dataclass
class EventEdit:
    """A counterfactual carried out on the events: the most recent matching events dropped.

    Attributes
    ----------
    dropped : DataFrame
        The events dropped, as ``exp.user(uid).events`` shows them.
    values : DataFrame
        Per changed statistic output: ``value_now``, ``value_needed`` and
        ``value_after`` (evaluated on the edited events), and each written
        for people (``value_now_text``, ...: a share as a percent).
    score : float
        The rule score of the edited events.
    percentile : float
        Its percentile among the training users' rule scores.
    reaches_target : bool
        Whether the edited events' rule score is past the target.
    teacher_score, teacher_percentile : float or None
        The model's score of the edited events (and its percentile among the
        training users' teacher scores); None when no model can be asked
        (``note`` says why).
    teacher_score_before, teacher_percentile_before : float
        The model's score of the user as is.
    note : str
    """

    dropped: pd.DataFrame
    values: pd.DataFrame
    score: float
    percentile: float
    reaches_target: bool
    teacher_score: float | None
    teacher_percentile: float | None
    teacher_score_before: float
    teacher_percentile_before: float
    note: str = ""

    @property
    def n_dropped(self) -> int:
        return len(self.dropped)


@dataclass
class Counterfactual:
    """The smallest change of literal values that moves one user's rule score past a percentile.

    Attributes
    ----------
    user_id : object
    direction : {"below", "above"}
    target_percentile : float
    target_score : float
        That percentile of the training users' rule scores; the new score
        must be strictly below (above) it.
    score, percentile : float
        The user's rule score now, and its percentile among training users' rule scores
        (mid-rank: :mod:`rudi_explain.audit.ranks`).
    found : bool
        Whether a change of at most ``max_literals`` literals reaches the
        target (True with no change when the score already is past it).
    new_score, new_percentile : float or None
        The rule score with the change, and its percentile.
    n_literals : int
        Rule literals flipped.
    distance : float
        Sum over the changed outputs of the move in their training quantiles.
    changes : DataFrame
        One row per statistic output changed: ``output`` (its column),
        ``words``, ``statistic``, ``kind``, ``value_now``, ``value_needed``,
        ``condition`` (the literal sentence the value must meet), ``quantile_now``,
        ``quantile_needed``, ``n_literals`` (flipped on it), ``events`` (the
        change in events, for a count; else None), ``event_change`` (signed
        number of events, or None), and where the output has a card on the
        scorecard: ``card`` (its name), ``band_now`` and ``band_needed``
        (the bands in words, "at most 60 EUR" -> "more than 360 EUR"; on a
        linear card, its points at each value, "+0.35 points" -> "-0.12
        points"; None without a card), ``value_now_text`` and
        ``value_needed_text`` (the values written the one way: a share as a
        percent), ``linear`` (the output's card is linear: a move along it
        needs no literal to flip, the smallest that alone reaches the target,
        clipped to the card's range).
    flipped : DataFrame
        One row per literal flipped: ``literal`` (index), ``now`` and
        ``after`` (the literal as it holds now and after, as sentences),
        ``rules`` (indices of the rules that read it).
    edit : EventEdit or None
        The change carried out on the events, when every change is "fewer
        events" of a count.
    message : str
        A sentence: what was found, or why nothing was.
    n_candidates : int
        Candidate changes scored.
    """

    user_id: Any
    direction: str
    target_percentile: float
    target_score: float
    score: float
    percentile: float
    found: bool
    new_score: float | None
    new_percentile: float | None
    n_literals: int
    distance: float
    changes: pd.DataFrame
    flipped: pd.DataFrame
    edit: EventEdit | None
    message: str
    n_candidates: int = 0
    max_literals: int = 0

    def summary(self) -> str:
        """The counterfactual in a few lines of text."""
        lines = [self.message]
        for r in self.changes.itertuples():
            line = f"- {r.words}: {r.value_now_text} -> {r.value_needed_text} ({r.condition})"
            if r.linear and isinstance(r.band_now, str) and isinstance(r.band_needed, str):
                line += f"; on its linear card, from {r.band_now} to {r.band_needed}"
            elif isinstance(r.band_now, str) and isinstance(r.band_needed, str):
                line += (f"; on its card, from band \"{r.band_now}\" to \"{r.band_needed}\""
                         if r.band_now != r.band_needed else f"; on its card, still in band \"{r.band_now}\"")
            if isinstance(r.events, str):
                line += f"; that is {r.events}"
            lines.append(line)
        if len(self.changes):  # found, or the nearest reachable
            lines.append(f"rule score {_score(self.score)} ({percentile_words(self.percentile)}) -> "
                         f"{_score(self.new_score)} "
                         f"({percentile_words(self.new_percentile)}); target: {self.direction} "
                         f"{_score(self.target_score)} (the {percentile_words(self.target_percentile)})"
                         + ("" if self.found else ", not reached"))
        e = self.edit
        if e is not None:
            lines.append(f"on the events: the {e.n_dropped} most recent matching "
                         f"event{'s' if e.n_dropped != 1 else ''} "
                         f"dropped: rule score {_score(e.score)} ({percentile_words(e.percentile)}), "
                         f"{'past' if e.reaches_target else 'not past'} the target")
            if e.teacher_score is not None:
                lines.append(f"the model: {_score(e.teacher_score_before)} "
                             f"({percentile_words(e.teacher_percentile_before)}) -> {_score(e.teacher_score)} "
                             f"({percentile_words(e.teacher_percentile)}) on "
                             "the edited events")
            elif e.note:
                lines.append(e.note)
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """JSON-ready (floats rounded; NaN as None), for the widget."""
        def cell(v: Any) -> Any:
            if isinstance(v, (list, tuple, np.ndarray)):
                return [int(x) for x in v]
            if v is None or v is pd.NA:
                return None
            if isinstance(v, (float, np.floating)):
                return _num(v)
            return int(v) if isinstance(v, np.integer) else v

        def rows(frame: pd.DataFrame) -> list[dict]:
            return [{k: cell(v) for k, v in rec.items()} for rec in frame.to_dict("records")]

        e = self.edit
        return {
            "user": str(self.user_id), "direction": self.direction, "target_percentile": _num(self.target_percentile),
            "target_score": _num(self.target_score), "score": _num(self.score), "percentile": _num(self.percentile),
            "found": bool(self.found), "new_score": _num(self.new_score), "new_percentile": _num(self.new_percentile),
            "n_literals": int(self.n_literals), "max_literals": int(self.max_literals),
            "distance": _num(self.distance, 4), "message": self.message,
            "changes": rows(self.changes), "flipped": rows(self.flipped),
            "edit": None if e is None else {
                "n_dropped": e.n_dropped, "score": _num(e.score), "percentile": _num(e.percentile),
                "reaches_target": bool(e.reaches_target), "teacher_score": _num(e.teacher_score),
                "teacher_percentile": _num(e.teacher_percentile), "teacher_score_before": _num(e.teacher_score_before),
                "teacher_percentile_before": _num(e.teacher_percentile_before), "note": e.note,
                "values": rows(e.values)},
        }

    def __repr__(self) -> str:
        return self.summary()

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(self.summary())}</pre>"


#: The columns of :attr:`Counterfactual.changes`.
_CHANGE_COLUMNS = ("output", "words", "statistic", "kind", "unit", "value_now", "value_needed", "condition",
                   "quantile_now", "quantile_needed", "n_literals", "events", "event_change", "card", "band_now",
                   "band_needed", "value_now_text", "value_needed_text", "linear")


def _score(x: float | None) -> str:
    """A rule score as every view writes it (:func:`~rudi_explain.rules.values.points_text`, unsigned)."""
    return points_text(x, sign=False)


# ------------------------------------------------------------------ the search
def _quantile(sorted_values: np.ndarray, x: float) -> float:
    """``x``'s percentile among the sorted defined training values, as a share (0 when undefined)."""
    if math.isnan(x) or not sorted_values.size:
        return 0.0
    return float(percentile_of(x, sorted_values, among_sorted=True)) / 100.0


def _is_event_count(stat: Any, seqs: Any) -> bool:
    """Whether a statistic counts events: Count, or Sum of a categorical one-hot."""
    agg = stat.aggregation.name
    return agg == "Count" or (agg == "Sum" and stat.selected in seqs.vocabularies)


def _is_event_share(stat: Any, seqs: Any) -> bool:
    """Whether a statistic is a share of events: the mean of a categorical one-hot."""
    return stat.aggregation.name == "Mean" and stat.selected in seqs.vocabularies


def _share_in_events(exp: Explanation, index: int, column: int, x: float, needed: float,
                     words: str) -> tuple[int | None, str | None]:
    """A share's change said in events: ``m`` of ``n`` events match; dropping ``k`` matching events gives
    ``(m - k) / (n - k)``, adding ``k`` gives ``(m + k) / (n + k)``. None where the share is not ``m / n``."""
    idx = np.array([index], dtype=np.int64)
    m = len(output_events(exp, idx, column, counted=True)[0])
    n = len(output_events(exp, idx, column, counted=False)[0])
    if n == 0 or math.isnan(x) or abs(m / n - x) > 1e-9 or not 0 <= needed < 1:
        return None, None
    if needed < x:  # drop matching events until the share is at most what is needed
        k = min(m, math.ceil((m - needed * n) / (1.0 - needed) - 1e-9))
        delta = -k
    else:  # add matching events until the share reaches what is needed
        k = max(1, math.ceil((needed * n - m) / (1.0 - needed) - 1e-9))
        delta = k
    what = words[len("share of "):] if words.startswith("share of ") else f"events counted in: {words}"
    if k == 1 and what.startswith("events"):
        what = "event" + what[len("events"):]
    return delta, f"{k} {'fewer' if delta < 0 else 'more'} {what} (now {m} of {n})"


def _events_words(words: str, delta: int) -> str:
    """"2 fewer events where channel is online" from "number of events where channel is online"."""
    what = words
    for prefix in ("number of ", "count of "):
        if what.startswith(prefix):
            what = what[len(prefix):]
            break
    else:
        what = f"events counted in: {words}"
    if abs(delta) == 1 and what.startswith("events"):
        what = "event" + what[len("events"):]
    return f"{abs(delta)} {'fewer' if delta < 0 else 'more'} {what}"


@dataclass
class _Moves:
    """Every band move of every output the rules read (one entry per move)."""

    column: list = field(default_factory=list)
    needed: list = field(default_factory=list)
    cost: list = field(default_factory=list)
    distance: list = field(default_factory=list)
    flipped: list = field(default_factory=list)
    condition: list = field(default_factory=list)
    linear: list = field(default_factory=list)  # a move along a linear card (its value, not a band)


def _band_moves(state: FittedState, index: int, used: np.ndarray) -> _Moves:
    """For each output the rules read, the user's move to each other band between its rule thresholds."""
    L = state.literals
    info = state.rules.info
    train = ~state.is_test
    v_user = state.values[index]
    moves = _Moves()
    for c in np.unique(L.column[used]):  # a loop over statistic outputs, not users
        lits = used[L.column[used] == c]
        t_lits = L.thresholds[lits]
        T = np.unique(t_lits)
        x = float(v_user[c])
        b0 = 0 if math.isnan(x) else int(np.searchsorted(T, x, side="left"))  # thresholds strictly below x
        tv = state.values[train, c]
        tv = np.sort(tv[~np.isnan(tv)])
        q_now = _quantile(tv, x)
        kind = L.output_kind[c]
        with np.errstate(invalid="ignore"):
            now = x > t_lits
        for b in range(len(T) + 1):
            if b == b0:
                continue
            if b < b0:  # down: the band's top, the threshold itself ("at most T[b]")
                needed = float(np.floor(T[b])) if kind == "count" else float(T[b])
                at = lits[t_lits == T[b]][0]
                condition = info.render_literal(Lit(int(at), True))
            else:  # up: the smallest value above T[b-1] in the band
                lo, hi = float(T[b - 1]), float(T[b]) if b < len(T) else math.inf
                if kind == "binary":
                    needed = 1.0
                elif kind == "count":
                    needed = float(np.floor(lo) + 1)
                else:
                    inside = tv[(tv > lo) & (tv <= hi)]
                    needed = float(inside[0]) if inside.size else float(np.nextafter(lo, math.inf))
                at = lits[t_lits == T[b - 1]][0]
                condition = info.render_literal(Lit(int(at), False))
            flips = lits[now != (needed > t_lits)]
            moves.column.append(int(c))
            moves.needed.append(needed)
            moves.cost.append(len(flips))
            moves.distance.append(abs(_quantile(tv, needed) - q_now))
            moves.flipped.append(flips)
            moves.condition.append(condition)
            moves.linear.append(False)
    return moves


def _past_along(x: float, down: bool, whole: bool) -> float:
    """The nearest value strictly past ``x`` (below it when ``down``): a whole number for a count."""
    if whole:
        return float(math.ceil(x) - 1) if down else float(math.floor(x) + 1)
    return float(np.nextafter(x, -math.inf if down else math.inf))


def _linear_moves(state: FittedState, index: int, used: np.ndarray, s0: float, target: float,
                  direction: str) -> _Moves:
    """For each linear term (a linear card), the smallest move of the user's value that alone reaches the target.

    On the card the score moves by ``weight x (clip(value) - clip(now))``, so the value needed is just past
    ``clip(now) + (target - score) / weight``; beyond the card's ``lo`` or ``hi`` it gains nothing, so a
    target past them is not reached by the card alone (its bound is then the move, the nearest it gets). A
    user whose value is undefined is not moved along the line (that is the undefined band's literal).
    """
    L = state.literals
    train = ~state.is_test
    moves = _Moves()
    for term in state.rules:  # a loop over the linear terms, not users
        if not isinstance(term, LinearTerm) or term.weight == 0:
            continue
        c = int(term.column)
        x = float(state.values[index, c])
        if math.isnan(x):
            continue
        lo = -math.inf if term.lo is None else float(term.lo)
        hi = math.inf if term.hi is None else float(term.hi)
        now = min(max(x, lo), hi)
        # down the line when the score must fall with a positive weight, or rise with a negative one
        down = (direction == "below") == (term.weight > 0)
        aim = now + (target - s0) / term.weight
        needed = _past_along(aim, down, L.output_kind[c] == "count")
        needed = max(needed, lo) if down else min(needed, hi)  # clipped: past the bound the card adds nothing
        if needed == x or (needed > x) == down:
            continue
        tv = state.values[train, c]
        tv = np.sort(tv[~np.isnan(tv)])
        lits = used[L.column[used] == c]
        with np.errstate(invalid="ignore"):
            flips = lits[(x > L.thresholds[lits]) != (needed > L.thresholds[lits])]
        moves.column.append(c)
        moves.needed.append(needed)
        moves.cost.append(len(flips))
        moves.distance.append(abs(_quantile(tv, needed) - _quantile(tv, x)))
        moves.flipped.append(flips)
        moves.condition.append(f"{L.output_descriptions[c]} is {'at most' if down else 'at least'} "
                               f"{value_text(L, c, needed, exact=True)}")
        moves.linear.append(True)
    return moves


def _joined(a: _Moves, b: _Moves) -> _Moves:
    return _Moves(*(getattr(a, f.name) + getattr(b, f.name) for f in dataclasses.fields(_Moves)))


def _level(moves: _Moves, level: int, limit: int) -> tuple[np.ndarray, bool]:
    """Every combination of moves on distinct outputs whose costs add up to ``level``.

    Returns an int array (n_candidates, level) of move indices, padded with
    -1, and whether ``limit`` cut the list short.
    """
    cost = np.asarray(moves.cost, dtype=np.int64)
    column = np.asarray(moves.column)
    if level == 0:  # a move that flips no literal (along a linear card) stands alone
        return np.flatnonzero(cost == 0)[:limit].reshape(-1, 1), int((cost == 0).sum()) > limit
    ids = np.flatnonzero((cost >= 1) & (cost <= level))
    out: list[tuple] = []
    cut = False
    for k in range(1, level + 1):  # a loop over combination sizes; the combinations are of moves, not users
        for combo in combinations(ids.tolist(), k):
            if cost[list(combo)].sum() != level or len(set(column[list(combo)].tolist())) < k:
                continue
            out.append(combo + (-1,) * (level - k))
            if len(out) >= limit:
                cut = True
                break
        if cut:
            break
    return (np.asarray(out, dtype=np.int64).reshape(-1, level), cut)


def _score_candidates(state: FittedState, index: int, moves: _Moves, cand: np.ndarray) -> np.ndarray:
    """Rule scores of the user's values with each candidate's moves applied (vectorized over candidates)."""
    L = state.literals
    v_user = state.values[index]
    column = np.asarray(moves.column)
    needed = np.asarray(moves.needed, dtype=np.float64)
    out = np.empty(len(cand))
    for start in range(0, len(cand), CHUNK):
        block = cand[start:start + CHUNK]
        V = np.repeat(v_user[None, :], len(block), axis=0)
        for j in range(block.shape[1]):  # at most max_literals slots
            m = block[:, j]
            ok = m >= 0
            V[np.flatnonzero(ok), column[m[ok]]] = needed[m[ok]]
        out[start:start + len(block)] = score_values(state.rules, L, V)
    return out


def score_values(rules: Any, literals: Any, V: np.ndarray) -> np.ndarray:
    """Rule scores of a value matrix: a set with linear terms (a scorecard's linear cards) reads the values."""
    if getattr(rules, "reads_values", False):
        return rules.score(rules.matrix(V))
    return rules.score(literals.transform_values(V))


def counterfactual(exp: Explanation, index: int, target_percentile: float = 50.0, direction: str = "below",
                   max_literals: int = 3, *, teacher: Any = None, edit_events: bool = True,
                   max_candidates: int = MAX_CANDIDATES) -> Counterfactual:
    """The smallest change of literal values that moves user ``index``'s rule score past a percentile.

    See :meth:`rudi_explain.audit.user.UserView.counterfactual` and the
    module's notes for what "smallest" means.
    """
    if direction not in DIRECTIONS:
        raise InputError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    try:
        p = float(target_percentile)  # a number, or its text (the widget's messages)
    except (TypeError, ValueError):
        p = math.nan
    if isinstance(target_percentile, (bool, np.bool_)) or not 0 <= p <= 100:
        raise InputError(f"target_percentile must be a number from 0 to 100, got {target_percentile!r}")
    check_whole(max_literals, "max_literals", min_value=1)
    max_literals = int(max_literals)
    state = exp.ready_result("the counterfactual")
    rules = state.rules
    if all(isinstance(r, LinearTerm) for r in rules) and len(rules):
        # a scorecard's linear cards beside rules are fine (their values stay); only linear terms are not
        raise InputError("these rules are linear terms of statistic values, not rules over literals: a "
                         "counterfactual is a change of literals (explain with a rule student)")
    L = state.literals
    seqs = exp.sequences
    uid = seqs.users[index]
    train = ~state.is_test
    s_train = state.student_scores.to_numpy(dtype=np.float64)[train]
    target = float(np.percentile(s_train, p))
    s0 = float(state.student_scores.iloc[index])

    def past(s: np.ndarray) -> np.ndarray:
        return s < target if direction == "below" else s > target

    def pct(s: float) -> float:
        return percentile(s, s_train)

    empty_changes = pd.DataFrame(columns=list(_CHANGE_COLUMNS))
    empty_flips = pd.DataFrame(columns=["literal", "now", "after", "rules"])
    base = dict(user_id=uid, direction=direction, target_percentile=p, target_score=target, score=s0,
                percentile=pct(s0), max_literals=int(max_literals))
    where = f"{direction} the {percentile_words(p)} of training rule scores ({_score(target)})"
    if past(np.array([s0]))[0]:
        return Counterfactual(**base, found=True, new_score=s0, new_percentile=pct(s0), n_literals=0, distance=0.0,
                              changes=empty_changes, flipped=empty_flips, edit=None,
                              message=f"user {uid!r}: the rule score {_score(s0)} is already {where}: "
                                      "nothing to change")
    reads = rules_using(rules, L.n_literals)
    used = np.flatnonzero(reads.any(axis=1))
    moves = _joined(_band_moves(state, index, used), _linear_moves(state, index, used, s0, target, direction))
    best, n_scored, cut = None, 0, False
    nearest: tuple[float, int, np.ndarray] | None = None  # the furthest move toward the target, if none reaches it
    # fewest flips first (level 0: a linear card's value moved alone): stop at the first level that works
    for level in range(0, int(max_literals) + 1):
        if n_scored >= max_candidates:
            cut = True
            break
        cand, cut = _level(moves, level, max_candidates - n_scored)
        if not len(cand):
            if cut:
                break
            continue
        scores = _score_candidates(state, index, moves, cand)
        n_scored += len(cand)
        toward = scores if direction == "below" else -scores
        k = int(np.argmin(toward))
        if nearest is None or toward[k] < nearest[0] - 1e-12:  # strictly better: fewer flips win a tie
            nearest = (float(toward[k]), level, cand[k][cand[k] >= 0])
        ok = np.flatnonzero(past(scores))
        if ok.size:
            dist = np.where(cand[ok] >= 0, np.asarray(moves.distance)[np.maximum(cand[ok], 0)], 0.0).sum(axis=1)
            margin = np.abs(scores[ok] - target)
            pick = ok[np.lexsort((-margin, dist))[0]]
            best = (level, cand[pick][cand[pick] >= 0], float(scores[pick]))
            break
        if cut or n_scored >= max_candidates:
            cut = True
            break
    if best is None:
        why = (f"the search stopped after {n_scored:,} candidate changes (max_candidates)" if cut else
               f"no change of at most {max_literals} literal{'s' if max_literals > 1 else ''} does it")
        message = f"user {uid!r}: no counterfactual found to move the rule score {_score(s0)} {where}: {why}"
        if nearest is None or (nearest[0] if direction == "below" else -nearest[0]) == s0:
            return Counterfactual(**base, found=False, new_score=None, new_percentile=None, n_literals=0,
                                  distance=math.nan, changes=empty_changes, flipped=empty_flips, edit=None,
                                  n_candidates=n_scored, message=message + "; no change moves it at all")
        # the nearest score reachable, and the change that reaches it (``found`` stays False)
        near_score = nearest[0] if direction == "below" else -nearest[0]
        changes, flips = _describe(exp, state, index, moves, nearest[2], reads)
        return Counterfactual(**base, found=False, new_score=near_score, new_percentile=pct(near_score),
                              n_literals=nearest[1], distance=float(np.asarray(moves.distance)[nearest[2]].sum()),
                              changes=changes, flipped=flips, edit=None, n_candidates=n_scored,
                              message=message + f"; the nearest it gets is {_score(near_score)} ("
                                      f"{percentile_words(pct(near_score))}, from {percentile_words(pct(s0))}), "
                                      + (f"flipping {nearest[1]} literal{'s' if nearest[1] > 1 else ''}"
                                         if nearest[1] else "moving a linear card's value to its bound")
                                      + ": allow more changes or aim at another percentile")
    level, chosen, new_score = best
    changes, flips = _describe(exp, state, index, moves, chosen, reads)
    edit = None
    if edit_events and len(changes) and changes["event_change"].notna().all() and \
            (changes["event_change"] < 0).all():
        edit = _edit(exp, state, index, changes, past, pct, teacher)
    n_out = len(changes)
    n_line = int(changes["linear"].astype(bool).sum())
    how = (f"flip {level} literal{'s' if level > 1 else ''} on {n_out} statistic output{'s' if n_out > 1 else ''}"
           if level else f"move the value of {n_line} linear card{'s' if n_line > 1 else ''}")
    message = f"user {uid!r}: {how} to move the rule score {_score(s0)} {where}"
    return Counterfactual(**base, found=True, new_score=new_score, new_percentile=pct(new_score), n_literals=level,
                          distance=float(np.asarray(moves.distance)[chosen].sum()), changes=changes, flipped=flips,
                          edit=edit, message=message, n_candidates=n_scored)


def _describe(exp: Explanation, state: FittedState, index: int, moves: _Moves, chosen: np.ndarray,
              reads: np.ndarray) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The chosen moves as tidy tables: outputs changed, literals flipped."""
    L = state.literals
    seqs = exp.sequences
    info = state.rules.info
    train = ~state.is_test
    rows, flips = [], []
    for m in chosen.tolist():  # the few chosen moves
        c = moves.column[m]
        x = float(state.values[index, c])
        needed = moves.needed[m]
        tv = state.values[train, c]
        tv = np.sort(tv[~np.isnan(tv)])
        stat = L.statistics[int(L.output_statistic[c])] if L.statistics is not None else None
        counts = stat is not None and _is_event_count(stat, seqs)
        delta = int(round(needed - (0.0 if math.isnan(x) else x))) if counts else None
        words_events = _events_words(L.output_descriptions[c], delta) if counts and delta else None
        if not counts and stat is not None and L.output_kind[c] == "share" and _is_event_share(stat, seqs):
            delta, words_events = _share_in_events(exp, index, c, x, needed, L.output_descriptions[c])
        card = card_on(state.scorecard, c)
        bands: tuple[str | None, str | None] = (None, None)
        on_line = card is not None and card.linear is not None and not math.isnan(x)
        if card is not None and on_line:
            # a linear card has one band: the move is named by the points on its line (clipped to lo..hi)
            pts = card.points(np.array([x, needed]))
            bands = (f"{points_text(float(pts[0]))} points", f"{points_text(float(pts[1]))} points")
        elif card is not None:
            idx = card.band_index(np.array([x, needed]))
            bands = (band_label(card, int(idx[0])), band_label(card, int(idx[1])))
        rows.append({
            "output": c, "words": L.output_descriptions[c], "statistic": L.pipeline_text(c),
            "kind": L.output_kind[c], "unit": L.output_unit[c], "value_now": x, "value_needed": needed,
            "condition": moves.condition[m],
            "quantile_now": _quantile(tv, x), "quantile_needed": _quantile(tv, needed),
            "n_literals": moves.cost[m],
            "events": words_events,
            "event_change": delta,
            "card": None if card is None else card.name, "band_now": bands[0], "band_needed": bands[1],
            "value_now_text": value_text(L, c, x), "value_needed_text": value_text(L, c, needed),
            "linear": bool(on_line),  # named by the points on a linear card (not by a band)
        })
        for i in moves.flipped[m].tolist():
            holds = bool(state.literal_matrix[index, i])
            flips.append({"literal": int(i), "now": info.render_literal(Lit(int(i), not holds)),
                          "after": info.render_literal(Lit(int(i), holds)),
                          "rules": np.flatnonzero(reads[i]).tolist()})
    # whole events, or <NA> for other outputs
    changes = pd.DataFrame(rows, columns=list(_CHANGE_COLUMNS)).astype({"event_change": "Int64"})
    return changes, pd.DataFrame(flips, columns=["literal", "now", "after", "rules"])


# ------------------------------------------------------------------ carrying it out on the events
def counted_events(exp: Explanation, index: int, column: int) -> np.ndarray:
    """Event positions (in ``exp.sequences``) of user ``index`` that statistic output ``column`` counts.

    The statistic's row operators run on the user's events; a ``GroupBy``
    output keeps its group, a one-hot output its category. Sorted, so the
    last ones are the most recent.
    """
    kept, _ = output_events(exp, np.array([index], dtype=np.int64), column)
    return np.sort(kept)


def without_events(seqs: Sequences, index: int, drop: np.ndarray) -> Sequences:
    """User ``index`` alone, without the events at positions ``drop`` (same vocabularies, reference time)."""
    positions = np.arange(seqs.offsets[index], seqs.offsets[index + 1])
    kept = positions[~np.isin(positions, drop)]
    return sequences_of_events(seqs, kept, np.zeros(len(kept), dtype=np.int64), 1, [seqs.users[index]])


def _teacher(exp: Explanation, teacher: Any) -> tuple[Any, str]:
    """The model to ask (as :mod:`rudi_explain.audit.attributions` finds it), or None and why not."""
    try:
        return teacher_of(exp, teacher, fix="pass teacher=model"), ""
    except TeacherUnavailable as why:
        return None, f"the model's score of the edited events is not given: {why}"


def _edit(exp: Explanation, state: FittedState, index: int, changes: pd.DataFrame, past: Any, pct: Any,
          teacher: Any) -> EventEdit:
    """Drop the most recent counted events of every "fewer events" change; evaluate again."""
    seqs = exp.sequences
    L = state.literals
    parts = [np.zeros(0, dtype=np.int64)]
    for r in changes.itertuples():  # the few changed outputs
        counted = counted_events(exp, index, int(r.output))
        n = min(-int(r.event_change), len(counted))
        parts.append(counted[len(counted) - n:])  # the most recent n
    drop = np.unique(np.concatenate(parts))
    edited = without_events(seqs, index, drop)
    values = L.values(edited)
    score = float(score_values(state.rules, L, values)[0])
    table = changes[["output", "words", "value_now", "value_needed"]].copy()
    table["value_after"] = values[0, changes["output"].to_numpy(dtype=np.int64)]
    for col in ("value_now", "value_needed", "value_after"):  # for people: a share as a percent
        table[f"{col}_text"] = [value_text(L, int(c), float(x)) for c, x in zip(table["output"], table[col])]
    dropped = seqs.events(seqs.users[index]).iloc[drop - seqs.offsets[index]].reset_index(drop=True)
    y = state.teacher_scores.to_numpy(dtype=np.float64)
    y_train = y[~state.is_test]
    before = float(y[index])
    model, note = _teacher(exp, teacher)
    after = None
    if model is not None:
        # The model scores the user as is too: a model passed here may not be the one explain() asked.
        before = float(model.score(seqs.subset(np.array([index])), allow_constant=True)[0])
        after = float(model.score(edited, allow_constant=True)[0])
    return EventEdit(
        dropped=dropped, values=table, score=score, percentile=pct(score),
        reaches_target=bool(past(np.array([score]))[0]),
        teacher_score=after, teacher_percentile=None if after is None else percentile(after, y_train),
        teacher_score_before=before, teacher_percentile_before=percentile(before, y_train), note=note)
