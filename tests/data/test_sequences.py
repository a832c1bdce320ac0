"""Sequences: layout, inference, vocabularies and clear errors."""

import numpy as np
import pandas as pd
import pytest

import rudi_explain as rx


@pytest.fixture
def events():
    return pd.DataFrame({
        "user_id": [3, 1, 1, 3, 2, 1],
        "ts": pd.to_datetime(["2026-01-03", "2026-01-02", "2026-01-01", "2026-01-01", "2026-01-05", "2026-01-02"]),
        "card": ["debit", "credit", None, "debit", "credit", "prepaid"],
        "online": [True, False, True, True, False, False],
        "amount": [10.0, 2.5, np.nan, 4.0, 1.0, 7.0],
        "n_items": [1, 2, 3, 4, 5, 6],
    })


def test_layout_sorted_by_user_then_time_stable(events):
    seqs = rx.Sequences(events)
    assert seqs.users.tolist() == [1, 2, 3]
    assert seqs.n_users == 3 and seqs.n_events == 6
    assert seqs.offsets.tolist() == [0, 3, 4, 6]
    # User 1: 01-01 (row 2), then the two 01-02 events in input order (rows 1, 5).
    assert seqs.input_row[:3].tolist() == [2, 1, 5]
    np.testing.assert_array_equal(seqs.values["amount"][:3], [np.nan, 2.5, 7.0])
    assert seqs.event_user.tolist() == [0, 0, 0, 1, 2, 2]


def test_types_inferred(events):
    seqs = rx.Sequences(events)
    assert seqs.categorical == ["card", "online"]
    assert seqs.numerical == ["amount", "n_items"]
    assert seqs.categories("card") == ("<NA>", "credit", "debit", "prepaid")
    assert seqs.categories("online") == ("False", "True")


def test_explicit_kinds(events):
    seqs = rx.Sequences(events, categorical=["card", "n_items"], numerical=["amount"])
    assert seqs.categories("n_items") == tuple(sorted(str(i) for i in range(1, 7)))
    assert "online" not in seqs.columns


def test_no_time_keeps_input_order(events):
    seqs = rx.Sequences(events.drop(columns="ts"), time=None)
    assert seqs.input_row[:3].tolist() == [1, 2, 5]


def test_caller_frame_not_modified(events):
    before = events.copy(deep=True)
    rx.Sequences(events, categorical=["card"], numerical=["amount"], vocabularies={"card": ("debit",)})
    pd.testing.assert_frame_equal(events, before)


def test_dict_of_frames(events):
    parts = {uid: g.drop(columns="user_id") for uid, g in events.groupby("user_id")}
    seqs = rx.Sequences(parts)
    ref = rx.Sequences(events)
    assert seqs.users.tolist() == ref.users.tolist()
    np.testing.assert_array_equal(seqs.values["amount"], ref.values["amount"])
    np.testing.assert_array_equal(seqs.codes["card"], ref.codes["card"])


def test_unseen_categories_get_minus_one(events):
    seqs = rx.Sequences(events, vocabularies={"card": ("credit", "debit")})
    assert seqs.categories("card") == ("credit", "debit")
    decoded = seqs.events(1)["card"].tolist()
    assert decoded == ["<unseen>", "credit", "<unseen>"]  # NA and prepaid are unseen


def test_events_and_subset(events):
    seqs = rx.Sequences(events)
    ev = seqs.events(3)
    assert ev["amount"].tolist() == [4.0, 10.0]
    sub = seqs.subset(np.array([2, 0]))
    assert sub.users.tolist() == [1, 3]
    assert sub.events(3)["amount"].tolist() == [4.0, 10.0]
    with pytest.raises(KeyError, match="user 99"):
        seqs.events(99)


@pytest.mark.parametrize("kwargs, message", [
    (dict(user="uid"), "user column 'uid' is not in the data"),
    (dict(time="when"), "time column 'when' is not in the data"),
    (dict(categorical=["card"], numerical=["card"]), "'card' is listed as both"),
    (dict(categorical=["nope"]), "categorical column 'nope' is not in the data"),
    (dict(numerical=["ghost"]), "numerical column 'ghost' is not in the data"),
])
def test_bad_arguments_named(events, kwargs, message):
    with pytest.raises(ValueError, match=message):
        rx.Sequences(events, **kwargs)


def test_empty_table():
    with pytest.raises(ValueError, match="empty"):
        rx.Sequences(pd.DataFrame({"user_id": [], "ts": [], "x": []}))


