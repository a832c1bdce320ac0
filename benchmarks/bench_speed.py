"""Where explain()'s time goes, against featuretools DFS + imodels FIGS (issue 27).

    .venv/bin/python benchmarks/bench_speed.py                  # 5,000 users: payments and edits, then 100,000
    .venv/bin/python benchmarks/bench_speed.py --users 2000 --big 0           # a quick look
    .venv/bin/python benchmarks/bench_speed.py --big 0 --profile              # the top functions too

In one process, ``rx.explain()`` at its defaults (scores given, ``background=False``) on
``rx.datasets.make_payments(users)`` and ``make_edits(users)``, then on
``make_payments(big)``. For each run it prints the seconds of every stage
(``exp.result.seconds``), the share of the job each post-processing step takes (threshold
refinement, pruning, refinement of the default point, swaps: timed by wrapping the functions
:func:`rudi_explain.rules.refine.prune_and_refine` calls; then the scorecard's starting point and its
fit within the budget, :mod:`rudi_explain.explanation.scorecard_step`), held-out fidelity, and the
process's peak resident memory so far (``resource.getrusage``). explain()'s seconds, in its ratio to the peer
too, are the call's wall seconds: its stages and the reading of the events into ``Sequences`` before them.

The peer is what an analyst does without rudi-explain (``peers.py``): featuretools Deep
Feature Synthesis on every user's events, then ``imodels.FIGSRegressor(max_rules=20)`` fitted
on explain()'s own training users and scored on its held-out users. featuretools needs pandas 2,
so the peer runs in ``.venv-peers`` (``make peers-env``) in a child process; the events go
through a CSV file and the figures come back as JSON. Printed: explain()'s seconds against DFS +
FIGS, their ratio, and both held-out fidelities. Without ``.venv-peers`` the peer is skipped.

One draw of a two-second job on a shared machine is noisy (the ratio moved 0.46-0.53x over nine
single runs of edits): at ``--users`` both sides run ``--repeat`` times (3; the peer's runs in its one
process), the run of median seconds is reported, and every run's seconds and the ratios run by run
are printed. explain() gives the same rules in every run (one seed), checked.

Imports are not timed on either side: PyTorch (explain()'s student) is imported before the first
run, as featuretools and imodels are in the peer's process before its clock starts. Both sides'
import seconds are printed, with the ratio they give when counted (a first call in a fresh process).

Seconds depend on the machine and on what else runs on it: compare ratios measured in the
same run, and say how loaded the machine was (the load average is printed).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

_started = time.perf_counter()
import rudi_explain as rx  # noqa: E402  (its import is timed: set beside the peers' imports)
import rudi_explain.explanation.scorecard_step as scorecard_step_module  # noqa: E402
import rudi_explain.rules.refine as refine_module  # noqa: E402

RX_IMPORT_SECONDS = time.perf_counter() - _started

ROOT = Path(__file__).resolve().parent.parent
PEERS_PYTHON = ROOT / ".venv-peers" / "bin" / "python"

#: The post-processing steps, by the module and function that runs each: those
#: :func:`rudi_explain.rules.refine.prune_and_refine` calls, then the scorecard step's
#: (:mod:`rudi_explain.explanation.scorecard_step`): the pruning point it starts from (each one tried is
#: brought within budget), the choice among the scorecard's forms (each fitted without the validation users),
#: and the units those users do not miss left out. The chosen form's fit on all the training users is in the rest.
STEPS = {(refine_module, "_refine"): "refine thresholds", (refine_module, "prune_rules"): "prune",
         (refine_module, "refine_default"): "refine default", (refine_module, "swap_path"): "swap",
         (scorecard_step_module, "_start"): "scorecard start", (scorecard_step_module, "choose_scorecard"):
         "scorecard choice", (scorecard_step_module, "without_idle_units"): "idle units"}

PEER_SCRIPT = r"""
import json, sys, time
started = time.perf_counter()
import numpy as np, pandas as pd
sys.path.insert(0, sys.argv[1])
import featuretools, imodels  # imported before the clock starts, as explain()'s PyTorch is
from peers import dfs_features, run_peers
import_seconds = time.perf_counter() - started
meta = json.load(open(sys.argv[2]))
events = pd.read_csv(sys.argv[3], dtype={c: str for c in ["user_id", *meta["categorical"]]}, parse_dates=["ts"],
                     keep_default_na=False, na_values={c: [""] for c in meta["numerical"]})
