"""Held-out fidelity before and after the scorecard step (issue 26, part 2).

explain()'s post-processing prunes the student's rules, then reads the pruned
rules as a scorecard and refits it jointly within ``max_rules`` cards and
interaction rules (:mod:`rudi_explain.explanation.scorecard_step`). One
explain() run per case gives both sides on the same users, search and split:

* before: the pruning path's default point (``exp.pruning.default_rules``),
  what ``exp.rules`` was before the step;
* after: ``exp.rules`` (the scorecard's rule form, exactly its scores).

Cases: ``make_payments`` and ``make_edits`` (their planted risk as the
teacher) and ``benchmarks/planted.py``'s family, over seeds. Printed: one line
per case (fidelity before and after, rules before, cards and interaction rules
after, rules in the rule form), then the means and how often the scorecard is
at least as faithful (ties within 0.002). The peers' comparison (DFS + FIGS,
DFS + RuleFit) is in ``bench_planted.py``, and on public real data (CDNOW, the
wage panel) with hand-made aggregates + RuleFit and explain()'s stability over
seeds in ``bench_real.py``.

    .venv/bin/python benchmarks/bench_scorecard.py                 # 3 seeds x (payments, edits, 3 planted)
    .venv/bin/python benchmarks/bench_scorecard.py --seeds 5 --users 3000 --planted 6
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from planted import make_scenario  # noqa: E402

import rudi_explain as rx  # noqa: E402
from rudi_explain.metrics import fidelity  # noqa: E402

#: ties: the scorecard counts as at least as faithful within this
TIE = 0.002


def _case(name: str, seed: int, users: int) -> tuple[rx.Sequences, object]:
    if name == "planted":
        sc = make_scenario(seed, n_users=users)
        return sc.sequences(), sc.scores
    demo = {"payments": rx.datasets.make_payments, "edits": rx.datasets.make_edits}[name](users, random_state=seed)
    return demo.sequences(), demo.risk


def run(name: str, seed: int, users: int, options: dict) -> dict:
    seqs, scores = _case(name, seed, users)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exp = rx.explain(None, seqs, scores=scores, random_state=seed, background=False, progress=False, **options)
    res = exp.result
    test = res.is_test
    y = res.teacher_scores.to_numpy()[test]
    before = exp.pruning.default_rules
    Z = res.literal_matrix[test]
    return {"case": name, "seed": seed, "users": seqs.n_users,
            "fidelity_before": fidelity(y, before.score(Z)),
            "fidelity_after": fidelity(y, res.student_scores.to_numpy()[test]),
            "rules_before": len(before), "cards": len(exp.scorecard.cards),
            "interactions": len(exp.scorecard.interactions), "rules_after": len(exp.rules),
            "seconds": time.perf_counter() - t0, "seconds_step": res.seconds.get("pruning", float("nan"))}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--users", type=int, default=2000)
    ap.add_argument("--planted", type=int, default=3, help="planted scenarios (seeds 0..n-1)")
    ap.add_argument("--max-rules", type=int, default=None)
    args = ap.parse_args(argv)
    options = {} if args.max_rules is None else {"max_rules": args.max_rules}
    cases = [(n, s) for n in ("payments", "edits") for s in range(args.seeds)]
    cases += [("planted", s) for s in range(args.planted)]
    rows = []
    print(f"{'case':10} {'seed':>4} {'before':>7} {'after':>7} {'rules':>5} {'cards':>5} {'inter':>5} "
          f"{'rule form':>9} {'s':>6}")
    for name, seed in cases:
        r = run(name, seed, args.users, options)
        rows.append(r)
        print(f"{name:10} {seed:4d} {r['fidelity_before']:7.3f} {r['fidelity_after']:7.3f} {r['rules_before']:5d} "
              f"{r['cards']:5d} {r['interactions']:5d} {r['rules_after']:9d} {r['seconds']:6.1f}", flush=True)
    before = np.array([r["fidelity_before"] for r in rows])
    after = np.array([r["fidelity_after"] for r in rows])
    units = np.array([r["cards"] + r["interactions"] for r in rows])
    print(f"\nmean held-out fidelity: before {before.mean():.4f}, after {after.mean():.4f} "
          f"(difference {np.mean(after - before):+.4f}; min {np.min(after - before):+.4f}, "
          f"max {np.max(after - before):+.4f})")
    print(f"scorecard at least as faithful (within {TIE}): {np.mean(after >= before - TIE):.0%} of {len(rows)} cases; "
          f"units (cards + interaction rules): mean {units.mean():.1f}, max {units.max()}")


if __name__ == "__main__":
    main()
