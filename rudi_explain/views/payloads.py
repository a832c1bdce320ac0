"""Compact JSON payloads that describe an explanation to a front end.

Pure functions from an :class:`~rudi_explain.explanation.Explanation` (or the
progress events of its job) to plain dicts and lists of str, float, int,
bool and None. The notebook widget syncs them as traits and the standalone
report embeds them, so both show the same thing.

Every payload is small whatever the number of users: distributions are
pre-binned here, example users are a handful per rule, and a user's details
(:func:`user_detail`) are built only when asked for. Nothing here escapes
HTML: the front end puts every string into the page as text.

Long texts from the data (a category value of 20,000 characters repeats in
every rule, literal and event holding it) are shortened in
:func:`results_state` and :func:`user_detail` by
:func:`rudi_explain.views.text.shorten_payload`: a string's overlong words
are cut with ``…`` in the middle, strings to :data:`~rudi_explain.views.text.TEXT_LIMIT`
characters, event cells to :data:`~rudi_explain.views.text.CELL_LIMIT`. User ids
(``"id"``, dict keys) stay whole: the front end sends them back. The full
values stay in the explanation, not in the payloads.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from rudi_explain._version import __version__
from rudi_explain.audit.attributions import TeacherUnavailable
from rudi_explain.audit.cards import input_scale, input_text, output_unit
from rudi_explain.audit.jsonable import json_float
from rudi_explain.audit.ranks import percentile_of
from rudi_explain.audit.what_if import what_if as what_if_state
from rudi_explain.exceptions import UnknownUserError
from rudi_explain.rules.formula import And, Lit, Or, formula_literals
from rudi_explain.rules.ruleset import LinearTerm
from rudi_explain.statistics.reads import output_events
from rudi_explain.views.scorecard_view import output_kind, scorecard_state, user_scorecard, value_text
from rudi_explain.views.slices import fidelity_slices
from rudi_explain.views.statistics_given import statistics_given
from rudi_explain.views.text import CELL_LIMIT, FULL_VALUES_KEY, FullValues, shorten, shorten_payload

if TYPE_CHECKING:
    from rudi_explain.explanation import Explanation

__all__ = ["progress_state", "chart_point", "summary", "rule_cards", "thresholds", "statistics_table",
           "top_users", "user_picks", "user_detail", "resolve_user", "feeding_rows", "results_state", "user_key",
           "importance", "audit", "statistics_given", "MAX_EVENTS",
           "fidelity_curve", "net_effects", "attribution_state", "what_if", "global_importance"]

#: Events shown in a user's drill-down (the first ones in time order).
MAX_EVENTS = 300
#: Example users listed on a rule card.
N_EXAMPLES = 8
#: Bins of a threshold histogram.
N_BINS = 24
#: Statistic outputs shown in the thresholds view (those used by rules first).
MAX_OUTPUTS = 40


#: A JSON-safe float: None for NaN or infinity, rounded to keep payloads short.
_num = json_float


def user_key(user_id: Any) -> str:
    """A user id as the front end shows and sends it (ids may be int or str)."""
    return str(user_id)


# ------------------------------------------------------------------ progress
def progress_state(event: Any, status: str) -> dict:
    """The progress view's state from one :class:`JobProgress` event (or None)."""
    if event is None:
        return {"status": status, "stage": "pending", "step": 0, "total": 1, "fraction": 0.0,
                "message": "waiting to start", "elapsed": 0.0}
    numbers = event.numbers or {}
    ended = event.stage in ("failed", "cancelled")
    out = {
        "status": status,
        # a run that stopped shows the stage it reached (stages before it stay done)
        "stage": numbers.get("reached", "teacher") if ended else event.stage,
        "step": int(event.step),
        "total": int(event.total),
        "fraction": _num(event.step / event.total if event.total else 0.0, 4),
        "message": str(event.message),
        "elapsed": _num(event.elapsed, 4),
        # the job's own estimate (explanation/eta.py); None: none, and the page shows none
        "seconds_left": _num(numbers.get("seconds_left"), 4),
    }
    if ended:
        out["ended"] = event.stage
        out["found"] = [str(f) for f in numbers.get("found", [])]
    if event.stage == "search":
        out["search"] = {
            "statistic": int(numbers.get("statistic", event.step + 1)),
            "best": str(numbers.get("best", "")),
            "reward": _num(numbers.get("reward")),
            "pipeline": str(numbers.get("pipeline", "")),
            "simulation": int(numbers.get("simulation", 0) or 0),
            "found": [str(s) for s in numbers.get("found", [])],
        }
    return out


def chart_point(event: Any) -> dict | None:
    """A point of the live training chart (epoch, loss, fidelity), or None."""
    numbers = event.numbers or {}
    if event.stage != "student" or "loss" not in numbers:
        return None
    return {"epoch": int(numbers.get("epoch", event.step)), "loss": _num(numbers["loss"], 5),
            "fidelity": _num(numbers.get("fidelity"), 5)}


