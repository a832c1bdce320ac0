"""explain() against the peers on public real data and the planted family, and its stability (issue 26).

One run of the benchmark environment's python, for each case:

* cases: ``benchmarks/planted.py``'s family (``make_scenario`` seeds, their
  planted score as the teacher), ``rx.datasets.make_payments`` and
  ``make_edits`` (their planted risk), and two public real data sets
  (``real_data.py``: CDNOW's customers, will they buy again; the wage
  panel, next year's log wage), each with a real teacher: a scikit-learn
  HistGradientBoosting pipeline fitted on *other* users than those
  explained, its scores given as ``scores=``;
* on explain()'s own split (``exp.result.is_test``), held-out fidelity
  (``rudi_explain.metrics.fidelity``) of: explain() at its defaults;
  featuretools DFS + FIGS and DFS + RuleFit (imodels, linear terms on; 20
  rules each, ``peers.py``); hand-made per-user aggregates (counts, sums,
  means, extremes, last values, recency, per-category shares:
  ``real_data.hand_aggregates``) + RuleFit; and, where ``explain()`` takes
  ``statistics=``, explain() given the hand-made aggregates as statistics
  (column ``given``).

Printed: one line per case, then the share of cases in which explain() is at
least as faithful as the best peer (ties within :data:`TIE`) and its cards +
interaction rules (target: >= the best peer in 90% of cases, <= 10 units).
Column ``se``: the standard error of explain()'s fidelity less the best peer's,
by a paired bootstrap over the held-out users (:data:`BOOTSTRAP` resamples, the
same users for both); the summary counts the cases behind or ahead by more than
one of them.

Stability (on by default; ``--skip stability`` leaves it out): for payments and
each real data set, explain() with ``random_state`` 0, 1, 2 on the same users.
Pairwise over the seeds: the share of one run's statistics the other also has
(by equivalence key: the issue's "statistics in common"; beside it, by key and
output, where a vector statistic counts each output), for the searched
statistics and for the outputs the scorecard uses; for every band both runs
have on a card both have (the same output; the band's same two edges: the
issue's "the same band"), how far its points move relative to the card's
spread (its largest minus its smallest points); the same for the bands matched
by their users instead (Jaccard of their users at least :data:`SAME_USERS`:
"more than 32 EUR" and "more than 34 EUR" when few users lie between); and,
per card in common, how far the points each user gets move (the median
user). Each case then lists the statistics in every seed, each seed's others,
and each seed's cards with their edges. Targets: >= 80% in common, points
within 20%.

    make peers-env                                              # once: .venv-peers
    .venv-peers/bin/python benchmarks/bench_real.py --quick     # a minute or two
    .venv-peers/bin/python benchmarks/bench_real.py             # ~15-20 minutes on 2 cores

Results also go to ``out/bench_real.json``.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
import time
import warnings
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from planted import make_scenario  # noqa: E402
from real_data import hand_aggregates, load_cdnow, load_wage_panel, real_case  # noqa: E402

import rudi_explain as rx  # noqa: E402
from rudi_explain.metrics import fidelity  # noqa: E402
from rudi_explain.rules.formula import formula_literals  # noqa: E402
from rudi_explain.rules.scorecard_cards import UNDEFINED  # noqa: E402

#: explain() counts as at least as faithful as a peer within this
TIE = 0.002
#: Resamples of the held-out users for the standard error of explain() against the best peer.
BOOTSTRAP = 200
#: the targets printed beside the figures
TARGET_SHARE, TARGET_UNITS, TARGET_COMMON, TARGET_MOVE = 0.9, 10, 0.8, 0.2
#: two bands on one card of two runs are matched by their users when the Jaccard index of their users is at least this
SAME_USERS = 0.8
PEER_COLUMNS = ("dfs+figs", "dfs+rulefit", "hand+rulefit")


@dataclass
class Case:
    """One benchmark case: sequences, the teacher's scores, and the raw events for the peers."""

    name: str
    seed: int
    seqs: rx.Sequences
    scores: pd.Series
    events: pd.DataFrame
    categorical: list[str]
    numerical: list[str]
    teacher: str = "planted"


def planted_case(seed: int, users: int) -> Case:
    sc = make_scenario(seed, n_users=users)
    return Case("planted", seed, sc.sequences(), sc.scores, sc.events, sc.categorical, sc.numerical)


