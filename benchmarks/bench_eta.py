"""The job's estimate of its time left against its real end, on cases its constants were not fitted on (issue 27).

    .venv/bin/python benchmarks/bench_eta.py                            # the held-out cases, run now
    .venv/bin/python benchmarks/bench_eta.py --cases payments:2:5000    # family:seed:users, comma-separated
    .venv/bin/python benchmarks/bench_eta.py --record out/eta --cases ...   # run and keep every progress event
    .venv/bin/python benchmarks/bench_eta.py --replay out/eta             # the estimate on recorded runs
    .venv/bin/python benchmarks/bench_eta.py --fit out/eta --fit-seeds 0,1    # refit the constants (Pace)
    .venv/bin/python benchmarks/bench_eta.py --fit out/eta --fit-seeds 8,10 --later-only  # only the later stages'
    .venv/bin/python benchmarks/bench_eta.py --replay out/eta --rework      # ... the catalog's work told anew
    .venv/bin/python benchmarks/bench_eta.py --weigh payments:0:5000,...   # what a catalog statistic costs

A case is ``rx.explain()`` at its defaults (scores given, ``background=False``) on one
generated data set: ``rx.datasets.make_payments`` or ``make_edits`` (``random_state=seed``, their
planted risk), or ``benchmarks/planted.py``'s ``make_scenario(seed)`` (its planted score). The
job's progress events carry its estimate (``numbers['seconds_left']``,
:class:`rudi_explain.explanation.eta.TimeLeft`); at 10, 20, 40, 60 and 80% of the job's real
length the first estimate from then on gives a told end (seconds so far + seconds left), printed
against the real end, and the share of cases whose told end is within 30% of it (issue 27's
target at 20%).

The estimate is a function of the events alone, so a recorded run (``--record``: the events and
their times, as JSON) can be replayed through any version of ``TimeLeft`` or any constants
(``--replay``), and ``--fit`` refits the constants (:class:`rudi_explain.explanation.eta.Pace`)
on the recorded runs of the seeds named, then prints the estimate on the other seeds' runs: the
held-out figure. The default cases are seeds that the shipped constants were not fitted on.
A refit measures each constant as the median of its stage's ratio over the runs (the catalog's
tail, the search after the catalog per catalog second, one statistic's selection, MCTS-SG per
catalog statistic, the revision per statistic kept), the statistics kept as their mean, the fall of
the gains pooled over every statistic kept, the later stages' costs (per statistic, per user, per
user up to the student's cap) and the post-processing's (per student second, per statistic) by
non-negative least squares on relative errors. A free fit of the same constants to the told ends
(Nelder-Mead on a dozen runs) was tried and dropped: it bought its fit with constants at their
bounds (searches of 2 statistics) and did worse on the runs it had not seen.

``--later-only`` refits only the later stages' constants (a change to the student or the post-processing,
such as the additive scorecard, leaves the search's constants as they were): their two per-user parts and
the post-processing's three (:func:`fit_later`), on runs of 5,000, 20,000 and 100,000 users. Each run's
later stages and post-processing, told at 20% of the job and real, and its told end are printed before and
after.

``--rework`` replays (or refits on) recorded runs with their catalog's work told again by the
current :func:`rudi_explain.search.progress.catalog_work` (the case is generated again and its
catalog built: the catalog's progress events carry the count of statistics done, which the work
is read at), so a new way of weighing the catalog is checked on the same runs; ``--exact-events``
gives it the sample's real events per user, which the search does not pass yet. ``--weigh``
times each statistic of a case's catalog alone on the search's sample (a fresh frame cache and
sort orders each of three runs, the least kept) and fits the weights of ``catalog_work``: a
statistic, an event aggregated, an event read by a new row-operator prefix, an event sorted for a
new order, each in outputs; it prints the share of the catalog's work told at 5 to 50% of its
seconds, by outputs alone and by the work.

The estimate is in seconds of this machine, so the load of the others moves both the estimate
and the end; the load average at the start and the end of each case is printed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import rudi_explain as rx
from rudi_explain.explanation.config import ExplainConfig
from rudi_explain.explanation.eta import Pace, TimeLeft
from rudi_explain.explanation.search_stage import held_out_users
from rudi_explain.search import progress
from rudi_explain.search.catalog import short_catalog
from rudi_explain.statistics.grammar import Schema

sys.path.insert(0, str(Path(__file__).resolve().parent))
from planted import make_scenario  # noqa: E402

SHARES = (0.1, 0.2, 0.4, 0.6, 0.8)
#: Cases none of whose seeds the shipped constants were measured on (those were payments, edits and planted seeds
#: 0-3, at 2,000 to 100,000 users; the catalog's weights in search.progress on seeds 0-1 at 5,000).
HELD_OUT = "payments:4:5000,edits:4:5000,planted:8:5000,payments:5:20000,payments:4:100000"
#: The constants a refit measures (the others are sizes, or a shape the runs cannot tell apart).
FITTED = ("catalog_tail", "search_per_catalog", "select_per_catalog", "mcts_per_statistic", "finish", "fall",
          "typical_stats", "later_per_stat", "later_per_user_stat", "later_per_capped_user_stat", "post_per_student",
          "post_per_stat", "post_per_user_stat", "catalog_unit", "work_per_statistic", "search_work_power",
          "catalog_work_ref", "rest_cpu_per_wall")
#: The constants ``--later-only`` refits: the later stages'.
LATER = ("later_per_user_stat", "later_per_capped_user_stat", "post_per_student", "post_per_stat", "post_per_user_stat")
#: The estimate before the CPU seconds (issue 27, session 13): the last commit of the wall-only ``eta.py``.
BEFORE = "a5aec64"


def make_case(family: str, seed: int, users: int) -> tuple[rx.Sequences, Any]:
    """The users' sequences and the scores to explain of one generated case."""
    if family == "planted":
        scenario = make_scenario(seed, n_users=users)
        return scenario.sequences(), scenario.scores
    makers = {"payments": rx.datasets.make_payments, "edits": rx.datasets.make_edits}
    demo = makers[family](users, random_state=seed)
    return demo.sequences(), demo.risk


