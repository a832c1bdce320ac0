"""Stage 1 at scale: the default search with the paper's settings on 100,000 users.

K=20, D=4, B=128 and 500 simulations per step (the paper's defaults) on
make_payments(100,000) (about 5M events), the planted risk as the target.
Prints the wall time of the whole stage 1 and of each of its stages: the
catalog evaluated on the sample, choosing/deepening/checking, and MCTS-SG;
and, as the baseline in the same process, one pass of the engine over all
users for every statistic kept (what scoring them costs anyway).

Run: .venv/bin/python benchmarks/bench_stage1_scale.py [--users 100000]
"""

from __future__ import annotations

import argparse
import os
import time

from rudi_explain.datasets import make_payments
from rudi_explain.search.statistics_search import StatisticsSearch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--simulations", type=int, default=500)
    args = parser.parse_args()
    t = time.perf_counter()
    demo = make_payments(args.users, random_state=0)
    seqs = demo.sequences()
    print(f"make_payments({args.users:,}): {seqs.n_events:,} events, built in {time.perf_counter() - t:.1f} s; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    t = time.perf_counter()
    search = StatisticsSearch(n_stats=20, max_depth=4, batch_size=128, n_simulations=args.simulations,
                              random_state=0).fit(seqs, demo.risk)
    seconds = time.perf_counter() - t
    print(f"stage 1 (K=20, D=4, B=128, {args.simulations} simulations): {seconds:.1f} s; "
          + ", ".join(f"{k} {v:.1f} s" for k, v in search.stage_seconds_.items())
          + f"; catalog of {search.screened_:,} statistics, {len(search.statistics_)} kept")
    t = time.perf_counter()
    for stat in search.statistics_:
        stat.evaluate(seqs)
    print(f"baseline: evaluating the {len(search.statistics_)} kept statistics over all users once: "
          f"{time.perf_counter() - t:.2f} s (stage 1 is {seconds / max(time.perf_counter() - t, 1e-9):.0f}x that)")
    for stat in search.statistics_:
        print(f"  {stat.describe(None, seqs)}   [{stat}]")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
