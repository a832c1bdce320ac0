"""A cancel is honoured within one unit of work in the student stage (counted, not timed)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import rudi_explain as rx
from rudi_explain.explanation import ExplanationCancelled
from rudi_explain.students import gsnln
from rudi_explain.students.gsnln import GSNLN


def cancel_where_held(e, reached: threading.Event, cancelled: threading.Event, not_reached: str) -> None:
    """Cancel a job held at a point (``reached`` set there), let it go on (``cancelled``), and see it end cancelled."""
    assert reached.wait(300), not_reached
    e.cancel()
    cancelled.set()
    with pytest.raises(ExplanationCancelled):
        e.wait(timeout=120)
    assert e.status == "cancelled"


def _counting(monkeypatch):
    """Count the mini-batches GS-NLN trains on; ``calls[0]`` is the count."""
    real = gsnln._loss_and_grads
    calls = [0]

    def counted(*args, **kwargs):
        calls[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(gsnln, "_loss_and_grads", counted)
    return calls, real


def test_should_stop_ends_training_within_one_batch(monkeypatch):
    calls, _ = _counting(monkeypatch)
    rng = np.random.default_rng(0)
    X = rng.random((400, 12)) < 0.5
    y = X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.1, size=400)
    asked = []

    def should_stop():
        asked.append(calls[0])
        return calls[0] >= 5  # the flag is up once the 5th mini-batch has run

    student = GSNLN(n_rules=4, epochs=3, batch_size=16, random_state=0)  # 25 mini-batches an epoch
    student.fit(X, y, should_stop=should_stop)
    assert calls[0] == 5  # not one more mini-batch once the flag was up
    assert student.n_epochs_run_ == 0  # the part epoch is not counted
    assert student.predict(X).shape == (400,)  # and the network keeps what it learned


def test_cancel_during_the_student_stage_stops_within_one_batch(monkeypatch):
    real = gsnln._loss_and_grads
    calls = [0]
    reached, cancelled = threading.Event(), threading.Event()
    at_cancel = []

    def counted(*args, **kwargs):
        calls[0] += 1
        if calls[0] == 3:  # the student is mid-epoch: hold it there until the cancel is asked for
            reached.set()
            assert cancelled.wait(60)
            at_cancel.append(calls[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(gsnln, "_loss_and_grads", counted)
    demo = rx.datasets.make_payments(400, random_state=0)
    e = rx.explain(None, demo.events, scores=demo.risk, background="thread", n_stats=2, n_simulations=20,
                   student_params={"batch_size": 16, "epochs": 5}, prune=False)
    cancel_where_held(e, reached, cancelled, "the student stage never started")
    assert e.progress.numbers["reached"] == "student"
    assert calls[0] - at_cancel[0] <= 1  # at most one mini-batch after the cancel (here: none)


def test_cancel_during_pruning_runs_no_further_pruning(monkeypatch):
    from rudi_explain.rules import refine

    real = refine.prune_rules
    calls, at_cancel = [0], []
    reached, cancelled = threading.Event(), threading.Event()

    def counted(*args, **kwargs):
        calls[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(refine, "prune_rules", counted)

    def progress(event):
        if event.stage == "evaluate" and event.message.startswith("moving thresholds") and not reached.is_set():
            reached.set()  # the pruning stage starts: hold it until the cancel is asked for
            assert cancelled.wait(60)
            at_cancel.append(calls[0])

    demo = rx.datasets.make_payments(400, random_state=0)
    e = rx.explain(None, demo.events, scores=demo.risk, background="thread", n_stats=2, n_simulations=20,
                   student_params={"epochs": 2}, progress=progress)
    cancel_where_held(e, reached, cancelled, "the pruning stage never started")
    assert calls[0] - at_cancel[0] == 0  # no pruning path built once the cancel was asked for


def test_cancel_during_a_rule_list_stops_sampling_within_one_check(monkeypatch):
    from rudi_explain.students import brl

    real = brl._ListPosterior._suffix
    steps, at_cancel = [0], []
    reached, cancelled = threading.Event(), threading.Event()

    def counted(self, *args, **kwargs):
        steps[0] += 1
        if steps[0] == 500:  # mid-chain: hold the sampler until the cancel is asked for
            reached.set()
            assert cancelled.wait(60)
            at_cancel.append(steps[0])
        return real(self, *args, **kwargs)

    monkeypatch.setattr(brl._ListPosterior, "_suffix", counted)
    demo = rx.datasets.make_payments(400, random_state=0)
    e = rx.explain(None, demo.events, scores=demo.risk, background="thread", n_stats=2, n_simulations=20,
                   student="brl", student_params={"n_iterations": 50_000, "n_chains": 2})
    cancel_where_held(e, reached, cancelled, "the rule list's sampler never started")
    assert e.progress.numbers["reached"] == "student"
    assert steps[0] - at_cancel[0] <= brl.STEPS_PER_CHECK  # not the 99,500 steps left of the two chains


def test_cancel_during_the_literals_stage_evaluates_no_further_statistic(monkeypatch):
    from rudi_explain.rules import literals as literals_module

    real = literals_module._as_2d
    evaluated, at_cancel = [0], []
    reached, cancelled = threading.Event(), threading.Event()

    def counted(values):
        evaluated[0] += 1
        return real(values)

    monkeypatch.setattr(literals_module, "_as_2d", counted)

    def progress(event):
        if event.stage == "literals" and event.step == 0 and not reached.is_set():
            reached.set()  # the literals stage starts: hold it until the cancel is asked for
            assert cancelled.wait(60)
            at_cancel.append(evaluated[0])

    demo = rx.datasets.make_payments(400, random_state=0)
    e = rx.explain(None, demo.events, scores=demo.risk, background="thread", n_stats=3, n_simulations=20,
                   progress=progress)
    cancel_where_held(e, reached, cancelled, "the literals stage never started")
    assert e.progress.numbers["reached"] == "literals"
    assert evaluated[0] - at_cancel[0] == 0  # no statistic evaluated once the cancel was asked for


def test_cancel_while_the_teacher_scores_stops_between_batches():
    demo = rx.datasets.make_payments(400, random_state=0)
    risk = demo.risk
    batches, at_cancel = [0], []
    reached, cancelled = threading.Event(), threading.Event()

    def teacher(seqs):
        batches[0] += 1
        if batches[0] == 2:  # the second batch of users: hold the teacher until the cancel is asked for
            reached.set()
            assert cancelled.wait(60)
            at_cancel.append(batches[0])
        return risk.reindex(seqs.users).to_numpy()

    e = rx.explain(teacher, demo.events, background="thread", n_stats=2, n_simulations=20,
                   teacher_params={"batch_size": 40})
    cancel_where_held(e, reached, cancelled, "the teacher was never asked")
    assert e.progress.numbers["reached"] == "teacher"
    assert batches[0] == at_cancel[0]  # the batch in hand finished; none of the 8 left was asked for


_TORCH_DURING_SEARCH = """
import sys, threading, time
import rudi_explain as rx
held, go = threading.Event(), threading.Event()
in_catalog = []
def imported():
    torch = sys.modules.get("torch")
    return torch is not None and not getattr(torch.__spec__, "_initializing", False)
