"""Events by user, then a value: np.lexsort's order exactly, by a faster route (rudi_explain.data.sorting)."""

import numpy as np
import pandas as pd
import pytest

import rudi_explain as rx
from rudi_explain.data import sorting

CASES = ["values", "ties", "signed zeros", "infinities", "all undefined", "one large user", "users without events",
         "no events", "integers", "times with NaT"]


def _case(case: str) -> tuple[np.ndarray, np.ndarray]:
    """Each event's user (grouped, ascending) and a key, for one kind of data."""
    rng = np.random.default_rng(len(case))
    counts = rng.poisson(12, 300)
    if case == "one large user":
        counts[150] = 1000  # more events than a block: its block holds the whole user
    if case == "users without events":
        counts[rng.random(300) < 0.4] = 0
    if case == "no events":
        counts[:] = 0
    user = np.repeat(np.arange(300), counts).astype(np.int32)
    n = len(user)
    key = {"ties": rng.integers(0, 3, n).astype(float),
           "signed zeros": np.where(rng.random(n) < 0.5, 0.0, -0.0),
           "infinities": np.where(rng.random(n) < 0.2, np.inf, np.where(rng.random(n) < 0.2, -np.inf, 1.0)),
           "all undefined": np.full(n, np.nan),
           "integers": rng.integers(-5, 5, n),
           "times with NaT": np.where(rng.random(n) < 0.1, np.iinfo(np.int64).min,
                                      rng.integers(0, 10**12, n))}.get(case, rng.normal(size=n))
    if key.dtype.kind == "f" and case in ("values", "one large user", "users without events"):
        key[rng.random(n) < 0.1] = np.nan
    return user, key


@pytest.mark.parametrize("case", CASES)
def test_within_users_block_by_block_is_lexsort(case, monkeypatch):
    monkeypatch.setattr(sorting, "SORT_BLOCK", 64)  # small blocks: every case spans many
    user, key = _case(case)
    offsets = np.r_[0, np.cumsum(np.bincount(user, minlength=300))]
    got = sorting.sorted_within_users(key, user, offsets)
    assert got.dtype == np.intp
    assert np.array_equal(got, np.lexsort((key, user)))


@pytest.mark.parametrize("case", CASES)
def test_events_in_any_order_by_user_then_key_is_lexsort(case, monkeypatch):
    monkeypatch.setattr(sorting, "SORT_BLOCK", 64)
    user, key = _case(case)
    shuffle = np.random.default_rng(1).permutation(len(user))  # the input order: users interleaved
    user, key = user[shuffle], key[shuffle]
    got = sorting.by_user_then(user, 300, key)
    assert got.dtype == np.intp
    assert np.array_equal(got, np.lexsort((key, user)))
    assert np.array_equal(sorting.by_user_then(user, 300), np.argsort(user, kind="stable"))


def test_codes_it_cannot_pack_fall_back_to_numpys_sort():
    user = np.array([2, -1, 0, 2, -1])
    key = np.array([3.0, 1.0, 2.0, 1.0, 0.0])
    assert np.array_equal(sorting.by_user_then(user, 3, key), np.lexsort((key, user)))


def test_sequences_lay_each_users_events_out_in_time_order_ties_in_input_order():
    # against a per-user loop over the input rows
    rng = np.random.default_rng(0)
    n = 3000
    events = pd.DataFrame({"user": rng.integers(0, 200, n), "t": rng.integers(0, 50, n),  # many ties in time
                           "amount": rng.normal(size=n)})
    seqs = rx.Sequences(events, user="user", time="t")
    rows_of: dict = {}
    for i, (user_id, t) in enumerate(zip(events["user"].tolist(), events["t"].tolist())):
        rows_of.setdefault(user_id, []).append((t, i))
    for u, user_id in enumerate(seqs.users):
        expected = [i for _, i in sorted(rows_of[user_id])]
        assert seqs.input_row[seqs.offsets[u]:seqs.offsets[u + 1]].tolist() == expected
