"""The progress the widget is sent carries the job's own time-left estimate (issue 28, item 15; issue 27, item 2)."""

from __future__ import annotations

import rudi_explain as rx
from rudi_explain.explanation.job import JobProgress
from rudi_explain.views import payloads as ws


def test_the_jobs_estimate_reaches_the_page_and_none_stays_none():
    with_estimate = JobProgress("search", 2, 20, "statistic 3/20", {"seconds_left": 41.23456}, 12.0)
    assert ws.progress_state(with_estimate, "running")["seconds_left"] == 41.23
    without = JobProgress("search", 2, 20, "statistic 3/20", {}, 12.0)
    out = ws.progress_state(without, "running")
    assert "seconds_left" in out and out["seconds_left"] is None  # the page shows no estimate, not its own guess


def test_a_running_job_sends_its_estimate_as_it_runs():
    demo = rx.datasets.make_payments(300, random_state=0)
    seen: list = []
    rx.explain(None, demo.events, scores=demo.risk, background=False, n_stats=2, n_simulations=10,
               student_params={"epochs": 5}, progress=lambda e: seen.append(ws.progress_state(e, "running")))
    left = [p["seconds_left"] for p in seen if p["seconds_left"] is not None]
    assert len(left) >= 3 and min(left) >= 0, seen[:3]  # the stages publish it as they run
