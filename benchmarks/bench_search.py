"""Stage 1 quality and speed: MCTS-SG against the paper's Table 3 baselines.

On make_payments data with its planted risk as the target, for each method:
* the multiple correlation R on held-out users (20%), from a least-squares
  fit on the training users, both on the raw statistics and on their decile
  literals (a teacher that is a step function of its statistics is poorly
  fitted by a line, so raw R alone cannot tell methods apart);
* wall time, and time per simulation for MCTS-SG;
* which planted statistics were recovered: exactly (same equivalence key),
  and how well (the best |correlation| of a found output with the planted one).

MCTS-SG runs with each reward form ('split', the default; 'adjusted'; the
paper's 'paper') and once with the paper's plain commit rule (no contenders,
no polishing), so the effect of each change shows.

Run: .venv/bin/python benchmarks/bench_search.py [--users 100000] [--quick]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from rudi_explain.correlation import multiple_correlation
from rudi_explain.datasets import make_payments
from rudi_explain.search import StatisticsSearch


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
    parser.add_argument("--quick", action="store_true", help="only MCTS-SG (default reward) and the baselines")
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

    runs = [("MCTS-SG reward=split (default)", dict(method="mcts", reward="split"))]
    if not args.quick:
        runs += [
            ("MCTS-SG reward=adjusted", dict(method="mcts", reward="adjusted")),
            ("MCTS-SG reward=paper", dict(method="mcts", reward="paper")),
            ("MCTS-SG paper as written (reward=paper, eq. 6 only)",
             dict(method="mcts", reward="paper", n_contenders=0, polish_rounds=0)),
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
        results[name] = (r_raw, r_lit)
        print(f"{name:<52} {r_raw:7.4f} {r_lit:10.4f} {seconds:7.1f}s  {exact:>5}  "
              + " ".join(f"{r:.3f}" for r in rec) + per_sim)
        if kwargs.get("method") == "mcts" and kwargs.get("reward") == "split" and "n_contenders" not in kwargs:
            found_default = found
    print("\nStatistics found by MCTS-SG (default):")
    for i, stat in enumerate(found_default, 1):
        print(f"  {i:2d}. {stat}")
    best_mcts = results["MCTS-SG reward=split (default)"]
    for base in ("random", "lasso", "gbm"):
        print(f"MCTS-SG vs {base}: R raw {best_mcts[0]:.4f} vs {results[base][0]:.4f}, "
              f"R literals {best_mcts[1]:.4f} vs {results[base][1]:.4f}")


if __name__ == "__main__":
    main()
