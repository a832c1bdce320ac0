"""Vectorized evaluation against the per-user reference, over random pipelines and data."""

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_impl import reference_evaluate

import rudi_explain as rx
from rudi_explain.statistics import OPERATORS, Pipeline, Schema, Top, next_operators

CATEGORICAL = ["a", "b"]
NUMERICAL = ["u", "v"]


@st.composite
def event_tables(draw):
    rows = []
    for user in range(draw(st.integers(1, 5))):
        for _ in range(draw(st.integers(1, 7))):
            rows.append({
                "user_id": f"u{user}",
                "ts": draw(st.integers(0, 4)),  # ties in time keep input order
                "a": draw(st.sampled_from(["x", "y", "z", None])),
                "b": draw(st.sampled_from(["p", "q", "r"])),
                "u": draw(st.sampled_from([math.nan, -3.5, -1.0, 0.0, 0.5, 2.0, 2.0, 10.0])),
                "v": draw(st.sampled_from([math.nan, -2.0, 0.0, 1.0, 1.0, 3.0, 1e6])),
            })
    # Shuffle rows so that input order is not already user order.
    order = draw(st.permutations(range(len(rows))))
    return pd.DataFrame([rows[i] for i in order])


def random_statistic(data, schema, max_depth):
    pipeline = Pipeline((), schema=schema)
    while not pipeline.complete:
        options = next_operators(pipeline, schema, max_depth)
        assert options, f"dead end after {pipeline}"
        op = data.draw(st.sampled_from(options))
        if isinstance(op, Top):
            op = Top(data.draw(st.integers(1, 4)))
        pipeline = pipeline.then(op, schema)
    return pipeline.statistic()


def check_against_reference(df, stat, seqs, vocabularies=None):
    got = stat.evaluate(seqs)
    want = reference_evaluate(df, stat, categorical=CATEGORICAL, vocabularies=vocabularies)
    assert got.shape == want.shape, str(stat)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9, equal_nan=True, err_msg=str(stat))
    assert len(stat.output_names(seqs)) == (1 if got.ndim == 1 else got.shape[1])


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(df=event_tables(), data=st.data())
def test_random_pipelines_match_reference(df, data):
    seqs = rx.Sequences(df, categorical=CATEGORICAL, numerical=NUMERICAL)
    stat = random_statistic(data, Schema.of(seqs), max_depth=data.draw(st.integers(1, 5)))
    check_against_reference(df, stat, seqs)
    # A batch of users (any order, repeats allowed) gives the same rows.
    users = np.array(data.draw(st.lists(st.integers(0, seqs.n_users - 1), max_size=6)), dtype=np.int64)
    np.testing.assert_array_equal(stat.evaluate(seqs, users=users), stat.evaluate(seqs)[users])


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(df=event_tables(), data=st.data())
def test_unseen_categories_match_nothing(df, data):
    # Vocabularies from other data: 'z' and 'r' are unseen, 'w' and 's' never occur.
    vocab = {"a": ("<NA>", "w", "x", "y"), "b": ("p", "q", "s")}
    seqs = rx.Sequences(df, categorical=CATEGORICAL, numerical=NUMERICAL, vocabularies=vocab)
    stat = random_statistic(data, Schema.of(seqs), max_depth=4)
    check_against_reference(df, stat, seqs, vocabularies={k: list(v) for k, v in vocab.items()})


@pytest.fixture(scope="module")
def fixed():
    df = pd.DataFrame({
        "user_id": ["b", "a", "a", "b", "a", "c", "a", "d", "d"],
        "ts": [3, 2, 1, 1, 5, 0, 5, 1, 2],
        "a": ["x", "y", None, "x", "y", "z", "x", "x", "y"],
        "b": ["p", "p", "q", "q", "p", "p", "q", "r", "r"],
        "u": [1.0, 2.0, np.nan, 4.0, -5.0, 7.0, 2.0, np.nan, np.nan],
        "v": [0.0, 1.0, 1.0, -1.0, 3.0, 2.0, 0.5, 1.0, 2.0],
    })
    return df, rx.Sequences(df, categorical=CATEGORICAL, numerical=NUMERICAL)


