"""Time operators (Within, Recency, Tenure, MeanGap, MaxGap) against a per-user pandas loop.

The reference (tests/reference_impl.py) shares no code with the vectorized
kernels: it filters and measures each user's events one by one with pandas
timestamps and plain Python.
"""

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_impl import reference_evaluate

import rudi_explain as rx
from rudi_explain.statistics import (
    MaxGap,
    MeanGap,
    Pipeline,
    Recency,
    Schema,
    Select,
    Tenure,
    Top,
    Within,
    next_operators,
)

CATEGORICAL = ["card", "channel"]
START = pd.Timestamp("2026-01-01")


def random_events(seed: int, datetime: bool = True, n_users: int = 40) -> pd.DataFrame:
    """Heavy-tailed lengths (1 to ~40 events), ties in time, single-event users, NaN amounts."""
    rng = np.random.default_rng(seed)
    lengths = np.minimum(1 + rng.geometric(0.15, n_users), 40)
    lengths[:3] = 1  # some users with one event only
    rows = []
    for u, n in enumerate(lengths):
        # Events over up to 200 days, every 6 hours: ties, and events right on window edges.
        hours = np.sort(rng.integers(0, 200 * 4, n)) * 6
        if n > 2:
            hours[1] = hours[0]  # a tie in time
        for h in hours:
            rows.append({
                "user_id": f"u{u:03d}",
                "ts": START + pd.Timedelta(hours=int(h)) if datetime else float(h) / 24.0,
                "card": rng.choice(["debit", "credit", "prepaid"], p=[0.5, 0.4, 0.1]),
                "channel": rng.choice(["online", "atm", "pos"]),
                "amount": float(np.round(rng.lognormal(3, 1), 2)) if rng.random() > 0.1 else math.nan,
            })
    df = pd.DataFrame(rows)
    return df.iloc[rng.permutation(len(df))].reset_index(drop=True)  # input order is not time order


DATETIME_PIPELINES = [
    "Select(amount) | Recency",
    "Select(card) | Tenure",
    "Select(amount) | MeanGap",
    "Select(amount) | MaxGap",
    "Select(amount) | RetainBy(card=debit) | Recency",
    "Select(amount) | RetainBy(card=prepaid) | FilterBy(channel=atm) | Tenure",
    "Select(amount) | RetainBy(card=credit) | MeanGap",
    "Select(amount) | FilterBy(card=debit) | MaxGap",
    "Select(amount) | Within(7d) | Count",
    "Select(amount) | Within(30d) | Sum",
    "Select(amount) | Within(90d) | Mean",
    "Select(amount) | Within(24h) | Max",
    "Select(amount) | Within(36h) | Count",
    "Select(amount) | Within(1.5d) | Count",
    "Select(amount) | Within(2w) | Recency",
    "Select(amount) | Within(30min) | Count",
    "Select(card) | Within(30d) | Mean",
    "Select(amount) | RetainBy(card=debit) | Within(30d) | Sum",
    "Select(amount) | Within(30d) | RetainBy(card=debit) | MeanGap",
    "Select(amount) | Within(90d) | FilterBy(channel=pos) | GroupBy(card) | Sum",
    "Select(amount) | Within(90d) | GroupBy(channel) | MaxGap",
    "Select(amount) | GroupBy(card) | Recency",
    "Select(card) | GroupBy(channel) | Tenure",
    "Select(amount) | RetainBy(card=debit) | GroupBy(channel) | MeanGap",
    "Select(amount) | SortBy(amount, desc) | Top(3) | Recency",
    "Select(amount) | SortBy(amount, desc) | Top(3) | MaxGap",
    "Select(amount) | SortBy(amount, asc) | Top(4) | Within(30d) | Tenure",
    "Select(amount) | SortBy(amount, desc) | Top(5) | Within(30d) | GroupBy(card) | MeanGap",
    "Select(amount) | Top(2) | Within(60d) | Count",
    "Select(amount) | Within(60d) | Top(2) | Sum",
    "Select(amount) | Abs | Within(7d) | RetainBy(channel=online) | Recency",
]

