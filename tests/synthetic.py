"""A large finished Explanation built without a search, for the widget's scale tests and benchmark."""

from __future__ import annotations

import numpy as np
import pandas as pd

import rudi_explain as rx
from rudi_explain.explanation import Explanation, FittedState


def scaled_explanation(exp: Explanation, n_users: int, events_per_user: int = 2, seed: int = 0,
                       string_ids: bool = False) -> Explanation:
    """A finished Explanation over ``n_users`` synthetic users, with ``exp``'s statistics and rules.

    Everything the widget reads is real (sequences, statistic values, literal
    matrix, firings, scores); only the search and training are skipped. User
    ids are whole numbers, or ``"u<number>"`` with ``string_ids``.
    """
    seqs = exp.sequences
    rng = np.random.default_rng(seed)
    n = n_users * events_per_user
    ids = np.repeat(np.arange(n_users), events_per_user)
    data = {"user_id": np.char.add("u", ids.astype(str)) if string_ids else ids,
            "ts": np.tile(np.arange(events_per_user), n_users).astype("datetime64[s]")}
    for c in seqs.categorical:
        vocab = list(seqs.vocabularies[c])
        data[c] = pd.Categorical.from_codes(rng.integers(0, len(vocab), n), categories=vocab)
    for c in seqs.numerical:
        data[c] = rng.gamma(2.0, 30.0, n)
    big = rx.Sequences(pd.DataFrame(data), user="user_id", time="ts", categorical=seqs.categorical,
                       numerical=seqs.numerical, vocabularies=seqs.vocabularies)
    values = exp.literals.values(big)
    student = exp.rules.score(exp.rules.matrix(values))
    teacher = student + rng.normal(0, 0.3, n_users)
    is_test = rng.random(n_users) < 0.2
    state = FittedState.from_values(big, exp.statistics, exp.literals, exp.rules, values, teacher, is_test,
                                    student_scores=student, teacher_kind="synthetic", seconds=exp.seconds)
    return Explanation(big, exp.params, result=state, history=exp.history)