EVERY_OPERATOR = [
    f"Select({col}) | {agg}" for col in ("a", "u")
    for agg in ("Mean", "Max", "Min", "Sum", "Std", "Ptp", "Count", "First",
                *(f"Percentile({k})" for k in (5, 10, 25, 50, 75, 90, 95)))
] + [
    "Select(u) | RetainBy(a=x) | Sum",
    "Select(u) | FilterBy(a=x) | Mean",
    "Select(u) | RetainBy(a='<NA>') | Count",
    "Select(u) | RetainBy(a=z) | RetainBy(b=q) | Mean",  # nothing left for anyone
    "Select(u) | SortBy(v, desc) | Top(2) | Sum",
    "Select(u) | SortBy(u, asc) | First",
    "Select(u) | SortBy(u, desc) | First",
    "Select(a) | SortBy(v, asc) | First",
    "Select(u) | Abs | Std",
    "Select(u) | Top(1) | Mean",
    "Select(u) | GroupBy(b) | Max",
    "Select(u) | GroupBy(a) | Percentile(90)",
    "Select(a) | GroupBy(b) | Sum",
    "Select(a) | FilterBy(b=p) | GroupBy(b) | Mean",  # empty groups
    "Select(b) | Top(2) | RetainBy(a=x) | Std",
    "Select(v) | Abs | SortBy(u, desc) | Top(3) | FilterBy(b=q) | GroupBy(a) | Ptp",
    # Time operators (ts is numerical here: raw units; datetimes in test_time_operators.py).
    "Select(u) | Within(2) | Sum",
    "Select(a) | Recency",
    "Select(u) | RetainBy(b=p) | Tenure",
    "Select(u) | GroupBy(b) | MeanGap",
    "Select(v) | SortBy(u, desc) | Top(2) | Within(4) | MaxGap",
]


@pytest.mark.parametrize("text", EVERY_OPERATOR)
def test_every_operator_matches_reference(fixed, text):
    df, seqs = fixed
    stat = rx.Statistic.parse(text)
    check_against_reference(df, stat, seqs)


def test_every_builtin_operator_is_covered():
    used = {op.name for text in EVERY_OPERATOR for op in rx.Statistic.parse(text).operators}
    assert used == set(OPERATORS)


def test_known_values(fixed):
    _, seqs = fixed
    # User a in time order: (NA, nan), (y, 2.0), (y, -5.0), (x, 2.0) -> ts 1, 2, 5, 5
    a = seqs.user_index("a")
    assert rx.Statistic.parse("Select(u) | Sum").evaluate(seqs)[a] == pytest.approx(-1.0)
    assert rx.Statistic.parse("Select(u) | First").evaluate(seqs)[a] == 2.0  # NaN skipped
    np.testing.assert_allclose(rx.Statistic.parse("Select(a) | Mean").evaluate(seqs)[a], [0.25, 0.25, 0.5, 0.0])
    # Users without anything left: Sum 0, Mean NaN, Count 0.
    d = seqs.user_index("d")
    assert rx.Statistic.parse("Select(u) | Sum").evaluate(seqs)[d] == 0.0
    assert np.isnan(rx.Statistic.parse("Select(u) | Mean").evaluate(seqs)[d])
    assert rx.Statistic.parse("Select(u) | Count").evaluate(seqs)[d] == 2.0


def test_single_event_user_std_is_nan(fixed):
    _, seqs = fixed
    c = seqs.user_index("c")
    assert np.isnan(rx.Statistic.parse("Select(u) | Std").evaluate(seqs)[c])
    assert rx.Statistic.parse("Select(u) | Ptp").evaluate(seqs)[c] == 0.0


def test_invalid_statistic_is_refused_at_evaluation(fixed):
    _, seqs = fixed
    with pytest.raises(ValueError, match="not a category"):
        rx.Statistic.parse("Select(u) | RetainBy(a=nope) | Sum").evaluate(seqs)
    with pytest.raises(ValueError, match="unknown column 'zz'"):
        rx.Statistic.parse("Select(zz) | Sum").evaluate(seqs)


def test_batch_index_errors(fixed):
    _, seqs = fixed
    stat = rx.Statistic.parse("Select(u) | Sum")
    with pytest.raises(IndexError):
        stat.evaluate(seqs, users=np.array([0, 99]))
    with pytest.raises(TypeError):
        stat.evaluate(seqs, users=np.array([0.5]))


def test_planted_demo_risk_matches_reference():
    demo = rx.datasets.make_payments(60, random_state=3)
    seqs = demo.sequences()
    for stat in demo.planted:
        want = reference_evaluate(demo.events, stat, categorical=demo.categorical)
        np.testing.assert_allclose(stat.evaluate(seqs), want, rtol=1e-9, equal_nan=True)