def thin(points: list, limit: int = 200) -> list:
    """At most ``limit`` points, evenly spread, the last one kept."""
    if len(points) <= limit:
        return list(points)
    idx = np.unique(np.linspace(0, len(points) - 1, limit).round().astype(int))
    return [points[i] for i in idx]


# ------------------------------------------------------------------ results
def summary(exp: Explanation) -> dict:
    """Teacher, sizes, held-out fidelity and AUCs, seconds per stage."""
    r = exp.report()
    return {
        "teacher": str(r["teacher"]),
        "student": str(r["student"]),
        "n_users": int(r["n_users"]),
        "n_train": int(r["n_train"]),
        "n_test": int(r["n_test"]),
        "n_statistics": int(r["n_statistics"]),
        "n_literals": int(r["n_literals"]),
        "n_rules": int(r["n_rules"]),
        "n_cards": r["n_cards"],  # the scorecard's units; None for a rule list
        "n_interactions": r["n_interactions"],
        "max_literals": int(r["max_literals"]),
        "fidelity_train": _num(r["fidelity_train"], 4),
        "fidelity_test": _num(r["fidelity_test"], 4),
        "auc_teacher": _num(r["auc_teacher"], 4),
        "auc_student": _num(r["auc_student"], 4),
        "fidelity_test_ci": [_num(v, 4) for v in r.get("fidelity_test_ci", (None, None))],
        # Sentences for people when the figures rest on too little (report()["warnings"]).
        "warnings": [str(w) for w in r.get("warnings", [])],
        "intercept": _num(exp.rules.intercept),
        "seconds": {str(k): _num(v, 4) for k, v in r["seconds"].items()},
        "score_unit": str(r.get("score_unit", "raw")),
        "fidelity_meaning": str(r.get("fidelity_meaning", "")),
        "n_rules_unpruned": int(r["n_rules_unpruned"]) if "n_rules_unpruned" in r else None,
        "fidelity_test_unpruned": _num(r.get("fidelity_test_unpruned"), 4),
    }


def _literal_part(exp: Explanation, lit: Lit) -> dict:
    """One literal of a rule: the statistic output, comparison and threshold."""
    L = exp.literals
    i = lit.index
    column = int(L.column[i])
    stat_index = int(L.output_statistic[column])
    statistic = str(exp.statistics[stat_index]) if stat_index < len(exp.statistics) else ""
    undefined = bool(L.output_undefined[column])
    return {
        "literal": i,
        "column": column,
        "statistic": stat_index,
        "statistic_text": statistic,
        "words": L.output_descriptions[column],
        "op": "<=" if lit.negated else ">",
        "threshold": _num(L.thresholds[i], 17),
        "threshold_text": L.threshold_text[i],
        # A negated literal is also true where the value is undefined (SEMANTICS.md).
        "or_undefined": bool(lit.negated and undefined),
        "negated": bool(lit.negated),
        # The literal as the rule says it (a sentence), and the pipeline text for hover.
        "sentence": exp.rules.info.render_literal(lit),
        "notation": exp.rules.info.notation(lit),
    }


def rule_cards(exp: Explanation, n_examples: int = N_EXAMPLES) -> list[dict]:
    """One card per rule, the one that moves scores most first: largest ``spread`` (a rule's ``|weight|``;
    a linear card's term, ``|weight|`` times the range of its clipped values over the training users).

    Each card: the rule's text and literals, its weight and direction,
    coverage, the mean teacher score where it fires and where it does not,
    and example users it fires for, spread over its teacher-score range.
    """
    y = exp.teacher_scores.to_numpy(dtype=np.float64)
    ids = exp.sequences.users
    fires = exp.result.fires
    n = len(y)
    order = np.argsort(-y, kind="stable")  # once: examples are read off in score order
    cards: list[dict[str, Any]] = []
    for k, rule in enumerate(exp.rules):
        f = fires[:, k]
        n_fire = int(f.sum())
        fire_mean = y[f].mean() if n_fire else np.nan
        rest_mean = y[~f].mean() if n_fire < n else np.nan
        ranked = order[f[order]]
        pick = np.unique(np.linspace(0, len(ranked) - 1, min(n_examples, len(ranked))).round().astype(int)) \
            if len(ranked) else np.zeros(0, dtype=int)
        examples = [{"id": user_key(ids[ranked[j]]), "teacher": _num(y[ranked[j]], 4)} for j in pick]
        linear = isinstance(rule, LinearTerm)
        parts = [] if isinstance(rule, LinearTerm) else \
            [_literal_part(exp, lit) for lit in formula_literals(rule.formula)]
        cards.append({
            "index": k,
            "text": str(rule.text),
            "notation": str(getattr(rule, "notation", rule.text)),
            "weight": _num(rule.weight),
            # the order of the cards: a linear term by its spread of points, not its weight per unit
            "spread": _num(_spread(exp, rule)),
            "direction": "raises" if rule.weight > 0 else "lowers",
            "linear": linear,
            "literals": parts,
            "connective": _connective(rule),
            "n_literals": int(rule.n_literals),
            "coverage": _num(n_fire / n if n else 0.0, 4),
            "n_fires": n_fire,
            "mean_fires": _num(fire_mean, 4),
            "mean_not": _num(rest_mean, 4),
            "examples": examples,
        })
    cards.sort(key=lambda c: (-(c["spread"] or 0.0), c["index"]))
    return cards


