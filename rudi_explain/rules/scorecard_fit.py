"""Fitting a scorecard: read off an additive rule set, merge bands, refit points jointly, explain signs.

The steps of :class:`rudi_explain.rules.scorecard.Scorecard` (SEMANTICS.md,
"The scorecard"), on value matrices and cards, so that the model class
stays small:

* :func:`read_off`: every rule whose literals all read one output becomes
  part of that output's card (band edges: the union of its literals'
  thresholds; a band's points: the weights of those rules that fire in it,
  constant on the band because no literal of the output has a threshold
  inside it); the other rules are interaction rules. Exactly the same scores.
* :func:`describe`: centre every card's points on the training users (the
  base absorbs the shift), give every band its share of users and mean
  teacher score, and a note where its points and its own gap differ in sign.
* :func:`refit`: drop every band edge that leaves 1% of the users whose
  value is defined or fewer on one side (:data:`VACUOUS_SHARE`), merge
  adjacent bands (smallest change in training error first) to at most
  ``max_bands``, then fit all points jointly by least squares (a small
  ridge), monotone where the teacher's mean is, linear where that fits
  validation users at least as well; a band card gains band edges (literal
  thresholds, to at most ``max_bands`` bands) where validation users say
  each fits clearly better. A card left with one value band and
  no undefined band adds nothing and goes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from collections.abc import Sequence as SequenceT
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace

import numpy as np
from scipy.linalg import cho_factor, cho_solve, cholesky, solve_triangular
from scipy.optimize import lsq_linear

from rudi_explain.exceptions import InputError
from rudi_explain.rules.formula import formula_literals
from rudi_explain.rules.literals import Literals, is_vacuous
from rudi_explain.rules.ruleset import Rule, RuleSet
from rudi_explain.rules.scorecard_cards import UNDEFINED, Band, Card, Linear
from rudi_explain.rules.values import points_text

__all__ = ["read_off", "describe", "with_notes", "notes_later", "refit", "refit_points", "DropOne", "fires_of",
           "scores_of", "check_values", "sample_rows", "MAX_BANDS", "RIDGE", "DEFINED_THRESHOLD", "CHOICE_USERS"]

#: Most value bands a card keeps after :func:`refit` (the undefined band not counted).
MAX_BANDS = 6
#: Threshold of the literal "the output is defined" that :meth:`Scorecard.to_rules` adds where a card's
#: undefined band and its lowest band have different points (no literal ``value > t`` with a round ``t``
#: tells them apart: both are below every threshold). Every finite value but this one lies above it, so
#: :func:`read_off` reads it as no band edge (the rules written back read off as the scorecard they came from).
DEFINED_THRESHOLD = float(-np.finfo(np.float64).max)
#: Ridge penalty per training user on every point (not the base): only keeps the joint fit stable.
RIDGE = 1e-6
#: Users a choice looks at, at most, on each side (fitting and validation): a card's form, the unit dropped
#: when over budget, the pruning point started from. A choice needs a sample; the points are fitted on all
#: the users (issue 27: at 100,000 users the joint fits of every choice took half the job). Below it, every user.
CHOICE_USERS = 20_000
#: A band edge is added to a card (:func:`refit`, ``split=True``) only where the validation users' squared
#: errors fall, on average, by more than this many standard errors of that mean fall (paired, user by user).
#: The best of some ten candidate edges, chosen on a few dozen validation users (wage panel: 44), is often
#: noise: with no bar, CDNOW draw 0's held-out fidelity fell from 0.775 to 0.766; with 1, a card of an output
#: the teacher ignores gained an edge on 68% of 40 seeds; with 1.5, 30%, and no case of bench_real lost
#: fidelity (issue 26, 24 cases; 2 gave up the gains on CDNOW).
SPLIT_SE = 1.5


def sample_rows(mask: np.ndarray, limit: int = CHOICE_USERS) -> np.ndarray:
    """The rows where ``mask`` holds, or a fixed sample of ``limit`` of them (sorted; the same on every machine)."""
    rows = np.flatnonzero(mask)
    if rows.size <= limit:
        return rows
    return np.sort(np.random.default_rng(0).permutation(rows)[:limit])


def check_values(values: np.ndarray, y: np.ndarray | None, literals: Literals) -> tuple[np.ndarray, np.ndarray | None]:
    """``values`` as a float (n_users, n_outputs) matrix and ``y`` as float (n_users,), or a clear error."""
    V = np.asarray(values)
    if V.ndim != 2 or V.shape[1] != literals.n_outputs:
        raise InputError(f"expected a value matrix of shape (n_users, {literals.n_outputs}) (one column per "
                         f"statistic output), got shape {V.shape}")
    V = V.astype(np.float64, copy=False)
    if y is None:
        return V, None
    t = np.asarray(y, dtype=np.float64).reshape(-1)
    if t.size != V.shape[0]:
        raise InputError(f"{t.size} teacher scores for {V.shape[0]} users")
    if not np.isfinite(t).all():
        raise InputError("the teacher scores must be finite")
    if t.size == 0:
        raise InputError("need at least one training user")
    return V, t


# ------------------------------------------------------------------ read-off


def read_off(rules: RuleSet, values: np.ndarray) -> tuple[float, list[Card], list[Rule]]:
    """The cards and interaction rules of an additive rule set, uncentred: ``(base, cards, interactions)``.

    Scores are those of ``rules`` exactly. ``values`` (the training users)
    only decides which outputs get an undefined band (those undefined for
    some of them).
    """
    if type(rules).score is not RuleSet.score:
        raise InputError(f"a {type(rules).__name__} is not a sum of rules (the first rule that fires decides): "
                         "only an additive RuleSet reads as a scorecard")
    table = rules.literal_table()
    V, _ = check_values(values, None, table)
    single: dict[int, list[Rule]] = {}
    interactions: list[Rule] = []
    base = rules.intercept
    for r in rules.formula_rules():
        cols = {int(table.column[lit.index]) for lit in formula_literals(r.formula)}
        if len(cols) == 1:
            single.setdefault(cols.pop(), []).append(r)
        elif cols:
            interactions.append(r)
        else:  # a constant formula (never after from_formulas' simplification)
            base += r.weight * float(r.fires(np.zeros((1, table.n_literals), dtype=bool))[0])
    cards = []
    for c in sorted(single):
        rs = single[c]
        edges = sorted({float(table.thresholds[lit.index]) for r in rs for lit in formula_literals(r.formula)}
                       - {DEFINED_THRESHOLD})
        # One value per band, then NaN: every literal of the output reads the whole band as it reads this value
        # (the lowest band's value is above DEFINED_THRESHOLD, as every value but -inf and that one are).
        reps = np.array([*edges, np.nextafter(edges[-1], np.inf), np.nan] if edges else [0.0, np.nan])
        W = np.full((reps.size, table.n_outputs), np.nan)
        W[:, c] = reps
        Z = table.transform_values(W)
        pts = np.zeros(reps.size)
        for r in rs:
            pts[r.fires(Z)] += r.weight
        can_be_undefined = bool(table.output_undefined[c]) or bool(np.isnan(V[:, c]).any())
        cards.append(Card(
            column=c, name=table.output_descriptions[c], kind=table.output_kind[c], unit=table.output_unit[c],
            edges=tuple(edges), bands=tuple(Band(float(p)) for p in pts[:-1]),
            undefined=Band(float(pts[-1])) if can_be_undefined else None,
            undefined_words=table.output_undefined_words[c] if can_be_undefined else "",
        ))
    return float(base), cards, interactions


# ------------------------------------------------------------------ centring, shares, notes


def describe(base: float, cards: SequenceT[Card], interactions: SequenceT[Rule], literals: Literals,
             values: np.ndarray, y: np.ndarray) -> tuple[float, list[Card]]:
    """Centred cards with every band's share, mean teacher score and sign note: ``(base, cards)``.

    Scores are unchanged: each card's mean points over these users moves into the base.
    """
    V, t = check_values(values, y, literals)
    assert t is not None
    centred = []
    for card in cards:
        v = V[:, card.column]
        shift = float(card.points(v).mean())
        base += shift
        idx = card.band_index(v)
        und = None
        if card.undefined is not None:
            und = _band(card.undefined.points - shift, idx == UNDEFINED, t)
        if card.linear is not None:
            lin = card.linear
            band = _band(0.0, idx != UNDEFINED, t)
            centred.append(card.with_(undefined=und, linear=replace(
                lin, offset=lin.offset - shift, share=band.share, teacher=band.teacher, note=None)))
            continue
        bands = tuple(_band(b.points - shift, idx == k, t) for k, b in enumerate(card.bands))
        centred.append(card.with_(bands=bands, undefined=und))
    return base, (_with_notes(centred, interactions, literals, V, t) if _NOTES.get() else centred)


#: Whether :func:`describe` writes the sign notes (off inside :func:`notes_later`).
_NOTES: ContextVar[bool] = ContextVar("rudi_explain_scorecard_notes", default=True)


@contextmanager
def notes_later() -> Iterator[None]:
    """Within it, scorecards are described without their sign notes (the caller writes them once, on the
    scorecard it keeps, with :func:`with_notes`): explain()'s post-processing describes some 35 scorecards,
    one of which is kept, and the notes were a fifth of its descriptions' time. Points, shares and teacher
    means are the same either way; in this thread (a context variable) only."""
    token = _NOTES.set(False)
    try:
        yield
    finally:
        _NOTES.reset(token)


def _band(points: float, mask: np.ndarray, y: np.ndarray) -> Band:
    n = int(mask.sum())
    return Band(float(points), n / mask.size, float(y[mask].mean()) if n else None)


@dataclass(frozen=True)
class _Part:
    """A band of a card, or an interaction rule, as a candidate to account for another band's points."""

    text: str
    points: float
    members: np.ndarray  # bool, the training users in it
    card: int  # index of its card; -1 for an interaction rule


