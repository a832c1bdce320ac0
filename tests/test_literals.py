import json

import numpy as np
import pandas as pd
import pytest

import rudi_explain as rx
from rudi_explain.literals import Literals


@pytest.fixture(scope="module")
def payments():
    data = rx.datasets.make_payments(400, random_state=1)
    return data, data.sequences()


STATS = [
    "Select(amount) | Sum",
    "Select(card_type) | Sum",
    "Select(channel) | Max",
    "Select(hour) | RetainBy(channel=online) | Mean",
]


def test_thresholds_are_the_distinct_percentiles_of_defined_values():
    rng = np.random.default_rng(0)
    v = rng.normal(size=1000)
    v[:100] = np.nan
    lits = Literals.from_values(v[:, None])
    expected = np.unique(np.percentile(v[~np.isnan(v)], np.arange(0, 101, 10)))
    # the 100th percentile gives a literal false for every training user: dropped
    np.testing.assert_allclose(lits.thresholds, expected[:-1])
    assert lits.n_literals == 10
    Z = lits.transform_values(v[:, None])
    assert not Z[:100].any()  # a literal is false where the value is undefined
    np.testing.assert_array_equal(Z[100:], v[100:, None] > expected[:-1])


def test_binary_output_is_one_literal_and_constants_dropped():
    V = np.array([[0, 5, 1], [1, 5, 2], [1, 5, 2], [np.nan, 5, 2], [0, 5, 3]], dtype=float)
    lits = Literals.from_values(V, names=["flag", "const", "few"])
    assert list(lits.column) == [0, 2, 2]
    assert lits.thresholds[0] == 0.0
    assert lits.names[0] == "flag > 0"
    Z = lits.transform_values(V)
    np.testing.assert_array_equal(Z[:, 0], [False, True, True, False, False])
    # no literal is constant on the training users, and no two split them alike
    assert (Z.any(axis=0) & ~Z.all(axis=0)).all()
    assert len({tuple(c) for c in Z.T}) == Z.shape[1]


def test_fit_on_statistics(payments):
    data, seqs = payments
    stats = [rx.Statistic.parse(t) for t in STATS]
    lits = rx.Literals.fit(seqs, stats)
    n_cards = len(seqs.categories("card_type"))
    n_channels = len(seqs.categories("channel"))
    assert lits.n_outputs == 1 + n_cards + n_channels + 1
    table = lits.table()
    assert list(table.columns) == ["name", "statistic", "statistic_text", "output", "output_name",
                                   "column", "threshold", "can_be_undefined"]
    # Max of a one-hot is 0/1: exactly one literal per category that varies
    maxes = table[table.statistic == 2]
    assert (maxes.threshold == 0).all() and maxes.output.is_unique
    # readable names from the statistic's words
    debit = table[table.output_name == "card_type=debit"]
    assert debit.name.iloc[0].startswith("count of card_type = debit > ")
    assert "sum of amount > " in lits.names[0]
    # undefined only where the statistic can be: a Mean after RetainBy
    assert table[table.statistic == 3].can_be_undefined.all()
    assert not table[table.statistic.isin([0, 1, 2])].can_be_undefined.any()
    # the literal matrix is the thresholded value matrix
    V = lits.values(seqs)
    Z = lits.transform(seqs)
    assert Z.dtype == bool and Z.shape == (seqs.n_users, lits.n_literals)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(Z, V[:, lits.column] > lits.thresholds)


def test_transform_new_users_matches(payments):
    data, seqs = payments
    lits = rx.Literals.fit(seqs, STATS)  # text is parsed
    assert lits.statistics == [rx.Statistic.parse(t) for t in STATS]
    idx = np.array([3, 10, 200, 399])
    part = seqs.subset(idx)
    np.testing.assert_array_equal(lits.transform(part), lits.transform(seqs)[idx])


def test_new_data_with_another_vocabulary(payments):
    data, seqs = payments
    lits = rx.Literals.fit(seqs, [rx.Statistic.parse("Select(card_type) | Sum")])
    events = data.events[data.events.card_type != "debit"].copy()
    events["card_type"] = events["card_type"].astype(str)
    other = rx.Sequences(events, user="user_id", time="ts", categorical=data.categorical,
                         numerical=data.numerical)
    with pytest.raises(ValueError, match="vocabularies=literals.vocabularies"):
        lits.transform(other)
    same = rx.Sequences(events, user="user_id", time="ts", categorical=data.categorical,
                        numerical=data.numerical, vocabularies=lits.vocabularies)
    Z = lits.transform(same)
    assert Z.shape[1] == lits.n_literals
    debit = [i for i, n in enumerate(lits.output_names) if n == "card_type=debit"]
    assert not Z[:, np.isin(lits.column, debit)].any()  # no debit payments left


def test_json_round_trip(payments):
    data, seqs = payments
    lits = rx.Literals.fit(seqs, [rx.Statistic.parse(t) for t in STATS])
    text = lits.to_json()
    assert json.loads(text)["format"] == "rudi-explain/literals"
    back = Literals.from_json(text)
    assert back.names == lits.names
    np.testing.assert_array_equal(back.thresholds, lits.thresholds)  # exact floats
    np.testing.assert_array_equal(back.transform(seqs), lits.transform(seqs))
    with pytest.raises(ValueError, match="not a rudi-explain literal table"):
        Literals.from_json("{}")


def test_bad_input():
    with pytest.raises(ValueError, match="at least one statistic"):
        Literals.fit(None, [])
    with pytest.raises(ValueError, match="value matrix"):
        Literals.from_values(np.zeros(5))
    lits = Literals.from_values(np.arange(20.0).reshape(10, 2))
    with pytest.raises(ValueError, match="expected 2 value columns"):
        lits.transform_values(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="built from values"):
        lits.values(object())
    with pytest.raises(ValueError, match="numeric"):
        lits.transform_values(pd.DataFrame({"a": ["x"], "b": ["y"]}).to_numpy())


def test_infinite_values_are_rejected():
    with pytest.raises(ValueError, match="column 1 has infinite values"):
        Literals.from_values(np.array([[0.0, 1.0], [1.0, np.inf]]))


def test_rules_score_sequences_only_with_a_literal_table(payments):
    data, seqs = payments
    lits = rx.Literals.fit(seqs, [rx.Statistic.parse("Select(amount) | Sum")])
    from rudi_explain.rules import Lit

    with_table = rx.RuleSet.from_formulas([Lit(0)], [2.0], 1.0, literals=lits)
    expected = 1.0 + 2.0 * lits.transform(seqs)[:, 0]
    np.testing.assert_array_equal(with_table.score(seqs), expected)
    np.testing.assert_array_equal(with_table.fires(seqs)[:, 0], lits.transform(seqs)[:, 0])
    names_only = rx.RuleSet.from_formulas([Lit(0)], [2.0], 1.0, literals=lits.names)
    with pytest.raises(ValueError, match="without a Literals table"):
        names_only.score(seqs)
