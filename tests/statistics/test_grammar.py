"""Validity rules, the valid next operators, equivalence and depth."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rudi_explain as rx
from rudi_explain.statistics import (
    GroupBy,
    Pipeline,
    RetainBy,
    Schema,
    Select,
    SortBy,
    next_operators,
)

SCHEMA = Schema(vocabularies={"card": ("credit", "debit"), "channel": ("atm", "online", "pos")},
                numerical=("amount", "hour"))


@pytest.mark.parametrize("text, reason", [
    ("Select(card) | RetainBy(card=debit) | Sum", "cannot act on the selected column"),
    ("Select(amount) | RetainBy(card=debit) | FilterBy(card=credit) | Sum", "already filtered"),
    ("Select(amount) | SortBy(amount, asc) | SortBy(hour, asc) | Top(5) | Sum", "only once"),
    ("Select(amount) | SortBy(amount, asc) | Sum", "followed by Top or First"),
    ("Select(amount) | Top(5) | SortBy(amount, asc) | Mean", "followed by Top or First"),
    ("Select(card) | Abs | Sum", "numerical selection only"),
    ("Select(amount) | Abs | Abs | Sum", "only once"),
    ("Select(card) | GroupBy(card) | Sum", "selected column"),
    ("Select(amount) | RetainBy(card=debit) | GroupBy(card) | Sum", "RetainBy already fixes it"),
    ("Select(amount) | GroupBy(amount) | Sum", "numerical, not categorical"),
    ("Select(amount) | SortBy(card, asc) | First", "categorical, not numerical"),
    ("Select(amount) | RetainBy(card=cash) | Sum", "not a category"),
    ("Select(nope) | Sum", "unknown column 'nope'"),
    ("Select(amount) | Top(5) | Top(3) | Sum", "only once"),
])
def test_invalid_pipelines(text, reason):
    stat = rx.Statistic.parse(text)
    assert not stat.is_valid(SCHEMA)
    with pytest.raises(ValueError, match=reason):
        stat.validate(SCHEMA)


@pytest.mark.parametrize("text", [
    "Select(amount) | FilterBy(card=debit) | GroupBy(card) | Sum",  # FilterBy does not fix the column
    "Select(amount) | SortBy(amount, asc) | GroupBy(channel) | First",
    "Select(amount) | Top(5) | SortBy(hour, desc) | First",
    "Select(card) | SortBy(amount, desc) | Top(5) | RetainBy(channel=atm) | Mean",
])
def test_valid_pipelines(text):
    rx.Statistic.parse(text).validate(SCHEMA)


def test_depth():
    assert rx.Statistic.parse("Select(amount) | Sum").depth == 1
    assert rx.Statistic.parse("Select(amount) | RetainBy(card=debit) | SortBy(hour, asc) | Top(5) | Mean").depth == 4


def test_first_operators_are_the_selects():
    ops = next_operators(Pipeline((), schema=SCHEMA), SCHEMA, max_depth=4)
    assert sorted(map(str, ops)) == ["Select(*)", "Select(amount)", "Select(card)", "Select(channel)", "Select(hour)"]


def test_next_operators_leave_room_for_the_aggregation():
    p = Pipeline((Select("amount"), RetainBy("card", "debit")), schema=SCHEMA)
    ops = next_operators(p, SCHEMA, max_depth=2)
    assert ops and all(op.kind == "aggregation" for op in ops)
    # After SortBy without Top, only First (or another row operator / Top) may follow.
    p = Pipeline((Select("amount"), SortBy("hour", "desc")), schema=SCHEMA)
    aggs = [op for op in next_operators(p, SCHEMA, max_depth=4) if op.kind == "aggregation"]
    assert [str(a) for a in aggs] == ["First"]
    # After GroupBy, only aggregations.
    p = Pipeline((Select("amount"), GroupBy("channel")), schema=SCHEMA)
    assert all(op.kind == "aggregation" for op in next_operators(p, SCHEMA, max_depth=4))


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_every_next_operator_completes_to_a_valid_statistic(data):
    max_depth = data.draw(st.integers(1, 5))
    pipeline = Pipeline((), schema=SCHEMA)
    while not pipeline.complete:
        options = next_operators(pipeline, SCHEMA, max_depth)
        assert options  # never a dead end
        for op in options:
            assert op.check(pipeline.state, SCHEMA) is None
        pipeline = pipeline.then(data.draw(st.sampled_from(options)), SCHEMA)
    stat = pipeline.statistic()
    assert stat.is_valid(SCHEMA) and 1 <= stat.depth <= max_depth


def test_all_depth_one_statistics_enumerated():
    found = set()
    p0 = Pipeline((), schema=SCHEMA)
    for sel in next_operators(p0, SCHEMA, 1):
        p1 = p0.then(sel, SCHEMA)
        for agg in next_operators(p1, SCHEMA, 1):
            found.add(str(p1.then(agg, SCHEMA).statistic()))
    # 4 columns x 15 aggregations (8 plain + 7 percentiles), and Select(*) | Count;
    # Abs needs depth 2.
    assert len(found) == 4 * 15 + 1


EQUIVALENT = [
    ("Select(amount) | Count", "Select(hour) | Count"),
    ("Select(amount) | Count", "Select(card) | Count"),
    ("Select(amount) | Abs | Count", "Select(hour) | Count"),
    ("Select(amount) | RetainBy(card=debit) | FilterBy(channel=atm) | Sum",
     "Select(amount) | FilterBy(channel=atm) | RetainBy(card=debit) | Sum"),
    ("Select(amount) | Abs | RetainBy(card=debit) | Mean", "Select(amount) | RetainBy(card=debit) | Abs | Mean"),
    ("Select(amount) | SortBy(hour, asc) | RetainBy(card=debit) | Top(5) | Mean",
     "Select(amount) | RetainBy(card=debit) | SortBy(hour, asc) | Top(5) | Mean"),
    ("Select(amount) | SortBy(amount, asc) | First", "Select(amount) | Min"),
    ("Select(amount) | SortBy(amount, desc) | First", "Select(amount) | Max"),
    ("Select(amount) | SortBy(amount, desc) | Top(5) | Max", "Select(amount) | Max"),
    ("Select(amount) | SortBy(hour, desc) | Top(5) | Count", "Select(amount) | Top(5) | Count"),
]

DIFFERENT = [
    ("Select(amount) | Top(5) | RetainBy(card=debit) | Sum", "Select(amount) | RetainBy(card=debit) | Top(5) | Sum"),
    ("Select(amount) | Abs | SortBy(amount, asc) | First", "Select(amount) | Abs | Min"),
    ("Select(amount) | SortBy(hour, asc) | First", "Select(amount) | First"),
    ("Select(amount) | Sum", "Select(hour) | Sum"),
    ("Select(amount) | SortBy(hour, desc) | Top(5) | RetainBy(card=debit) | Count",
     "Select(amount) | Top(5) | RetainBy(card=debit) | Count"),
]


@pytest.fixture(scope="module")
def data():
    demo = rx.datasets.make_payments(300, random_state=1)
    seqs = rx.Sequences(demo.events.rename(columns={"merchant_category": "m"}).drop(columns=["country", "m"])
                        .rename(columns={"card_type": "card"})
                        .assign(channel=lambda d: d["channel"].astype(str).replace({"transfer": "pos"})),
                        categorical=["card", "channel"], numerical=["amount", "hour"])
    return seqs


@pytest.mark.parametrize("a, b", EQUIVALENT)
def test_equivalent_statistics_share_key_and_values(a, b, data):
    sa, sb = rx.Statistic.parse(a), rx.Statistic.parse(b)
    assert sa.key == sb.key and sa.equivalent(sb)
    va, vb = sa.evaluate(data), sb.evaluate(data)
    if va.ndim == 2:  # Count over a categorical selection repeats the count per category
        va = va[:, 0]
    np.testing.assert_allclose(va, vb.reshape(va.shape) if vb.ndim == 1 else vb[:, 0], equal_nan=True)


@pytest.mark.parametrize("a, b", DIFFERENT)
def test_different_statistics_have_different_keys(a, b, data):
    sa, sb = rx.Statistic.parse(a), rx.Statistic.parse(b)
    assert sa.key != sb.key
    assert not np.allclose(sa.evaluate(data), sb.evaluate(data), equal_nan=True)