def _plain(numbers: dict) -> dict:
    """The event's figures that an estimate reads, as JSON (lists of statistics as their texts)."""
    out: dict[str, Any] = {}
    for key, value in numbers.items():
        if key == "seconds_left":
            continue
        if isinstance(value, (bool, int, float, str)) or value is None:
            out[key] = value
        elif isinstance(value, (list, tuple)):
            out[key] = [str(v) for v in value]
    return out


def record(spec: str) -> dict:
    """Run one case; its progress events as ``[elapsed, stage, step, total, numbers]`` and the job's estimates."""
    family, seed, users = spec.split(":")
    seqs, scores = make_case(family, int(seed), int(users))
    events: list[list] = []
    told: list[tuple[float, float | None]] = []
    cpu: list[float] = []  # the process's CPU seconds at each event, from the job's start
    machine: list[list[float]] = []  # the whole machine's busy and total CPU ticks (/proc/stat), where readable
    load_seen: list[float] = []
    cpu0 = time.process_time()

    def on_event(event: rx.JobProgress) -> None:
        cpu.append(time.process_time() - cpu0)
        machine.append(_machine_ticks())
        load_seen.append(os.getloadavg()[0])
        events.append([event.elapsed, event.stage, event.step, event.total, _plain(event.numbers)])
        told.append((event.elapsed, event.numbers.get("seconds_left")))

    load = os.getloadavg()[0]
    rx.explain(None, seqs, scores=scores, background=False, progress=on_event)
    return {"case": spec, "load": [load, os.getloadavg()[0]], "events": events, "told": told, "cpu": cpu,
            "machine": machine, "loads": load_seen}