def demo_case(name: str, seed: int, users: int) -> Case:
    demo = {"payments": rx.datasets.make_payments, "edits": rx.datasets.make_edits}[name](users, random_state=seed)
    return Case(name, seed, demo.sequences(), demo.risk, demo.events, demo.categorical, demo.numerical)


_REAL: dict = {}


def real(name: str, seed: int, users: int | None, teacher_users: int | None) -> Case:
    """A real data set's case: ``seed`` draws the explained and teacher users (wage: the two halves)."""
    if name not in _REAL:
        _REAL[name] = {"cdnow": load_cdnow, "wage": load_wage_panel}[name]()
    data = _REAL[name]
    if name == "wage":  # 545 men: half explained, the other half teach; seed 1 swaps the halves
        rc = real_case(data, None, None, seed=0, swap=bool(seed % 2))
    else:
        rc = real_case(data, users, teacher_users, seed=seed)
    quality = f"teacher {'AUC' if data.classifier else 'r'} {rc.teacher_quality:.3f} on the real outcome"
    return Case(name, seed, rc.sequences(), rc.scores, rc.events, data.categorical, data.numerical, quality)


# ------------------------------------------------------------------ one case
def _explain(case: Case, random_state: int, **options) -> rx.Explanation:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rx.explain(None, case.seqs, scores=case.scores, random_state=random_state, background=False,
                          progress=False, **options)


def given_statistics(case: Case) -> list[str]:
    """The hand-made aggregates as statistic texts (for ``explain(..., statistics=)``): the event
    count, recency, tenure and mean gap, the sum, mean, max and min of each numerical column, and
    each categorical column's shares (``Mean`` of its one-hot columns); those constant over the
    users (explain() refuses them) left out."""
    first = (case.numerical or case.categorical)[0]
    texts = [f"Select({first}) | {op}" for op in ("Count", "Recency", "Tenure", "MeanGap")]
    for c in case.numerical:
        texts += [f"Select({c}) | {op}" for op in ("Sum", "Mean", "Max", "Min")]
    texts += [f"Select({c}) | Mean" for c in case.categorical]
    kept = []
    for text in texts:
        v = np.asarray(rx.Statistic.parse(text).evaluate(case.seqs), dtype=float).reshape(case.seqs.n_users, -1)
        if np.any(np.nanmax(v, axis=0) > np.nanmin(v, axis=0)):
            kept.append(text)
    return kept


def run_case(case: Case, peers: bool = True) -> tuple[dict, rx.Explanation]:
    t0 = time.perf_counter()
    exp = _explain(case, 0)
    seconds = time.perf_counter() - t0
    res = exp.result
    ids = res.teacher_scores.index.to_numpy()
    y = res.teacher_scores.to_numpy(dtype=float)
    test = np.asarray(res.is_test, dtype=bool)
    row: dict = {"case": case.name, "seed": case.seed, "users": len(ids), "held_out": int(test.sum()),
                 "teacher": case.teacher,
                 "explain": fidelity(y[test], res.student_scores.to_numpy()[test]),
                 "cards": len(exp.scorecard.cards), "interactions": len(exp.scorecard.interactions),
                 "seconds_explain": seconds, "peers": {}, "peer_rules": {}}
    if peers:
        from peers import dfs_features, run_peers

        t0 = time.perf_counter()
        dfs, _ = dfs_features(case.events, case.categorical, case.numerical, ids, train_users=ids[~test])
        predictions = {}
        for name, r in run_peers(dfs, y, test, peers=("figs", "rulefit")).items():
            row["peers"]["dfs+" + name], row["peer_rules"]["dfs+" + name] = r.fidelity_test, r.n_rules
            predictions["dfs+" + name] = r.predictions
        hand = hand_aggregates(case.events, case.categorical, case.numerical, ids, train_users=ids[~test])
        r = run_peers(hand, y, test, peers=("rulefit",))["rulefit"]
        row["peers"]["hand+rulefit"], row["peer_rules"]["hand+rulefit"] = r.fidelity_test, r.n_rules
        predictions["hand+rulefit"] = r.predictions
        best = max(row["peers"], key=row["peers"].get)
        row["se_best"] = paired_se(y[test], res.student_scores.to_numpy()[test], predictions[best])
        row["seconds_peers"] = time.perf_counter() - t0
    if "statistics" in inspect.signature(rx.explain).parameters:
        try:
            given = _explain(case, 0, statistics=given_statistics(case), search=False)
            gres = given.result
            row["given"] = fidelity(y[test], gres.student_scores.to_numpy()[np.asarray(gres.is_test)])
        except Exception as err:  # noqa: BLE001 - an optional column: report, go on
            row["given_error"] = f"{type(err).__name__}: {err}"[:200]
    return row, exp


