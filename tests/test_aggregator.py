"""SequenceAggregator: every single aggregation, checked against the engine and pandas."""

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.pipeline import make_pipeline

import rudi_explain as rx
from rudi_explain.aggregator import SequenceAggregator, align_vocabularies
from rudi_explain.datasets import make_payments
from rudi_explain.statistics import PERCENTILES


@pytest.fixture(scope="module")
def data():
    return make_payments(300, random_state=3)


@pytest.fixture(scope="module")
def seqs(data):
    return data.sequences()


@pytest.fixture(scope="module")
def fitted(seqs):
    agg = SequenceAggregator().fit(seqs)
    return agg, agg.transform(seqs)


def column(agg, table, name):
    names = list(agg.get_feature_names_out())
    return table[:, names.index(name)]


def test_columns_are_the_statistics(seqs, fitted):
    agg, table = fitted
    assert table.shape == (seqs.n_users, agg.n_features_out_)
    assert len(set(agg.get_feature_names_out())) == agg.n_features_out_
    for i, stat in enumerate(agg.statistics_):
        values = stat.evaluate(seqs).reshape(seqs.n_users, -1)
        cols = agg.feature_output_[agg.feature_statistic_ == i]
        np.testing.assert_array_equal(table[:, agg.feature_statistic_ == i], values[:, cols])


def test_the_set_of_statistics(seqs, fitted):
    agg, _ = fitted
    texts = {str(s) for s in agg.statistics_}
    for col in seqs.numerical:
        for a in ["Mean", "Max", "Min", "Sum", "Std", "Ptp", "First", *(f"Percentile({k})" for k in PERCENTILES)]:
            assert f"Select({col}) | {a}" in texts
    for col in seqs.categorical:
        assert f"Select({col}) | Mean" in texts and f"Select({col}) | Sum" in texts
    counts = [s for s in agg.statistics_ if s.aggregation.name == "Count"]
    assert len(counts) == 1 and "Select(amount) | Count" in agg.get_feature_names_out()
    n_onehot = sum(len(seqs.categories(c)) for c in seqs.categorical)
    assert agg.n_features_out_ == len(seqs.numerical) * (7 + len(PERCENTILES)) + 2 * n_onehot + 1


def test_against_pandas(data, seqs, fitted):
    agg, table = fitted
    ev = data.events.sort_values(["user_id", "ts"], kind="stable")
    g = ev.groupby("user_id", sort=True)
    assert list(g.size().index) == list(seqs.users)
    np.testing.assert_allclose(column(agg, table, "Select(amount) | Mean"), g["amount"].mean())
    np.testing.assert_allclose(column(agg, table, "Select(amount) | Max"), g["amount"].max())
    np.testing.assert_allclose(column(agg, table, "Select(amount) | Sum"), g["amount"].sum())
    np.testing.assert_allclose(column(agg, table, "Select(amount) | Std"), g["amount"].std(ddof=1))
    np.testing.assert_allclose(column(agg, table, "Select(amount) | First"), g["amount"].first())
    np.testing.assert_allclose(column(agg, table, "Select(hour) | Percentile(90)"),
                               g["hour"].quantile(0.9), equal_nan=True)
    # hour has NaN: aggregations skip it; Count counts events.
    np.testing.assert_allclose(column(agg, table, "Select(hour) | Mean"), g["hour"].mean(), equal_nan=True)
    np.testing.assert_array_equal(column(agg, table, "Select(amount) | Count"), g.size())
    debit = (ev["card_type"] == "debit").groupby(ev["user_id"]).mean()
    np.testing.assert_allclose(column(agg, table, "Select(card_type) | Mean[card_type=debit]"), debit)
    gambling = (ev["merchant_category"] == "gambling").groupby(ev["user_id"]).sum()
    np.testing.assert_array_equal(
        column(agg, table, "Select(merchant_category) | Sum[merchant_category=gambling]"), gambling)