def _machine_ticks() -> list[float]:
    """The machine's busy and total CPU ticks so far (``/proc/stat``; empty where it cannot be read)."""
    try:
        with open("/proc/stat") as f:
            ticks = [float(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return []
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0.0)
    return [sum(ticks) - idle, sum(ticks)]


def replay(run: dict, pace: Pace | None = None, estimator: Any = None) -> list[tuple[float, float | None]]:
    """The estimates a fresh :class:`TimeLeft` (or ``estimator``'s, an older version's) gives on a recorded run's
    events, with their CPU seconds where the run kept them (none: the wall seconds alone)."""
    if estimator is not None:  # an older TimeLeft: no CPU seconds
        old = estimator.TimeLeft(pace)
        return [(e, old.update(stage, step, total, dict(numbers), e))
                for e, stage, step, total, numbers in run["events"]]
    left = TimeLeft(pace, cpu_clock=None)
    cpu = run.get("cpu") or [None] * len(run["events"])
    return [(e, left.update(stage, step, total, dict(numbers), e, c))
            for (e, stage, step, total, numbers), c in zip(run["events"], cpu)]


def before_estimator(rev: str) -> Any:
    """``rudi_explain.explanation.eta`` as it was at git revision ``rev`` (the estimate before a change)."""
    import subprocess
    import types

    root = Path(__file__).resolve().parent.parent
    text = subprocess.run(["git", "show", f"{rev}:rudi_explain/explanation/eta.py"], cwd=root, check=True,
                          capture_output=True, text=True).stdout
    module = types.ModuleType(f"eta_{rev}")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(text, f"eta.py@{rev}", "exec"), module.__dict__)  # noqa: S102 - our own file at a commit
    return module


def told_ends(estimates: list[tuple[float, float | None]], end: float) -> list[float | None]:
    """At each share of the job, the first estimate from then on as a told end (None: no estimate)."""
    return [next((e + left for e, left in estimates if e >= share * end and left is not None), None)
            for share in SHARES]


def table(runs: list[dict], pace: Pace | None = None, live: bool = False, before: Any = None) -> list[float]:
    """Print each run's told ends against its real end; return the share within 30% at each share of the job.

    ``live``: the estimates the job told as it ran, else those replayed; ``before``: an older estimator
    (:func:`before_estimator`), replayed on the same runs, whose told end at 20% of the job is printed
    beside and whose shares within 30% are printed after.
    """
    print("told end (seconds so far + seconds left) at each share of the job, against the real end; "
          "cpu/wall: the catalog's CPU seconds per wall second, then the rest's")
    print(f"{'case':20s} {'load':>9s} {'cpu/wall':>9s} {'end':>6s}  " +
          "  ".join(f"{f'at {s:.0%}':>15s}" for s in SHARES) + ("  before at 20%" if before else ""))
    within, within_before = np.zeros(len(SHARES)), np.zeros(len(SHARES))
    for run in runs:
        end = run["events"][-1][0]
        ends = told_ends(run["told"] if live else replay(run, pace), end)
        within += [x is not None and abs(x / end - 1) <= 0.3 for x in ends]
        cells = ["-" if x is None else f"{x:.1f} s ({x / end - 1:+.0%})" for x in ends]
        extra = ""
        if before is not None:
            old = told_ends(replay(run, None, before), end)
            within_before += [x is not None and abs(x / end - 1) <= 0.3 for x in old]
            extra = "  " + ("-" if old[1] is None else f"{old[1]:.1f} s ({old[1] / end - 1:+.0%})")
        print(f"{run['case']:20s} {run['load'][0]:4.1f}-{run['load'][1]:<4.1f} {_use(run):>9s} {end:5.1f}s  " +
              "  ".join(f"{c:>15s}" for c in cells) + extra)
    shares = list(within / max(len(runs), 1))
    print(f"told end within 30% of the real end, of {len(runs)} cases: " +
          ", ".join(f"{s:.0%} of the job {k:.0%}" for s, k in zip(SHARES, shares)) +
          " (issue 27's target: at 20% of the job, within 30%)")
    if before is not None:
        print(f"  before ({before.__name__[4:]}), the same runs: " +
              ", ".join(f"{s:.0%} of the job {k:.0%}" for s, k in zip(SHARES, within_before / max(len(runs), 1))))
    return shares


