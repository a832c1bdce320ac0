"""Time of reading a numeric column spoiled by one bad cell, against the clean column.

A column read from a CSV with one cell such as ``'12,5'`` is text: ``Sequences``
reads it as numbers with that cell missing (and one warning). This prints the
time of what ``explain()`` does first with a table, in one process and on the
same events: the ``Sequences`` (columns inferred) and a small statistics
search, once with the clean float column and once with the spoiled text column.
The target is that the spoiled column costs at most 1.5 times the clean one.

    python benchmarks/bench_bad_cells.py [--users 5000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import rudi_explain as rx


def run(events, risk, n_stats: int, simulations: int) -> tuple[float, float, list[str]]:
    """Seconds to build the Sequences, seconds of the search, and the statistics found."""
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seqs = rx.Sequences(events, user="user_id", time="ts")
    ingest = time.perf_counter() - t
    t = time.perf_counter()
    stats = rx.search_statistics(seqs, risk.reindex(seqs.users).to_numpy(), n_stats=n_stats,
                                 n_simulations=simulations, random_state=0)
    return ingest, time.perf_counter() - t, [str(s) for s in stats]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=5_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n-stats", type=int, default=3)
    parser.add_argument("--simulations", type=int, default=20)
    args = parser.parse_args()
    demo = rx.datasets.make_payments(args.users, random_state=0)
    clean = demo.events
    spoiled = clean.copy()
    spoiled["amount"] = clean["amount"].map(repr).astype(object)
    row = len(spoiled) // 3
    spoiled.loc[row, "amount"] = "12,5"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        seqs = rx.Sequences(spoiled, user="user_id", time="ts")
    said = [str(w.message) for w in caught if "amount" in str(w.message)]
    print(f"{len(clean):,} events of {args.users:,} users; the spoiled column is {seqs.numerical} numerical, "
          f"{int(np.isnan(seqs.values['amount']).sum())} missing; warning: {said[0] if said else None}")
    best: dict[str, list[float]] = {}
    found = {}
    for _ in range(args.repeats):
        for label, events in (("clean float column", clean), ("one bad cell (text)", spoiled)):
            ingest, search, stats = run(events, demo.risk, args.n_stats, args.simulations)
            prev = best.get(label, [np.inf, np.inf, np.inf])
            best[label] = [min(prev[0], ingest), min(prev[1], search), min(prev[2], ingest + search)]
            found[label] = stats
    print(f"{'column':<22} {'Sequences s':>12} {'search s':>9} {'total s':>8}   (best of {args.repeats})")
    for label, (ingest, search, total) in best.items():
        print(f"{label:<22} {ingest:>12.3f} {search:>9.3f} {total:>8.3f}")
    ratio = best["one bad cell (text)"][2] / best["clean float column"][2]
    print(f"one bad cell / clean: {ratio:.2f}x in all (target <= 1.5x), "
          f"{best['one bad cell (text)'][0] / best['clean float column'][0]:.2f}x for the Sequences alone; "
          f"same statistics found: {found['one bad cell (text)'] == found['clean float column']}")


if __name__ == "__main__":
    main()