NUMERIC_PIPELINES = [
    "Select(amount) | Recency",
    "Select(card) | Tenure",
    "Select(amount) | MeanGap",
    "Select(amount) | MaxGap",
    "Select(amount) | Within(30) | Count",
    "Select(amount) | Within(7.5) | Sum",
    "Select(amount) | RetainBy(card=debit) | Within(30) | Recency",
    "Select(amount) | Within(60) | GroupBy(channel) | MaxGap",
    "Select(amount) | SortBy(amount, desc) | Top(3) | Within(100) | MeanGap",
    "Select(card) | GroupBy(channel) | Recency",
]


def check(df, seqs, text, **kwargs):
    stat = rx.Statistic.parse(text)
    got = stat.evaluate(seqs)
    want = reference_evaluate(df, stat, categorical=CATEGORICAL, **kwargs)
    assert got.shape == want.shape, text
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9, equal_nan=True, err_msg=text)
    assert len(stat.output_names(seqs)) == (1 if got.ndim == 1 else got.shape[1])
    return stat, got


@pytest.mark.parametrize("seed", [0, *(pytest.param(s, marks=pytest.mark.slow) for s in (1, 2, 3))])
def test_datetime_pipelines_match_reference(seed):
    df = random_events(seed)
    seqs = rx.Sequences(df, categorical=CATEGORICAL, numerical=["amount"])
    undefined = 0
    for text in DATETIME_PIPELINES:
        _, got = check(df, seqs, text)
        undefined += int(np.isnan(got).any())
    assert undefined > 0  # the data do leave users with 0 or 1 event somewhere


@pytest.mark.parametrize("seed", range(4))
def test_numeric_time_pipelines_match_reference(seed):
    df = random_events(seed, datetime=False)
    seqs = rx.Sequences(df, categorical=CATEGORICAL, numerical=["amount"])
    for text in NUMERIC_PIPELINES:
        check(df, seqs, text)


def test_timedelta_time_column_is_in_days():
    df = random_events(7)
    df["ts"] = df["ts"] - START  # a timedelta column
    seqs = rx.Sequences(df, categorical=CATEGORICAL, numerical=["amount"])
    assert Schema.of(seqs).time_unit == "datetime"
    for text in ["Select(amount) | Recency", "Select(amount) | Within(7d) | Count", "Select(amount) | MaxGap"]:
        check(df, seqs, text)


@pytest.mark.parametrize("datetime, reference", [(True, "2026-03-01"), (False, 60.0), (True, "2026-12-31 12:00")])
def test_given_reference_time(datetime, reference):
    # A reference inside the data: later events are not in any window, and their recency is negative.
    df = random_events(11, datetime=datetime)
    seqs = rx.Sequences(df, categorical=CATEGORICAL, numerical=["amount"], reference_time=reference)
    texts = ["Select(amount) | Recency", "Select(amount) | Tenure", "Select(amount) | Within(30d) | Count",
             "Select(amount) | Within(30d) | RetainBy(card=debit) | Tenure"]
    if not datetime:
        texts = [t.replace("30d", "30") for t in texts]
    for text in texts:
        check(df, seqs, text, reference_time=reference)
    recency = rx.Statistic.parse("Select(amount) | Recency").evaluate(seqs)
    if reference != "2026-12-31 12:00":
        assert (recency < 0).any() and (recency > 0).any()
    else:
        assert (recency >= 0.5).all()