users = np.asarray(meta["users"], dtype=object)
is_test = np.asarray(meta["is_test"], dtype=bool)
runs = []
for _ in range(int(sys.argv[5])):  # the same work each time, as explain() is repeated
    features, info = dfs_features(events, meta["categorical"], meta["numerical"], users, users[~is_test])
    res = run_peers(features, np.asarray(meta["scores"], dtype=float), is_test, peers=("figs",))["figs"]
    runs.append({"dfs_seconds": info["seconds"], "n_features": info["n_features"], "figs_seconds": res.seconds,
                 "fidelity_test": res.fidelity_test, "n_rules": res.n_rules})
json.dump({"runs": runs, "import_seconds": import_seconds}, open(sys.argv[4], "w"))
"""


class StepTimer:
    """Seconds of each post-processing step: the outermost wrapped call counts, nested ones are inside it."""

    def __init__(self) -> None:
        self.seconds = {name: 0.0 for name in STEPS.values()}
        self._depth = 0
        self._originals: dict[tuple[Any, str], Callable] = {}

    def __enter__(self) -> StepTimer:
        for (module, attr), name in STEPS.items():
            original = getattr(module, attr)
            self._originals[module, attr] = original
            setattr(module, attr, self._timed(original, name))
        return self

    def __exit__(self, *exc: Any) -> None:
        for (module, attr), original in self._originals.items():
            setattr(module, attr, original)

    def _timed(self, function: Callable, name: str) -> Callable:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            self._depth += 1
            t = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self.seconds[name] += time.perf_counter() - t
        return wrapper


def peak_rss_mb() -> float:
    """The process's peak resident memory so far, in MB (Linux reports kilobytes)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def stage_cpu(marks: list[tuple[str, float, float]], end: tuple[float, float]) -> dict[str, tuple[float, float]]:
    """Each stage's (CPU seconds, wall seconds), from the first progress event of a stage (or of a
    search phase: catalog, select, mcts) to the first of the next; ``marks`` are (stage, process
    CPU seconds, wall seconds) at each event, ``end`` the job's last. The post-processing has no
    events of its own: it is in the stretch from the first 'evaluate' event on. Where the CPU
    seconds per wall second stay near 1 only one thread worked (on a quiet 2-core machine, wall
    time lost); on a loaded machine the ratio says less."""
    out: dict[str, tuple[float, float]] = {}
    start = marks[0]
    for mark in [*marks[1:], ("end", *end)]:
        if mark[0] != start[0]:  # a stretch of one stage ends where the next stage's events begin
            cpu, wall = out.get(start[0], (0.0, 0.0))
            out[start[0]] = (cpu + mark[1] - start[1], wall + mark[2] - start[2])
            start = mark
    return out


def run_explain(data: rx.datasets.DemoData) -> tuple[rx.Explanation, dict, float, list]:
    """explain() at its defaults on the demo's events and planted scores: (exp, step seconds, wall seconds,
    the job's estimates as (seconds since the start, seconds left)); the step seconds hold the job's CPU
    seconds ("cpu") and each stage's CPU and wall seconds ("stage_cpu", :func:`stage_cpu`)."""
    estimates: list[tuple[float, float | None]] = []
    marks: list[tuple[str, float, float]] = []

    def on_event(event: Any) -> None:
        estimates.append((event.elapsed, event.numbers.get("seconds_left")))
        phase = event.numbers.get("phase") or ""
        marks.append((event.stage + (f" {phase}" if phase else ""), time.process_time(), time.perf_counter()))

    with StepTimer() as steps:
        t, cpu = time.perf_counter(), time.process_time()
        marks.append(("start", cpu, t))
        exp = rx.explain(None, data.events, scores=data.risk, background=False, progress=on_event)
        wall = time.perf_counter() - t
        end = time.process_time()
        steps.seconds["cpu"] = end - cpu  # the job's CPU seconds, all threads
    seconds: dict[str, Any] = dict(steps.seconds)
    seconds["stage_cpu"] = stage_cpu(marks, (end, t + wall))
    return exp, seconds, wall, estimates


def eta_at(estimates: list, share: float, end: float) -> str:
    """The job's estimate of its end at ``share`` of its run against its real end, in words."""
    at = next(((e, left) for e, left in estimates if e >= share * end and left is not None), None)
    if at is None:
        return f"no estimate from {share:.0%} of the job on"
    told = at[0] + at[1]
    return (f"at {at[0]:.1f} s ({at[0] / end:.0%} of the job) it said {at[1]:.1f} s left: an end at {told:.1f} s "
            f"against {end:.1f} s ({told / end - 1:+.0%})")