def _use(run: dict) -> str:
    """The catalog's CPU seconds per wall second and the rest's, where the run kept CPU seconds."""
    if not run.get("cpu"):
        return "-"
    parts = _phases(run)
    return f"{parts['catalog_use']:.2f}/{parts['rest_use']:.2f}"


def _phases(run: dict) -> dict:
    """The catalog's and the rest's wall and CPU seconds of a run that kept CPU seconds."""
    events, cpu = run["events"], run["cpu"]
    c = next(i for i, ev in enumerate(events) if ev[4].get("phase") == "catalog")
    s = next(i for i, ev in enumerate(events) if ev[1] == "search" and ev[4].get("phase") in ("select", "mcts"))
    wall_c, wall_r = events[s][0] - events[c][0], events[-1][0] - events[s][0]
    return {"catalog_use": (cpu[s] - cpu[c]) / max(wall_c, 1e-9), "rest_use": (cpu[-1] - cpu[s]) / max(wall_r, 1e-9)}


def measure(run: dict, pace: Pace) -> dict:
    """What each stage of a recorded run took, as the ratios :class:`Pace` holds (None where it did not run)."""
    events = run["events"]
    end = events[-1][0]
    users = next(int(n["users"]) for _, stage, _, _, n in events if "users" in n)
    catalog = [(e, n) for e, stage, _, _, n in events if n.get("phase") == "catalog"]
    search = [(e, n) for e, stage, _, _, n in events if stage == "search"]
    picked = [(e, n) for e, n in search if n.get("phase") in ("select", "mcts")]
    mcts = [e for e, n in picked if n["phase"] == "mcts"]
    c0, (c1, last) = catalog[0][0], catalog[-1]
    s0, s1 = picked[0][0], search[-1][0]
    work = float(last.get("phase_work_total") or pace.work_per_statistic * last["phase_total"])
    done_share = (float(last["phase_work_done"]) / work if last.get("phase_work_total")
                  else last["phase_done"] / last["phase_total"])
    evaluated = (c1 - c0) / max(done_share, 1e-9)  # the catalog's evaluation, its last chunk extrapolated
    kept_events = [(e, n) for e, n in picked if not mcts or e <= mcts[0]]
    kept_before = max(len(n.get("found", ())) for _, n in kept_events)
    gains, seen = [], 0
    for _, n in picked:
        if len(n.get("found", ())) > seen:
            seen = len(n["found"])
            gains.append(float(n.get("reward") or 0.0))
    kept = len(gains)
    select = ((mcts[0] if mcts else s1) - s0) / (kept_before + 1)
    sample = min(pace.sample_users, users * 0.8)
    stage_start = {stage: next(e for e, st, *_ in events if st == stage)
                   for stage in ("literals", "student", "evaluate") if any(st == stage for _, st, *_ in events)}
    student = stage_start["evaluate"] - stage_start["student"]
    heavy = (pace.catalog_work_ref / work) ** pace.search_work_power  # as TimeLeft scales the search's ratio
    # the rest's wall seconds per second of the catalog's pace, as TimeLeft tells them from CPU seconds: the
    # catalog's CPU per wall second over the rest's (1 where the run kept no CPU seconds)
    use = _phases(run) if run.get("cpu") else None
    serial = use["catalog_use"] / max(use["rest_use"], 1e-3) if use else 1.0
    per_statistic = (s0 - c0) / last["phase_total"] * serial
    return {"users": users, "catalog": s0 - c0, "tail": max(s0 - c0, evaluated) / evaluated - 1,
            "search": (s1 - s0) / (s0 - c0) / serial / heavy, "select": select / (s0 - c0) / serial,
            "mcts": (mcts[-1] - mcts[0]) / per_statistic if mcts else None, "serial": serial,
            "catalog_use": use["catalog_use"] if use else None, "rest_use": use["rest_use"] if use else None,
            "finish": (s1 - mcts[-1]) / select / max(kept, 1) if mcts else None,
            "kept": kept, "gains": gains, "min_gain": float(last.get("min_gain") or 0.002),
            "unit": evaluated / (work * sample), "later": end - stage_start["literals"], "student": student,
            "post": end - stage_start["evaluate"], "work": work / last["phase_total"], "catalog_work": work,
            "after": (s1 - s0) / (s0 - c0) / serial}


