"""Widget payload size and drill-down latency at 1,000,000 users.

Targets (issue 6): the notebook grows by a few MB at most (the widget state
saved into the .ipynb), and a drill-down answers within 200 ms.

The statistics and rules come from a real (small) explain() on the demo
payments; the 1,000,000 users are synthetic but real Sequences, evaluated by
the same statistics, literals and rules. Prints one line per figure.

    python benchmarks/bench_widget.py [--users 1000000] [--events 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import json
import statistics
import time

import numpy as np

import rudi_explain as rx

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from synthetic import scaled_explanation  # noqa: E402  (shared with tests/test_widget.py)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--events", type=int, default=3, help="events per synthetic user")
    parser.add_argument("--requests", type=int, default=50)
    args = parser.parse_args()

    from rudi_explain.widget import ExplanationWidget

    demo = rx.datasets.make_payments(2000, random_state=0)
    small = rx.explain(None, demo.events, scores=demo.risk, background=False, progress=lambda e: None,
                       n_stats=6, n_rules=12, n_simulations=60, student_params={"epochs": 60})
    t = time.perf_counter()
    exp = scaled_explanation(small, args.users, args.events, string_ids=True)
    print(f"users                 {exp.sequences.n_users:>12,}  ({exp.sequences.n_events:,} events, "
          f"{len(exp.rules)} rules, {exp.literals.n_literals} literals; built in {time.perf_counter() - t:.1f} s)")

    t = time.perf_counter()
    w = ExplanationWidget(exp)
    print(f"widget build          {time.perf_counter() - t:>12.2f} s")
    state = w.get_state()
    data = {k: v for k, v in state.items() if k not in ("_esm", "_css")}
    size_data = len(json.dumps(data))
    size_all = len(json.dumps(state))
    print(f"widget state (data)   {size_data / 1e3:>12.1f} kB")
    print(f"widget state (+JS/CSS){size_all / 1e3:>12.1f} kB   <- what saveState writes into the .ipynb")

    replies = []
    w.send = lambda content, buffers=None: replies.append(content)
    rng = np.random.default_rng(1)
    ids = [str(exp.sequences.users[i]) for i in rng.integers(0, exp.sequences.n_users, args.requests)]
    t = time.perf_counter()
    w._on_message(w, {"type": "user", "id": ids[0], "request": 0})  # the first one builds the id index
    first = time.perf_counter() - t
    times = []
    for k, uid in enumerate(ids[1:], start=1):
        t = time.perf_counter()
        w._on_message(w, {"type": "user", "id": uid, "request": k})
        json.dumps(replies[-1])  # what the comm serializes
        times.append(time.perf_counter() - t)
    assert all(r["ok"] for r in replies)
    sizes = [len(json.dumps(r)) for r in replies]
    print(f"drill-down, first     {first * 1e3:>12.1f} ms   (builds the user id index once)")
    print(f"drill-down, median    {statistics.median(times) * 1e3:>12.1f} ms")
    print(f"drill-down, max       {max(times) * 1e3:>12.1f} ms   over {len(times)} requests")
    print(f"drill-down reply      {statistics.median(sizes) / 1e3:>12.1f} kB median")

    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        path = exp.to_html(Path(tmp) / "report.html")
        print(f"to_html               {time.perf_counter() - t:>12.2f} s    {path.stat().st_size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
