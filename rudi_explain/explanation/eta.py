"""How many seconds an explain job has left, from what is left of each stage as it runs (issue 27).

The estimate is the sum of what is left of the running stage, measured at its own pace so far
(catalog statistics evaluated, statistics kept, simulations run, epochs trained), and what the
later stages will cost, predicted from the data's size and the pace this machine showed on the
catalog. It never counts statistics beyond the search's stopping rule: the search keeps a
statistic only while it explains at least ``min_gain`` more, and each kept one explains less
than the one before, so the statistics still to come are those that the fall of the gains so
far leaves above ``min_gain`` (and never more than ``n_stats``).

The constants were read off ``benchmarks/bench_speed.py`` runs (make_payments and make_edits at
5,000 users, make_payments at 100,000; the 2-core machine of the issue, loaded). Since the student trains
each epoch on at most 16,384 users and the post-processing makes its choices on samples (issue 27), the
later stages cost a part that grows with every user and a part that stops growing at
:data:`CAPPED_USERS`; once the student runs, its own epochs give the pace of what is left.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["TimeLeft"]

#: Selection, deepening and checking, in seconds per second the catalog took to evaluate.
SELECT_PER_CATALOG = 1.2
#: One MCTS-SG run (when the catalog leaves something), in seconds per second of the catalog.
MCTS_PER_CATALOG = 0.7
#: Seconds of one catalog statistic on one sample user, on the reference machine.
CATALOG_UNIT = 8e-7
#: Literals, student and post-processing: seconds per user and statistic on the reference machine, for the
#: work that grows with every user (the statistics' values, pruning, the final fits) ...
LATER_PER_USER_STAT = 4.3e-5
#: ... and for the work on at most :data:`CAPPED_USERS` users (the student's epochs, the choices made on
#: samples of users): it stops growing there.
LATER_PER_CAPPED_USER_STAT = 1.65e-4
#: Users from which the capped work stops growing: GS-NLN's ``epoch_users`` (16,384) over the share of the
#: users it fits on (0.8 training x 0.8 not validation).
CAPPED_USERS = 25_600
#: The post-processing (the 'evaluate' stage) in seconds per second of the student, measured in the job: 2.8
#: at 5,000 users, 2.5 at 100,000 (the student's epochs and the post-processing's choices both on samples).
PRUNE_PER_STUDENT = 2.6
#: Statistics a search keeps before its gains say how they fall (the searches measured kept 3 to 6).
TYPICAL_STATS = 5
#: Users the catalog is evaluated on (the search's ``screen_size``).
SAMPLE_USERS = 4000


class TimeLeft:
    """Follows a job's progress events and estimates its seconds left (None while it cannot)."""

    def __init__(self) -> None:
        self.users = 0
        self.stage = ""
        self.stage_start = 0.0
        self.speed = 1.0  # seconds here per second on the reference machine
        self.catalog_seconds: float | None = None
        self.select_start = self.mcts_start = 0.0
        self.select_found = 0  # statistics kept when the selection started
        self.mcts_done = False
        self.mcts_seconds = 0.0
        self.gains: list[float] = []
        self.n_found = 0
        self.student_seconds: float | None = None
        self.later: float | None = None  # predicted seconds of literals, student and post-processing

    def update(self, stage: str, step: int, total: int, numbers: dict[str, Any], elapsed: float) -> float | None:
        """The seconds left after this event (``elapsed``: seconds since the job started)."""
        if stage != self.stage:
            self._enter(stage, elapsed)
        if stage in ("done", "failed", "cancelled"):
            return 0.0
        if "users" in numbers:
            self.users = int(numbers["users"])
        in_stage = elapsed - self.stage_start
        if stage == "search":
            return self._search(numbers, total, elapsed, in_stage)
        if stage == "literals":
            return None if self.later is None else max(self.later - in_stage, 0.0)
        if stage == "student":
            if step <= 0 or total <= 0:
                return self.later
            student = in_stage * total / step
            self.student_seconds = student
            return max(student - in_stage, 0.0) + PRUNE_PER_STUDENT * student
        if stage == "evaluate":
            if self.student_seconds is None:
                return None
            return max(PRUNE_PER_STUDENT * self.student_seconds - in_stage, 0.0)
        return None  # the teacher: no pace to go by yet

    def _enter(self, stage: str, elapsed: float) -> None:
        if self.stage == "student" and self.student_seconds is not None:
            self.student_seconds = elapsed - self.stage_start  # what it really took
        self.stage, self.stage_start = stage, elapsed

    def _later(self, n_stats: float) -> float:
        """Literals, student and post-processing for ``n_stats`` statistics."""
        per_stat = LATER_PER_USER_STAT * self.users + LATER_PER_CAPPED_USER_STAT * min(self.users, CAPPED_USERS)
        return per_stat * max(n_stats, 1.0) * self.speed

    def _search(self, numbers: dict[str, Any], n_stats: int, elapsed: float, in_stage: float) -> float | None:
        phase = numbers.get("phase", "")
        found = len(numbers.get("found", ()))
        if found > self.n_found:  # a statistic kept: its gain, for the fall of the gains
            self.gains.append(float(numbers.get("reward") or 0.0))
            self.n_found = found
        n_stats = max(n_stats, 1)
        if phase == "catalog":
            done, todo = int(numbers.get("phase_done", 0)), int(numbers.get("phase_total", 0))
            if done <= 0 or todo <= 0:
                return None
            catalog = in_stage * todo / done
            sample = min(SAMPLE_USERS, max(self.users * 0.8, 1.0))
            self.speed = catalog / (todo * sample * CATALOG_UNIT)
            self.later = self._later(min(TYPICAL_STATS, n_stats))
            return catalog - in_stage + (SELECT_PER_CATALOG + MCTS_PER_CATALOG) * catalog + self.later
        if self.catalog_seconds is None:  # the catalog just ended
            if phase not in ("select", "mcts"):
                return None  # a search without the catalog: no pace to go by
            self.catalog_seconds = in_stage
            self.select_start, self.select_found = elapsed, found
        catalog = self.catalog_seconds
        left = self.expected_statistics(n_stats, float(numbers.get("min_gain", 0.002) or 0.0))
        self.later = self._later(found + left)
        if phase == "mcts":
            self.mcts_done = True
            self.mcts_seconds = elapsed - self.mcts_start
            return max(MCTS_PER_CATALOG * catalog - self.mcts_seconds, 0.0) + self.later
        self.mcts_start = elapsed - self.mcts_seconds  # so that a later MCTS event counts from its start
        kept = found - self.select_found
        select = elapsed - self.select_start - self.mcts_seconds
        per_stat = select / kept if kept > 0 else SELECT_PER_CATALOG * catalog / max(TYPICAL_STATS, 1)
        mcts = 0.0 if self.mcts_done else MCTS_PER_CATALOG * catalog
        # and half a step more: the search ends on a candidate that fails the check
        return per_stat * (left + 0.5) + mcts + self.later

    def expected_statistics(self, n_stats: int, min_gain: float) -> float:
        """Statistics the search can still keep: those the fall of the gains leaves above ``min_gain``.

        With gains g1 > g2 > ... falling by a factor q a statistic, the next ones are g q, g q^2,
        ...; those at least ``min_gain`` number log(min_gain / g) / log(1 / q). Before two gains
        are known, a typical search's count; never more than ``n_stats`` in all.
        """
        room = max(n_stats - self.n_found, 0)
        gains = [g for g in self.gains if g > 0]
        if len(gains) < 2:
            return float(min(room, max(TYPICAL_STATS - self.n_found, 1)))
        last = gains[-1]
        if last < min_gain:
            return 0.0
        q = min(max(last / gains[-2], 0.05), 0.95)  # geometric fall of the last two
        return float(min(room, math.floor(math.log(max(min_gain, 1e-12) / last) / math.log(q))))