def test_known_values():
    df = pd.DataFrame({
        "user_id": [1, 1, 1, 2, 3, 3],
        "ts": pd.to_datetime(["2026-01-01", "2026-01-03", "2026-01-10", "2026-01-02", "2026-01-05",
                              "2026-01-09 12:00"], format="ISO8601"),
        "card": ["debit", "credit", "debit", "debit", "credit", "credit"],
        "amount": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
    })
    seqs = rx.Sequences(df)  # reference: 2026-01-10, the latest event
    value = lambda text: rx.Statistic.parse(text).evaluate(seqs).tolist()  # noqa: E731
    np.testing.assert_allclose(value("Select(amount) | Recency"), [0.0, 8.0, 0.5])
    np.testing.assert_allclose(value("Select(amount) | Tenure"), [9.0, 8.0, 5.0])
    np.testing.assert_allclose(value("Select(amount) | MeanGap"), [4.5, np.nan, 4.5])
    np.testing.assert_allclose(value("Select(amount) | MaxGap"), [7.0, np.nan, 4.5])
    np.testing.assert_allclose(value("Select(amount) | RetainBy(card=credit) | Recency"), [7.0, np.nan, 0.5])
    # The window (reference - 7 days, reference]: 2026-01-03 00:00 is out, 2026-01-05 in.
    np.testing.assert_allclose(value("Select(amount) | Within(7d) | Count"), [1.0, 0.0, 2.0])
    np.testing.assert_allclose(value("Select(amount) | Within(7d) | Sum"), [3.0, 0.0, 11.0])
    np.testing.assert_allclose(value("Select(amount) | Within(8d) | Count"), [2.0, 0.0, 2.0])
    np.testing.assert_allclose(value("Select(amount) | GroupBy(card) | Recency"),
                               [[7.0, 0.0], [np.nan, 8.0], [0.5, np.nan]])
    # One output per user whatever the selection, like Count.
    assert rx.Statistic.parse("Select(card) | Recency").evaluate(seqs).shape == (3,)
    assert rx.Statistic.parse("Select(card) | Recency").n_outputs(seqs) == 1


@pytest.mark.parametrize("datetime", [True, False])
def test_batches_and_subsets_give_the_same_rows(datetime):
    df = random_events(3, datetime=datetime)
    seqs = rx.Sequences(df, categorical=CATEGORICAL, numerical=["amount"])
    rng = np.random.default_rng(0)
    texts = DATETIME_PIPELINES if datetime else NUMERIC_PIPELINES
    for text in texts:
        stat = rx.Statistic.parse(text)
        full = stat.evaluate(seqs)
        users = rng.integers(0, seqs.n_users, 15)  # any order, repeats allowed
        np.testing.assert_array_equal(stat.evaluate(seqs, users=users), full[users], err_msg=text)
        # A subset keeps the reference time, so its users keep their values.
        idx = np.sort(rng.choice(seqs.n_users, 10, replace=False))
        np.testing.assert_array_equal(stat.evaluate(seqs.subset(idx)), full[idx], err_msg=text)
        assert np.array_equal(stat.evaluate(seqs, users=np.zeros(0, dtype=np.int64)), full[:0])


def test_saved_and_loaded_sequences_keep_the_reference_time():
    df = random_events(5)
    seqs = rx.Sequences(df, categorical=CATEGORICAL, numerical=["amount"], reference_time="2026-05-01")
    back = rx.Sequences.from_arrays(*seqs.to_arrays())
    stat = rx.Statistic.parse("Select(amount) | Within(30d) | Recency")
    np.testing.assert_array_equal(stat.evaluate(back), stat.evaluate(seqs))


@pytest.mark.parametrize("text", DATETIME_PIPELINES + NUMERIC_PIPELINES + [
    "Select(amount) | Within(0.25h) | Count", "Select('odd name') | Within(10s) | Count"])
def test_text_round_trip(text):
    stat = rx.Statistic.parse(text)
    assert rx.Statistic.parse(str(stat)) == stat
    assert str(stat) == text


@pytest.mark.parametrize("bad", ["Within", "Within()", "Within(7d, 8d)", "Within(d)", "Within(-3d)", "Within(0)",
                                 "Within(7y)", "Within(unit=d)"])
def test_bad_windows_are_refused(bad):
    with pytest.raises(ValueError):
        rx.Statistic.parse(f"Select(amount) | {bad} | Count")