def _spread(exp: Explanation, rule: Any) -> float:
    """How far a rule moves scores over the training users: the range of what it adds, comparable between
    a rule (0 or its weight: ``|weight|``) and a linear card's term (``|weight|`` x the range of the clipped
    values the training users have), whose weight is per unit of the value and so compares with nothing."""
    if not isinstance(rule, LinearTerm):
        return abs(float(rule.weight))
    v = exp.result.values[~exp.is_test, int(rule.column)]
    v = np.where(np.isnan(v), rule.fill, v)
    if rule.lo is not None or rule.hi is not None:
        v = np.clip(v, -np.inf if rule.lo is None else rule.lo, np.inf if rule.hi is None else rule.hi)
    return abs(float(rule.weight)) * float(np.ptp(v)) if v.size else 0.0


def _connective(rule: Any) -> str:
    """'AND', 'OR' or 'MIXED': how a rule's literals combine, for the card's layout."""
    if isinstance(rule, LinearTerm):
        return "LINEAR"
    f = rule.formula
    if isinstance(f, Lit):
        return "AND"
    kinds = {type(c) for c in f.children}
    if kinds <= {Lit}:
        return "AND" if isinstance(f, And) else "OR" if isinstance(f, Or) else "MIXED"
    return "MIXED"


def _bins(v: np.ndarray) -> tuple[np.ndarray, bool]:
    """Bin edges for the defined values ``v``: one bin per value for small integers."""
    lo, hi = float(v.min()), float(v.max())
    if lo == hi:
        return np.array([lo - 0.5, hi + 0.5]), True
    if hi - lo <= N_BINS and np.all(v == np.round(v)):
        return np.arange(lo - 0.5, hi + 1.0, 1.0), True
    # Heavy tails: clip the range at the 99.5th percentile, the rest falls in the last bin.
    top = float(np.quantile(v, 0.995))
    if top <= lo:
        top = hi
    return np.linspace(lo, top, N_BINS + 1), False


def thresholds(exp: Explanation) -> list[dict]:
    """The distribution of each thresholded statistic output, pre-binned.

    For each output: bin edges, users and mean teacher score per bin, the
    undefined users, and each of its literals' thresholds with the share of
    users above it and whether a rule uses it, by threshold value. Outputs used by rules first.
    """
    L = exp.literals
    y = exp.teacher_scores.to_numpy(dtype=np.float64)
    used: set[int] = set()
    for rule in exp.rules:
        if not isinstance(rule, LinearTerm):
            used.update(lit.index for lit in formula_literals(rule.formula))
    weight = importance(exp)
    all_values = exp.result.values
    columns = list(dict.fromkeys(int(c) for c in L.column))
    # the most important output first (largest sum of |weight| of the rules reading it); unused last
    columns.sort(key=lambda c: (not any(L.column[i] == c for i in used), -weight.get(c, 0.0), c))
    out = []
    for c in columns[:MAX_OUTPUTS]:
        values = all_values[:, c]
        defined = ~np.isnan(values)
        v, yv = values[defined], y[defined]
        entry: dict[str, Any] = {
            "column": c,
            "statistic": int(L.output_statistic[c]),
            "words": L.output_descriptions[c],
            "unit": output_unit(L, c),
            "kind": output_kind(L, c),
            # the what-if box takes a value the way the card writes it: x 100 for a share (audit.cards.read_value)
            "input_scale": input_scale(L, c),
            "name": L.output_names[c],
            "importance": _num(weight.get(c, 0.0)),
            "n_undefined": int((~defined).sum()),
            "mean_undefined": _num(y[~defined].mean(), 4) if (~defined).any() else None,
        }
        if len(v):
            edges, discrete = _bins(v)
            which = np.clip(np.searchsorted(edges, v, side="right") - 1, 0, len(edges) - 2)
            counts = np.bincount(which, minlength=len(edges) - 1)
            sums = np.bincount(which, weights=yv, minlength=len(edges) - 1)
            with np.errstate(invalid="ignore", divide="ignore"):
                means = sums / counts
            entry.update({
                "edges": [_num(e) for e in edges],
                # every value a reader sees, written the one way (a share as a percent, with the unit)
                "edges_text": [value_text(L, c, e) for e in edges],
                "discrete": discrete,
                "min": _num(v.min()),
                "max": _num(v.max()),
                "min_text": value_text(L, c, v.min()),
                "max_text": value_text(L, c, v.max()),
                "counts": counts.astype(int).tolist(),
                "mean_teacher": [_num(m, 4) for m in means],
            })
        else:
            entry.update({"edges": [], "edges_text": [], "discrete": False, "counts": [], "mean_teacher": [],
                          "min": None, "max": None, "min_text": None, "max_text": None})
        lits = np.flatnonzero(L.column == c)
        lits = lits[np.argsort(L.thresholds[lits], kind="stable")]  # by value: refined ones come after the deciles
        above = _counts_above(v, L.thresholds[lits])
        entry["thresholds"] = [{
            "literal": int(i),
            "name": L.names[i],
            "threshold": _num(L.thresholds[i], 17),
            "threshold_text": L.threshold_text[i],  # the number as code takes it (exp.with_threshold)
            "value_text": value_text(L, c, L.thresholds[i], exact=True),  # as a reader reads it
            "input_text": input_text(L, c, L.thresholds[i]),  # as the what-if box takes it (a share in percent)
            "share_above": _num(a / len(values), 4),  # undefined values are never above
            "in_rules": int(i) in used,
        } for i, a in zip(lits, above)]
        out.append(entry)
    return out


