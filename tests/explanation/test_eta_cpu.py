"""The time left told from CPU seconds (issue 27): the same job on a free and on a busy machine, on fake clocks.

The catalog runs on two threads and most of the rest on one. On a free 2-core machine the catalog
gets about two CPU seconds per wall second and the rest about one; on a busy one (the scheduler
shares the cores between sessions, not threads) both get the same share. A job is simulated as CPU
seconds per stage (``test_eta.simulate`` on a busy machine, where the CPU per wall second is the
same throughout); the same job on a free machine is its events with the catalog's wall seconds
divided by the catalog's CPU per wall second there and the rest's by the rest's. The reference is
the wall-only estimate on the busy machine, where both agree.
"""

from __future__ import annotations

import pytest
from test_eta import JOBS, MIN_GAIN, PACE, estimates, simulate

from rudi_explain.explanation.eta import Pace, TimeLeft

BUSY = 0.5  # CPU seconds per wall second on the busy machine, in every stage


def _catalog_span(events: list) -> tuple[float, float]:
    """The first catalog event's time and the selection's first."""
    start = next(e for stage, _, _, numbers, e in events if numbers.get("phase") == "catalog")
    end = next(e for stage, _, _, numbers, e in events if stage == "search" and numbers.get("phase") == "select")
    return start, end


def on_machine(events: list, catalog_use: float, rest_use: float) -> tuple[list, list[float]]:
    """The job of ``events`` (recorded on the busy machine) on a machine where the catalog gets ``catalog_use``
    CPU seconds per wall second and everything after it ``rest_use``: its events and their CPU seconds."""
    start, end = _catalog_span(events)
    out, cpu = [], []
    for stage, step, total, numbers, e in events:
        work = BUSY * e  # CPU seconds so far: the same on any machine
        if e <= start:
            wall = e
        elif e <= end:
            wall = start + (e - start) * BUSY / catalog_use
        else:
            wall = start + (end - start) * BUSY / catalog_use + (e - end) * BUSY / rest_use
        out.append((stage, step, total, numbers, wall))
        cpu.append(work)
    return out, cpu


@pytest.mark.parametrize("job", JOBS)
def test_a_free_machine_is_told_the_same_share_of_its_end_as_a_busy_one(job):
    busy = simulate(**job)
    free, cpu = on_machine(busy, catalog_use=1.9, rest_use=PACE.rest_cpu_per_wall)
    # busy: the catalog's CPU per wall second is the rest's, so the wall seconds alone tell it
    reference = estimates(busy)
    for (_, s), (_, t) in zip(reference, estimates(busy, cpu=[BUSY * e for *_, e in busy])):
        assert s == t or s == pytest.approx(t)
    # free: at each event, its told end as near its real end as the busy machine's at that event (each part
    # told in its own machine's seconds; the parts' shares of the end differ, so not the same share exactly)
    for (e, s), (f, t) in zip(reference, estimates(free, cpu=cpu)):
        assert (s is None) == (t is None)
        if s is not None:
            busy_miss, free_miss = abs((e + s) / busy[-1][-1] - 1), abs((f + t) / free[-1][-1] - 1)
            assert free_miss <= busy_miss + 0.03, (job, e, f, busy_miss, free_miss)
    # without the CPU seconds, a free machine's job is told short while the catalog runs: its two threads ran
    # faster than the rest will
    start, end = _catalog_span(free)
    mid = start + 0.5 * (end - start)
    wall_only = next(e + s for e, s in estimates(free) if e >= mid and s is not None)
    assert wall_only < 0.85 * free[-1][-1]