def _parts(cards: SequenceT[Card], interactions: SequenceT[Rule], literals: Literals, V: np.ndarray) -> list[_Part]:
    parts = []
    for i, card in enumerate(cards):
        idx = card.band_index(V[:, card.column])
        if card.undefined is not None:
            parts.append(_Part(f"'{card.undefined_label()}' of {card.name}", card.undefined.points,
                               idx == UNDEFINED, i))
        if card.linear is None:
            for k, (label, b) in enumerate(zip(card.band_labels(), card.bands)):
                parts.append(_Part(f"'{label}' of {card.name}", b.points, idx == k, i))
    for r, fired in zip(interactions, fires_of(interactions, literals, V).T):
        parts.append(_Part(f"the rule '{r.text}'", r.weight, fired, -1))
    return parts


def _literals_of(rules: SequenceT[Rule]) -> list[int]:
    """The literals some of ``rules`` read: the only ones their firing needs."""
    return [lit.index for r in rules for lit in formula_literals(r.formula)]


def fires_of(rules: SequenceT[Rule], literals: Literals, V: np.ndarray) -> np.ndarray:
    """Which of ``rules`` fire for which rows of the value matrix ``V``: bool (n_rows, n_rules)."""
    if not rules:
        return np.zeros((V.shape[0], 0), dtype=bool)
    Z = literals.transform_values(V, only=_literals_of(rules))
    return np.column_stack([r.fires(Z) for r in rules])