def importance(exp: Explanation) -> dict[int, float]:
    """Each statistic output's importance: the sum of ``|weight|`` of the rules with a literal on it.

    A rule counts once per output, however many of its literals read that
    output. Outputs no rule reads are absent (importance 0).

    Returns
    -------
    dict of int to float
        Output column to importance.
    """
    L = exp.literals
    out: dict[int, float] = {}
    for rule in exp.rules:
        if isinstance(rule, LinearTerm):
            continue
        for c in {int(L.column[lit.index]) for lit in formula_literals(rule.formula)}:
            out[c] = out.get(c, 0.0) + abs(float(rule.weight))
    return out


def _plain(value: Any) -> Any:
    """A parameter as JSON can hold it: numbers, strings, lists and dicts kept, anything else as its repr."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return repr(value)


def audit(exp: Explanation, when: Any = None) -> dict:
    """The header of an audit file: data shape, teacher and student, date, library version, parameters, seed.

    Parameters
    ----------
    exp : Explanation
    when : datetime, optional
        The date written (default: now, UTC).

    Returns
    -------
    dict
        ``n_users``, ``n_events``, ``columns`` (categorical and numerical),
        ``teacher``, ``student``, ``score_unit``, ``date`` (ISO 8601),
        ``version``, ``params`` (JSON-safe), ``random_state`` and ``statistics``
        (:func:`statistics_given`: which statistics were given, and whether the search ran).
    """
    seqs = exp.sequences
    r = exp.report()
    when = when or datetime.datetime.now(datetime.timezone.utc)
    params = {k: _plain(v) for k, v in exp.params.items()}
    params["student"] = str(r["student"])
    return {
        "n_users": int(len(seqs.users)),
        "n_events": int(seqs.n_events),
        "columns": {"categorical": [str(c) for c in seqs.categorical], "numerical": [str(c) for c in seqs.numerical]},
        "teacher": str(r["teacher"]),
        "student": str(r["student"]),
        "score_unit": str(r.get("score_unit", "raw")),
        "date": when.isoformat(timespec="seconds"),
        "version": str(__version__),
        "params": params,
        "random_state": params.get("random_state"),
        "statistics": statistics_given(exp),
    }


def _counts_above(v: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """How many of ``v`` exceed each threshold: one pass over ``v``, not one per threshold."""
    order = np.argsort(thresholds)
    # pos = number of thresholds strictly below the value: the value exceeds thresholds[order[:pos]].
    pos = np.searchsorted(thresholds[order], v, side="left")
    counts = np.bincount(pos, minlength=len(thresholds) + 1)
    above_sorted = len(v) - np.cumsum(counts)[:-1]
    out = np.empty(len(thresholds), dtype=np.int64)
    out[order] = above_sorted
    return out


def statistics_table(exp: Explanation) -> list[dict]:
    """The found statistics: text form, plain words, depth, number of outputs."""
    seqs = exp.sequences
    rows = []
    for k, s in enumerate(exp.statistics):
        rows.append({"index": k, "text": str(s), "words": s.describe(data=seqs), "depth": int(s.depth),
                     "n_outputs": int(s.n_outputs(seqs))})
    return rows


def top_users(exp: Explanation, n: int = 15) -> list[dict]:
    """The ``n`` users with the highest teacher scores, for a quick pick."""
    y = exp.teacher_scores.to_numpy(dtype=np.float64)
    s = exp.student_scores.to_numpy(dtype=np.float64)
    n = min(n, len(y))
    idx = np.argpartition(-y, n - 1)[:n] if n < len(y) else np.arange(len(y))
    idx = idx[np.argsort(-y[idx], kind="stable")]
    ids = exp.sequences.users
    return [{"id": user_key(ids[i]), "teacher": _num(y[i], 4), "student": _num(s[i], 4)} for i in idx]


#: users listed as the lowest-scored, and random users drawn for the "another random user" button
N_PICKED = 15
N_RANDOM = 10


def user_picks(exp: Explanation, n: int = N_PICKED, n_random: int = N_RANDOM, random_state: int = 0) -> dict:
    """Users beyond the top-scored, for the User tab: the lowest-scored, one per percentile, random ones.

    Bounded whatever the number of users, so the page picks among them without a kernel (the
    standalone report too).

    Parameters
    ----------
    exp : Explanation
    n : int, default=N_PICKED
        Users in ``bottom``.
    n_random : int, default=N_RANDOM
        Users in ``random``.
    random_state : int, default=0
        Seed of the random draw (``numpy.random.default_rng``): the same users on every call.

    Returns
    -------
    dict
        ``bottom``: the ``n`` lowest teacher scores, lowest first (as :func:`top_users`);
        ``by_percentile``: 101 entries, entry ``q`` the user whose teacher percentile (mid-rank,
        :mod:`rudi_explain.audit.ranks`) is nearest ``q`` (ties: the lower percentile, then the
        first user), with ``id``, ``teacher`` and ``percentile``; ``random``: ``n_random`` users drawn
        without replacement, with ``id`` and ``teacher``.
    """
    y = exp.teacher_scores.to_numpy(dtype=np.float64)
    ids = exp.sequences.users
    if not len(y):
        return {"bottom": [], "by_percentile": [], "random": []}
    s = exp.student_scores.to_numpy(dtype=np.float64)
    order = np.argsort(y, kind="stable")
    pct = _percentiles(y)[order]  # non-decreasing along ``order``
    q = np.arange(101, dtype=np.float64)
    right = np.clip(np.searchsorted(pct, q, side="left"), 0, len(pct) - 1)
    left = np.clip(right - 1, 0, len(pct) - 1)
    # the left candidate is the first of its tied block, so a tie picks one user, not the block's last
    left = np.searchsorted(pct, pct[left], side="left")
    nearest = np.where(np.abs(pct[left] - q) <= np.abs(pct[right] - q), left, right)
    drawn = np.random.default_rng(random_state).permutation(len(y))[:n_random]
    return {
        "bottom": [{"id": user_key(ids[i]), "teacher": _num(y[i], 4), "student": _num(s[i], 4)}
                   for i in order[:min(n, len(y))]],
        "by_percentile": [{"id": user_key(ids[order[j]]), "teacher": _num(y[order[j]], 4),
                           "percentile": _num(pct[j], 4)} for j in nearest],
        "random": [{"id": user_key(ids[i]), "teacher": _num(y[i], 4)} for i in drawn],
    }


#: points of the faithfulness scatter (held-out users, evenly spread over the teacher's ranks)
MAX_SCATTER = 400
#: users listed as the worst explained
N_WORST = 10


def _percentiles(x: np.ndarray) -> np.ndarray:
    """Each value's percentile among ``x`` itself (mid-rank: :mod:`rudi_explain.audit.ranks`)."""
    return percentile_of(x, x)