def paired_se(y: np.ndarray, ours: np.ndarray, theirs: np.ndarray, draws: int = BOOTSTRAP,
              seed: int = 0) -> float:
    """Standard error of fidelity(ours) - fidelity(theirs) on these held-out users: the standard deviation
    of the difference over ``draws`` resamples of the users (the same resample for both)."""
    rng = np.random.default_rng(seed)
    diffs = []
    for _ in range(draws):
        idx = rng.integers(0, len(y), len(y))
        diffs.append(fidelity(y[idx], ours[idx]) - fidelity(y[idx], theirs[idx]))
    return float(np.std(diffs, ddof=1))


# ------------------------------------------------------------------ stability
def output_keys(exp: rx.Explanation, used: bool) -> dict:
    """Equivalence key (statistic key, output) -> value-matrix column, of the searched statistics'
    outputs (``used=False``) or of those the scorecard reads (cards and interaction rules)."""
    card = exp.scorecard
    lits = card.literals

    def key(c: int) -> tuple:
        stat = lits.statistics[int(lits.output_statistic[c])] if lits.statistics is not None else lits.output_names[c]
        return (getattr(stat, "key", str(stat)), lits.output_names[c] if lits.output_index[c] else "")

    if not used:
        return {key(c): c for c in range(lits.n_outputs)}
    cols = {c.column for c in card.cards}
    cols |= {int(lits.column[lit.index]) for r in card.interactions for lit in formula_literals(r.formula)}
    return {key(c): c for c in sorted(cols)}


def statistic_keys(exp: rx.Explanation) -> dict:
    """Equivalence key -> text of every searched statistic (a vector statistic counts once)."""
    stats = exp.scorecard.literals.statistics or []
    return {getattr(st, "key", str(st)): str(st) for st in stats}


def _common(a: set, b: set) -> float:
    """Mean over both directions of the share of one run's statistics the other also has."""
    if not a and not b:
        return 1.0
    return 0.5 * ((len(a & b) / len(a) if a else 0.0) + (len(a & b) / len(b) if b else 0.0))


def _bands(card) -> dict:
    """(lower edge, upper edge) -> points of every value band, and "undefined" -> its points."""
    edges = (-np.inf, *card.edges, np.inf)
    out: dict = {(edges[k], edges[k + 1]): band.points for k, band in enumerate(card.bands)}
    if card.undefined is not None:
        out["undefined"] = card.undefined.points
    return out


def _matched_by_users(a, b, va: np.ndarray, vb: np.ndarray, spread: float) -> list[float]:
    """|points difference| / ``spread`` of every band of card ``a`` and the band of card ``b`` that
    holds nearly the same users (Jaccard of the users at least :data:`SAME_USERS`; at most one such
    band): the same band where the edges moved a little between the seeds (32 EUR and 34 EUR)."""
    ba, bb = a.band_index(va), b.band_index(vb)
    pa = {k: band.points for k, band in enumerate(a.bands)}
    pb = {k: band.points for k, band in enumerate(b.bands)}
    if a.undefined is not None:
        pa[UNDEFINED] = a.undefined.points
    if b.undefined is not None:
        pb[UNDEFINED] = b.undefined.points
    out = []
    for k, p in pa.items():
        mine = ba == k
        if not mine.any():
            continue
        theirs, counts = np.unique(bb[mine], return_counts=True)
        j = int(theirs[np.argmax(counts)])
        inter = int(counts.max())
        jaccard = inter / (int(mine.sum()) + int((bb == j).sum()) - inter)
        if jaccard >= SAME_USERS and j in pb:
            out.append(abs(p - pb[j]) / spread)
    return out


