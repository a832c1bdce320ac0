"""The catalog with 1 and 2 worker threads: seconds, their ratio, and the same screen (issue 27).

    .venv/bin/python benchmarks/bench_parallel.py                         # 5k and 100k, payments and edits
    .venv/bin/python benchmarks/bench_parallel.py --users 5000 --repeat 1 # a quick look
    .venv/bin/python benchmarks/bench_parallel.py --search                # the whole stage 1 too

For each data set (``rx.datasets.make_payments`` / ``make_edits``, the planted risk as the
target) it draws the search's sample (4,000 users, as ``StatisticsSearch``'s ``screen_size``) and
times, with ``n_jobs=1`` and ``n_jobs=2`` in turn (``--repeat`` times each, alternating, the
best kept):

* **catalog**: ``ColumnScreen.build`` of the short catalog as the search calls it (shared
  frames, the 50,000-column limit ranked on the fitting half);
* **gains**: ``ColumnScreen.gains`` of that screen against 10 residuals (forward selection's
  candidate scoring);
* **each**: ``ColumnScreen.build_each`` of 200 catalog statistics (the deepening candidates).

With ``--search``, also ``StatisticsSearch(random_state=0).fit`` at its defaults with the
default number of workers set to 1 and to 2, and its stage seconds. Every pair of results is
checked to be identical (the screen's columns, bins and values; the gains; the statistics
kept). BLAS runs one thread, as in the search. Seconds depend on what else runs on the
machine: the ratio is measured in one process, and the load average is printed before each
data set (2 workers help only where 2 cores are free).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

import rudi_explain as rx
from rudi_explain.search import parallel
from rudi_explain.search.catalog import ColumnScreen, short_catalog
from rudi_explain.search.statistics_search import StatisticsSearch
from rudi_explain.statistics.frame import FrameCache

SCREEN_SIZE = 4000
SCREEN_COLUMNS = 50_000


def load() -> str:
    one, five, _ = os.getloadavg()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"load average {one:.1f} (5 min {five:.1f}) on {cores} cores"


def timed(run: Callable[[int], Any], repeat: int) -> tuple[dict[int, float], dict[int, Any]]:
    """Best seconds of ``run(n_jobs)`` for 1 and 2 workers, alternating, and the last results."""
    seconds: dict[int, float] = {1: np.inf, 2: np.inf}
    results: dict[int, Any] = {}
    for _ in range(repeat):
        for n_jobs in (1, 2):
            start = time.perf_counter()
            results[n_jobs] = run(n_jobs)
            seconds[n_jobs] = min(seconds[n_jobs], time.perf_counter() - start)
    return seconds, results


def same_screen(a: ColumnScreen, b: ColumnScreen) -> bool:
    return [(str(s), j) for s, j in a.owners] == [(str(s), j) for s, j in b.owners] \
        and np.array_equal(a.bins, b.bins) and a.values.tobytes() == b.values.tobytes()


def line(what: str, seconds: dict[int, float], same: bool) -> str:
    return (f"  {what:<8} 1 worker {seconds[1]:6.2f} s   2 workers {seconds[2]:6.2f} s   "
            f"ratio {seconds[1] / seconds[2]:4.2f}x   identical: {'yes' if same else 'NO'}")


def bench(name: str, n_users: int, repeat: int, search: bool) -> list[tuple[str, float]]:
    start = time.perf_counter()
    demo = (rx.datasets.make_payments if name == "payments" else rx.datasets.make_edits)(n_users, random_state=0)
    seqs = demo.sequences()
    y = demo.risk.loc[seqs.users].to_numpy(float)
    rng = np.random.default_rng(0)
    users = np.sort(rng.choice(seqs.n_users, SCREEN_SIZE, replace=False)) if seqs.n_users > SCREEN_SIZE \
        else np.arange(seqs.n_users)
    order = rng.permutation(len(users))
    fit_rows = np.sort(order[: len(users) // 2])
    ys = y[users]
    sample = seqs.subset(users)
    catalog = short_catalog(seqs, "readable", 4)
    print(f"\n{name}, {n_users:,} users ({seqs.n_events:,} events; sample of {len(users):,} users, "
          f"{sample.n_events:,} events; {len(catalog):,} statistics), made in {time.perf_counter() - start:.1f} s; "
          f"{load()}", flush=True)
    ColumnScreen.build(catalog[:200], sample, set(), frames=FrameCache(sample), n_jobs=1)  # caches, imports
    ratios = []

    def build(n_jobs: int) -> ColumnScreen:
        return ColumnScreen.build(catalog, sample, set(), max_columns=SCREEN_COLUMNS, target=ys, rows=fit_rows,
                                  frames=FrameCache(sample), n_jobs=n_jobs)

    seconds, screens = timed(build, repeat)
    print(line("catalog", seconds, same_screen(screens[1], screens[2])) + f"   ({len(screens[1]):,} columns)",
          flush=True)
    ratios.append((f"{name} {n_users:,} catalog", seconds[1] / seconds[2]))
    screen = screens[1]
    residuals = [ys[fit_rows] - ys[fit_rows].mean()] + \
        [np.random.default_rng(i).standard_normal(len(fit_rows)) for i in range(9)]

    def gains(n_jobs: int) -> list[np.ndarray]:
        fresh = ColumnScreen(screen.owners, screen.bins, screen.values)  # the per-rows parts computed each time
        return [fresh.gains(r, fit_rows, 1.0, n_jobs=n_jobs) for r in residuals]

    seconds, found = timed(gains, repeat)
    same = all(a.tobytes() == b.tobytes() for a, b in zip(found[1], found[2]))
    print(line("gains", seconds, same), flush=True)
    ratios.append((f"{name} {n_users:,} gains", seconds[1] / seconds[2]))
    picked = catalog[:: max(1, len(catalog) // 200)][:200]

    def each(n_jobs: int) -> list[ColumnScreen]:
        return ColumnScreen.build_each(picked, sample, frames=FrameCache(sample), n_jobs=n_jobs)

    seconds, found = timed(each, repeat)
    print(line("each", seconds, all(same_screen(a, b) for a, b in zip(found[1], found[2]))), flush=True)
    ratios.append((f"{name} {n_users:,} each", seconds[1] / seconds[2]))
    if search:
        def fit(n_jobs: int) -> StatisticsSearch:
            parallel.DEFAULT_N_JOBS = n_jobs  # what the search's catalog and gains use
            return StatisticsSearch(random_state=0).fit(seqs, y)

        default = parallel.DEFAULT_N_JOBS
        try:
            seconds, fitted = timed(fit, 1)
        finally:
            parallel.DEFAULT_N_JOBS = default
        same = [str(s) for s in fitted[1].statistics_] == [str(s) for s in fitted[2].statistics_] \
            and fitted[1].rewards_ == fitted[2].rewards_
        print(line("search", seconds, same) + f"   ({len(fitted[1].statistics_)} statistics)", flush=True)
        for n_jobs in (1, 2):
            print(f"           {n_jobs} worker{'s' if n_jobs > 1 else ''}: "
                  + ", ".join(f"{k} {v:.2f} s" for k, v in fitted[n_jobs].stage_seconds_.items()))
        ratios.append((f"{name} {n_users:,} search", seconds[1] / seconds[2]))
    return ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, nargs="+", default=[5000, 100_000])
    parser.add_argument("--data", nargs="+", default=["payments", "edits"], choices=["payments", "edits"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--search", action="store_true", help="also the whole stage 1 with 1 and 2 workers")
    args = parser.parse_args()
    print(f"bench_parallel: {load()}; default workers {parallel.DEFAULT_N_JOBS}")
    ratios = []
    # One BLAS thread, as the search runs (StatisticsSearch.fit): the workers are the only parallelism.
    with threadpool_limits(limits=1, user_api="blas"):
        for n_users in args.users:
            for name in args.data:
                ratios += bench(name, n_users, args.repeat, args.search)
    print(f"\nratios, 1 worker's seconds / 2 workers' ({load()}):")
    for what, ratio in ratios:
        print(f"  {what:<28} {ratio:4.2f}x")


if __name__ == "__main__":
    main()
