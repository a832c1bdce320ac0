"""Seconds from cancel() to the job stopping, per stage (item 9 of "Bad input, round three").

    .venv/bin/python benchmarks/bench_cancel.py [n_users]
    .venv/bin/python benchmarks/bench_cancel.py 100000 --gaps    # the longest stretches without a check

Cancels once each stage has started (after a short delay inside it; the student
stage once for each student that trains for seconds) and prints the seconds from
the cancel to the job being done. Timing only: the tests count
work instead (tests/explanation/test_cancel_stages.py).

A cancel at a random moment waits for the next check, so the longest stretch of a job
without one bounds it: ``--gaps`` runs one job at explain()'s defaults and prints the five
longest stretches between two checks (``Job.check_cancel``, ``Job.stopping``, which the
search's progress and the student's epochs ask), with the stage and the calls at each end.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback

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


def longest_without_a_check(demo, top: int = 5) -> list[tuple[float, str, str, str]]:
    """The ``top`` longest stretches of one job between two cancel checks: (seconds, stage, after, before)."""
    from rudi_explain.explanation.job import Job

    marks: list[tuple[float, str, str]] = []
    stage = ["start"]
    real_check, real_stopping = Job.check_cancel, Job.stopping

    def where() -> str:
        frames = traceback.extract_stack(limit=5)[:-2]
        return " < ".join(f"{f.name}:{f.lineno}" for f in reversed(frames))

    def check_cancel(self):  # type: ignore[no-untyped-def]
        marks.append((time.perf_counter(), stage[0], where()))
        return real_check(self)

    def stopping(self):  # type: ignore[no-untyped-def]
        marks.append((time.perf_counter(), stage[0], where()))
        return real_stopping(self)

    def progress(event) -> None:  # type: ignore[no-untyped-def]
        stage[0] = event.stage

    Job.check_cancel, Job.stopping = check_cancel, stopping  # type: ignore[method-assign]
    try:
        marks.append((time.perf_counter(), "start", "explain() called (its events read before the job starts)"))
        rx.explain(None, demo.events, scores=demo.risk, background=False, progress=progress)
        marks.append((time.perf_counter(), "done", "the job's end"))
    finally:
        Job.check_cancel, Job.stopping = real_check, real_stopping  # type: ignore[method-assign]
    gaps = [(b[0] - a[0], b[1], a[2], b[2]) for a, b in zip(marks, marks[1:])]
    return sorted(gaps, key=lambda g: -g[0])[:top]


def main() -> None:
    import torch  # noqa: F401  imported here, not timed inside the student stage (seconds, and not interruptible)

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    demo = rx.datasets.make_payments(n, random_state=0)
    if "--gaps" in sys.argv:
        rx.explain(None, demo.events, scores=demo.risk, background=False)  # a first job in the process, untimed
        for seconds, stage, after, before in longest_without_a_check(demo):
            print(f"{seconds:.2f} s without a check in {stage}: after {after}\n{'':>8}before {before}")
        return
    cases = [("search", "gsnln", 0.5), ("literals", "gsnln", 0.05), ("student", "gsnln", 0.5),
             ("evaluate", "gsnln", 0.5)] + [("student", s, 0.5) for s in STUDENTS if s != "gsnln"]
    for stage, student, delay in cases:
        s = seconds_to_stop(demo, stage, student, delay)
        print(f"{stage:>8} ({student:>5}): " + ("stage not reached" if s is None else f"{s:.2f} s from cancel to stop"),
              flush=True)


if __name__ == "__main__":
    main()