def test_equivalence_keys():
    key = lambda text: rx.Statistic.parse(text).key  # noqa: E731
    # The selection does not matter to the time aggregations (nor Abs).
    assert key("Select(amount) | Recency") == key("Select(card) | Recency") == key("Select(amount) | Abs | Recency")
    assert key("Select(amount) | Recency") != key("Select(amount) | Tenure")
    # One window, two spellings.
    assert key("Select(amount) | Within(24h) | Count") == key("Select(card) | Within(1d) | Count")
    assert key("Select(amount) | Within(48h) | Sum") != key("Select(amount) | Within(1d) | Sum")
    # A window commutes with the category filters, not with Top.
    assert key("Select(amount) | Within(7d) | RetainBy(card=debit) | Sum") == \
        key("Select(amount) | RetainBy(card=debit) | Within(7d) | Sum")
    assert key("Select(amount) | Within(60d) | Top(2) | Sum") != key("Select(amount) | Top(2) | Within(60d) | Sum")
    assert key("Select(amount) | Within(7d) | Sum") != key("Select(amount) | Sum")


def test_equivalent_statistics_give_equal_values():
    # The keys above are claims about values: check them on data.
    df = random_events(2)
    seqs = rx.Sequences(df, categorical=CATEGORICAL, numerical=["amount"])
    pairs = [("Select(amount) | Recency", "Select(card) | Recency"),
             ("Select(amount) | Within(24h) | Count", "Select(card) | Within(1d) | Count"),
             ("Select(amount) | Within(30d) | RetainBy(card=debit) | MaxGap",
              "Select(channel) | RetainBy(card=debit) | Within(720h) | MaxGap")]
    for a, b in pairs:
        assert rx.Statistic.parse(a).key == rx.Statistic.parse(b).key
        np.testing.assert_array_equal(rx.Statistic.parse(a).evaluate(seqs), rx.Statistic.parse(b).evaluate(seqs))
    differ = ("Select(amount) | Within(60d) | Top(2) | Sum", "Select(amount) | Top(2) | Within(60d) | Sum")
    assert not np.array_equal(*(rx.Statistic.parse(t).evaluate(seqs) for t in differ), equal_nan=True)


def test_validity():
    dated = Schema({"card": ("credit", "debit")}, ("amount",), time="ts", time_unit="datetime")
    numbered = Schema({"card": ("credit", "debit")}, ("amount",), time="ts", time_unit="number")
    untimed = Schema({"card": ("credit", "debit")}, ("amount",))
    ok = rx.Statistic.parse("Select(amount) | Within(7d) | RetainBy(card=debit) | Recency")
    assert ok.is_valid(dated)
    for text in ["Select(amount) | Recency", "Select(amount) | Within(7d) | Count", "Select(card) | MaxGap"]:
        with pytest.raises(ValueError, match="needs a time column"):
            rx.Statistic.parse(text).validate(untimed)
    with pytest.raises(ValueError, match="needs a unit"):
        rx.Statistic.parse("Select(amount) | Within(7) | Count").validate(dated)
    with pytest.raises(ValueError, match="holds numbers"):
        rx.Statistic.parse("Select(amount) | Within(7d) | Count").validate(numbered)
    assert rx.Statistic.parse("Select(amount) | Within(7) | Count").is_valid(numbered)
    with pytest.raises(ValueError, match="only once"):
        rx.Statistic.parse("Select(amount) | Within(7d) | Within(30d) | Count").validate(dated)
    with pytest.raises(ValueError, match="SortBy must be followed"):
        rx.Statistic.parse("Select(amount) | SortBy(amount, desc) | Recency").validate(dated)
    with pytest.raises(ValueError, match="GroupBy must come right before"):
        rx.Statistic.parse("Select(amount) | GroupBy(card) | Within(7d) | Count")
    # Sequences without a time column refuse them at evaluation, naming the reason.
    df = random_events(1).drop(columns="ts")
    seqs = rx.Sequences(df, time=None, categorical=CATEGORICAL, numerical=["amount"])
    with pytest.raises(ValueError, match="needs a time column"):
        rx.Statistic.parse("Select(amount) | Recency").evaluate(seqs)