def faithfulness(exp: Explanation) -> dict:
    """Teacher score against rule score on the held-out users, and the users explained worst.

    ``points``: at most :data:`MAX_SCATTER` held-out users (evenly spread over
    the teacher's order), each with both scores. ``spearman``: the rank
    correlation over all held-out users. ``worst``: the :data:`N_WORST`
    held-out users whose percentile under the rules is farthest from their
    percentile under the teacher, farthest first (ties by id), each with both
    scores and both percentiles: the first place an auditor looks.
    """
    test = np.flatnonzero(exp.is_test)
    if test.size < 2:
        return {"points": [], "spearman": None, "worst": [], "n_test": int(test.size)}
    y = exp.teacher_scores.to_numpy(dtype=np.float64)[test]
    s = exp.student_scores.to_numpy(dtype=np.float64)[test]
    py, ps = _percentiles(y), _percentiles(s)
    spearman = float(np.corrcoef(py, ps)[0, 1]) if py.std() > 0 and ps.std() > 0 else None
    ids = exp.sequences.users[test]
    order = np.argsort(y, kind="stable")
    shown = order[np.unique(np.linspace(0, test.size - 1, min(MAX_SCATTER, test.size)).round().astype(int))]
    gap = np.abs(py - ps)
    # farthest first; ties in user order (users are sorted, so this is the id order)
    worst = np.lexsort((np.arange(test.size), -gap))[:N_WORST]
    return {
        "points": [{"id": user_key(ids[i]), "teacher": _num(y[i], 4), "student": _num(s[i], 4),
                    "teacher_pct": _num(py[i], 3), "student_pct": _num(ps[i], 3)} for i in shown],
        "spearman": _num(spearman, 4),
        "n_test": int(test.size),
        "worst": [{"id": user_key(ids[i]), "teacher": _num(y[i], 4), "student": _num(s[i], 4),
                   "teacher_pct": _num(py[i], 3), "student_pct": _num(ps[i], 3)} for i in worst],
    }


def results_state(exp: Explanation) -> dict:
    """Every result payload the front end shows at once (no per-user details), long texts shortened."""
    return shorten_payload({"summary": summary(exp), "rules": rule_cards(exp), "thresholds": thresholds(exp),
            "statistics": statistics_table(exp), "top_users": top_users(exp), "curve": fidelity_curve(exp),
            "effects": net_effects(exp), "faithful": faithfulness(exp), "audit": audit(exp),
            "scorecard": scorecard_state(exp),
            "importance": global_importance(exp), "slices": fidelity_slices(exp), "user_picks": user_picks(exp)})