def fit(runs: list[dict], base: Pace | None = None) -> Pace:
    """The constants measured on ``runs``: each the median of its ratio over the runs (robust to one
    run on a loaded minute), the statistics kept their mean; how the search's ratio to the catalog falls
    with the catalog's work by a log-linear fit; the later stages' costs and the post-processing's by
    non-negative least squares on relative errors; the fall of the gains from every statistic kept and
    the statistics kept after it."""
    base = base or Pace()
    # first the catalog's work (an average statistic's, and the whole's): the search's ratio is measured against it
    first = [measure(run, base) for run in runs]
    # how the search after the catalog, per catalog second, falls with the catalog's work: log-linear least squares
    by_work = np.log([[r["catalog_work"], r["after"]] for r in first])
    ref = float(np.exp(np.median(by_work[:, 0])))
    slope = float(np.polyfit(by_work[:, 0], by_work[:, 1], 1)[0]) if np.ptp(by_work[:, 0]) > 0 else 0.0
    base = base.replace(work_per_statistic=float(np.median([r["work"] for r in first])), catalog_work_ref=ref,
                        search_work_power=max(-slope, 0.0))
    m = [measure(run, base) for run in runs]
    median = lambda key: float(np.median([r[key] for r in m if r[key] is not None]))  # noqa: E731
    # the stopping rule: after a gain g, n more statistics were kept; log(fall) = sum log(g / min_gain) / sum n
    logs = [(math.log(g / r["min_gain"]), r["kept"] - i - 1) for r in m for i, g in enumerate(r["gains"])
            if g > r["min_gain"]]
    fall = math.exp(sum(a for a, _ in logs) / max(sum(n for _, n in logs), 1))
    unit = median("unit")
    # the later stages at the reference pace: seconds / (statistics x this run's speed) = a + b users
    # + c min(users, cap)
    rows = np.array([[1.0, r["users"], min(r["users"], base.capped_users)] for r in m], dtype=float)
    speeds = np.array([r["unit"] / unit * r["serial"] for r in m]) ** base.speed_power
    seconds = np.array([r["later"] / max(r["kept"], 1) for r in m]) / speeds
    from scipy.optimize import nnls  # only the refit needs it

    (per_stat, per_user, per_capped), _ = nnls(rows / seconds[:, None], np.ones(len(m)))  # relative errors
    per_student, post_per_stat, post_per_user_stat = fit_post(m, speeds)
    return base.replace(rest_cpu_per_wall=fit_rest_use(m, base.rest_cpu_per_wall),
                        catalog_tail=median("tail"), search_per_catalog=median("search"),
                        select_per_catalog=median("select"),
                        mcts_per_statistic=median("mcts"), finish=median("finish"), fall=fall,
                        # the mean, not the median: the seconds grow in proportion to the count
                        typical_stats=float(np.mean([r["kept"] for r in m])), later_per_stat=float(per_stat),
                        later_per_user_stat=float(per_user),
                        later_per_capped_user_stat=float(per_capped),
                        post_per_student=per_student, post_per_stat=post_per_stat,
                        post_per_user_stat=post_per_user_stat,
                        catalog_unit=unit)


def _at_share(run: dict, pace: Pace, share: float = 0.2) -> tuple[float, float | None, float | None]:
    """At ``share`` of a run's real length: the told end over the real end minus 1, the later stages told then
    (literals, student, post-processing), and the post-processing told from the real student seconds."""
    events, end = run["events"], run["events"][-1][0]
    left = TimeLeft(pace, cpu_clock=None)
    told = later = post = None
    cpu = run.get("cpu") or [None] * len(events)
    for (e, stage, step, total, numbers), c in zip(events, cpu):
        seconds_left = left.update(stage, step, total, dict(numbers), e, c)
        if told is None and e >= share * end and seconds_left is not None:
            told, later = (e + seconds_left) / end - 1, left.later
        if post is None and stage == "evaluate" and left.student_seconds is not None:
            post = left._post(left.student_seconds)
    return (math.nan if told is None else told), later, post


