"""Fidelity by slice (issue 28, item 20): per value of a categorical, against a per-user pandas reference."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from tiny import tiny_payments

from rudi_explain.exceptions import InputError, InputTypeError
from rudi_explain.explanation.figures import MIN_SLICE


def _pairwise(y: np.ndarray, s: np.ndarray) -> float:
    """Fidelity as SEMANTICS.md defines it, by brute force over ordered pairs."""
    pairs = [(i, j) for i, j in itertools.permutations(range(len(y)), 2)]
    return float(np.mean([(y[i] > y[j]) == (s[i] > s[j]) for i, j in pairs]))


@pytest.fixture(scope="module", params=[3, 4])
def exp(request):
    return tiny_payments(400, random_state=request.param)


def _most_common(exp, column: str) -> pd.Series:
    """Each user's most common value, ties to the first in the column's sorted vocabulary: a plain loop."""
    out = {}
    order = {v: k for k, v in enumerate(exp.sequences.categories(column))}
    for uid in exp.sequences.users:
        ev = exp.sequences.events(uid)[column].dropna().astype(str)
        if ev.empty:
            out[uid] = "(no value)"
            continue
        counts = ev.value_counts()
        best = counts[counts == counts.max()].index
        out[uid] = min(best, key=order.__getitem__)
    return pd.Series(out)


@pytest.mark.parametrize("column", ["country", "channel"])
def test_fidelity_by_a_column_equals_a_per_user_reference(exp, column):
    got = exp.fidelity_by(column)
    ref_groups = _most_common(exp, column)
    test = exp.is_test
    users = exp.sequences.users[test]
    y = exp.teacher_scores.to_numpy()[test]
    s = exp.student_scores.to_numpy()[test]
    g = ref_groups.reindex(users).to_numpy()
    assert got["n_users"].sum() == test.sum() and got.attrs["users"] == "held-out"
    assert list(got["n_users"]) == sorted(got["n_users"], reverse=True)  # largest slice first
    for value, row in got.iterrows():
        idx = np.flatnonzero(g == value)
        assert row["n_users"] == idx.size and row["share"] == pytest.approx(idx.size / test.sum())
        assert row["teacher_mean"] == pytest.approx(y[idx].mean()) and row["rules_mean"] == pytest.approx(s[idx].mean())
        if idx.size >= MIN_SLICE and np.ptp(y[idx]) > 0:
            assert row["fidelity"] == pytest.approx(_pairwise(y[idx], s[idx]), abs=1e-12)
        else:
            assert np.isnan(row["fidelity"])  # too few users to say anything: no figure
    assert got.attrs["fidelity_all"] == pytest.approx(exp.report()["fidelity_test"])


def test_fidelity_by_a_series_of_user_values(exp):
    users = exp.sequences.users
    tier = pd.Series(np.where(np.arange(len(users)) % 3 == 0, "gold", "basic"), index=users)
    got = exp.fidelity_by(tier.iloc[::-1], held_out=False)  # any order of the index
    assert set(got.index) == {"gold", "basic"} and got["n_users"].sum() == len(users)
    y, s = exp.teacher_scores.to_numpy(), exp.student_scores.to_numpy()
    gold = tier.to_numpy() == "gold"
    assert got.loc["gold", "fidelity"] == pytest.approx(_pairwise(y[gold], s[gold]), abs=1e-12)


def test_fidelity_by_refuses_what_it_cannot_slice_by(exp):
    with pytest.raises(InputError, match="not a categorical column"):
        exp.fidelity_by("amount")
    with pytest.raises(InputError, match="no value for 1 of the 400 users"):
        exp.fidelity_by(pd.Series("a", index=exp.sequences.users[1:]))
    with pytest.raises(InputTypeError, match="categorical column name or a Series"):
        exp.fidelity_by(3)
