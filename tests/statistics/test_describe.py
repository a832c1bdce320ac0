"""Plain-English descriptions and output names."""

import pytest

import rudi_explain as rx
from rudi_explain.statistics import Schema

SCHEMA = Schema(vocabularies={"card_type": ("credit", "debit"), "channel": ("atm", "online")},
                numerical=("amount", "hour"))


@pytest.mark.parametrize("text, output, words", [
    ("Select(amount) | RetainBy(card_type=debit) | Sum", None, "total amount over events where card_type is debit"),
    ("Select(*) | RetainBy(card_type=debit) | Count", None, "number of events where card_type is debit"),
    ("Select(amount) | RetainBy(card_type=debit) | Count", None, "number of events where card_type is debit"),
    ("Select(card_type) | Sum", "card_type=debit", "number of events where card_type is debit"),
    ("Select(card_type) | RetainBy(channel=atm) | Sum", "card_type=debit",
     "number of events where channel is atm and card_type is debit"),
    ("Select(channel) | Mean", "channel=online", "share of events with channel = online"),
    ("Select(channel) | RetainBy(card_type=debit) | Mean", "channel=online",
     "share of events with channel = online among events where card_type is debit"),
    ("Select(channel) | Mean", None, "share of events with each channel category"),
    ("Select(amount) | SortBy(amount, desc) | Top(5) | Mean", None,
     "average amount over the 5 events with the largest amount"),
    ("Select(hour) | RetainBy(channel=online) | SortBy(amount, desc) | Top(5) | Mean", None,
     "average hour over the 5 events with the largest amount among events where channel is online"),
    ("Select(hour) | SortBy(amount, desc) | First", None, "hour of the event with the largest amount"),
    ("Select(amount) | Abs | Percentile(90)", None, "90th percentile of absolute amount"),
    ("Select(amount) | Percentile(50)", None, "median amount"),
    ("Select(amount) | Top(5) | FilterBy(channel=atm) | Max", None,
     "largest amount among the first 5 events, then only those where channel is not atm"),
    ("Select(amount) | GroupBy(channel) | Std", "channel=atm",
     "standard deviation of amount over events where channel is atm"),
    ("Select(amount) | GroupBy(channel) | Sum", None, "total amount, per channel"),
    ("Select(card_type) | GroupBy(channel) | Max", "card_type=debit, channel=online",
     "whether any event has card_type = debit among events where channel is online"),
])
def test_describe(text, output, words):
    assert rx.Statistic.parse(text).describe(output, data=SCHEMA) == words


def test_output_names():
    assert rx.Statistic.parse("Select(amount) | Sum").output_names(SCHEMA) == ["Select(amount) | Sum"]
    assert rx.Statistic.parse("Select(amount) | GroupBy(channel) | Sum").output_names(SCHEMA) == [
        "channel=atm", "channel=online"]
    assert rx.Statistic.parse("Select(card_type) | GroupBy(channel) | Sum").output_names(SCHEMA) == [
        "card_type=credit, channel=atm", "card_type=credit, channel=online",
        "card_type=debit, channel=atm", "card_type=debit, channel=online"]
    assert rx.Statistic.parse("Select(card_type) | GroupBy(channel) | Sum").n_outputs(SCHEMA) == 4