def global_importance(exp: Explanation) -> dict:
    """How much of the rule score's spread each statistic output carries, on the held-out users.

    A user's points from an output: the weights of the fired rules that read it (a linear term: its
    weight times the value), a rule reading ``k`` outputs giving each ``weight / k``. An output's
    importance is the variance of its points over the held-out users (population variance); its
    ``share`` is that over the sum for all outputs. Largest first; outputs no rule reads are left out.
    """
    L = exp.literals
    test = np.flatnonzero(exp.is_test)
    points: dict[int, np.ndarray] = {}
    fires = exp.result.fires[test]
    values = exp.result.values[test]
    for k, rule in enumerate(exp.rules):
        if isinstance(rule, LinearTerm):
            cols, got = [int(rule.column)], rule.weight * rule.value(values)
        else:
            cols = sorted({int(L.column[lit.index]) for lit in formula_literals(rule.formula)})
            got = np.where(fires[:, k], float(rule.weight), 0.0)
        for c in cols:
            points[c] = points.get(c, np.zeros(len(test))) + got / len(cols)
    var = {c: float(p.var()) if len(p) else 0.0 for c, p in points.items()}
    total = sum(var.values())
    order = sorted(var, key=lambda c: (-var[c], c))
    return {"n_users": int(test.size), "bars": [
        {"column": c, "words": L.output_descriptions[c], "unit": output_unit(L, c), "variance": _num(var[c], 6),
         "share": _num(var[c] / total, 4) if total > 0 else None} for c in order]}


def fidelity_curve(exp: Explanation) -> list[dict]:
    """Points of the fidelity curve (held-out and validation fidelity by number of rules); empty if unpruned."""
    if getattr(exp, "pruning", None) is None:
        return []
    curve = exp.fidelity_curve
    return [{"n_rules": int(r.n_rules), "fidelity_test": _num(r.fidelity_test, 4),
             "fidelity_valid": _num(r.fidelity_valid, 4), "default": bool(r.default),
             "current": int(r.n_rules) == len(exp.rules)} for r in curve.itertuples()]


def net_effects(exp: Explanation) -> list[dict]:
    """Per statistic output the rules use: its net effect on the rule score, as a step function.

    The effect of a value is the rule score of a user with that value and
    every other literal at its most common value among all users, minus that
    of the band most users are in: the sum of the weights of every rule
    literal on the output, as the rules combine them. Bands lie between the
    thresholds the rules use; undefined users are in the lowest band (every
    ``>`` literal is false for them). Beneath: the users' distribution.
    """
    rules = exp.rules
    # a set may hold rules and linear terms together: the steps are those of its rules (a linear term is
    # a line, shown on its own card), so a set of linear terms alone has none
    formula_rules = [r for r in rules if not isinstance(r, LinearTerm)]
    if not formula_rules:
        return []
    L = exp.literals
    state = exp.result
    Z = state.literal_matrix
    mode = Z.mean(axis=0) >= 0.5
    by_column: dict[int, set[int]] = {}
    weight_of: dict[int, float] = {}
    for rule in formula_rules:
        for lit in formula_literals(rule.formula):
            c = int(L.column[lit.index])
            by_column.setdefault(c, set()).add(lit.index)
            weight_of[c] = weight_of.get(c, 0.0) + abs(rule.weight)
    out = []
    for c in sorted(by_column, key=lambda c: -weight_of[c]):
        idx = sorted(by_column[c], key=lambda i: L.thresholds[i])
        m = len(idx)
        B = np.repeat(mode[None, :], m + 1, axis=0)
        for b in range(m + 1):
            B[b, idx] = np.arange(m) < b
        score = sum((r.weight * r.fires(B) for r in formula_rules), np.zeros(m + 1))
        band_of = Z[:, idx].sum(axis=1)  # nested literals: how many hold is the band
        n_band = np.bincount(band_of, minlength=m + 1)
        base = int(np.argmax(n_band))
        values = state.values[:, c]
        defined = ~np.isnan(values)
        v = values[defined]
        entry: dict[str, Any] = {
            "column": c,
            "statistic": int(L.output_statistic[c]),
            "words": L.output_descriptions[c],
            "unit": output_unit(L, c),
            "notation": L.pipeline_text(c) if hasattr(L, "pipeline_text") else L.output_names[c],
            "kind": output_kind(L, c),
            "thresholds": [_num(L.thresholds[i], 17) for i in idx],
            "threshold_text": [value_text(L, c, L.thresholds[i], exact=True) for i in idx],
            "effect": [_num(e) for e in score - score[base]],
            "n_band": n_band.astype(int).tolist(),
            "base_band": base,
            "n_undefined": int((~defined).sum()),
            "undefined_words": L.output_undefined_words[c] if hasattr(L, "output_undefined_words") else "",
        }
        if len(v):
            edges, discrete = _bins(v)
            which = np.clip(np.searchsorted(edges, v, side="right") - 1, 0, len(edges) - 2)
            entry.update({"edges": [_num(e) for e in edges], "edges_text": [value_text(L, c, e) for e in edges],
                          "discrete": discrete,
                          "counts": np.bincount(which, minlength=len(edges) - 1).astype(int).tolist(),
                          "min": _num(v.min()), "max": _num(v.max()),
                          "min_text": value_text(L, c, v.min()), "max_text": value_text(L, c, v.max())})
        else:
            entry.update({"edges": [], "edges_text": [], "discrete": False, "counts": [], "min": None, "max": None,
                          "min_text": None, "max_text": None})
        out.append(entry)
    return out