def fit_post(measured: list[dict], speeds: np.ndarray) -> tuple[float, float, float]:
    """The post-processing's constants from runs :func:`measure` measured, each at its pace (``speeds``, against the
    reference machine): seconds per second of the student, per statistic, per statistic and user, by non-negative
    least squares on relative errors."""
    from scipy.optimize import nnls  # only the refit needs it

    rows = np.array([[r["student"], max(r["kept"], 1) * speed, max(r["kept"], 1) * speed * r["users"]]
                     for r, speed in zip(measured, speeds)])
    post = np.array([r["post"] for r in measured])
    (per_student, per_stat, per_user_stat), _ = nnls(rows / post[:, None], np.ones(len(measured)))
    return float(per_student), float(per_stat), float(per_user_stat)


def fit_later(runs: list[dict], base: Pace | None = None) -> Pace:
    """``base`` with only the later stages' constants refitted on ``runs``, the search's kept.

    The later stages (literals, student, post-processing) per statistic kept, at the run's pace against the
    reference machine: ``later_per_user_stat`` and ``later_per_capped_user_stat`` by non-negative least squares on
    relative errors, ``later_per_stat`` kept (0 since round 24: a free fit put it at 0 too); then the
    post-processing from the run's real student seconds, per statistic and per statistic and user:
    ``post_per_student``, ``post_per_stat`` and ``post_per_user_stat``, the same way. This needs runs of at least
    three sizes on both sides of the student's cap (5,000, 20,000 and 100,000 users): on two, a per-user term is
    not told apart from the rest (round 24: a free fit on 16 runs, two of them at 100,000 users, put one at 0).
    """
    from scipy.optimize import nnls  # only the refit needs it

    base = base or Pace()
    m = [measure(run, base) for run in runs]
    speeds = np.array([r["unit"] / base.catalog_unit * r["serial"] for r in m]) ** base.speed_power
    kept = np.array([max(r["kept"], 1) for r in m], dtype=float)
    later = np.array([r["later"] for r in m]) - base.later_per_stat * kept * speeds
    rows = np.array([[r["users"], min(r["users"], base.capped_users)] for r in m], dtype=float)
    rows *= (kept * speeds)[:, None]
    (per_user, per_capped), _ = nnls(rows / later[:, None], np.ones(len(m)))  # relative errors
    per_student, per_stat, per_user_stat = fit_post(m, speeds)
    return base.replace(later_per_user_stat=float(per_user), later_per_capped_user_stat=float(per_capped),
                        post_per_student=per_student, post_per_stat=per_stat,
                        post_per_user_stat=per_user_stat)


def later_table(runs: list[dict], before: Pace, after: Pace) -> None:
    """Each run's later stages told at 20% of the job and real, and its post-processing, before and after."""
    if not runs:
        print("  (no runs)")
        return
    print(f"{'case':20s} {'later: real':>11s} {'told before':>11s} {'after':>6s}   {'post: real':>10s} "
          f"{'told before':>11s} {'after':>6s}   {'end at 20%: before':>18s} {'after':>6s}")
    for run in runs:
        m = measure(run, before)
        (b, lb, pb), (a, la, pa) = _at_share(run, before), _at_share(run, after)
        print(f"{run['case']:20s} {m['later']:10.1f}s {lb or math.nan:10.1f}s {la or math.nan:5.1f}s   "
              f"{m['post']:9.1f}s {pb or math.nan:10.1f}s {pa or math.nan:5.1f}s   {b:+18.0%} {a:+6.0%}")
    ends = np.array([[_at_share(r, p)[0] for p in (before, after)] for r in runs])
    print(f"  told end at 20% within 30%: before {np.mean(np.abs(ends[:, 0]) <= 0.3):.0%}, after "
          f"{np.mean(np.abs(ends[:, 1]) <= 0.3):.0%}; mean error before {np.mean(ends[:, 0]):+.1%}, after "
          f"{np.mean(ends[:, 1]):+.1%}; mean |error| before {np.mean(np.abs(ends[:, 0])):.1%}, after "
          f"{np.mean(np.abs(ends[:, 1])):.1%}")


