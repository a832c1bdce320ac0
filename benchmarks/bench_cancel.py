"""Seconds from cancel() to the job stopping, per stage (item 9 of "Bad input, round three").

    .venv/bin/python benchmarks/bench_cancel.py [n_users]

Cancels once each stage has started (after a short delay inside it; the student
stage once for each student that trains for seconds) and prints the seconds from
the cancel to the job being done. Timing only: the tests count
work instead (tests/explanation/test_cancel_stages.py).
"""

from __future__ import annotations

import sys
import threading
import time

import rudi_explain as rx

#: (student, its settings): each trains for longer than the delay before the cancel
STUDENTS = {
    "gsnln": {"epochs": 200},
    "brl": {"n_iterations": 200_000},
    "hkl": {},
    "trees": {},
}


def seconds_to_stop(demo, stage: str, student: str = "gsnln", delay: float = 0.5) -> float | None:
    started = threading.Event()
    e = rx.explain(None, demo.events, scores=demo.risk, background="thread", n_stats=4,
                   progress=lambda ev: ev.stage == stage and started.set(),
                   student=student, student_params=STUDENTS[student])
    if not started.wait(600):
        e.cancel()
        return None
    time.sleep(delay)
    t = time.perf_counter()
    e.cancel()
    while not e.done:
        time.sleep(0.005)
    return time.perf_counter() - t


def main() -> None:
    import torch  # noqa: F401  imported here, not timed inside the student stage (seconds, and not interruptible)

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    demo = rx.datasets.make_payments(n, random_state=0)
    cases = [("search", "gsnln", 0.5), ("literals", "gsnln", 0.05), ("student", "gsnln", 0.5),
             ("evaluate", "gsnln", 0.5)] + [("student", s, 0.5) for s in STUDENTS if s != "gsnln"]
    for stage, student, delay in cases:
        s = seconds_to_stop(demo, stage, student, delay)
        print(f"{stage:>8} ({student:>5}): " + ("stage not reached" if s is None else f"{s:.2f} s from cancel to stop"),
              flush=True)


if __name__ == "__main__":
    main()
