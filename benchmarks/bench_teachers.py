"""Query throughput of each teacher kind on make_payments data.

Prints users per second of ``as_teacher(model).score(seqs)`` for:
* the demo GRU (trained briefly; only its speed matters here), with torch's
  default threads and with ``num_threads=1``, at a few batch sizes;
* the demo scikit-learn pipeline (SequenceAggregator + HistGradientBoosting);
* a callable (one statistic) and given scores (a Series reindexed by id);
and the SequenceAggregator's transform time alone.

Run: .venv/bin/python benchmarks/bench_teachers.py [--users 5000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

import rudi_explain as rx
from rudi_explain.datasets import make_payments
from rudi_explain.teachers.adapters import as_teacher
from rudi_explain.teachers.aggregator import SequenceAggregator
from rudi_explain.teachers.demo_gru import make_demo_pipeline, train_demo_gru


def timed(fn, repeat: int = 3) -> float:
    best = np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=5000)
    args = parser.parse_args()
    data = make_payments(args.users, random_state=0)
    seqs = data.sequences()
    print(f"{seqs!r}; torch threads {torch.get_num_threads()}")

    start = time.perf_counter()
    gru = train_demo_gru(seqs, data.labels, epochs=1)
    print(f"demo GRU, 1 epoch of training: {time.perf_counter() - start:.1f} s")
    for threads in (None, 1):
        for batch_size in (128, 256, 1024):
            teacher = as_teacher(gru, batch_size=batch_size, num_threads=threads)
            s = timed(lambda teacher=teacher: teacher.score(seqs), repeat=2)
            print(f"  torch GRU   batch {batch_size:>5}, threads {threads or 'default':>7}: "
                  f"{seqs.n_users / s:>10,.0f} users/s ({s:.2f} s)")

    agg = SequenceAggregator().fit(seqs)
    s = timed(lambda: agg.transform(seqs))
    print(f"  SequenceAggregator.transform ({agg.n_features_out_} columns): "
          f"{seqs.n_users / s:>10,.0f} users/s ({s:.3f} s)")
    pipe = make_demo_pipeline().fit(seqs, data.labels)
    s = timed(lambda: as_teacher(pipe).score(seqs))
    print(f"  sklearn pipeline: {seqs.n_users / s:>10,.0f} users/s ({s:.3f} s)")
    stat = rx.Statistic.parse("Select(amount) | RetainBy(merchant_category=gambling) | Sum")
    s = timed(lambda: as_teacher(stat.evaluate).score(seqs))
    print(f"  callable (one statistic): {seqs.n_users / s:>10,.0f} users/s ({s:.4f} s)")
    shuffled = data.risk.sample(frac=1.0, random_state=0)
    s = timed(lambda: as_teacher(shuffled).score(seqs))
    print(f"  given scores (Series reindexed): {seqs.n_users / s:>10,.0f} users/s ({s:.4f} s)")


if __name__ == "__main__":
    main()
