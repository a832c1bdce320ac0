"""Stage 1 quality and speed: the readable search against the paper's MCTS-SG and Table 3's baselines.

On make_payments data with its planted risk as the target, for each method:
* the multiple correlation R on held-out users (20%), from a least-squares
  fit on the training users, both on the raw statistics and on their decile
  literals (a teacher that is a step function of its statistics is poorly
  fitted by a line, so raw R alone cannot tell methods apart);
* wall time, split into the search's stages (catalog evaluation, selection
  and deepening, MCTS-SG) for the readable search;
* which planted statistics were recovered: exactly (same equivalence key),
  and how well (the best |correlation| of a found output with the planted one).

The default search (grammar="readable": the short catalog, then MCTS-SG for
what it leaves) runs beside the paper's algorithm (grammar="paper") and,
without --quick, the paper's reward variants.

``--seeds 5`` instead measures seed stability: the share of the top-10
statistics common to every run over that many seeds.

Run: .venv/bin/python benchmarks/bench_search.py [--users 100000] [--quick] [--seeds 5]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from rudi_explain.correlation import multiple_correlation
from rudi_explain.datasets import make_payments
from rudi_explain.search.statistics_search import StatisticsSearch


def columns(values: np.ndarray) -> np.ndarray:
    return values.reshape(len(values), -1)


def recovery(found, planted, seqs) -> list[float]:
    """For each planted statistic, the best |corr| of any found output with any planted output."""
    found_cols = np.column_stack([columns(s.evaluate(seqs)) for s in found])
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: no mean, filled with 0
        found_cols = np.nan_to_num(found_cols - np.nanmean(found_cols, axis=0))
    norms = np.sqrt((found_cols ** 2).sum(axis=0))
    out = []
    for stat in planted:
        best = 0.0
        for col in columns(stat.evaluate(seqs)).T:
            col = np.nan_to_num(col - np.nanmean(col))
            n = np.sqrt(col @ col)
            if n == 0:
                continue
            with np.errstate(invalid="ignore", divide="ignore"):
                r = np.abs(col @ found_cols) / (n * norms)
            best = max(best, float(np.nanmax(r)))
        out.append(best)
    return out


def decile_literals(values_train: list[np.ndarray], values_test: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    train = np.column_stack([columns(v) for v in values_train])
    test = np.column_stack([columns(v) for v in values_test])
    lit_train, lit_test = [], []
    for j in range(train.shape[1]):
        defined = train[np.isfinite(train[:, j]), j]
        if len(defined) == 0:
            continue
        for t in np.unique(np.percentile(defined, np.arange(10, 100, 10))):
            lit_train.append(train[:, j] > t)
            lit_test.append(test[:, j] > t)
    return np.column_stack(lit_train).astype(float), np.column_stack(lit_test).astype(float)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--n-stats", type=int, default=20)
    parser.add_argument("--simulations", type=int, default=500)
    parser.add_argument("--quick", action="store_true", help="only the default search and the baselines")
    parser.add_argument("--seeds", type=int, default=0, help="measure seed stability over this many seeds instead")
    args = parser.parse_args()

    demo = make_payments(args.users, random_state=0)
    seqs = demo.sequences()
    rng = np.random.default_rng(0)
    is_train = rng.random(seqs.n_users) < 0.8
    train = seqs.subset(np.flatnonzero(is_train))
    test = seqs.subset(np.flatnonzero(~is_train))
    y = demo.risk.to_numpy()
    y_train, y_test = y[is_train], y[~is_train]
    print(f"make_payments({args.users:,}): {seqs.n_events:,} events; {train.n_users:,} training users, "
          f"{test.n_users:,} held out; K={args.n_stats}, D=4, B=128, {args.simulations} simulations")
    print(f"target: planted risk = {demo.formula}")
    print("planted statistics:")
    for i, stat in enumerate(demo.planted, 1):
        print(f"  P{i} (depth {stat.depth}): {stat}")

    if args.seeds:
        stability(train, y_train, args)
        return
    runs = [("readable: catalog, then MCTS-SG (default)", dict(method="mcts"))]
    if not args.quick:
        runs += [
            ("paper grammar: MCTS-SG reward=split", dict(method="mcts", reward="split", grammar="paper")),
            ("paper grammar: MCTS-SG reward=paper", dict(method="mcts", reward="paper", grammar="paper")),
            ("paper grammar: as written (reward=paper, eq. 6 only)",
             dict(method="mcts", reward="paper", n_contenders=0, polish_rounds=0, grammar="paper")),
        ]
    runs += [("random", dict(method="random")), ("lasso", dict(method="lasso")), ("gbm", dict(method="gbm"))]

    header = f"{'method':<52} {'R raw':>7} {'R literals':>10} {'time':>8}  {'exact':>5}  recovery P1..P4"
    print("\n" + header + "\n" + "-" * len(header))
    planted_keys = [p.key for p in demo.planted]
    results = {}
    for name, kwargs in runs:
        t = time.perf_counter()
        search = StatisticsSearch(n_stats=args.n_stats, max_depth=4, batch_size=128,
                                  n_simulations=args.simulations, random_state=0, **kwargs).fit(train, y_train)
        seconds = time.perf_counter() - t
        found = search.statistics_
        v_train = [s.evaluate(train) for s in found]
        v_test = [s.evaluate(test) for s in found]
        r_raw = multiple_correlation(v_train, y_train, test=(v_test, y_test))
        l_train, l_test = decile_literals(v_train, v_test)
        r_lit = multiple_correlation(l_train, y_train, test=(l_test, y_test))
        exact = sum(k in {s.key for s in found} for k in planted_keys)
        rec = recovery(found, demo.planted, seqs)
        per_sim = (f" ({search.n_evaluations_:,} simulations, {search.tree_seconds_ / search.n_evaluations_ * 1e3:.2f}"
                   f" ms each; trees {search.tree_seconds_:.0f} s of {seconds:.0f} s)") if search.n_evaluations_ else ""
        if getattr(search, "screened_", 0):
            per_sim += (f" [{len(found)} kept; catalog of {search.screened_:,} statistics "
                        + ", ".join(f"{k} {v:.1f} s" for k, v in search.stage_seconds_.items()) + "]")
        results[name] = (r_raw, r_lit)
        print(f"{name:<52} {r_raw:7.4f} {r_lit:10.4f} {seconds:7.1f}s  {exact:>5}  "
              + " ".join(f"{r:.3f}" for r in rec) + per_sim)
        if name == runs[0][0]:
            found_default = found
    print("\nStatistics found by the default search:")
    for i, stat in enumerate(found_default, 1):
        print(f"  {i:2d}. {stat.describe(None, seqs)}   [{stat}]")
    best = results[runs[0][0]]
    for base in ("random", "lasso", "gbm"):
        print(f"default vs {base}: R raw {best[0]:.4f} vs {results[base][0]:.4f}, "
              f"R literals {best[1]:.4f} vs {results[base][1]:.4f}")


def stability(train, y_train, args) -> None:
    """Share of the top-10 statistics (by equivalence key) common to the runs of every seed."""
    runs = []
    for seed in range(args.seeds):
        t = time.perf_counter()
        found = StatisticsSearch(n_stats=args.n_stats, n_simulations=args.simulations, random_state=seed).fit(
            train, y_train).statistics_[:10]
        runs.append({s.key: s for s in found})
        print(f"seed {seed}: {len(found)} statistics in {time.perf_counter() - t:.1f} s: "
              + "; ".join(str(s) for s in found))
    common = set.intersection(*(set(r) for r in runs))
    top = max(len(r) for r in runs)
    print(f"\nseed stability over {args.seeds} seeds: {len(common)} of the top {top} statistics common to all runs "
          f"= {len(common) / top:.2f}")


if __name__ == "__main__":
    main()