def band_moves(e1: rx.Explanation, e2: rx.Explanation) -> tuple[list[float], int, int, list[float], list[float]]:
    """|points difference| / card spread of every band both runs have on a card both have: the
    same output, and the band's same two edges.

    Returns the moves, the cards in common, how many of those have all the
    same edges, per card in common (any edges) the median over the users of
    how far the points each user gets move, relative to the card's spread
    (the same users in the same order in both runs), and the moves of the
    bands matched by their users instead of their edges (:func:`_matched_by_users`).
    """
    k1, k2 = output_keys(e1, True), output_keys(e2, True)
    by1 = {c.column: c for c in e1.scorecard.cards}
    by2 = {c.column: c for c in e2.scorecard.cards}
    moves, common, same, user_moves, by_users = [], 0, 0, [], []
    for key, c1 in k1.items():
        if key not in k2 or c1 not in by1 or k2[key] not in by2:
            continue
        a, b = by1[c1], by2[k2[key]]
        common += 1
        ua, ub = a.points(e1.result.values[:, a.column]), b.points(e2.result.values[:, b.column])
        user_spread = 0.5 * (np.ptp(ua) + np.ptp(ub))
        if user_spread > 0:
            user_moves.append(float(np.median(np.abs(ua - ub)) / user_spread))
        if a.linear is not None or b.linear is not None:
            continue
        same += a.edges == b.edges and (a.undefined is None) == (b.undefined is None)
        ba, bb = _bands(a), _bands(b)
        spread = 0.5 * (np.ptp(list(ba.values())) + np.ptp(list(bb.values())))
        if spread > 0:  # a band is the same band when both its edges are (or both are "undefined")
            moves += [abs(ba[k] - bb[k]) / spread for k in ba if k in bb]
            by_users += _matched_by_users(a, b, e1.result.values[:, a.column], e2.result.values[:, b.column], spread)
    return moves, common, same, user_moves, by_users


def stability(case: Case, first: rx.Explanation, seeds: int) -> dict:
    runs = [first] + [_explain(case, s) for s in range(1, seeds)]
    if any(not np.array_equal(r.result.teacher_scores.index, first.result.teacher_scores.index) for r in runs):
        raise RuntimeError("the seeds' runs do not list the same users in the same order")
    searched, outputs, used, moves, common, same, user_moves, by_users = [], [], [], [], 0, 0, [], []
    for a, b in combinations(runs, 2):
        searched.append(_common(set(statistic_keys(a)), set(statistic_keys(b))))
        outputs.append(_common(set(output_keys(a, False)), set(output_keys(b, False))))
        used.append(_common(set(output_keys(a, True)), set(output_keys(b, True))))
        m, c, s, u, bu = band_moves(a, b)
        moves += m
        user_moves += u
        by_users += bu
        common, same = common + c, same + s
    keys = [statistic_keys(r) for r in runs]
    everywhere = set.intersection(*(set(k) for k in keys))
    return {"case": case.name, "seeds": seeds, "common_searched": float(np.mean(searched)),
            "common_searched_outputs": float(np.mean(outputs)),
            "common_used": float(np.mean(used)), "cards_in_common": common, "same_edges": same,
            "bands": len(moves), "bands_within": float(np.mean(np.asarray(moves) <= TARGET_MOVE)) if moves else None,
            "median_move": float(np.median(moves)) if moves else None,
            "bands_by_users": len(by_users),
            "bands_by_users_within": float(np.mean(np.asarray(by_users) <= TARGET_MOVE)) if by_users else None,
            "cards_users_within": float(np.mean(np.asarray(user_moves) <= TARGET_MOVE)) if user_moves else None,
            "units": [len(r.scorecard.cards) + len(r.scorecard.interactions) for r in runs],
            "in_every_seed": sorted(k[key] for k in keys[:1] for key in everywhere),
            "not_in_every_seed": [sorted(text for key, text in k.items() if key not in everywhere) for k in keys],
            "cards": [[_card_text(r, c) for c in r.scorecard.cards] for r in runs]}


def _card_text(exp: rx.Explanation, card) -> str:
    """A card in one line: its output and its edges (or "linear")."""
    name = exp.scorecard.literals.output_names[card.column]
    return f"{name}: " + ("linear" if card.linear is not None else ", ".join(f"{e:g}" for e in card.edges))