def test_non_numeric_string_in_numerical_column(events):
    bad = events.assign(amount=["1", "2", "abc", "4", "5", "6"])
    with pytest.raises(ValueError, match=r"numerical column 'amount' has a non-numeric value 'abc' \(row 2, user 1\)"):
        rx.Sequences(bad, numerical=["amount"])


def test_numeric_strings_are_accepted(events):
    seqs = rx.Sequences(events.assign(amount=["1", "2.5", None, "4", "5", "6"]), numerical=["amount"],
                        categorical=["card"])
    assert np.isnan(seqs.values["amount"][0])


def test_time_that_cannot_be_ordered(events):
    with pytest.raises(TypeError, match="time column 'ts' cannot be ordered"):
        rx.Sequences(events.assign(ts=[object()] * 6))
    with pytest.raises(ValueError, match="time column 'ts' has a missing value at row 4"):
        rx.Sequences(events.assign(ts=[1.0, 2.0, 3.0, 4.0, np.nan, 6.0]))


def test_iso_strings_as_time(events):
    seqs = rx.Sequences(events.assign(ts=events["ts"].dt.strftime("%Y-%m-%d")))
    assert seqs.input_row[:3].tolist() == [2, 1, 5]


def test_missing_user_id(events):
    with pytest.raises(ValueError, match="user column 'user_id' has a missing user id at row 1"):
        rx.Sequences(events.assign(user_id=[3, None, 1, 3, 2, 1]))


def test_mixed_user_ids_error(events):
    with pytest.raises(TypeError, match="user column 'user_id' mixes ids of different types"):
        rx.Sequences(events.assign(user_id=[3, "a", 1, 3, 2, 1]))


def test_unusable_column_type_named(events):
    with pytest.raises(TypeError, match="column 'when2'"):
        rx.Sequences(events.assign(when2=pd.to_timedelta(np.arange(6), "s")))


def test_categories_of_numerical_column_is_an_error(events):
    with pytest.raises(ValueError, match="'amount' is not a categorical column"):
        rx.Sequences(events).categories("amount")


# ------------------------------------------------------------ reference time
def test_reference_time_defaults_to_the_latest_event(events):
    seqs = rx.Sequences(events)
    assert seqs.reference_time == np.datetime64("2026-01-05T00:00:00", "ns")
    numeric = rx.Sequences(events.assign(ts=[3.0, 1.5, 1.0, 9.5, 2.0, 1.5]))
    assert numeric.reference_time == 9.5
    assert rx.Sequences(events.drop(columns="ts"), time=None).reference_time is None


def test_reference_time_given(events):
    assert rx.Sequences(events, reference_time="2026-02-01").reference_time == np.datetime64("2026-02-01", "ns")
    # Time zones are converted to UTC, as the time column is.
    tz = rx.Sequences(events, reference_time=pd.Timestamp("2026-02-01 01:00", tz="Europe/Paris"))
    assert tz.reference_time == np.datetime64("2026-02-01T00:00", "ns")
    assert rx.Sequences(events.assign(ts=np.arange(6.0)), reference_time=10).reference_time == 10.0


def test_reference_time_errors(events):
    with pytest.raises(ValueError, match="reference_time needs a time column"):
        rx.Sequences(events.drop(columns="ts"), time=None, reference_time="2026-01-01")
    with pytest.raises(TypeError, match="does not fit the numerical time column 'ts'"):
        rx.Sequences(events.assign(ts=np.arange(6.0)), reference_time="yesterday")
    with pytest.raises(TypeError, match="does not fit the datetime time column 'ts'"):
        rx.Sequences(events, reference_time="not a date")
    with pytest.raises(ValueError, match="must be a time"):
        rx.Sequences(events, reference_time=pd.NaT)


def test_reference_time_kept_by_subset_and_saved_arrays(events):
    seqs = rx.Sequences(events, reference_time="2026-03-01 12:00")
    # The subset of user 2 alone keeps the reference, not its own latest event.
    assert seqs.subset(np.array([1])).reference_time == seqs.reference_time
    meta, arrays = seqs.to_arrays()
    assert isinstance(meta["reference_time"], int)
    assert rx.Sequences.from_arrays(meta, arrays).reference_time == seqs.reference_time
    # Arrays saved before reference times existed: the latest event.
    del meta["reference_time"]
    assert rx.Sequences.from_arrays(meta, arrays).reference_time == np.datetime64("2026-01-05", "ns")
    numeric = rx.Sequences(events.assign(ts=np.arange(6.0)), reference_time=7)
    assert rx.Sequences.from_arrays(*numeric.to_arrays()).reference_time == 7.0