def fit_rest_use(measured: list[dict], base: float) -> float:
    """The most CPU per wall second the work after the catalog gets: the c for which ``min(catalog's, c)``
    tells the rest's best (least absolute log error) on the runs that kept CPU seconds; ``base`` where no
    run's rest got clearly less than its catalog (a machine busy throughout does not tell it)."""
    uses = [(r["catalog_use"], r["rest_use"]) for r in measured if r.get("catalog_use")]
    if not any(cat > 1.2 * rest for cat, rest in uses):
        return base
    grid = np.linspace(0.6, 2.0, 141)
    errors = [sum(abs(math.log(rest / min(cat, c))) for cat, rest in uses) for c in grid]
    return float(grid[int(np.argmin(errors))])


def _training_catalog(spec: str) -> tuple[rx.Sequences, list]:
    """The training users of a case (as explain() holds them out) and the catalog the search evaluates."""
    family, seed, users = spec.split(":")
    seqs, _ = make_case(family, int(seed), int(users))
    config = ExplainConfig()
    is_test, _ = held_out_users(seqs.n_users, config)
    train = seqs.subset(np.flatnonzero(~is_test))
    return train, short_catalog(train, "readable", config.max_depth)


def rework(runs: list[dict], exact_events: bool = False) -> list[dict]:
    """The runs with their catalog's work told by the current ``catalog_work`` (at the sample's real events
    per user with ``exact_events``, else at what the search passes: nothing, the default)."""
    out = []
    for run in runs:
        train, catalog = _training_catalog(run["case"])
        per_user = train.n_events / train.n_users if exact_events else None
        work = progress.catalog_work(catalog, Schema.of(train), per_user)
        events = []
        for e, stage, step, total, numbers in run["events"]:
            if numbers.get("phase") == "catalog":
                if numbers["phase_total"] != len(catalog):
                    raise SystemExit(f"{run['case']}: the catalog has {len(catalog)} statistics now, "
                                     f"{numbers['phase_total']} when recorded")
                numbers = {**numbers, "phase_work_done": float(work[numbers["phase_done"]]),
                           "phase_work_total": float(work[-1])}
            events.append([e, stage, step, total, numbers])
        out.append({**run, "events": events})
    return out


def weigh(specs: list[str], reps: int = 3) -> np.ndarray:
    """Each catalog statistic timed alone on the search's sample; the weights of ``catalog_work`` fitted."""
    from scipy.optimize import nnls

    from rudi_explain.search.catalog import _evaluate_chunk  # what the catalog's build runs on a chunk
    from rudi_explain.statistics.frame import FrameCache

    rows, times, names = [], [], []
    for spec in specs:
        train, catalog = _training_catalog(spec)
        n = train.n_users
        users = np.sort(np.random.default_rng(0).choice(n, 4000, replace=False)) if n > 4000 else np.arange(n)
        seconds = np.full((reps, len(catalog)), np.inf)
        for rep in range(reps):
            sample = train.subset(users)  # fresh: its cached sort orders go with it
            frames = FrameCache(sample)
            for i, stat in enumerate(catalog):
                t = time.perf_counter()
                _evaluate_chunk([stat], sample, frames)
                seconds[rep, i] = time.perf_counter() - t
        rows.append(progress.catalog_parts(catalog, Schema.of(train), sample.n_events / sample.n_users))
        times.append(seconds.min(axis=0))
        names.append(spec)
    # each case weighs the same: seconds as shares of its catalog's
    a = np.vstack([x / t.sum() for x, t in zip(rows, times)])
    coef, _ = nnls(a, np.concatenate([t / t.sum() for t in times]))
    weights = coef / coef[1]
    print(f"weights in outputs: statistic {weights[0]:.3g}, event aggregated {weights[2]:.3g}, event passed "
          f"{weights[3]:.3g}, event sorted {weights[4]:.3g}")
    print("share of the catalog's work told at 5%, 10%, 25%, 50% of its seconds (1: right), by outputs then by the "
          "fitted work")
    for spec, x, t in zip(names, rows, times):
        shares = np.cumsum(t) / t.sum()
        at = [int(np.searchsorted(shares, s)) for s in (0.05, 0.1, 0.25, 0.5)]
        told = []
        for w in (np.array([1.0, 1.0, 0, 0, 0]), weights):
            work = np.cumsum(x @ w) / (x @ w).sum()
            told.append(" ".join(f"{work[i] / shares[i]:.2f}" for i in at))
        print(f"  {spec:20s} {t.sum():5.2f} s  outputs {told[0]}  work {told[1]}")
    return weights


