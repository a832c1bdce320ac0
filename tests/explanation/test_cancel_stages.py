"""A cancel is honoured within one unit of work in the student stage (counted, not timed)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import rudi_explain as rx
from rudi_explain.explanation import ExplanationCancelled
from rudi_explain.students import gsnln
from rudi_explain.students.gsnln import GSNLN


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
    assert reached.wait(300), "the student stage never started"
    e.cancel()
    cancelled.set()
    with pytest.raises(ExplanationCancelled):
        e.wait(timeout=120)
    assert e.status == "cancelled"
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
    assert reached.wait(300), "the pruning stage never started"
    e.cancel()
    cancelled.set()
    with pytest.raises(ExplanationCancelled):
        e.wait(timeout=120)
    assert e.status == "cancelled"
    assert calls[0] - at_cancel[0] == 0  # no pruning path built once the cancel was asked for