# ------------------------------------------------------------------ one user
def _format_cell(value: Any, full: FullValues | None = None) -> str | float | None:
    if value is None:
        return None
    if isinstance(value, (float, np.floating)):
        return _num(value, 8)
    if isinstance(value, (int, np.integer, bool, np.bool_)):
        return int(value)
    if isinstance(value, (pd.Timestamp, np.datetime64)):
        return str(pd.Timestamp(value))
    if value is pd.NaT:
        return None
    text = str(value)
    short = shorten(text, CELL_LIMIT)
    if full is not None:
        full.add(short, text)
    return short


def feeding_rows(exp: Explanation, index: int, stat_index: int, output: int | str | None = None) -> list[int]:
    """Positions (in the user's time-ordered events) of the events a statistic reads, in time order.

    :func:`rudi_explain.statistics.reads.output_events` for this one user, with
    ``counted=False``: the statistic's row operators (RetainBy, FilterBy, SortBy, Top, ...) run on
    the user's events; for one output of a GroupBy statistic only the events of that group are
    kept; every event of a categorical selection is shown, the denominator of a share too.

    ``output`` is the output's position within the statistic
    (``Literals.output_index``), or its exact name; names are never split
    apart, since a category may itself hold ``", "`` or ``"="``.
    """
    seqs = exp.sequences
    kept, _ = output_events(seqs, exp.statistics[stat_index], np.array([index], dtype=np.int64), output,
                            counted=False)
    return np.sort(kept - seqs.offsets[index]).astype(int).tolist()


def resolve_user(exp: Explanation, key: Any) -> Any:
    """The user id behind ``key`` as typed or sent by the front end (always text).

    Raises
    ------
    KeyError
        Naming the id, if no explained user has it.
    """
    seqs = exp.sequences
    try:
        seqs.user_index(key)
        return key
    except KeyError:
        pass
    text = str(key).strip()
    for candidate in (text, _as_int(text)):
        if candidate is None:
            continue
        try:
            seqs.user_index(candidate)
            return candidate
        except KeyError:
            continue
    raise UnknownUserError(f"user {text!r} is not among the explained users")


def _as_int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def user_detail(exp: Explanation, user_id: Any, max_events: int = MAX_EVENTS, attributions: bool = False) -> dict:
    """Everything the drill-down shows for one user, built on request.

    Based on :meth:`Explanation.user`, so the fired rules, scores and literal
    values are exactly those of the per-user view. With ``attributions``, the
    payload also holds ``"attributions"`` (:func:`attribution_state`): it asks
    the teacher, so it costs a model call (IG: about 0.1 s a user on CPU).

    Long texts are shortened (:func:`rudi_explain.views.text.shorten_payload`;
    event cells to :data:`~rudi_explain.views.text.CELL_LIMIT` characters).

    Raises
    ------
    KeyError
        If the user is not among the explained users.
    """
    u = exp.user(resolve_user(exp, user_id))
    i = u.index
    rules = exp.rules
    L = exp.literals
    added = u.added  # what each fired rule adds: its weight; a linear card's term its weight x clipped value
    fired = sorted(u.fired, key=lambda k: (-abs(added[k]), k))
    used: dict[int, set[int]] = {}  # literal -> fired rules using it
    all_rule_literals: set[int] = set()
    for k, rule in enumerate(rules):
        if isinstance(rule, LinearTerm):
            continue
        for lit in formula_literals(rule.formula):
            all_rule_literals.add(lit.index)
            if k in u.fired:
                used.setdefault(lit.index, set()).add(k)
    values = u.literals["value"].to_numpy()
    holds = u.literals["holds"].to_numpy()
    # One row per literal as the rules write it: a "<=" literal that makes a rule fire reads
    # "at most t ✓", never "> t ✗".
    written: dict[tuple[int, bool], set[int]] = {}
    for k, rule in enumerate(rules):
        if isinstance(rule, LinearTerm):
            continue
        for lit in formula_literals(rule.formula):
            written.setdefault((lit.index, lit.negated), set())
            if k in u.fired:
                written[(lit.index, lit.negated)].add(k)
    info = rules.info
    literal_rows = [{
        "literal": j,
        "negated": neg,
        "op": "<=" if neg else ">",
        "sentence": info.render_literal(Lit(j, neg)),
        "notation": info.notation(Lit(j, neg)),
        "name": L.names[j],
        "words": L.output_descriptions[int(L.column[j])],
        "value": _num(values[j]),
        "value_text": value_text(L, int(L.column[j]), values[j]),
        "threshold": _num(L.thresholds[j], 17),
        "threshold_text": L.threshold_text[j],
        "holds": bool(holds[j]) != neg,
        "in_fired": sorted(written[(j, neg)]),
    } for j, neg in sorted(written)]

    # The statistic outputs behind the fired rules, and which events feed each.
    feeds = []
    for c in sorted({int(L.column[j]) for j in used}):
        s = int(L.output_statistic[c])
        feeds.append({"column": c, "statistic": s, "words": L.output_descriptions[c],
                      "text": str(exp.statistics[s]), "value": _num(exp.result.values[i, c]),
                      "value_text": value_text(L, c, exp.result.values[i, c]),
                      "rows": [r for r in feeding_rows(exp, i, s, int(L.output_index[c])) if r < max_events]})

    events = u.events
    n_events = len(events)
    shown = events.iloc[:max_events]
    columns = [str(c) for c in shown.columns if c != exp.sequences.user_column]
    full = FullValues()  # the whole of every value shortened below, one click away in the front end
    rows = [[_format_cell(v, full) for v in row] for row in shown[columns].itertuples(index=False, name=None)]
    detail = shorten_payload({
        "id": user_key(u.user_id),
        "teacher": _num(u.teacher_score),
        "student": _num(u.student_score),
        "percentile": _num(u.percentile, 4),
        "student_percentile": _num(u.student_percentile, 4),
        "held_out": u.is_held_out,
        "intercept": _num(u.intercept),
        "fired": [int(k) for k in u.fired],
        "scorecard": user_scorecard(exp, i, u),
        "contributions": [{"index": int(k), "text": str(rules[k].text), "weight": _num(added[k])}
                          for k in fired],
        "literals": literal_rows,
        "feeds": feeds,
        "columns": columns,
        "events": rows,
        "n_events": n_events,
        **({"attributions": attribution_state(exp, u.user_id, max_events)} if attributions else {}),
    }, full=full)
    detail[FULL_VALUES_KEY] = full.as_dict()
    return detail