def _load_runs(folder: str) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(Path(folder).glob("*.json"))]


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", default=HELD_OUT, help="family:seed:users, comma-separated "
                        "(families: payments, edits, planted)")
    parser.add_argument("--record", default=None, help="also keep each run's events in this folder")
    parser.add_argument("--replay", default=None, help="replay the runs recorded in this folder (runs nothing)")
    parser.add_argument("--fit", default=None, help="refit the constants on the runs recorded in this folder")
    parser.add_argument("--fit-seeds", default="0,1", help="with --fit: the seeds fitted on (the rest are held out)")
    parser.add_argument("--later-only", action="store_true", help="with --fit: refit only the later stages' "
                        "constants (later_per_*user_stat, post_per_*)")
    parser.add_argument("--rework", action="store_true", help="with --replay or --fit: the catalog's work told anew")
    parser.add_argument("--exact-events", action="store_true", help="with --rework: at the real events per user")
    parser.add_argument("--before", default=BEFORE, help="git revision of eta.py whose estimate is printed "
                        "beside, replayed on the same runs ('' for none)")
    parser.add_argument("--weigh", default=None, help="cases whose catalog statistics are timed: catalog_work's "
                        "weights fitted")
    args = parser.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    if args.weigh:
        return {"weights": weigh(args.weigh.split(","))}
    before = before_estimator(args.before) if args.before else None
    if args.fit or args.replay:
        runs = _load_runs(args.fit or args.replay)
        if args.rework:
            runs = rework(runs, args.exact_events)
        if args.replay:
            return {"within": table(runs, before=before)}
        seeds = {int(s) for s in args.fit_seeds.split(",")}
        fitted_on = [r for r in runs if int(r["case"].split(":")[1]) in seeds]
        held = [r for r in runs if r not in fitted_on]
        if args.later_only:
            shipped = Pace()
            pace = fit_later(fitted_on, shipped)
            print("refitted: Pace(" + ", ".join(f"{name}={getattr(pace, name):.4g}" for name in LATER) + ")")
            print(f"on the {len(fitted_on)} runs it was fitted on (the shipped constants, then the refitted):")
            later_table(fitted_on, shipped, pace)
            print(f"held out ({len(held)} runs of other seeds):")
            later_table(held, shipped, pace)
            return {"pace": dataclass_dict(pace)}
        print(f"the shipped constants, on the {len(fitted_on)} runs to fit on:")
        table(fitted_on)
        pace = fit(fitted_on)
        print("refitted: Pace(" + ", ".join(f"{name}={getattr(pace, name):.4g}" for name in FITTED) + ")")
        print("on the runs it was fitted on:")
        table(fitted_on, pace)
        print(f"held out ({len(held)} runs of other seeds), the shipped constants then the refitted:")
        table(held, before=before)
        return {"pace": dataclass_dict(pace), "within": table(held, pace)}
    runs = []
    for spec in args.cases.split(","):
        t = time.perf_counter()
        run = record(spec)
        runs.append(run)
        print(f"  {spec}: {time.perf_counter() - t:.1f} s", flush=True)
        if args.record:
            Path(args.record).mkdir(parents=True, exist_ok=True)
            (Path(args.record) / f"{spec.replace(':', '-')}.json").write_text(json.dumps(run))
    return {"within": table(runs, live=True, before=before)}


def dataclass_dict(pace: Pace) -> dict:
    """The fitted constants by name."""
    return {name: getattr(pace, name) for name in FITTED}


if __name__ == "__main__":
    main()