def run_peer(data: rx.datasets.DemoData, exp: rx.Explanation, repeat: int = 1) -> dict | None:
    """DFS + FIGS on explain()'s split, in .venv-peers, ``repeat`` times in one process: the run of median
    seconds, with every run's seconds ("totals"); None without it (or on its failure, said)."""
    if not PEERS_PYTHON.exists():
        return None
    state = exp.result
    users = [str(u) for u in state.teacher_scores.index]
    meta = {"categorical": data.categorical, "numerical": data.numerical, "users": users,
            "is_test": state.is_test.tolist(), "scores": state.teacher_scores.to_numpy(dtype=float).tolist()}
    with tempfile.TemporaryDirectory() as tmp:
        paths = [Path(tmp) / name for name in ("meta.json", "events.csv", "out.json")]
        paths[0].write_text(json.dumps(meta))
        data.events.to_csv(paths[1], index=False)
        env = {"PATH": "/usr/bin:/bin", "HOME": tmp}
        res = subprocess.run([str(PEERS_PYTHON), "-c", PEER_SCRIPT, str(ROOT / "benchmarks"), *map(str, paths),
                              str(repeat)], capture_output=True, text=True, env=env)
        if res.returncode != 0:
            print(f"  peer failed: {res.stderr.strip().splitlines()[-1] if res.stderr.strip() else res.returncode}")
            return None
        out = json.loads(paths[2].read_text())
    totals = [r["dfs_seconds"] + r["figs_seconds"] for r in out["runs"]]
    median = out["runs"][median_index(totals)]
    return {**median, "totals": totals, "import_seconds": out["import_seconds"]}


