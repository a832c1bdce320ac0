"""A small finished Explanation built without the search: fast, and independent of the search's state."""

from __future__ import annotations

import numpy as np
import pandas as pd

import rudi_explain as rx
from rudi_explain.explanation import Explanation, FittedState, JobInputs, JobProgress
from rudi_explain.rules.literals import Literals
from rudi_explain.statistics import Statistic
from rudi_explain.students import LassoLiterals

STATISTICS = ("Select(amount) | Mean", "Select(channel) | Mean", "Select(amount) | Count")


def tiny_explanation(seqs: rx.Sequences, scores: pd.Series, labels: pd.Series | None = None,
                     statistics: tuple[str, ...] = STATISTICS, test_size: float = 0.2,
                     random_state: int = 0, teacher=None) -> Explanation:
    """What ``explain(None, seqs, scores=..., student='lasso')`` leaves, with given statistics.

    ``teacher`` (a model) is kept as the one the job queried (``exp.inputs``), for the audit
    methods that ask it; without it the explanation holds no model.
    """
    params = {"n_stats": len(statistics), "max_depth": 4, "n_rules": 6, "student": "lasso",
              "random_state": random_state, "test_size": test_size, "n_simulations": 0, "batch_size": 128,
              "search_params": {}, "student_params": {}}
    n = seqs.n_users
    rng = np.random.default_rng(random_state)
    is_test = np.zeros(n, dtype=bool)
    is_test[rng.permutation(n)[: int(round(n * test_size))]] = True
    y = scores.reindex(seqs.users).to_numpy(dtype=np.float64)
    found = [Statistic.parse(t) for t in statistics]
    train = seqs.subset(np.flatnonzero(~is_test))
    literals = Literals.fit(train, found)
    values = literals.values(seqs)
    student = LassoLiterals(n_rules=6).fit(literals.transform_values(values)[~is_test], y[~is_test])
    state = FittedState.from_values(
        seqs, found, literals, student.rules(literals), values, y, is_test, student=student,
        labels=None if labels is None else labels.reindex(seqs.users).to_numpy(dtype=np.float64),
        teacher_kind="given scores", seconds={"total": 0.0})
    inputs = None if teacher is None else JobInputs(rx.as_teacher(teacher))
    return Explanation(seqs, params, result=state, inputs=inputs,
                       history=[JobProgress("done", 1, 1, "built without a search")])


def tiny_payments(n_users: int = 150, random_state: int = 3, **kwargs) -> Explanation:
    """A tiny explanation of the demo payments data's planted risk."""
    demo = rx.datasets.make_payments(n_users, random_state=random_state)
    return tiny_explanation(demo.sequences(), demo.risk, demo.labels, **kwargs)