# ------------------------------------------------------------------ printing
def line(r: dict) -> str:
    peers = " ".join(f"{r['peers'].get(p, float('nan')):8.3f}" for p in PEER_COLUMNS)
    given = f" {r['given']:7.3f}" if "given" in r else ("   error" if "given_error" in r else "       -")
    best = max(r["peers"].values()) if r["peers"] else float("nan")
    mark = "ok" if r["explain"] >= best - TIE else "--"
    se = f"{r['se_best']:6.3f}" if "se_best" in r else "     -"
    return (f"{r['case']:9} {r['seed']:4d} {r['users']:6d} {r['explain']:7.3f} {r['cards']:2d}+{r['interactions']:<2d} "
            f"{peers}{given}  {mark} {se} {r['seconds_explain']:5.0f}s {r.get('seconds_peers', 0):5.0f}s")


HEADER = (f"{'case':9} {'seed':>4} {'users':>6} {'explain':>7} {'c+i':5} " + " ".join(f"{p:>8}"[-8:] for p in
          ("dfs+figs", "dfs+rf", "hand+rf")) + f" {'given':>7}  >= {'se':>6} {'explain':>6} {'peers':>6}")


def summary(rows: list[dict], stab: list[dict], detail: bool = False) -> list[str]:
    out = []
    with_peers = [r for r in rows if r["peers"]]
    if with_peers:
        wins = [r["explain"] >= max(r["peers"].values()) - TIE for r in with_peers]
        units = np.array([r["cards"] + r["interactions"] for r in rows])
        out.append(f"explain() >= the best peer (within {TIE}) in {sum(wins)} of {len(wins)} cases "
                   f"({np.mean(wins):.0%}; target >= {TARGET_SHARE:.0%}), with {units.min()}-{units.max()} cards + "
                   f"interaction rules (mean {units.mean():.1f}; target <= {TARGET_UNITS})")
        gaps = [(r["explain"] - max(r["peers"].values())) / r["se_best"] for r in with_peers
                if r.get("se_best", 0) > 0]
        if gaps:
            out.append(f"  explain() - the best peer, in standard errors of the difference (paired bootstrap over the "
                       f"held-out users, {BOOTSTRAP} draws): behind by more than 1 in {sum(g < -1 for g in gaps)} of "
                       f"{len(gaps)} cases, within 1 in {sum(abs(g) <= 1 for g in gaps)}, ahead by more than 1 in "
                       f"{sum(g > 1 for g in gaps)}")
        for group in sorted({r["case"] for r in with_peers}):
            g = [r for r in with_peers if r["case"] == group]
            means = {p: np.mean([r["peers"][p] for r in g]) for p in PEER_COLUMNS}
            out.append(f"  {group:9} {len(g)} cases: explain {np.mean([r['explain'] for r in g]):.3f}, "
                       + ", ".join(f"{p} {v:.3f}" for p, v in means.items())
                       + (f", given {np.mean([r['given'] for r in g if 'given' in r]):.3f}"
                          if any("given" in r for r in g) else ""))
        rules = {p: int(np.median([r["peer_rules"][p] for r in with_peers])) for p in PEER_COLUMNS}
        out.append("peers' rules (median; RuleFit counts linear terms): "
                   + ", ".join(f"{p} {v}" for p, v in rules.items()))
    for s in stab:
        within = "-" if s["bands_within"] is None else f"{s['bands_within']:.0%}"
        med = "-" if s["median_move"] is None else f"{s['median_move']:.0%}"
        users = "-" if s["cards_users_within"] is None else f"{s['cards_users_within']:.0%}"
        by_users = "-" if s.get("bands_by_users_within") is None else f"{s['bands_by_users_within']:.0%}"
        out.append(f"stability {s['case']:9} over {s['seeds']} seeds: statistics in common {s['common_searched']:.0%} "
                   f"(searched; {s['common_searched_outputs']:.0%} of their outputs), {s['common_used']:.0%} "
                   f"(outputs in the scorecard); cards in common {s['cards_in_common']}, "
                   f"{s['same_edges']} with all the same edges; {within} of the {s['bands']} bands both have (same "
                   f"edges: the issue's measure) move <= "
                   f"{TARGET_MOVE:.0%} of the card's spread (median {med}); {by_users} of the {s['bands_by_users']} "
                   f"bands matched by their users (Jaccard >= {SAME_USERS:.0%}); on {users} of the cards in common "
                   f"the median user's points move <= {TARGET_MOVE:.0%}; units {s['units']}")
        if detail:
            out.append(f"  in every seed: {'; '.join(s['in_every_seed']) or '-'}")
            for seed, (extra, cards) in enumerate(zip(s["not_in_every_seed"], s["cards"])):
                out.append(f"  seed {seed}: also {'; '.join(extra) or '-'}")
                out.append(f"          cards {' | '.join(cards) or '-'}")
    if stab:
        out.append(f"stability targets: >= {TARGET_COMMON:.0%} in common, points within {TARGET_MOVE:.0%}")
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one small case of each kind, stability on 2 seeds")
    ap.add_argument("--users", type=int, default=1500, help="users per synthetic case")
    ap.add_argument("--seeds", type=int, default=2, help="payments and edits seeds")
    ap.add_argument("--seeds-start", type=int, default=0,
                    help="first payments and edits seed (fresh cases for a change checked on seeds 0..n-1)")
    ap.add_argument("--planted", type=int, default=6, help="planted scenarios (seeds 0..n-1)")
    ap.add_argument("--planted-start", type=int, default=0,
                    help="first planted seed (fresh cases for a change checked on seeds 0..n-1)")
    ap.add_argument("--cdnow", type=int, default=3, help="CDNOW cases (disjoint draws of explained users)")
    ap.add_argument("--cdnow-start", type=int, default=0, help="first CDNOW draw")
    ap.add_argument("--cdnow-users", type=int, default=1500)
    ap.add_argument("--cdnow-teacher", type=int, default=4000, help="CDNOW users the teacher is fitted on")
    ap.add_argument("--stability-seeds", type=int, default=3)
    ap.add_argument("--only", default="", help="comma-separated case kinds: planted,payments,edits,cdnow,wage")
    ap.add_argument("--skip", default="", help="comma-separated: peers, stability")
    ap.add_argument("--out", default="out/bench_real.json")
    args = ap.parse_args(argv)
    skip = {s for s in args.skip.split(",") if s}
    if args.quick:
        args.users, args.seeds, args.planted, args.cdnow = 800, 1, 1, 1
        args.cdnow_users, args.cdnow_teacher, args.stability_seeds = 800, 2000, 2
    peers = "peers" not in skip
    if peers:
        try:
            import featuretools  # noqa: F401
            import imodels  # noqa: F401
        except ImportError:
            raise SystemExit("bench_real needs featuretools and imodels: `make peers-env`, then "
                             ".venv-peers/bin/python benchmarks/bench_real.py") from None
    plan: list[tuple[str, int]] = [("wage", s) for s in range(1 if args.quick else 2)]
    plan += [("cdnow", s) for s in range(args.cdnow_start, args.cdnow_start + args.cdnow)]
    plan += [(n, s) for n in ("payments", "edits") for s in range(args.seeds_start, args.seeds_start + args.seeds)]
    plan += [("planted", s) for s in range(args.planted_start, args.planted_start + args.planted)]
    if args.only:
        plan = [p for p in plan if p[0] in args.only.split(",")]
    stable = {"wage", "cdnow", "payments"} if "stability" not in skip else set()

    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    stab: list[dict] = []
    t_all = time.perf_counter()
    print(f"rudi_explain {rx.__version__}; {len(plan)} cases; explain() at its defaults; peers: "
          f"DFS + FIGS, DFS + RuleFit, hand-made aggregates + RuleFit (20 rules each)")
    print(HEADER)
    for name, seed in plan:
        if name == "planted":
            case = planted_case(seed, args.users)
        elif name in ("payments", "edits"):
            case = demo_case(name, seed, args.users)
        else:
            case = real(name, seed, args.cdnow_users, args.cdnow_teacher)
        row, exp = run_case(case, peers)
        rows.append(row)
        print(line(row) + ("" if case.teacher == "planted" else f"  ({case.teacher})"), flush=True)
        if name in stable and seed == 0:
            stab.append(stability(case, exp, args.stability_seeds))
            print("\n".join("  " + text for text in summary([], stab[-1:], detail=True)[:-1]), flush=True)
        path.write_text(json.dumps({"cases": rows, "stability": stab}, indent=1, default=float))
    print()
    for text in summary(rows, stab):
        print(text)
    print(f"total {time.perf_counter() - t_all:.0f} s; results: {path}")
    return {"cases": rows, "stability": stab}


if __name__ == "__main__":
    main()