def test_cpu_seconds_convert_the_rest_at_the_catalogs_cpu_per_wall_second_up_to_the_rests():
    # A catalog event halfway: the catalog's seconds left are its own pace's; the search after it and the later
    # stages are the wall-only estimate's times the catalog's CPU per wall second over the rest's predicted one,
    # min(the catalog's, rest_cpu_per_wall).
    base = {"phase": "catalog", "phase_total": 1000, "min_gain": MIN_GAIN, "found": []}

    def told(use: float | None) -> tuple[float, float]:
        left = TimeLeft(cpu_clock=None)
        left.update("teacher", 0, 1, {"users": 5000}, 0.0, 0.0)
        cpu = None if use is None else 0.0
        left.update("search", 0, 20, {**base, "phase_done": 0}, 1.0, cpu)
        seconds = left.update("search", 0, 20, {**base, "phase_done": 500}, 3.0,
                              None if use is None else 2.0 * use)
        catalog_left = 2.0 / 0.5 * (1 + PACE.catalog_tail) - 2.0  # its other half and its tail at its own pace
        assert seconds is not None
        return seconds, catalog_left

    wall, catalog_left = told(None)
    c = PACE.rest_cpu_per_wall
    for use in (0.3, 0.8, c):  # the rest gets what the catalog got: the wall seconds tell it
        assert told(use)[0] == pytest.approx(wall)
    for use in (1.5 * c, 2.0 * c):
        assert told(use)[0] == pytest.approx(catalog_left + use / c * (wall - catalog_left))


def test_once_the_catalog_ends_the_rests_own_cpu_per_wall_second_takes_over():
    # The catalog ran on a free machine (2 CPU seconds per wall second); then the machine got busy and the
    # selection gets 0.6: the rest's seconds grow with what is seen, towards the catalog's 2 / 0.6.
    pace = PACE.replace(rest_prior_seconds=1.0)
    left = TimeLeft(pace, cpu_clock=None)
    left.update("teacher", 0, 1, {"users": 5000}, 0.0, 0.0)
    base = {"phase": "catalog", "phase_total": 1000, "min_gain": MIN_GAIN, "found": []}
    left.update("search", 0, 20, {**base, "phase_done": 0}, 1.0, 0.0)
    left.update("search", 0, 20, {**base, "phase_done": 1000}, 5.0, 8.0)
    select = {"phase": "select", "found": [], "min_gain": MIN_GAIN}
    seen = []
    for t in (0.0, 1.0, 4.0, 16.0):
        left.update("search", 0, 20, select, 5.0 + t, 8.0 + 0.6 * t)
        predicted = min(2.0, pace.rest_cpu_per_wall)
        rest = (predicted * 1.0 + 0.6 * t) / (1.0 + t)  # the prediction weighed as one second seen
        assert left.serial == pytest.approx(2.0 / rest)
        seen.append(left.serial)
    assert seen == sorted(seen) and seen[-1] > 0.8 * 2.0 / 0.6


def test_a_clock_read_at_each_event_and_never_negative():
    ticks = iter(range(1000))
    left = TimeLeft(cpu_clock=lambda: 0.1 * next(ticks))  # a fake CPU clock: read once an event
    for stage, step, total, numbers, e in simulate(speed=2.0, users=5000):
        s = left.update(stage, step, total, dict(numbers), e)
        assert s is None or s >= 0
    assert left.cpu is not None and left.cpu > 0
    for job in JOBS:
        busy = simulate(**job, select_factor=0.1, later_factor=0.1)
        for catalog_use, rest_use in ((2.0, 0.2), (0.2, 2.0), (1.9, 1.0)):
            free, cpu = on_machine(busy, catalog_use, rest_use)
            assert all(s is None or s >= 0 for _, s in estimates(free, cpu=cpu))


def test_the_told_end_moves_little_from_one_catalog_event_to_the_next():
    # Monotone enough to show: on a free machine whose catalog runs at a steady pace, each told end is
    # within 10% of the one before it while the catalog runs.
    for job in JOBS:
        free, cpu = on_machine(simulate(**job), catalog_use=1.9, rest_use=Pace().rest_cpu_per_wall)
        start, end = _catalog_span(free)
        ends = [e + s for e, s in estimates(free, cpu=cpu) if s is not None and start < e < end]
        assert all(abs(b / a - 1) <= 0.1 for a, b in zip(ends, ends[1:])), job