def test_unseen_categories_at_transform(data, seqs, fitted):
    agg, _ = fitted
    ev = data.events.copy()
    users = seqs.users[:40]
    ev = ev[ev["user_id"].isin(users)].reset_index(drop=True)
    ev["card_type"] = ev["card_type"].astype(object)
    ev.loc[::3, "card_type"] = "metal"     # a category fit never saw
    ev.loc[1::7, "card_type"] = None       # and a missing one (<NA>), also unseen here
    ev["country"] = ev["country"].astype(object)
    ev.loc[ev["country"] == "home", "country"] = "HOME"  # a vocabulary that differs everywhere
    new = rx.Sequences(ev, user="user_id", time="ts", categorical=seqs.categorical, numerical=seqs.numerical)
    assert new.categories("card_type") != seqs.categories("card_type")
    table = agg.transform(new)
    assert table.shape == (40, agg.n_features_out_)
    # Same as sequences encoded with the training vocabularies from the start.
    aligned = rx.Sequences(ev, user="user_id", time="ts", categorical=seqs.categorical,
                           numerical=seqs.numerical, vocabularies=seqs.vocabularies)
    np.testing.assert_array_equal(table, agg.transform(aligned))
    # Unseen events count in the denominator of a share but in no category.
    shares = table[:, [i for i, n in enumerate(agg.get_feature_names_out())
                       if n.startswith("Select(card_type) | Mean[")]]
    assert (shares.sum(axis=1) < 1).all()
    assert np.all(column(agg, table, "Select(country) | Sum[country=home]") == 0)
    # A column fit saw must be there.
    with pytest.raises(ValueError, match="'hour'"):
        agg.transform(rx.Sequences(ev.drop(columns="hour"), user="user_id", time="ts",
                                   categorical=seqs.categorical, numerical=["amount"]))


def test_align_vocabularies_is_identity_when_equal(seqs):
    assert align_vocabularies(seqs, seqs.vocabularies) is seqs
    with pytest.raises(ValueError, match="'nope'"):
        align_vocabularies(seqs, {"nope": ("a",)})


def test_fill_value_and_options(seqs):
    tiny = rx.Sequences(pd.DataFrame({"user_id": ["a", "b", "b"], "ts": [0, 0, 1], "kind": ["x", "y", "x"],
                                      "v": [np.nan, 1.0, 3.0]}))
    table = SequenceAggregator().fit_transform(tiny)
    # User a: one event with a missing value: every aggregation of v is undefined but
    # Sum (0 over nothing); the event still counts.
    agg = SequenceAggregator().fit(tiny)
    v_columns = [n.startswith("Select(v) | ") and "Count" not in n for n in agg.get_feature_names_out()]
    row = dict(zip(np.asarray(agg.get_feature_names_out())[v_columns], table[0, v_columns]))
    assert row.pop("Select(v) | Sum") == 0 and np.isnan(list(row.values())).all()
    assert column(agg, table, "Select(v) | Count")[0] == 1
    filled = SequenceAggregator(fill_value=0.0).fit_transform(tiny)
    assert not np.isnan(filled).any()
    np.testing.assert_array_equal(filled[~np.isnan(table)], table[~np.isnan(table)])
    small = SequenceAggregator(numerical_aggregations=["Mean", "Percentile(50)"],
                               categorical_aggregations=["Max"], count=False).fit(seqs)
    names = list(small.get_feature_names_out())
    assert names[:4] == ["Select(amount) | Mean", "Select(amount) | Percentile(50)",
                         "Select(hour) | Mean", "Select(hour) | Percentile(50)"]
    assert "Select(card_type) | Max[card_type=debit]" in names
    assert not any("Count" in n for n in names)


def test_bad_input(seqs):
    with pytest.raises(TypeError, match="Sequences"):
        SequenceAggregator().fit(np.zeros((3, 2)))
    agg = SequenceAggregator().fit(seqs)
    with pytest.raises(TypeError, match="Sequences"):
        agg.transform(pd.DataFrame({"a": [1]}))
    with pytest.raises(ValueError):
        SequenceAggregator(numerical_aggregations=["Median"]).fit(seqs)
    from sklearn.exceptions import NotFittedError
    with pytest.raises(NotFittedError):
        SequenceAggregator().transform(seqs)


def test_in_a_pipeline(data, seqs):
    pipe = make_pipeline(SequenceAggregator(), HistGradientBoostingRegressor(max_iter=20, random_state=0))
    pipe.fit(seqs, data.risk.to_numpy())
    pred = pipe.predict(seqs)
    assert pred.shape == (seqs.n_users,)
    assert np.corrcoef(pred, data.risk)[0, 1] > 0.8
    twin = clone(pipe)
    assert twin.get_params()["sequenceaggregator__fill_value"] is None