def scores_of(base: float, cards: SequenceT[Card], weights: SequenceT[float], V: np.ndarray,
              fires: np.ndarray) -> np.ndarray:
    """Scores: ``base`` + every card's points + the weights of the rules that fire (``fires``: :func:`fires_of`),
    summed in that order (:meth:`Scorecard.predict`'s, which users the sums tie depends on)."""
    s = np.full(V.shape[0], base)
    for c in cards:
        s += c.points(V[:, c.column])
    for w, fired in zip(weights, fires.T):
        s[fired] += w
    return s


def _contradicts(points: float, gap: float, scale: float) -> bool:
    tol = 1e-9 * scale
    return abs(points) > tol and abs(gap) > tol and (points > 0) != (gap > 0)


def with_notes(cards: SequenceT[Card], interactions: SequenceT[Rule], literals: Literals, values: np.ndarray,
               y: np.ndarray, shown: float = 1.0) -> list[Card]:
    """``cards`` with their sign notes written afresh, the points and gaps in them times ``shown``.

    For a scorecard fitted on ``y / k`` (scores near the float limits, whose squares overflow) and then put
    back in the teacher's units: its notes name the same cards and rules, with the numbers the reader sees.
    """
    V, t = check_values(values, y, literals)
    assert t is not None

    def bare(c: Card) -> Card:
        return c.with_(bands=tuple(replace(b, note=None) for b in c.bands),
                       undefined=None if c.undefined is None else replace(c.undefined, note=None),
                       linear=None if c.linear is None else replace(c.linear, note=None))

    return _with_notes([bare(c) for c in cards], interactions, literals, V, t, shown)


def _with_notes(cards: list[Card], interactions: SequenceT[Rule], literals: Literals, V: np.ndarray,
                y: np.ndarray, shown: float = 1.0) -> list[Card]:
    """Each band whose points and gap differ in sign gets a note naming what accounts for it (numbers times
    ``shown``)."""
    mean, scale = float(y.mean()), max(1.0, float(np.abs(y).max()))
    parts: list[_Part] | None = None
    out = []
    for i, card in enumerate(cards):
        idx = card.band_index(V[:, card.column])
        changes: dict[str, object] = {}
        rows: list[tuple[str, Band, np.ndarray]] = []
        if card.undefined is not None:
            rows.append(("undefined", card.undefined, idx == UNDEFINED))
        if card.linear is None:
            rows.extend((str(k), b, idx == k) for k, b in enumerate(card.bands))
        bands = list(card.bands)
        for key, b, members in rows:
            if b.teacher is None or not _contradicts(b.points, b.teacher - mean, scale):
                continue
            parts = parts if parts is not None else _parts(cards, interactions, literals, V)
            note = _note(b.points, b.teacher - mean, members, [p for p in parts if p.card != i], shown)
            if key == "undefined":
                changes["undefined"] = replace(b, note=note)
            else:
                bands[int(key)] = replace(b, note=note)
        if card.linear is not None:
            v = V[:, card.column]
            d = ~np.isnan(v)
            x = np.clip(v[d], card.linear.lo, card.linear.hi)
            if d.sum() > 1 and x.std() > 0 and y[d].std() > 0:
                corr = float(np.corrcoef(x, y[d])[0, 1])
                if _contradicts(card.linear.slope, corr, 1.0):
                    parts = parts if parts is not None else _parts(cards, interactions, literals, V)
                    others = [p for p in parts if p.card != i]
                    changes["linear"] = replace(card.linear,
                                                note=_linear_note(card.linear.slope, corr, v, others, shown))
        else:
            changes["bands"] = tuple(bands)
        out.append(card.with_(**changes))
    return out


def _pct(x: float) -> str:
    return f"{x * 100:.0f}%"


def _note(points: float, gap: float, members: np.ndarray, others: SequenceT[_Part], shown: float = 1.0) -> str:
    head = (f"points {points_text(points * shown)} though the teacher's mean in this band is "
            f"{'above' if gap > 0 else 'below'} the average ({points_text(gap * shown)})")
    if not others or not members.any():
        return f"{head}; no other card or rule shares its users"
    M = np.column_stack([p.members for p in others])
    # the correlation of 0/1 columns from whole-number counts (shares of users in each, and in both): no
    # float matrix of every training user by every part
    n = members.size
    share, shares = members.sum() / n, M.sum(axis=0) / n
    both = M[members].sum(axis=0) / n
    cov = both - shares * share
    sd = np.sqrt(shares * (1.0 - shares)) * np.sqrt(share * (1.0 - share))
    corr = np.divide(cov, sd, out=np.zeros_like(cov), where=sd > 0)
    # What accounts for it carries the band's effect: overlaps its users and has points of the gap's sign.
    carries = np.array([(p.points > 0) == (gap > 0) and p.points != 0 for p in others])
    pool = np.flatnonzero((corr > 0) & carries)
    if not pool.size:
        pool = np.flatnonzero(corr > 0)
    if not pool.size:
        return f"{head}; no other card or rule overlaps its users more than chance"
    j = int(pool[np.argmax(corr[pool])])
    best = others[j]
    inside, overall = float(M[members, j].mean()), float(M[:, j].mean())
    verb = "fire" if best.card < 0 else "are in"
    if inside >= 0.5:
        return (f"{head}: users of this band mostly ({_pct(inside)}) {verb} {best.text} "
                f"({points_text(best.points * shown)})")
    return (f"{head}: users of this band more often {verb} {best.text} ({points_text(best.points * shown)}; "
            f"{_pct(inside)} of them against {_pct(overall)} of all users)")


