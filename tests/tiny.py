"""A small finished Explanation built without the search: fast, and independent of the search's state."""

from __future__ import annotations

import numpy as np
import pandas as pd

import rudi_explain as rx
from rudi_explain.explanation._explanation import Explanation
from rudi_explain.rules.literals import Literals
from rudi_explain.statistics import Statistic
from rudi_explain.students import LassoLiterals

STATISTICS = ("Select(amount) | Mean", "Select(channel) | Mean", "Select(amount) | Count")


def tiny_explanation(seqs: rx.Sequences, scores: pd.Series, labels: pd.Series | None = None,
                     statistics: tuple[str, ...] = STATISTICS, test_size: float = 0.2,
                     random_state: int = 0) -> Explanation:
    """What ``explain(None, seqs, scores=..., student='lasso')`` leaves, with given statistics."""
    params = {"n_stats": len(statistics), "max_depth": 4, "n_rules": 6, "student": "lasso",
              "random_state": random_state, "test_size": test_size, "n_simulations": 0, "batch_size": 128,
              "search_params": {}, "student_params": {}}
    exp = Explanation(seqs, params)
    n = seqs.n_users
    rng = np.random.default_rng(random_state)
    exp.is_test = np.zeros(n, dtype=bool)
    exp.is_test[rng.permutation(n)[: int(round(n * test_size))]] = True
    y = scores.reindex(seqs.users).to_numpy(dtype=np.float64)
    index = pd.Index(seqs.users, name=seqs.user_column)
    exp.teacher_scores = pd.Series(y, index=index, name="teacher")
    exp.teacher_kind = "given scores"
    if labels is not None:
        exp.labels = labels.reindex(seqs.users).to_numpy(dtype=np.float64)
    exp.statistics = [Statistic.parse(t) for t in statistics]
    train = seqs.subset(np.flatnonzero(~exp.is_test))
    exp.literals = Literals.fit(train, exp.statistics)
    exp._values = exp.literals.values(seqs)
    exp._literal_matrix = exp.literals.transform_values(exp._values)
    student = LassoLiterals(n_rules=6).fit(exp._literal_matrix[~exp.is_test], y[~exp.is_test])
    exp.student = student
    exp.rules = student.rules(exp.literals)
    exp._fires = exp.rules.fires(exp._literal_matrix)
    exp.student_scores = pd.Series(exp.rules.score(exp._literal_matrix), index=index, name="student")
    exp.seconds = {"total": 0.0}
    exp._emit("done", 1, 1, "built without a search")
    exp.status = "done"
    exp._finished.set()
    return exp


def tiny_payments(n_users: int = 150, random_state: int = 3, **kwargs) -> Explanation:
    """A tiny explanation of the demo payments data's planted risk."""
    demo = rx.datasets.make_payments(n_users, random_state=random_state)
    return tiny_explanation(demo.sequences(), demo.risk, demo.labels, **kwargs)
