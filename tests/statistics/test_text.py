"""Text form: parse(str(s)) == s, quoting, and clear errors."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rudi_explain as rx
from rudi_explain.statistics import Pipeline, Schema, next_operators

SCHEMA = Schema(
    vocabularies={"card type": ("<NA>", "Joe's Bar", 'say "hi"', "debit", "a|b", "x=y", "émoji🙂"),
                  "channel": ("atm", "online")},
    numerical=("amount", "hour"),
)


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_round_trip_of_random_valid_statistics(data):
    pipeline = Pipeline((), schema=SCHEMA)
    max_depth = data.draw(st.integers(1, 6))
    while not pipeline.complete:
        pipeline = pipeline.then(data.draw(st.sampled_from(next_operators(pipeline, SCHEMA, max_depth))), SCHEMA)
    stat = pipeline.statistic()
    text = str(stat)
    again = rx.Statistic.parse(text)
    assert again == stat and str(again) == text and hash(again) == hash(stat)
    assert stat.depth <= max_depth
    stat.validate(SCHEMA)


@pytest.mark.parametrize("text", [
    "Select(amount) | RetainBy(card_type=debit) | Sum",
    "Select(amount) | RetainBy(merchant=\"Joe's Bar\") | Mean",
    "Select(amount) | SortBy(hour, desc) | Top(5) | Percentile(90)",
    "Select(amount) | Top(3) | Percentile(12.5)",
    "Select('card type') | GroupBy(channel) | Count",
])
def test_examples_round_trip(text):
    assert str(rx.Statistic.parse(text)) == text


def test_whitespace_is_free():
    assert str(rx.Statistic.parse("Select( amount )|Top|Mean")) == "Select(amount) | Top(5) | Mean"


@pytest.mark.parametrize("text, message", [
    ("", "empty"),
    ("Select(amount) | Average", "unknown operator 'Average'"),
    ("Select(amount) Sum", "expected '|'"),
    ("Select(amount) | RetainBy(card) | Sum", "column=value"),
    ("Select(amount) | Top(0) | Sum", r"Top\(k\) must be a whole number >= 1"),
    ("Select(amount) | SortBy(amount, up) | First", "'asc' or 'desc'"),
    ("Select(amount) | Percentile(120)", r"Percentile\(k\) == 120.0, must be <= 100"),
    ("Sum", "starts with Select"),
    ("Select(amount) | Top(5)", "ends with an aggregation"),
    ("Select(amount) | GroupBy(channel) | Top(5) | Sum", "GroupBy must come right before"),
    ("Select(amount) | Sum | Mean", "can only come last"),
    ("Select(amount | Sum", r"expected ',' or '\)'"),
])
def test_parse_errors(text, message):
    with pytest.raises(ValueError, match=message):
        rx.Statistic.parse(text)