def _linear_note(slope: float, corr: float, v: np.ndarray, others: SequenceT[_Part], shown: float = 1.0) -> str:
    head = (f"the slope is {'positive' if slope > 0 else 'negative'} though the teacher "
            f"{'rises' if corr > 0 else 'falls'} with the value (correlation {corr:+.2f})")
    d = ~np.isnan(v)
    best, best_corr = None, 0.0
    for p in others:
        m = p.members[d].astype(np.float64)
        if m.std() > 0 and v[d].std() > 0 and (p.points > 0) == (corr > 0) and p.points != 0:
            c = float(np.corrcoef(v[d], m)[0, 1])
            if c > best_corr:
                best, best_corr = p, c
    if best is None:
        return f"{head}; no other card or rule goes with higher values"
    return (f"{head}: higher values go with {best.text} ({points_text(best.points * shown)}; "
            f"correlation {best_corr:+.2f})")


# ------------------------------------------------------------------ refit


@dataclass(frozen=True)
class _Form:
    """How one card is fitted: its bands (merged), monotone direction (+1, -1, 0 free), linear or not."""

    card: Card
    direction: int = 0
    linear: tuple[float, float] | None = None  # (lo, hi) when fitted linear


def _solid_edges(card: Card, v: np.ndarray) -> Card:
    """The card without the band edges that leave too few of the users whose value is defined on one side.

    An edge with 99% of them or more on one side (:func:`~rudi_explain.rules.literals.is_vacuous`) makes a
    band a reader cannot use: it merges with its neighbour. So does an edge whose literal ``value > edge``
    is vacuous on all the users (the rules written back read it). The undefined band is no value band and
    stays, however few users it has.
    """
    if not card.edges:
        return card
    d = np.sort(v[~np.isnan(v)])
    below = np.searchsorted(d, np.asarray(card.edges, dtype=np.float64), side="right")  # at most the edge
    # and the literal "more than the edge" (false where undefined) is no vacuous literal on all users either
    keep = ~is_vacuous(below, d.size) & ~is_vacuous(d.size - below, v.size)
    if keep.all():
        return card
    edges = tuple(e for e, k in zip(card.edges, keep) if k)
    return card.with_(edges=edges, bands=tuple(Band(0.0) for _ in range(len(edges) + 1)))


def _merge(card: Card, v: np.ndarray, target: np.ndarray, max_bands: int) -> Card:
    """The card with adjacent value bands merged: empty ones first, then to at most ``max_bands``.

    Merging bands ``a`` and ``b`` costs ``n_a n_b / (n_a + n_b) (m_a - m_b)^2`` in
    training error, with ``m`` the mean of ``target`` (the teacher less the
    other cards and rules) in the band: the cheapest pair goes first.
    """
    idx = card.band_index(v)
    ok = idx >= 0
    n = np.bincount(idx[ok], minlength=len(card.bands)).astype(np.float64).tolist()
    s = np.bincount(idx[ok], weights=target[ok], minlength=len(card.bands)).tolist()
    edges = list(card.edges)

    def join(k: int) -> None:  # bands k and k + 1 become one: edge k goes
        n[k] += n.pop(k + 1)
        s[k] += s.pop(k + 1)
        edges.pop(k)

    while len(n) > 1 and 0.0 in n:
        k = n.index(0.0)
        join(k - 1 if k > 0 else 0)
    while len(n) > max_bands:
        cost = [n[k] * n[k + 1] / (n[k] + n[k + 1]) * (s[k] / n[k] - s[k + 1] / n[k + 1]) ** 2
                for k in range(len(n) - 1)]
        join(int(np.argmin(cost)))
    return card.with_(edges=tuple(edges), bands=tuple(Band(0.0) for _ in range(len(edges) + 1)))


def _merges_by_target(card: Card, v: np.ndarray, max_bands: int) -> bool:
    """Whether :func:`_merge` would weigh its target: the card has more than ``max_bands`` non-empty bands."""
    idx = card.band_index(v)
    return max(1, int(np.count_nonzero(np.bincount(idx[idx >= 0], minlength=len(card.bands))))) > max_bands


def _direction(card: Card, v: np.ndarray, y: np.ndarray) -> int:
    """+1 / -1 where the teacher's mean rises / falls (weakly) across the card's non-empty value bands, else 0."""
    idx = card.band_index(v)
    ok = idx >= 0
    n = np.bincount(idx[ok], minlength=len(card.bands))
    s = np.bincount(idx[ok], weights=y[ok], minlength=len(card.bands))
    means = s[n > 0] / n[n > 0]
    if means.size < 2:
        return 0
    d = np.diff(means)
    return 1 if (d >= 0).all() else -1 if (d <= 0).all() else 0