def median_index(values: list[float]) -> int:
    """The index of the median of ``values`` (the lower of the two middle ones for an even count)."""
    order = sorted(range(len(values)), key=values.__getitem__)
    return order[(len(values) - 1) // 2]


def report(title: str, exp: rx.Explanation, steps: dict, wall: float, peer: dict | None, estimates: list,
           imports: float = 0.0, totals: list[float] | None = None) -> dict:
    """Print one run's figures; return them. ``imports``: explain()'s import seconds, rudi_explain's and PyTorch's;
    ``totals``: the seconds of every run of explain() where it was repeated (this one is the median's)."""
    seconds = dict(exp.result.seconds)
    # explain()'s wall seconds, the events read into Sequences included (the peer's DFS reads its own): the job's
    # stages alone leave out 0.03-0.06 s at 5,000 users and 0.8-1.6 s at 100,000
    total = wall
    steps = dict(steps)
    cpu = steps.pop("cpu", None)
    by_stage = steps.pop("stage_cpu", {})
    fid = exp.report()["fidelity_test"]
    print(f"== {title}: explain() {total:.1f} s (its stages {seconds.get('total', wall):.1f} s, the events read "
          f"before them), held-out fidelity {fid:.4f}, {len(exp.rules)} rules, "
          f"peak RSS {peak_rss_mb():,.0f} MB; load average {os.getloadavg()[0]:.2f} after it ==")
    if totals is not None and len(totals) > 1:
        print(f"  {len(totals)} runs, the same rules: " + ", ".join(f"{t:.2f} s" for t in totals) +
              "; the median run's figures below")
    print("  stages: " + ", ".join(f"{k} {v:.2f} s" for k, v in seconds.items() if k != "total"))
    if cpu is not None:  # under load the wall seconds follow the other processes; the CPU seconds less so
        print(f"  CPU {cpu:.1f} s ({cpu / wall:.2f} per wall second; 2 would be both cores busy throughout)")
        print("  CPU by stage (CPU s / wall s): " + ", ".join(
            f"{'post-processing + evaluate' if k == 'evaluate' else k} {c:.2f}/{w:.2f}"
            for k, (c, w) in by_stage.items() if w >= 0.005))
    print("  post-processing: " + ", ".join(f"{k} {v:.2f} s ({v / total:.0%} of the job)" for k, v in steps.items()))
    rest = seconds.get("pruning", 0.0) - sum(steps.values())
    largest = max(steps, key=lambda k: steps[k]) if steps else "-"
    print(f"  rest of the post-processing stage {rest:.2f} s ({rest / total:.0%}); largest step: {largest} "
          f"{steps.get(largest, 0.0) / total:.0%} of the job (target: at most 15%); search "
          f"{seconds.get('search', 0.0) / total:.0%}, student {seconds.get('student', 0.0) / total:.0%} of the job")
    print("  time left: " + eta_at(estimates, 0.2, wall))
    print("  told end at 10/40/60/80% of the job: " + ", ".join(
        next((f"{e + left:.1f} s" for e, left in estimates if e >= share * wall and left is not None), "-")
        for share in (0.1, 0.4, 0.6, 0.8)) + f" (real end {wall:.1f} s)")
    out = {"seconds": seconds, "steps": steps, "fidelity_test": fid, "peak_rss_mb": peak_rss_mb(),
           "estimates": estimates, "cpu_seconds": cpu, "stage_cpu": by_stage}
    if peer is not None:
        peer_total = peer["dfs_seconds"] + peer["figs_seconds"]
        if len(peer["totals"]) > 1:
            print(f"  DFS + FIGS, {len(peer['totals'])} runs: " + ", ".join(f"{t:.2f} s" for t in peer["totals"]) +
                  "; the median run:")
        print(f"  DFS + FIGS: {peer_total:.1f} s (DFS {peer['dfs_seconds']:.1f} s, {peer['n_features']} features; "
              f"FIGS {peer['figs_seconds']:.1f} s), held-out fidelity {peer['fidelity_test']:.4f}")
        print(f"  explain() / (DFS + FIGS) = {total / peer_total:.2f}x; fidelity {fid:.4f} against "
              f"{peer['fidelity_test']:.4f} ({fid - peer['fidelity_test']:+.4f})")
        if totals is not None and len(totals) > 1 and len(peer["totals"]) > 1:
            pairs = [t / p for t, p in zip(totals, peer["totals"])]
            print("  run by run (the i-th of each side): " + ", ".join(f"{r:.2f}x" for r in pairs) +
                  f"; {sum(r <= 0.5 for r in pairs)} of {len(pairs)} at most 0.5x")
        ours, theirs = imports, peer["import_seconds"]
        print(f"  with the imports on both sides (a first call in a fresh process): {total + ours:.1f} s "
              f"(imports {ours:.1f} s) against {peer_total + theirs:.1f} s (featuretools, imodels "
              f"{theirs:.1f} s) = {(total + ours) / (peer_total + theirs):.2f}x")
        out["peer"] = peer
        out["ratio"] = total / peer_total
    if totals is not None:
        out["totals"] = totals
    return out


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=5000, help="users of the payments and edits runs (0: skip)")
    parser.add_argument("--big", type=int, default=100_000, help="users of the large payments run (0: skip)")
    parser.add_argument("--scenarios", default="payments,edits", help="comma-separated: payments, edits")
    parser.add_argument("--no-peers", action="store_true", help="skip DFS + FIGS")
    parser.add_argument("--profile", action="store_true", help="print the top functions of every run (cProfile)")
    parser.add_argument("--top", type=int, default=25, help="functions printed with --profile")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs of each side at --users (explain() and DFS + FIGS): the median's figures")
    parser.add_argument("--out", default=None, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    # PyTorch (the student's) is imported before the clock starts, as the peers' featuretools and imodels are
    # in theirs: every figure is the work of one call in a process that has its libraries. The imports are
    # timed and printed, and a ratio with them counted on both sides (a first call in a fresh process).
    started = time.perf_counter()
    import torch  # noqa: F401
    torch_seconds = time.perf_counter() - started
    print(f"imports, not in the figures below: rudi_explain {RX_IMPORT_SECONDS:.2f} s, "
          f"torch {torch_seconds:.2f} s")
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; peers: "
          f"{'skipped' if args.no_peers else PEERS_PYTHON if PEERS_PYTHON.exists() else 'no .venv-peers'}")
    makers = {"payments": rx.datasets.make_payments, "edits": rx.datasets.make_edits}
    runs = [(name, args.users, not args.no_peers) for name in args.scenarios.split(",") if args.users] + \
        ([("payments", args.big, False)] if args.big else [])
    results = {}
    for name, n, with_peer in runs:
        data = makers[name](n)
        profiler = cProfile.Profile() if args.profile else None
        if profiler is not None:
            profiler.enable()
        # one draw of a 2-second job on a shared machine is noisy: at --users both sides run --repeat times, and
        # the run of median seconds is reported (the same rules each time: one seed)
        repeat = max(1, args.repeat) if with_peer else 1
        runs = []
        for _ in range(repeat):
            runs.append(run_explain(data))
            if str(runs[-1][0].rules) != str(runs[0][0].rules):
                raise AssertionError(f"{name}: explain() gave other rules in run {len(runs)}")
        totals = [r[2] for r in runs]  # explain()'s wall seconds
        exp, steps, wall, estimates = runs[median_index(totals)]
        del runs
        if profiler is not None:
            profiler.disable()
        peer = run_peer(data, exp, repeat) if with_peer else None
        title = f"{name}, {n:,} users"
        results[title] = report(title, exp, steps, wall, peer, estimates, RX_IMPORT_SECONDS + torch_seconds,
                                totals)
        if profiler is not None:
            pstats.Stats(profiler, stream=sys.stdout).sort_stats("cumulative").print_stats(args.top)
        del exp, data
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))
    return results


if __name__ == "__main__":
    main()
