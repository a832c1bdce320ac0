"""How many seconds an explain job has left, from each stage's own pace as it runs (issue 27).

Each stage is measured as it goes; what has not started yet is predicted from what has:

* the catalog (stage 1 first evaluates a catalog of short statistics on a sample of users): its
  work done so far at the pace so far, plus the binning of its last columns; the work is what
  :func:`rudi_explain.search.progress.catalog_work` tells (outputs, events aggregated, and the
  orders and filters a statistic is the first to need, which make the first chunks the dearest);
* the selection: seconds per statistic kept, predicted from the catalog's seconds until
  statistics are kept, then the median of the steps measured (the prediction counts as one), so
  that one slow step does not set the pace of those to come;
* MCTS-SG, run once when the catalog leaves nothing: predicted from the seconds one catalog
  statistic took (both evaluate statistics on users' events), then as it runs;
* after MCTS-SG, the revision of the statistics kept and the check of their filters: a share
  of the selection's pace;
* PyTorch's import, where the job makes it (its first event says so: the student needs PyTorch and
  nothing imported it before): a fixed cost at this machine's pace, from the catalog's end, the
  seconds it holds the search up kept out of the selection's measured pace;
* literals, student and post-processing: from statistics and users x statistics at the pace
  this machine showed on the catalog, until they run; then the student's epochs give its pace, and the
  post-processing is a multiple of the student's measured seconds plus a part per statistic and one per
  statistic and user (past GS-NLN's cap on users an epoch, the student stops growing and it does not).

The estimate never counts statistics beyond the search's stopping rule: the search keeps a
statistic only while it explains at least ``min_gain`` more on users it was not chosen on, so
the statistics still to come are those between the last gain and ``min_gain`` at the fall of
gains seen in searches (:attr:`Pace.fall`), never more than ``n_stats``.

The catalog runs on two threads and much of what follows on one, and the machine is shared: on a free
2-core machine the catalog got 1.66 CPU seconds per wall second and the rest 1.0-1.2 (measured);
on a busy one the scheduler shares the cores between sessions, not threads, and both get the same share
(0.5-1.0 measured). Everything told from the catalog's pace (the search after it, the later stages) is
therefore scaled by the catalog's CPU per wall second over the rest's (:attr:`TimeLeft.serial`): the
rest's predicted as the catalog's up to :attr:`Pace.rest_cpu_per_wall` while the catalog runs, then
as seen since it ended. On the busy machines the constants were fitted on, that scale is 1.

The constants (:class:`Pace`) are fitted by ``benchmarks/bench_eta.py --fit`` on recorded runs
of several families, sizes and seeds, and checked there on other runs. They stand in for a
stage only until it shows its own pace, so a stage that others make faster is followed once it
runs; before that, a refit (the same command) brings them up to date.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["TimeLeft", "Pace"]


@dataclass(frozen=True)
class Pace:
    """What a stage costs before it shows its own pace (fitted by ``benchmarks/bench_eta.py --fit``).

    Attributes
    ----------
    catalog_tail : float
        Seconds from the catalog's last progress event to the selection's first, per second of the
        catalog before it (the last chunk, its binning, the first scoring of every column).
    search_per_catalog : float
        The search after the catalog (selection, MCTS-SG, revision), in seconds per second of a catalog
        of ``catalog_work_ref`` units of work: what it is told until the selection keeps its first
        statistic. The search after a catalog does not grow with it in proportion (edits' catalog of
        935 statistics was followed by 2.4-3.9 times its seconds, planted ones of 3,900-6,300 by
        0.7-1.4 times), so the ratio is scaled by ``(catalog_work_ref / work) ** search_work_power``.
    search_work_power : float
        How the search after the catalog falls, as a ratio to it, with the catalog's work.
    catalog_work_ref : float
        The catalog's work at which ``search_per_catalog`` holds.
    select_per_catalog : float
        One statistic's selection (scoring, deepening, checking), in seconds per second of the catalog:
        counted as one statistic measured once the selection keeps statistics.
    mcts_per_statistic : float
        The MCTS-SG run, in seconds per second one catalog statistic took on average.
    finish : float
        After MCTS-SG (the revision of the statistics kept, the check of their filters), in
        selections of one statistic per statistic kept.
    fall : float
        The factor by which a kept statistic's gain falls, on average, from one to the next.
    typical_stats : float
        Statistics a search keeps, before any gain is known.
    later_per_stat : float
        Literals, student and post-processing, in seconds per statistic on the reference machine, for the
        work that does not grow with users (the student's set-up and its epochs' fixed part, the
        post-processing's steps over rules rather than users) ...
    later_per_user_stat : float
        ... for the work that grows with every user ...
    later_per_capped_user_stat : float
        ... and for the work on at most ``capped_users`` users (the student's epochs, the choices
        the post-processing makes on samples).
    capped_users : int
        GS-NLN's ``epoch_users`` (16,384) over the share of users it fits on (0.8 x 0.8).
    speed_power : float
        How far the later stages follow the pace the catalog showed against the reference machine
        (1: in proportion; below 1, since the catalog's pace also grows with events per user).
    post_per_student : float
        The post-processing in seconds per second of the student's training ...
    post_per_stat : float
        ... plus seconds per statistic on the reference machine: its steps over rules rather than users ...
    post_per_user_stat : float
        ... and per statistic and user: its steps over every validation user, which grow past the student's
        cap (payments on a 2-core AMD EPYC: the post-processing 1.8-2.0 times the student at 5,000 users,
        0.8-1.3 times at 20,000, where the student fits on every user, 1.9-2.3 times at 100,000).
    catalog_unit : float
        Seconds of one unit of catalog work (:func:`rudi_explain.search.progress.catalog_work`: an
        output's) on one sample user on the reference machine.
    work_per_statistic : float
        Units of work of an average catalog statistic, where the search reports only the count.
    sample_users : int
        Users the catalog is evaluated on (the search's ``screen_size``).
    torch_import : float
        Seconds PyTorch's import adds to a job that makes it (the teacher's first event says
        ``torch_import``): it starts at the catalog's end and slows the search beside it.
    rest_cpu_per_wall : float
        The most CPU seconds per wall second the work after the catalog gets (much of it runs on one
        thread, the catalog on two): until that work shows its own, it is told to get the catalog's
        CPU per wall second up to this. The later stages' seconds are the catalog's CPU seconds at
        that rate, so a catalog that ran on two free cores does not make them look short, nor one
        that shared them with other work long.
    rest_prior_seconds : float
        Once the catalog has ended, the CPU per wall second seen since is weighed against that
        prediction as if the prediction had been seen for this many seconds.
    serial_bound : float
        The rest is told at most this many times, and at least one over this many times, what the
        catalog's wall seconds alone tell.
    """

    # measured on 16 recorded runs with their CPU seconds, PyTorch imported before each (benchmarks/bench_eta.py
    # --fit, session 18, after the catalog's sample went from 4,000 to 2,000 users: the constants before told
    # payments at 5,000 users 14-54% long at 20% of the job): payments and edits at 5,000 users, seeds 0-3;
    # planted at 2,000, seeds 0-3; payments at 20,000 and 100,000, seeds 0-1; a quiet 2-core machine (load 1.0-1.3).
    # Fitted on seeds 0 and 2, 8 of 8 runs of seeds 1 and 3 within 30% at 20% of the job (the constants before:
    # 8 of 8); fitted on 1 and 3, 4 of 8 (5 of 8); shipped: fitted on all 16, 15 of 16 (13 of 16), and checked
    # live on seeds they were not fitted on (benchmarks/README, issue 27). torch_import is measured apart.
    catalog_tail: float = 0.264
    search_per_catalog: float = 1.60
    select_per_catalog: float = 0.179
    mcts_per_statistic: float = 1003.0
    finish: float = 0.391
    fall: float = 7.73
    typical_stats: float = 4.25
    # The later stages' five refitted in round 25 (bench_eta.py --fit --later-only, 28 runs on a 2-core AMD EPYC:
    # payments and edits at 5,000 users, seeds 0-5; payments at 20,000, seeds 0-3, edits 0-1; payments at 100,000,
    # seeds 0-9), the post-processing given a part per user: it grows with users past the student's cap, and a
    # multiple of the student told it 1.5-2x long at 20,000 users and 0.7x at 100,000. Fitted on the even seeds,
    # the odd ones held out: told end at 20% of the job within 30% 12 -> 13 of 14, mean error +12.4% -> +5.7%.
    # The fixed part per statistic stays 0 (round 24): the rest covers it.
    later_per_stat: float = 0.0
    later_per_user_stat: float = 7.69e-7
    later_per_capped_user_stat: float = 3.54e-5
    capped_users: int = 25_600
    speed_power: float = 1.0
    post_per_student: float = 0.477
    post_per_stat: float = 0.0892
    post_per_user_stat: float = 3.89e-6
    catalog_unit: float = 2.26e-8
    work_per_statistic: float = 10.5
    search_work_power: float = 0.400
    catalog_work_ref: float = 15_900.0
    sample_users: int = 2000
    # PyTorch's import, where the job makes it (its student needs it, nothing imported it before): the same job
    # took 1.3-1.7 s more than with PyTorch imported before (payments and edits at 5,000 users, session 18), in
    # a thread from the catalog's end, beside the search. In seconds of the reference machine: a first job in a
    # process also runs its catalog slower, which the speed measured on it carries over. Chosen on 7 recorded
    # first jobs (1.4: told their end 19% long at 20% of the job on average; 0.7: 0%); on 6 others, all 6 within
    # 30% at 20% of the job (-28% to +7%)
    torch_import: float = 0.7
    # the rest's CPU per wall second on a free machine: 1.0-1.2 seen (selection 1.16-1.19, student and
    # post-processing 1.0) beside the catalog's 1.66 (bench_eta.py, session 13)
    rest_cpu_per_wall: float = 1.08
    rest_prior_seconds: float = 1.0
    serial_bound: float = 4.0

    def replace(self, **changes: float) -> Pace:
        """A copy with some constants changed (what a refit tries)."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


class TimeLeft:
    """Follows a job's progress events and estimates its seconds left (None while it cannot tell).

    The catalog runs on two threads and much of what follows on one, so the catalog's wall seconds
    alone tell the rest short on a free machine (two cores for the catalog, one for the rest) and
    right on a busy one (where the catalog's threads get no more than one thread would). The rest is
    therefore told from the catalog's CPU seconds, converted to wall seconds at the CPU per wall
    second the rest gets: predicted from the catalog's own (at most
    :attr:`Pace.rest_cpu_per_wall`), then as seen since the catalog ended. Without a CPU clock
    (a replay of events recorded without CPU seconds), the wall seconds alone.

    Parameters
    ----------
    pace : Pace, optional
        The constants used until a stage shows its own pace (default: the fitted ones).
    cpu_clock : callable, optional
        The process's CPU seconds (default :func:`time.process_time`, every thread's), read at each
        event that does not bring its own; None: CPU seconds only where an event brings them.

    Attributes
    ----------
    serial : float
        The rest's wall seconds per second the catalog's pace tells (1 without CPU seconds).
    cpu : float or None
        The process's CPU seconds at the last event.
    """

    def __init__(self, pace: Pace | None = None, cpu_clock: Callable[[], float] | None = time.process_time) -> None:
        self.pace = pace if pace is not None else Pace()
        self.cpu_clock = cpu_clock
        self.cpu: float | None = None  # the process's CPU seconds at the last event
        self.catalog_cpu: float | None = None  # ... at the catalog's first event
        self.catalog_use: float | None = None  # the catalog's CPU seconds per wall second
        self.rest_cpu: float | None = None  # ... at the catalog's end
        self.serial = 1.0  # wall seconds of the rest per wall second the catalog's pace tells
        self.catalog_speed = 1.0  # the speed the catalog's wall seconds tell
        self.users = 0
        self.stage = ""
        self.stage_start = 0.0
        self.speed = 1.0  # seconds here per second on the reference machine
        self.catalog_start: float | None = None
        self.catalog_seconds: float | None = None
        self.n_catalog = 0
        self.catalog_work = 0.0  # units of work of the whole catalog
        self.gains: list[float] = []
        self.n_found = 0
        self.select_found = 0  # statistics kept when the selection started (the given ones among them)
        self.last_kept = 0.0  # when the last statistic was kept (or the selection started)
        self.kept_steps: list[float] = []  # the selection's seconds for each statistic kept, MCTS-SG left out
        self.mcts_start: float | None = None
        self.mcts_seconds = 0.0
        self.mcts_end: float | None = None
        self.student_seconds: float | None = None
        self.first_epoch: float | None = None  # the student's first epoch's seconds
        self.later: float | None = None  # predicted seconds of literals, student and post-processing
        self.torch_import = False  # whether the job imports PyTorch (from the catalog's end on)
        self.mcts_beside = False  # whether MCTS-SG's tree grows in another process, off the job's clock

    def update(self, stage: str, step: int, total: int, numbers: dict[str, Any], elapsed: float,
               cpu: float | None = None) -> float | None:
        """The seconds left after this event.

        Parameters
        ----------
        stage, step, total, numbers
            The job's progress event.
        elapsed : float
            Wall seconds since the job started.
        cpu : float, optional
            The process's CPU seconds (from any origin: only differences count); default: read from
            ``cpu_clock``.

        Returns
        -------
        float or None
            Seconds left; None while it cannot tell; 0 once the job ended.
        """
        if cpu is None and self.cpu_clock is not None:
            cpu = self.cpu_clock()
        self.cpu = cpu
        if stage != self.stage:
            self._enter(stage, elapsed)
        if stage in ("done", "failed", "cancelled"):
            return 0.0
        if "users" in numbers:
            self.users = int(numbers["users"])
        if "torch_import" in numbers:
            self.torch_import = bool(numbers["torch_import"])
        if "mcts_beside" in numbers:
            self.mcts_beside = bool(numbers["mcts_beside"])
        if self.catalog_seconds is not None:  # past the catalog: the rest's CPU per wall second as seen
            self._set_serial(elapsed)
            self.speed = self.catalog_speed * self.serial
        in_stage = elapsed - self.stage_start
        if stage == "search":
            return self._search(numbers, total, elapsed)
        if stage == "literals":
            return None if self.later is None else max(self.later - in_stage, 0.0)
        if stage == "student":
            if step <= 0 or total <= 0:
                return None if self.later is None else max(self.later - in_stage, 0.0)
            if step == 1 or self.first_epoch is None:
                self.first_epoch = in_stage
            if self.later is not None and step < min(3, total):
                # The first epochs carry the set-up and, with MCTS-SG's tree beside, the copies the fork makes
                # the heap pay (edits at 5,000 users: epochs 1-2 told the end 30-47% late): the estimate made
                # at the search's end holds for two epochs, then the pace of those after the first.
                return max(self.later - in_stage, 0.0)
            if step == 1:
                student = in_stage * total
            else:
                student = self.first_epoch + (in_stage - self.first_epoch) * (total - 1) / (step - 1)
            self.student_seconds = student
            return max(student - in_stage, 0.0) + self._post(student)
        if stage == "evaluate":
            if self.student_seconds is None:
                return None
            return max(self._post(self.student_seconds) - in_stage, 0.0)
        return None  # the teacher: no pace to go by yet

    def _enter(self, stage: str, elapsed: float) -> None:
        if self.stage == "student" and self.student_seconds is not None:
            self.student_seconds = elapsed - self.stage_start  # what it really took
        self.stage, self.stage_start = stage, elapsed

    # ------------------------------------------------------------ the later stages
    def _post(self, student: float) -> float:
        """The post-processing's seconds after a student of ``student`` seconds."""
        p = self.pace
        per_stat = p.post_per_stat + p.post_per_user_stat * self.users
        return p.post_per_student * student + per_stat * max(self.n_found, 1) * self.speed ** p.speed_power

    def _later(self, n_stats: float) -> float:
        """Literals, student and post-processing for ``n_stats`` statistics."""
        p = self.pace
        per_stat = (p.later_per_stat + p.later_per_user_stat * self.users
                    + p.later_per_capped_user_stat * min(self.users, p.capped_users))
        return per_stat * max(n_stats, 1.0) * self.speed ** p.speed_power

    def _set_speed(self, catalog: float) -> None:
        """This machine's pace against the reference one, from the catalog's (estimated) seconds, its tail
        included; the later stages' pace is that times :attr:`serial`."""
        sample = min(self.pace.sample_users, max(self.users * 0.8, 1.0))
        evaluated = catalog / (1.0 + self.pace.catalog_tail)
        work = self.catalog_work or self.pace.work_per_statistic * max(self.n_catalog, 1)
        self.catalog_speed = evaluated / (work * sample * self.pace.catalog_unit)
        self.speed = self.catalog_speed * self.serial

    def _set_serial(self, elapsed: float) -> None:
        """The rest's wall seconds per second of the catalog's pace: the catalog's CPU per wall second over
        the rest's (predicted from the catalog's, then as seen since the catalog ended); 1 without CPU
        seconds."""
        if self.cpu is None or self.catalog_cpu is None or self.catalog_start is None:
            self.serial = 1.0
            return
        if self.catalog_seconds is None:  # the catalog runs: its CPU per wall second so far
            wall = elapsed - self.catalog_start
            if wall <= 0:
                return
            self.catalog_use = max(self.cpu - self.catalog_cpu, 0.0) / wall
        if not self.catalog_use:
            self.serial = 1.0
            return
        p = self.pace
        predicted = min(self.catalog_use, p.rest_cpu_per_wall)
        rest = predicted
        if self.catalog_seconds is not None and self.rest_cpu is not None:
            since = max(elapsed - self.catalog_start - self.catalog_seconds, 0.0)
            rest = (predicted * p.rest_prior_seconds + max(self.cpu - self.rest_cpu, 0.0)) / (
                p.rest_prior_seconds + since)
        # bounded: a process whose CPU seconds are others' too (a second job in it) must not swing it far
        self.serial = min(max(self.catalog_use / max(rest, 1e-3), 1.0 / p.serial_bound), p.serial_bound)

    # ------------------------------------------------------------ the search
    def _search(self, numbers: dict[str, Any], n_stats: int, elapsed: float) -> float | None:
        p = self.pace
        phase = numbers.get("phase", "")
        found = len(numbers.get("found", ())) if phase else self.n_found
        if found > self.n_found:  # a statistic kept: its gain, for the stopping rule
            self.gains.append(float(numbers.get("reward") or 0.0))
            new, self.n_found = found - self.n_found, found
            if self.catalog_seconds is not None and self.mcts_start is None:
                since = elapsed - self.catalog_start - self.catalog_seconds  # type: ignore[operator]
                # the selection's own pace: the seconds PyTorch's import held it up are not the selection's
                selection = since - self._held_up(elapsed - since, elapsed)
                self.kept_steps += [(selection - sum(self.kept_steps)) / new] * new
                self.last_kept = elapsed
        n_stats = max(n_stats, 1)
        min_gain = float(numbers.get("min_gain", 0.002) or 0.0)
        if phase == "catalog":
            if self.catalog_start is None:
                self.catalog_start, self.catalog_cpu = elapsed, self.cpu
            done, todo = int(numbers.get("phase_done", 0)), int(numbers.get("phase_total", 0))
            if done <= 0 or todo <= 0:
                return None
            self.n_catalog = todo
            # the share of the catalog's work done: by its statistics' expected cost where the search
            # reports it (a statistic with 30 outputs costs several times one with one), else by count
            work_done, work = float(numbers.get("phase_work_done", 0.0)), float(numbers.get("phase_work_total", 0.0))
            share = work_done / work if work > 0 and work_done > 0 else done / todo
            self.catalog_work = work if work > 0 else 0.0
            in_catalog = elapsed - self.catalog_start
            catalog = in_catalog / share * (1.0 + p.catalog_tail)
            self._set_serial(elapsed)
            self._set_speed(catalog)
            rest = self._after_catalog(catalog * self.serial, 0.0, n_stats, min_gain)
            self.later = self._later(self.n_found + self.expected_statistics(n_stats, min_gain))
            return catalog - in_catalog + rest + self.later + self._import_left(0.0)
        if self.catalog_start is None:
            return None  # a search without the catalog: no pace to go by
        if self.catalog_seconds is None:  # the catalog just ended
            self._set_serial(elapsed)  # its CPU per wall second, all of it
            self.catalog_seconds = elapsed - self.catalog_start
            self.rest_cpu = self.cpu
            self.select_found, self.last_kept = found, elapsed
            self._set_speed(self.catalog_seconds)
        self.later = self._later(self.n_found + self.expected_statistics(n_stats, min_gain))
        if phase == "mcts":
            if self.mcts_start is None:
                self.mcts_start = elapsed
            self.mcts_seconds = elapsed - self.mcts_start
        elif self.mcts_start is not None and self.mcts_end is None:
            self.mcts_end = elapsed
        if not phase:  # the search's last event
            return self.later
        since_catalog = elapsed - self.catalog_start - self.catalog_seconds
        return (self._after_catalog(self.catalog_seconds * self.serial, elapsed, n_stats, min_gain) + self.later
                + self._import_left(since_catalog))

    def _held_up(self, start: float, end: float) -> float:
        """Seconds from ``start`` to ``end`` (since the job began) that PyTorch's import held the search up."""
        if self.catalog_start is None or self.catalog_seconds is None:
            return 0.0  # the import starts at the catalog's end
        begun = self.catalog_start + self.catalog_seconds
        return max(self._import_left(max(start - begun, 0.0)) - self._import_left(max(end - begun, 0.0)), 0.0)

    def _import_left(self, since_catalog: float) -> float:
        """What is left of PyTorch's import (started at the catalog's end) ``since_catalog`` seconds after it."""
        if not self.torch_import:
            return 0.0
        return max(self.pace.torch_import * self.speed - since_catalog, 0.0)

    def _per_statistic(self, catalog: float) -> float:
        """Seconds of one statistic's selection: the median of the steps measured, the prediction counted as one.

        The median, not the mean: one deep statistic's step can take ten times the others' (payments at 100,000
        users: the second 1.2-1.6 s, the first, third and fourth 0.1-0.3 s each), and the mean after it told the
        two to come at its pace.
        """
        predicted = self.pace.select_per_catalog * catalog
        return statistics.median([predicted, *self.kept_steps])

    def _after_catalog(self, catalog: float, elapsed: float, n_stats: int, min_gain: float) -> float:
        """Seconds of the search after the catalog from ``elapsed`` (0: the catalog still runs)."""
        p = self.pace
        per_stat = self._per_statistic(catalog)
        mcts = p.mcts_per_statistic * catalog / max(self.n_catalog, 1)
        beside = mcts if self.mcts_beside else 0.0  # the tree's seconds, spent off the job's clock
        mcts -= beside
        if self.mcts_end is not None:  # MCTS-SG ran: what is left is the revision and the filters
            return max(p.finish * per_stat * max(self.n_found, 1) - (elapsed - self.mcts_end), 0.0)
        if self.mcts_start is not None:
            return max(mcts - self.mcts_seconds, 0.0) + p.finish * per_stat * max(self.n_found, 1)
        since = elapsed - self.last_kept - self._held_up(self.last_kept, elapsed) if elapsed else 0.0
        parts = self._parts(per_stat, mcts, n_stats, min_gain)
        if self.n_found == self.select_found:
            # Nothing kept yet: the whole as one ratio to the catalog (over recorded runs it varied less
            # than its parts), the share of it n_stats allows by the parts.
            whole = max(p.search_per_catalog * catalog * self._heavy() - beside, 0.0)
            return max(whole * parts / max(self._parts(per_stat, mcts, 1 << 30, min_gain), 1e-12) - since, 0.0)
        return max(parts - since, 0.0)

    def _heavy(self) -> float:
        """The search after the catalog per second of it, against a catalog of the reference work."""
        p = self.pace
        work = self.catalog_work or p.work_per_statistic * max(self.n_catalog, 1)
        return float((p.catalog_work_ref / work) ** p.search_work_power)

    def _parts(self, per_stat: float, mcts: float, n_stats: int, min_gain: float) -> float:
        """The selection's statistics still to come; short of n_stats, the step that ends it on a candidate
        failing the check and MCTS-SG once (when the catalog has nothing left); the revision after."""
        to_come = self.expected_statistics(n_stats, min_gain)
        short = 1.0 if self.n_found + to_come < n_stats else 0.0
        finish = self.pace.finish * per_stat * max(self.n_found + to_come, 1.0)
        return per_stat * (to_come + short) + short * mcts + finish

    def expected_statistics(self, n_stats: int, min_gain: float) -> float:
        """Statistics the search can still keep: those between the last gain and ``min_gain``.

        Gains fall by about :attr:`Pace.fall` a statistic, so from a last gain g about
        log(g / min_gain) / log(fall) more stay above ``min_gain``; before any gain is known,
        a typical search's count. Never more than ``n_stats`` in all.
        """
        room = max(n_stats - self.n_found, 0)
        if not self.gains:
            return float(min(room, max(self.pace.typical_stats - self.n_found, 0.0)))
        last = self.gains[-1]
        if not last > min_gain:  # nan (a given statistic) or the last one above the floor
            return float(min(room, max(self.pace.typical_stats - self.n_found, 0.0))) if math.isnan(last) else 0.0
        return float(min(room, math.log(last / max(min_gain, 1e-12)) / math.log(max(self.pace.fall, 1.01))))
