"""Bad input, round three, on the data side: user ids, bad cells, category codes, times, complex columns."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import rudi_explain as rx
from rudi_explain.teachers.adapters import given_scores


def _events(n_users: int = 50, per_user: int = 4, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = n_users * per_user
    return pd.DataFrame({
        "user_id": np.repeat(np.arange(n_users), per_user),
        "ts": np.tile(np.arange(per_user, dtype=float), n_users),
        "amount": rng.normal(50, 10, n).round(2),
        "channel": rng.choice(["web", "shop"], n),
    })


def _build(frame: pd.DataFrame, **kwargs):
    """Sequences of a copy-checked frame, with the warnings it gave."""
    before = frame.copy(deep=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        seqs = rx.Sequences(frame, **kwargs)
    pd.testing.assert_frame_equal(frame, before)  # the caller's data is never modified
    return seqs, [w for w in caught if issubclass(w.category, UserWarning)]


# ------------------------------------------------------------------ item 2: uint64 user ids
def test_uint64_user_ids_past_int64_stay_exact_and_scores_line_up():
    frame = _events(6)
    ids = np.uint64(2**63) + np.array([5, 0, 3, 1, 4, 2], dtype=np.uint64)
    frame["user_id"] = np.repeat(ids, 4)
    seqs, _ = _build(frame)
    assert seqs.users.dtype == np.uint64
    assert seqs.users.tolist() == sorted(int(u) for u in ids)
    assert min(seqs.users.tolist()) >= 2**63  # not wrapped to negative int64 ids
    scores = pd.Series(np.arange(6, dtype=float), index=pd.Index(ids))
    lined_up = given_scores(scores, seqs)
    assert lined_up.tolist() == [float(scores[u]) for u in seqs.users]
    uid = int(ids[2])
    assert seqs.user_index(uid) == seqs.users.tolist().index(uid)
    assert len(seqs.events(uid)) == 4


def test_python_integer_ids_past_int64_stay_exact():
    frame = _events(3)
    frame["user_id"] = pd.Series([2**64 - 1 - u for u in frame["user_id"]], dtype=object)
    seqs, _ = _build(frame)
    assert seqs.users.tolist() == [2**64 - 3, 2**64 - 2, 2**64 - 1]


# ------------------------------------------------------------------ item 4: a few bad cells in a numeric column
def test_one_bad_cell_leaves_the_column_numeric_with_one_warning_naming_it():
    frame = _events(100)
    frame["amount"] = frame["amount"].astype(str)
    frame.loc[7, "amount"] = "12,5"
    seqs, caught = _build(frame)
    assert "amount" in seqs.numerical and "amount" not in seqs.categorical
    bad_position = int(np.flatnonzero(seqs.input_row == 7)[0])
    assert np.isnan(seqs.values["amount"][bad_position])
    assert np.isfinite(np.delete(seqs.values["amount"], bad_position)).all()
    assert len(caught) == 1
    message = str(caught[0].message)
    assert message.startswith("numerical column 'amount' has a non-numeric value '12,5' (row 7, user 1), read as "
                              "missing (NaN)")


def test_a_few_bad_cells_are_named_first_and_counted():
    frame = _events(500)  # 2,000 cells: up to 20 may be bad
    frame["amount"] = frame["amount"].astype(object)
    for row in (11, 5, 900, 1500):
        frame.loc[row, "amount"] = "n/a?"
    seqs, caught = _build(frame)
    assert "amount" in seqs.numerical
    message = str(caught[0].message)
    assert message.startswith("numerical column 'amount' has 4 non-numeric values 'n/a?' (row 5, user 1), "
                              "'n/a?' (row 11, user 2), 'n/a?' (row 900, user 225) and 1 more, read as missing")


@pytest.mark.parametrize("n_bad, n_users", [(3, 50), (25, 1000)])  # over 1 % of 200 cells; over 20 cells
def test_more_bad_cells_are_refused_naming_the_column_and_the_first_cells(n_bad, n_users):
    frame = _events(n_users)
    frame["amount"] = frame["amount"].astype(object)
    rows = np.arange(n_bad) * 7 + 2
    frame.loc[rows, "amount"] = "12,5"
    with pytest.raises(ValueError, match=rf"numerical column 'amount' has {n_bad} non-numeric values '12,5' "
                                         r"\(row 2, user 0\), '12,5' \(row 9, user 2\)") as err:
        _build(frame)
    assert "more than can be read as missing" in str(err.value)
    assert isinstance(err.value, rx.RudiExplainError)


def test_a_listed_numerical_column_reads_one_bad_cell_as_missing_too():
    frame = _events(100)
    frame["amount"] = frame["amount"].astype(object)
    frame.loc[3, "amount"] = "12,5"
    seqs, caught = _build(frame, numerical=["amount"], categorical=["channel"])
    assert np.isnan(seqs.values["amount"]).sum() == 1 and len(caught) == 1
    # In a column of fewer than 100 cells, 1 % is less than one cell: refused.
    with pytest.raises(ValueError, match=r"has a non-numeric value '12,5' \(row 3, user 0\) in 80 cells"):
        _build(frame.iloc[:80], numerical=["amount"], categorical=["channel"])


def test_a_column_of_numbers_written_as_text_stays_categorical():
    frame = _events(50)
    frame["zip"] = np.where(np.arange(len(frame)) % 2, "75001", "13002")
    seqs, caught = _build(frame)
    assert "zip" in seqs.categorical and not caught


# ------------------------------------------------------------------ item 5: integer category codes
def test_integer_codes_stay_numerical_with_a_warning_naming_them_and_the_fix():
    frame = _events(100)
    frame["channel_code"] = (np.arange(len(frame)) * 7) % 4
    seqs, caught = _build(frame)
    assert "channel_code" in seqs.numerical  # behaviour kept; the warning says how to change it
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "'channel_code' has 4 values (0, 1, 2, 3)" in message
    assert "categorical=['channel', 'channel_code']" in message
    assert "numerical=['amount', 'channel_code']" in message
    # Saying which it is silences the warning.
    for kwargs in ({"categorical": ["channel", "channel_code"]}, {"numerical": ["amount", "channel_code"]}):
        seqs, caught = _build(frame, **kwargs)
        assert not caught


def test_no_code_warning_for_flags_floats_many_values_or_the_demo_data():
    frame = _events(100)
    frame["flag"] = np.arange(len(frame)) % 2
    frame["hour"] = (np.arange(len(frame)) % 4).astype(float)
    frame["count"] = np.arange(len(frame)) % 40
    _, caught = _build(frame)
    assert not caught
    with warnings.catch_warnings(record=True) as demo_caught:
        warnings.simplefilter("always")
        rx.datasets.make_payments(300, random_state=0).sequences()
    assert not [w for w in demo_caught if "few distinct values" in str(w.message)]


# ------------------------------------------------------------------ item 7: event times
def test_a_number_among_datetimes_is_named_by_its_row():
    frame = _events(5)
    frame["ts"] = pd.Series(list(pd.date_range("2024-01-01", periods=len(frame), freq="h")), dtype=object)
    frame.loc[3, "ts"] = 5
    with pytest.raises(TypeError, match=r"the value 5 at row 3 is of type int, not a time") as err:
        _build(frame)
    assert "row 0" not in str(err.value)


def test_mixed_time_zones_are_named_by_the_cell():
    frame = _events(5)
    stamps = [pd.Timestamp("2024-01-01 10:00", tz="UTC")] * len(frame)
    stamps[12] = pd.Timestamp("2024-01-01 10:00", tz="Europe/Paris")
    frame["ts"] = pd.Series(stamps, dtype=object)
    with pytest.raises(TypeError, match=r"time zones differ: .* at row 12 is in Europe/Paris, .* row 0 is in UTC"):
        _build(frame)
    texts = ["2024-01-01T10:00:00+01:00"] * len(frame)
    texts[4] = "2024-01-01T10:00:00"
    frame["ts"] = texts
    with pytest.raises(TypeError, match=r"'2024-01-01T10:00:00' at row 4 has no time zone"):
        _build(frame)


@pytest.mark.parametrize("bad", [np.inf, -np.inf])
def test_an_infinite_numeric_time_is_refused_naming_the_row(bad):
    frame = _events(5)
    frame.loc[6, "ts"] = bad
    with pytest.raises(ValueError, match=rf"time column 'ts' has the infinite value {bad!r} at row 6"):
        _build(frame)


# ------------------------------------------------------------------ item 8: complex columns
def test_complex_columns_are_refused_naming_them():
    frame = _events(5)
    frame["z"] = frame["amount"] + 1j
    frame["w"] = frame["amount"] * 1j
    with pytest.raises(TypeError, match=r"columns \['z', 'w'\] hold complex numbers"):
        _build(frame)
    with pytest.raises(TypeError, match=r"columns \['z'\] hold complex numbers"):
        _build(frame, numerical=["amount", "z"], categorical=["channel"])


@pytest.mark.parametrize("flag", [True, False, np.bool_(True)])
def test_a_truth_value_is_not_taken_for_user_one_or_zero(flag):
    events = pd.DataFrame({"user_id": [0, 0, 1, 1, 2], "ts": pd.date_range("2026-01-01", periods=5, freq="h"),
                           "amount": [1.0, 2.0, 3.0, 4.0, 5.0]})
    seqs = rx.Sequences(events, user="user_id", time="ts")
    assert seqs.user_index(1) == 1 and seqs.user_index(0) == 0  # the ids themselves still work
    with pytest.raises(rx.exceptions.UnknownUserError, match="not a truth value"):
        seqs.user_index(flag)