def test_the_search_proposes_them():
    def offered(schema, prefix=("amount",)):
        pipeline = Pipeline((Select(prefix[0]),), schema=schema)
        return {str(op) for op in next_operators(pipeline, schema, max_depth=3)}

    dated = Schema({"card": ("credit", "debit")}, ("amount",), time="ts", time_unit="datetime")
    numbered = Schema({"card": ("credit", "debit")}, ("amount",), time="ts", time_unit="number")
    untimed = Schema({"card": ("credit", "debit")}, ("amount",))
    aggregations = {"Recency", "Tenure", "MeanGap", "MaxGap"}
    windows = {"Within(1d)", "Within(7d)", "Within(30d)", "Within(90d)"}
    assert aggregations | windows <= offered(dated)
    got = offered(numbered)
    assert aggregations <= got and not any(op.startswith("Within") for op in got)
    got = offered(untimed)
    assert not (aggregations & got) and not any(op.startswith("Within") for op in got)
    # After a window, no second one.
    after = Pipeline((Select("amount"), Within(7, "d")), schema=dated)
    assert not any(str(op).startswith("Within") for op in next_operators(after, dated, max_depth=3))


def test_schema_knows_the_time_column_and_round_trips():
    df = random_events(0)
    dated = Schema.of(rx.Sequences(df, categorical=CATEGORICAL, numerical=["amount"]))
    assert (dated.time, dated.time_unit) == ("ts", "datetime")
    numbered = Schema.of(rx.Sequences(random_events(0, datetime=False), categorical=CATEGORICAL, numerical=["amount"]))
    assert (numbered.time, numbered.time_unit) == ("ts", "number")
    untimed = Schema.of(rx.Sequences(df.drop(columns="ts"), time=None, categorical=CATEGORICAL, numerical=["amount"]))
    assert (untimed.time, untimed.time_unit) == (None, None)
    for schema in (dated, numbered, untimed):
        assert Schema.from_json(schema.to_json()) == schema
    # JSON written before the time fields existed still reads, without a time column.
    old = {"vocabularies": {"card": ["credit", "debit"]}, "numerical": ["amount"]}
    assert Schema.from_json(old).time is None


DATED = Schema({"card_type": ("credit", "debit"), "channel": ("atm", "online")}, ("amount",), time="ts",
               time_unit="datetime")
NUMBERED = Schema({"card_type": ("credit", "debit"), "channel": ("atm", "online")}, ("amount",), time="ts",
                  time_unit="number")


@pytest.mark.parametrize("text, output, schema, words", [
    ("Select(amount) | Recency", None, DATED, "days since the last event"),
    ("Select(amount) | RetainBy(card_type=debit) | Tenure", None, DATED,
     "days since the first event where card_type is debit"),
    ("Select(amount) | MeanGap", None, DATED, "average days between events"),
    ("Select(amount) | RetainBy(card_type=debit) | MaxGap", None, DATED,
     "longest gap in days between consecutive events where card_type is debit"),
    ("Select(amount) | Within(7d) | Count", None, DATED, "number of events in the last 7 days"),
    ("Select(amount) | Within(24h) | Count", None, DATED, "number of events in the last 24 hours"),
    ("Select(amount) | Within(1d) | Recency", None, DATED, "days since the last event in the last day"),
    ("Select(amount) | Recency", None, NUMBERED, "time since the last event"),
    ("Select(amount) | Within(30) | Count", None, NUMBERED, "number of events in the last 30 time units"),
    ("Select(amount) | SortBy(amount, desc) | Top(3) | Recency", None, DATED,
     "days since the last of the 3 events with the largest amount"),
    ("Select(*) | Top(5) | MeanGap", None, DATED, "average days between the first 5 events"),
    ("Select(*) | RetainBy(card_type=debit) | Recency", None, DATED,
     "days since the last event where card_type is debit"),
])
def test_words(text, output, schema, words):
    assert rx.Statistic.parse(text).describe(output, data=schema) == words