def progress(ev):  # held at the search's first event past its catalog, where the import starts
    if ev.stage == "search" and ev.numbers.get("phase") == "catalog":
        in_catalog.append("torch" in sys.modules)
    if ev.stage == "search" and ev.numbers.get("phase") not in (None, "catalog") and not held.is_set():
        held.set()
        go.wait(60)
demo = rx.datasets.make_payments(300, random_state=0)
e = rx.explain(None, demo.events, scores=demo.risk, background="thread", n_stats=1, n_simulations=10,
               student_params={"epochs": 1}, progress=progress)
assert held.wait(120)
print("torch imported during the catalog:", any(in_catalog), "of", len(in_catalog), "events")
deadline = time.monotonic() + 60
while not imported() and time.monotonic() < deadline:  # the search is held: only a thread beside it can import
    time.sleep(0.05)
print("torch imported during the search:", imported())
go.set()
e.wait(120)
"""


@pytest.mark.slow
def test_torch_is_imported_beside_the_search_not_inside_the_student_stage():
    """Past the catalog (beside it the import slowed the catalog's two threads), before the student."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _TORCH_DURING_SEARCH], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    # imported while the search was held, so the student stage never waits seconds on an import a cancel cannot stop
    assert "torch imported during the search: True" in out.stdout
    assert "torch imported during the catalog: False of" in out.stdout and " of 0 events" not in out.stdout


def test_cancel_during_the_scorecard_steps_fits_no_further_scorecard(monkeypatch):
    # The scorecard's steps after the pruning (its starting point, the choice of form, the chosen form's fit,
    # its idle units) ran 1.8 s without a check at 100,000 users: a cancel now stops them between steps.
    from rudi_explain.explanation import scorecard_step

    real = scorecard_step.scorecard_within_budget
    calls, at_cancel = [0], []
    reached, cancelled = threading.Event(), threading.Event()
    later: list[str] = []

    def counted(*args, **kwargs):
        calls[0] += 1
        if calls[0] == 1:  # the scorecard's first trial: hold it until the cancel is asked for
            reached.set()
            assert cancelled.wait(60)
            at_cancel.append(calls[0])
        return real(*args, **kwargs)

    def choosing(*args, **kwargs):
        later.append("choose_scorecard")
        raise AssertionError("the choice of form ran after the cancel")

    monkeypatch.setattr(scorecard_step, "scorecard_within_budget", counted)
    monkeypatch.setattr(scorecard_step, "choose_scorecard", choosing)
    monkeypatch.setattr(scorecard_step, "_fit_chosen", lambda *a, **k: later.append("_fit_chosen"))
    demo = rx.datasets.make_payments(400, random_state=0)
    e = rx.explain(None, demo.events, scores=demo.risk, background="thread", n_stats=2, n_simulations=20,
                   student_params={"epochs": 2})
    cancel_where_held(e, reached, cancelled, "the scorecard's steps never started")
    assert e.progress.numbers["reached"] == "evaluate"
    assert calls[0] == at_cancel[0] and later == []  # no trial, choice or fit once the cancel was asked for