def attribution_state(exp: Explanation, user_id: Any, max_events: int = MAX_EVENTS, method: str | None = None) -> dict:
    """The attribution strip of a user's drill-down: one value per shown event row, and the agreement.

    ``values[r]`` is the attribution of event row ``r`` (None where the method
    did not attribute it), ``feeds[r]`` whether a fired rule reads it;
    ``agreement`` and ``event_share`` as in
    :class:`~rudi_explain.audit.attributions.EventAttributions`. When no model can
    be asked (given scores, a loaded file) the payload says so:
    ``{"available": False, "reason": ...}``.
    """
    try:
        a = exp.user(resolve_user(exp, user_id)).attribute(method)
    except TeacherUnavailable as err:
        return {"available": False, "reason": str(err)}
    shown = a.events.iloc[:max_events]
    values = shown["attribution"].to_numpy()
    columns = {c[len("attribution["):-1]: [_num(v) for v in shown[c].to_numpy()]
               for c in shown.columns if c.startswith("attribution[")}
    return {
        "available": True,
        "method": a.method,
        "values": [_num(v) for v in values],
        "feeds": [bool(f) for f in shown["feeds_rule"]],
        "columns": columns,
        "max_abs": _num(np.nanmax(np.abs(values))) if np.isfinite(values).any() else None,
        "agreement": _num(a.agreement, 4),
        "event_share": _num(a.event_share, 4),
        "informative": a.informative,
        "lift": _num(a.lift, 4),
        "score": _num(a.score),
        "note": a.note,
    }


#: The Summary's "agreement on held-out users": users sampled, and seconds after which no new batch starts.
AGREEMENT_USERS = 200
AGREEMENT_BUDGET = 20.0


def agreement_state(exp: Explanation, n_users: int = AGREEMENT_USERS, time_budget: float | None = AGREEMENT_BUDGET,
                    progress: Any = None, method: str | None = None) -> dict:
    """The rule-model agreement over held-out users, for the Summary: a histogram, deciles and counts.

    :meth:`AgreementSummary.to_dict <rudi_explain.audit.attributions.AgreementSummary.to_dict>`
    of ``exp.agreement(n_users, time_budget=...)`` with ``available: True``;
    ``{"available": False, "reason": ...}`` when no model can be asked.
    ``progress(done, of)`` is called after each batch of users.
    """
    try:
        summary = exp.agreement(n_users, method, time_budget=time_budget, progress=progress)
    except TeacherUnavailable as err:
        return {"available": False, "reason": str(err)}
    out = summary.to_dict()
    for k in ("agreement_mean", "agreement_median", "event_share_mean", "lift_median"):
        out[k] = _num(out[k], 4)
    return {"available": True, "n_test": int(exp.is_test.sum()), "time_budget": time_budget} | out


# ------------------------------------------------------------------ what-if thresholds
def what_if(exp: Explanation, literal: Any, value: Any) -> dict:
    """Live feedback while a threshold is dragged: the rules' coverage and the held-out fidelity.

    See :func:`rudi_explain.audit.what_if.what_if`; ``exp.with_threshold(literal,
    value)`` makes the move for good (a new explanation).
    """
    return what_if_state(exp, literal, value)