def _design(forms: SequenceT[_Form], fires: np.ndarray, V: np.ndarray,
            cache: dict[tuple, tuple[list[np.ndarray], list[float], list[float]]] | None = None
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Columns (every card's increments or slope, its undefined band, each interaction, the base) and bounds.

    ``cache`` keeps each form's columns (for the same ``V``): the choice of forms builds many designs that
    differ in one card.
    """
    cols, lb, ub = [], [], []
    for f in forms:
        key = (f.card.column, f.card.edges, f.card.undefined is not None, f.linear, f.direction)
        part = cache.get(key) if cache is not None else None
        if part is None:
            part = _form_columns(f, V)
            if cache is not None:
                cache[key] = part
        cols += part[0]
        lb += part[1]
        ub += part[2]
    for k in range(fires.shape[1]):
        cols.append(fires[:, k].astype(np.float64))
        lb.append(-np.inf)
        ub.append(np.inf)
    cols.append(np.ones(V.shape[0]))
    lb.append(-np.inf)
    ub.append(np.inf)
    return np.column_stack(cols), np.array(lb), np.array(ub)


def _form_columns(f: _Form, V: np.ndarray) -> tuple[list[np.ndarray], list[float], list[float]]:
    """One card's columns in :func:`_design` and their bounds."""
    cols, lb, ub = [], [], []
    v = V[:, f.card.column]
    nan = np.isnan(v)
    low, high = (0.0, np.inf) if f.direction > 0 else (-np.inf, 0.0) if f.direction < 0 else (-np.inf, np.inf)
    if f.linear is not None:
        lo, hi = f.linear
        cols.append(np.where(nan, 0.0, np.clip(v, lo, hi) - lo))
        lb.append(low)
        ub.append(high)
    else:
        idx = f.card.band_index(v)
        for j in range(1, len(f.card.bands)):  # cumulative: band k's points are the sum of increments 1..k
            cols.append((idx >= j).astype(np.float64))
            lb.append(low)
            ub.append(high)
    if f.card.undefined is not None:
        cols.append(nan.astype(np.float64))
        lb.append(-np.inf)
        ub.append(np.inf)
    return cols, lb, ub


#: Rounds of :func:`_sign_constrained` per variable before it hands over to BVLS.
ACTIVE_SET_ROUNDS = 10


def _solve(A: np.ndarray, y: np.ndarray, lb: np.ndarray, ub: np.ndarray, ridge: float) -> np.ndarray:
    """Least squares with a ridge on all but the last column (the base), within bounds.

    Every bound is 0 or infinite (a monotone card's increments share one sign; see :func:`_design`), so the
    problem is a strictly convex quadratic in the normal equations with some variables of a fixed sign:
    :func:`_sign_constrained` solves it exactly, several times faster than ``scipy.optimize.lsq_linear``'s
    BVLS at these sizes (issue 27: some 300 solves a scorecard at 5,000 users).
    """
    G = A.T @ A
    h = A.T @ y
    penalty = np.full(A.shape[1], ridge * A.shape[0])
    penalty[-1] = 0.0
    G[np.diag_indices_from(G)] += penalty
    if np.isinf(lb).all() and np.isinf(ub).all():
        return np.asarray(cho_solve(cho_factor(G, check_finite=False), h, check_finite=False))
    assert ((lb == 0) | np.isneginf(lb)).all() and ((ub == 0) | np.isposinf(ub)).all(), "bounds are 0 or infinite"
    return _sign_constrained(G, h, lb == 0, ub == 0)


def _sign_constrained(G: np.ndarray, h: np.ndarray, nonnegative: np.ndarray, nonpositive: np.ndarray
                      ) -> np.ndarray:
    """``argmin 1/2 x'Gx - h'x`` with ``x >= 0`` where ``nonnegative``, ``x <= 0`` where ``nonpositive``.

    ``G`` is positive definite, so the minimum is unique. Lawson and Hanson's active set method (the NNLS
    algorithm, written on the normal equations, with free variables always in the passive set): from a
    feasible point, the bounded variable whose gradient most wants to leave zero joins the passive set,
    and the passive set's unconstrained minimum is approached as far as feasibility allows, variables that
    reach zero leaving. It ends when no bounded variable at zero has a descent direction, which is the
    minimum's optimality condition.
    """
    p = h.size
    flip = np.where(nonpositive, -1.0, 1.0)  # x <= 0 as -x >= 0
    G = G * flip[:, None] * flip[None, :]
    h = h * flip
    bounded = nonnegative | nonpositive

    def minimum_on(passive: np.ndarray) -> np.ndarray:
        out = np.zeros(p)
        at = np.flatnonzero(passive)
        if at.size:
            sub = G[np.ix_(at, at)]
            out[at] = cho_solve(cho_factor(sub, check_finite=False), h[at], check_finite=False)
        return out

    # A feasible start near the answer: the unconstrained minimum's passive set, less the bounded variables
    # that come out below zero, until none does.
    passive = np.ones(p, dtype=bool)
    x = minimum_on(passive)
    while (wrong := bounded & passive & (x <= 0)).any():
        passive &= ~wrong
        x = minimum_on(passive)
    tol = 1e-12 * p * max(float(np.abs(h).max()), 1e-300)
    for _ in range(ACTIVE_SET_ROUNDS * (p + 1)):
        gradient = h - G @ x  # minus the gradient: positive where x_i wants to grow
        free_to_move = bounded & ~passive & (gradient > tol)
        if not free_to_move.any():
            return x * flip
        at = np.flatnonzero(free_to_move)
        passive[at[np.argmax(gradient[at])]] = True
        while True:
            s = minimum_on(passive)
            below = np.flatnonzero(bounded & passive & (s <= 0))
            if below.size == 0:
                x = s
                break
            # as far toward s as feasibility allows: the first bounded variable to reach zero stops it
            ratios = x[below] / (x[below] - s[below])
            step = float(ratios.min())
            x = x + step * (s - x)
            x[below[ratios == step]] = 0.0
            passive &= ~(bounded & (x <= 0))
            x[~passive] = 0.0
    # never reached on the scorecards measured (a cycle in rounding is possible in principle): BVLS then
    R = cholesky(G, lower=False, check_finite=False)
    z = solve_triangular(R, h, trans="T", lower=False, check_finite=False)
    lower = np.where(bounded, 0.0, -np.inf)
    return np.asarray(lsq_linear(R, z, bounds=(lower, np.full(p, np.inf)), method="bvls").x) * flip


def refit(base: float, cards: SequenceT[Card], interactions: SequenceT[Rule], literals: Literals,
          values: np.ndarray, y: np.ndarray, is_valid: np.ndarray | None = None, *, max_bands: int = MAX_BANDS,
          ridge: float = RIDGE, monotone: bool = True, linear: bool = True,
          split: bool = True) -> tuple[float, list[Card], list[Rule]]:
    """Fewer bands and jointly refitted points: ``(base, cards, interactions)``, uncentred.

    Bands are merged on the training users (those not ``is_valid``); the
    form of each card (monotone or free, bands or linear) is chosen on the
    validation users, and so are the band edges ``split`` adds to a band card
    (:func:`_split_bands`: literal thresholds, up to ``max_bands`` value
    bands); the points of the chosen forms are then fitted on all the users
    given.
    """
    V, t = check_values(values, y, literals)
    assert t is not None
    if max_bands < 1:
        raise InputError(f"max_bands must be at least 1, got {max_bands!r}")
    if not ridge >= 0:
        raise InputError(f"ridge must be a non-negative number, got {ridge!r}")
    valid = np.zeros(t.size, dtype=bool) if is_valid is None else np.asarray(is_valid, dtype=bool).reshape(-1)
    if valid.size != t.size:
        raise InputError(f"is_valid has {valid.size} entries for {t.size} users")
    choose = bool(valid.any() and (~valid).any())
    fit = ~valid if choose else np.ones(t.size, dtype=bool)
    fires = fires_of(interactions, literals, V)
    card_points = [c.points(V[:, c.column]) for c in cards]
    total = base + np.sum(card_points, axis=0) + fires @ np.array([r.weight for r in interactions], dtype=np.float64)
    forms = []
    for card, pts in zip(cards, card_points):
        v = V[:, card.column]
        if card.linear is not None:
            forms.append(_Form(card, linear=(card.linear.lo, card.linear.hi)))
            continue
        # vacuous edges judged on every user given (the training users), the cheapest merges on the fitting ones
        merged = _merge(_solid_edges(card, v), v[fit], (t - total + pts)[fit], max_bands)
        forms.append(_Form(merged, _direction(merged, v, t) if monotone else 0))

    # the forms are chosen on samples (all users below CHOICE_USERS a side): the design of those rows only
    fit_rows, valid_rows = sample_rows(fit), sample_rows(valid)
    rows = np.concatenate([fit_rows, valid_rows])
    V_choice, t_choice, fires_choice = V[rows], t[rows], fires[rows]
    on_fit = np.arange(rows.size) < fit_rows.size

    columns: dict[tuple, tuple[list[np.ndarray], list[float], list[float]]] = {}

    def squares(fs: list[_Form]) -> np.ndarray:  # each validation user's squared error
        A, lb, ub = _design(fs, fires_choice, V_choice, columns)
        x = _solve(A[on_fit], t_choice[on_fit], lb, ub, ridge)
        return np.asarray((A[~on_fit] @ x - t_choice[~on_fit]) ** 2)

    def evaluate(fs: list[_Form]) -> float:
        return float(np.mean(squares(fs)))

    if choose:
        err = evaluate(forms)
        slack = 1e-12 * max(float(t.var()), 1e-300)
        for i, f in enumerate(forms):  # free where the validation users say the free fit is better
            if f.direction and f.linear is None:
                trial = [*forms[:i], replace(f, direction=0), *forms[i + 1:]]
                e = evaluate(trial)
                if e < err - slack:
                    forms, err = trial, e
        for i, (f, card) in enumerate(zip(forms, cards)):  # linear where it fits them at least as well
            if linear and f.linear is None and card.kind != "binary" and len(card.edges) >= 2:
                trial = [*forms[:i], replace(f, linear=(card.edges[0], card.edges[-1])), *forms[i + 1:]]
                e = evaluate(trial)
                if e <= err + slack:
                    forms, err = trial, e
        if split:  # last: a card linear where that fits is left linear
            forms = _split_bands(forms, literals, V, t, squares, max_bands)
    A, lb, ub = _design(forms, fires, V)
    x = _solve(A, t, lb, ub, ridge)
    base, fitted, rules = _unpack(forms, interactions, x)
    return base, _scoring(fitted), rules


def refit_points(base: float, cards: SequenceT[Card], interactions: SequenceT[Rule], literals: Literals,
                 values: np.ndarray, y: np.ndarray, *, ridge: float = RIDGE) -> tuple[float, list[Card], list[Rule]]:
    """The points of cards whose forms are set, refitted jointly on all the users given: ``(base, cards,
    interactions)``, uncentred.

    Unlike :func:`refit`, nothing is chosen: each card keeps its band edges (none merged, none added), a
    linear card stays linear, a free card free, and a monotone card is fitted monotone in the direction the
    teacher's mean takes across its bands (free where that mean no longer rises or falls steadily).
    """
    V, t = check_values(values, y, literals)
    assert t is not None
    forms = []
    for card in cards:
        if card.linear is not None:
            sign = int(np.sign(card.linear.slope)) if card.monotone else 0
            forms.append(_Form(card, sign, (card.linear.lo, card.linear.hi)))
        else:
            forms.append(_Form(card, _direction(card, V[:, card.column], t) if card.monotone else 0))
    A, lb, ub = _design(forms, fires_of(interactions, literals, V), V)
    base, fitted, rules = _unpack(forms, interactions, _solve(A, t, lb, ub, ridge))
    return base, _scoring(fitted), rules


def _scoring(cards: list[Card]) -> list[Card]:
    """``cards`` less those with one value band and no undefined band: every user 0 points (uncentred)."""
    return [c for c in cards if c.edges or c.linear is not None or c.undefined is not None]


def _split_bands(forms: list[_Form], literals: Literals, V: np.ndarray, t: np.ndarray,
                 squares: Callable[[list[_Form]], np.ndarray], max_bands: int) -> list[_Form]:
    """Band cards with band edges added, one at a time, where the validation users say each fits better.

    A card's candidate edges are its output's thresholds in the literal table (round numbers at the training
    users' quantiles). For each band card with fewer than ``max_bands`` value bands, the candidate whose joint
    refit (on the fitting users) most lowers the validation users' squared error is added, if that fall beats
    :data:`SPLIT_SE` standard errors; then the next, until none does. A card keeps its other edges, and is
    fitted monotone where it was and the teacher's mean still is across its new bands.

    Why: the student's bands are few (2-3 a card on CDNOW, 14-23 distinct scores for 300 held-out users
    against the teacher's hundreds), and users tied in score count half in fidelity. A card is one unit of
    the budget however many bands it has, so a finer card costs no budget.
    """
    before = squares(forms)
    if before.size < 2:
        return forms
    for i in range(len(forms)):
        while True:
            f = forms[i]
            card = f.card
            if f.linear is not None or card.kind == "binary" or len(card.bands) >= max_bands:
                break
            v = V[:, card.column]
            candidates = np.unique(literals.thresholds[literals.column == card.column])
            best, best_err = None, float(before.mean())
            for c in candidates:
                if not np.isfinite(c) or c <= DEFINED_THRESHOLD or c in card.edges:
                    continue
                edges = tuple(sorted((*card.edges, float(c))))
                split = _solid_edges(card.with_(edges=edges, bands=tuple(Band(0.0) for _ in range(len(edges) + 1))),
                                     v)
                if len(split.edges) != len(edges):  # the new edge leaves too few users on one side
                    continue
                trial = [*forms[:i], _Form(split, _direction(split, v, t) if f.direction else 0), *forms[i + 1:]]
                sq = squares(trial)
                fall = before - sq
                if fall.mean() <= SPLIT_SE * fall.std(ddof=1) / np.sqrt(fall.size):
                    continue
                if sq.mean() < best_err:
                    best, best_err, best_sq = trial, float(sq.mean()), sq
            if best is None:
                break
            forms, before = best, best_sq
    return forms


def _unpack(forms: SequenceT[_Form], interactions: SequenceT[Rule],
            x: np.ndarray) -> tuple[float, list[Card], list[Rule]]:
    """Cards and interaction weights from the joint fit's coefficients (in :func:`_design`'s order)."""
    k = 0
    cards = []
    for f in forms:
        card = f.card
        if f.linear is not None:
            lin = Linear(float(x[k]), f.linear[0], f.linear[1])
            k += 1
            card = card.with_(edges=(), bands=(), linear=lin, monotone=bool(f.direction))
        else:
            inc = x[k:k + len(card.bands) - 1]
            k += len(card.bands) - 1
            # adjacent bands with exactly equal points (an increment held at 0 by monotony) read as one
            keep = np.flatnonzero(inc != 0.0)
            points = np.concatenate([[0.0], np.cumsum(inc)[keep]])
            card = card.with_(edges=tuple(card.edges[j] for j in keep),
                              bands=tuple(Band(float(p)) for p in points), monotone=bool(f.direction))
        if card.undefined is not None:
            card = card.with_(undefined=Band(float(x[k])))
            k += 1
        cards.append(card)
    rules = [Rule(r.formula, float(w), r.info) for r, w in zip(interactions, x[k:k + len(interactions)])]
    return float(x[-1]), cards, rules


class DropOne:
    """A scorecard's joint refit less one unit at a time, from one design on the fitting users.

    :func:`refit` of the scorecard less unit ``k`` (on the fitting users, no validation users: forms kept)
    gives every other card the same form as in the whole: its band edges and merges of empty bands
    depend on its own values only, its direction on the teacher's mean. Only a merge down to
    ``max_bands`` bands weighs the other units' points; where a card needs one, :meth:`build` gives
    ``None`` and the caller refits each trial. Otherwise the trial's design is the whole's less unit
    ``k``'s columns: the design is built once, not once a trial (the budget step weighs some 140 trials
    for a scorecard at 5,000 users, issue 27). The trial's products are then computed from its own
    columns, laid out as :func:`refit` lays them out (taken from the whole's products, or from columns
    in another memory order, they differed in the last bits, and tied two users of planted 13 that the
    refit does not), and its users scored as :meth:`Scorecard.predict` scores them: the same scores, bit
    for bit.
    """

    def __init__(self, A: np.ndarray, t: np.ndarray, lb: np.ndarray, ub: np.ndarray, ridge: float,
                 forms: list[_Form], interactions: SequenceT[Rule], fires_check: np.ndarray,
                 V_check: np.ndarray) -> None:
        self._A, self._t, self._lb, self._ub, self._ridge = A, t, lb, ub, ridge
        self._forms, self._interactions, self._fires_check, self._V_check = forms, interactions, fires_check, V_check
        widths = [(1 if f.linear is not None else len(f.card.bands) - 1) + (f.card.undefined is not None)
                  for f in forms] + [1] * len(interactions)
        ends = np.cumsum(widths)
        self._blocks = [np.arange(e - w, e) for e, w in zip(ends, widths)]
        # What Card.points reads of the scored users whatever the trial's points: each form's band of every
        # user (a linear form's clipped offsets from lo) and who has no value. Trials differ in points only.
        self._on_check = []
        for f in forms:
            v = V_check[:, f.card.column]
            nan = np.isnan(v)
            if f.linear is not None:
                lo, hi = f.linear
                self._on_check.append((np.clip(np.where(nan, lo, v), lo, hi) - lo, nan))
            else:
                self._on_check.append((f.card.band_index(np.where(nan, -np.inf, v)), nan))

    @classmethod
    def build(cls, base: float, cards: SequenceT[Card], interactions: SequenceT[Rule], literals: Literals,
              values: np.ndarray, y: np.ndarray, check_values_: np.ndarray, *, max_bands: int = MAX_BANDS,
              ridge: float = RIDGE, monotone: bool = True, **choice_options: object) -> DropOne | None:
        """The design of ``cards`` and ``interactions`` on ``values`` (fitting) and ``check_values_`` (scored),
        or ``None`` where a trial's forms could differ from the whole's (a card over ``max_bands`` bands).

        ``choice_options`` (``refit``'s ``linear``, ``split``) choose forms on validation users, which a trial has
        none of: they change nothing here.
        """
        V, t = check_values(values, y, literals)
        assert t is not None
        Vc, _ = check_values(check_values_, None, literals)
        forms = []
        for card in cards:
            v = V[:, card.column]
            if card.linear is not None:
                forms.append(_Form(card, linear=(card.linear.lo, card.linear.hi)))
                continue
            solid = _solid_edges(card, v)
            if _merges_by_target(solid, v, max_bands):
                return None
            merged = _merge(solid, v, t, max_bands)  # empty bands only: the target is not read
            forms.append(_Form(merged, _direction(merged, v, t) if monotone else 0))
        A, lb, ub = _design(forms, fires_of(interactions, literals, V), V)
        return cls(A, t, lb, ub, ridge, forms, list(interactions), fires_of(interactions, literals, Vc), Vc)

    def predict_without(self, k: int | None) -> np.ndarray:
        """The scored users' scores under the joint fit less unit ``k`` (cards first; ``None``: every unit)."""
        if k is None:
            x = _solve(self._A, self._t, self._lb, self._ub, self._ridge)
        else:
            keep = np.ones(self._A.shape[1], dtype=bool)
            keep[self._blocks[k]] = False
            # in rows, as refit's design is (the mask alone gives columns, whose products differ in the last bits)
            x = _solve(np.ascontiguousarray(self._A[:, keep]), self._t, self._lb[keep], self._ub[keep], self._ridge)
        n = len(self._forms)
        rule_at = [i for i in range(len(self._interactions)) if i + n != k]
        # Scored as Scorecard.predict scores the refitted trial (_unpack's cards, scores_of's order of sums):
        # users the trial's refit ties (in rounding too) stay tied, and the fidelity is the same to the last
        # bit. Each card's points are read from the coefficients and the users' bands found once: a band
        # card's points are the running sums of its increments, which _unpack's merge of bands whose
        # increment is 0 leaves as they are; cards _scoring drops (every user 0 points) add nothing.
        s = np.full(self._V_check.shape[0], float(x[-1]))
        at = 0
        for i, f in enumerate(self._forms):
            if i == k:
                continue
            on_check, nan = self._on_check[i]
            undefined = f.card.undefined is not None
            if f.linear is not None:
                points = 0.0 + float(x[at]) * on_check  # Linear.points: its offset (0) + slope * (clipped - lo)
                at += 1
            else:
                inc = x[at:at + len(f.card.bands) - 1]
                at += len(f.card.bands) - 1
                if not undefined and not inc.any():
                    continue
                points = np.concatenate([[0.0], np.cumsum(inc)])[on_check]
            if undefined:
                points[nan] = float(x[at])
                at += 1
            s += points
        for w, fired in zip(x[at:at + len(rule_at)], self._fires_check[:, rule_at].T):
            s[fired] += float(w)
        return s