def test_group_words_come_from_the_count_words():
    # The events of one group are worded as the count of them is.
    for agg, start in [("Recency", "days since the last "), ("MeanGap", "average days between ")]:
        stat = rx.Statistic.parse(f"Select(*) | GroupBy(channel) | {agg}")
        count = rx.Statistic.parse("Select(*) | GroupBy(channel) | Count").describe("channel=atm", data=DATED)
        assert count.startswith("number of events")
        words = stat.describe("channel=atm", data=DATED)
        assert words.startswith(start) and "atm" in words and words.endswith(count[len("number of events"):])


def test_window_goes_before_the_group_part():
    stat = rx.Statistic.parse("Select(amount) | Within(30d) | GroupBy(channel) | Sum")
    base = rx.Statistic.parse("Select(amount) | GroupBy(channel) | Sum").describe("channel=atm", data=DATED)
    words = stat.describe("channel=atm", data=DATED)
    assert "in the last 30 days" in words and words.replace(" in the last 30 days", "") == base


@pytest.mark.parametrize("text", [
    "Select(amount) | Within(30d) | Sum",
    "Select(amount) | RetainBy(card_type=debit) | Within(7d) | Mean",
    "Select(amount) | Top(2) | Within(7d) | Max",
])
def test_window_words_name_the_window_and_keep_the_rest(text):
    stat = rx.Statistic.parse(text)
    words = stat.describe(data=DATED)
    without = rx.Statistic([op for op in stat.operators if not isinstance(op, Within)]).describe(data=DATED)
    assert words.startswith(without) and words != without
    assert ("last 30 days" in words) or ("last 7 days" in words)
    assert "Within" not in words


def test_time_aggregations_are_exported():
    assert {Recency.name, Tenure.name, MeanGap.name, MaxGap.name, Within.name} <= set(rx.statistics.OPERATORS)


# ------------------------------------------------------------ random pipelines
@st.composite
def dated_tables(draw):
    rows = []
    for user in range(draw(st.integers(1, 5))):
        for _ in range(draw(st.integers(1, 8))):
            rows.append({
                "user_id": f"u{user}",
                # Days 0 to 120 at 12-hour steps: ties, and events on the edges of 1, 7, 30, 90-day windows.
                "ts": START + pd.Timedelta(hours=12 * draw(st.integers(0, 240))),
                "card": draw(st.sampled_from(["debit", "credit", None])),
                "channel": draw(st.sampled_from(["online", "atm"])),
                "amount": draw(st.sampled_from([math.nan, -2.0, 0.0, 1.5, 3.0, 3.0, 40.0])),
            })
    order = draw(st.permutations(range(len(rows))))
    return pd.DataFrame([rows[i] for i in order])


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(df=dated_tables(), data=st.data())
def test_random_pipelines_with_time_match_reference(df, data):
    seqs = rx.Sequences(df, categorical=CATEGORICAL, numerical=["amount"])
    schema = Schema.of(seqs)
    max_depth = data.draw(st.integers(1, 5))
    pipeline = Pipeline((), schema=schema)
    # Half of the draws start with a time operator in the pipeline.
    while not pipeline.complete:
        options = next_operators(pipeline, schema, max_depth)
        timed = [op for op in options if isinstance(op, (Within, Recency, Tenure, MeanGap, MaxGap))]
        op = data.draw(st.sampled_from(timed if timed and data.draw(st.booleans()) else options))
        if isinstance(op, Top):
            op = Top(data.draw(st.integers(1, 4)))
        pipeline = pipeline.then(op, schema)
    stat = pipeline.statistic()
    check(df, seqs, str(stat))
    users = np.array(data.draw(st.lists(st.integers(0, seqs.n_users - 1), max_size=6)), dtype=np.int64)
    np.testing.assert_array_equal(stat.evaluate(seqs, users=users), stat.evaluate(seqs)[users])
