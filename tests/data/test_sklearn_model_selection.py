"""``Sequences`` is a sized collection of users, so scikit-learn's model selection splits it.

``len(seqs)`` is the number of users and ``seqs[idx]`` (integer positions, a slice or a boolean
mask) the Sequences of those users in that order. ``cross_val_score`` and ``GridSearchCV`` index
``X`` and ``y`` with the same positions, so a ``y`` in ``seqs.users`` order stays lined up with the
rows the aggregator makes for each fold's users.
"""

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.model_selection import GridSearchCV, KFold, ShuffleSplit, cross_val_score, train_test_split
from sklearn.pipeline import make_pipeline

import rudi_explain as rx
from rudi_explain.exceptions import IndexOutOfRange


@pytest.fixture(scope="module")
def payments():
    demo = rx.datasets.make_payments(600, random_state=0)
    seqs = demo.sequences()
    y = demo.labels.reindex(seqs.users).to_numpy()  # labels in seqs.users order
    return demo, seqs, y


@pytest.fixture(scope="module")
def per_user(payments):
    """A statistic and the aggregator's table on every user, to compare subsets with."""
    _, seqs, _ = payments
    stat = rx.Statistic.parse("Select(amount) | RetainBy(channel=online) | Sum")
    agg = rx.SequenceAggregator().fit(seqs)
    return stat, stat.evaluate(seqs), agg, agg.transform(seqs)


def pipeline(**params):
    return make_pipeline(rx.SequenceAggregator(in_users_order=True),
                         HistGradientBoostingClassifier(max_iter=20, random_state=0, **params))


# --------------------------------------------------------------------------- model selection


def test_cross_val_score_on_sequences(payments):
    _, seqs, y = payments
    scores = cross_val_score(pipeline(), seqs, y, cv=3, scoring="roc_auc")
    assert scores.shape == (3,)
    assert scores.mean() > 0.55, scores  # better than chance (0.5) on users the model did not see (0.63 here)


def test_shuffled_folds_keep_labels_with_their_users(payments):
    # ShuffleSplit hands each fold its users in a shuffled order: seqs[idx] keeps that order and
    # so does y[idx], so the labels stay with their users; scrambling y breaks that.
    _, seqs, y = payments
    cv = ShuffleSplit(n_splits=2, test_size=0.3, random_state=0)
    scores = cross_val_score(pipeline(), seqs, y, cv=cv, scoring="roc_auc")
    assert scores.mean() > 0.55, scores
    scrambled = np.random.default_rng(0).permutation(y)
    assert cross_val_score(pipeline(), seqs, scrambled, cv=cv, scoring="roc_auc").mean() < scores.mean() - 0.05


def test_grid_search_on_sequences(payments):
    _, seqs, y = payments
    search = GridSearchCV(pipeline(), {"histgradientboostingclassifier__max_depth": [2, 3]}, cv=3,
                          scoring="roc_auc").fit(seqs, y)
    assert search.best_params_["histgradientboostingclassifier__max_depth"] in (2, 3)
    assert search.best_score_ > 0.55
    # refitted on every user; it scores new Sequences directly
    proba = search.predict_proba(seqs[:10])
    assert proba.shape == (10, 2)


def test_train_test_split_and_a_series_target(payments):
    _, seqs, y = payments
    train, test, y_train, y_test = train_test_split(seqs, pd.Series(y, index=seqs.users), test_size=0.25,
                                                    random_state=0)
    assert isinstance(train, rx.Sequences) and isinstance(test, rx.Sequences)
    assert len(train) == 450 and len(test) == 150
    # a Series indexed by user id is split alongside, in the same (shuffled) order
    assert list(y_train.index) == list(train.users) and list(y_test.index) == list(test.users)
    # the default aggregator checks that order itself
    model = make_pipeline(rx.SequenceAggregator(), HistGradientBoostingClassifier(max_iter=20)).fit(train, y_train)
    assert model.predict_proba(test).shape == (150, 2)


def test_folds_are_disjoint_users(payments):
    _, seqs, _ = payments
    seen = []
    for train, test in KFold(3, shuffle=True, random_state=0).split(seqs):
        a, b = seqs[train], seqs[test]
        assert not set(a.users) & set(b.users)
        assert len(a) + len(b) == len(seqs)
        seen.extend(b.users)
    assert sorted(seen) == sorted(seqs.users)


# --------------------------------------------------------------------------- indexing semantics


def pandas_events(events: pd.DataFrame, user) -> pd.DataFrame:
    """One user's events from pandas alone: that user's rows in time order (ties in input order)."""
    rows = events[events["user_id"] == user].sort_values("ts", kind="stable")
    return rows.reset_index(drop=True).astype({c: object for c in rows.columns if rows[c].dtype == "category"})


def expected_users(users: np.ndarray, key) -> list:
    """What the key selects, by pandas' positional indexing of the users."""
    index = pd.Series(users)
    return list(index[np.asarray(key)] if np.asarray(key).dtype == bool else index.iloc[key])


@pytest.mark.parametrize("make_key", [
    lambda n: np.random.default_rng(0).permutation(n)[: n // 3],   # integer array, shuffled
    lambda n: [5, 0, -1, 17, -40],                                  # list, negatives from the end
    lambda n: slice(10, 70, 3),                                     # slice with a step
    lambda n: slice(None, None, -7),                                # reversed
    lambda n: np.random.default_rng(1).random(n) < 0.2,             # boolean mask
    lambda n: list(np.random.default_rng(2).random(n) < 0.5),       # mask as a list
], ids=["array", "list", "slice", "reversed", "mask", "mask-list"])
def test_indexing_matches_a_pandas_reference(payments, per_user, make_key):
    demo, seqs, _ = payments
    key = make_key(len(seqs))
    sub = seqs[key]
    want = expected_users(seqs.users, key)
    assert isinstance(sub, rx.Sequences)
    assert list(sub.users) == want and len(sub) == sub.n_users == len(want) and sub.shape == (len(want),)
    # every selected user keeps exactly its events, in time order: as the original and as pandas says
    assert sub.n_events == int(sum(seqs.lengths[seqs.user_index(u)] for u in want))
    columns = ["user_id", "ts", *seqs.categorical, *seqs.numerical]
    for user in want[:10]:
        mine = sub.events(user)
        pd.testing.assert_frame_equal(mine, seqs.events(user))
        pd.testing.assert_frame_equal(mine[columns], pandas_events(demo.events, user)[columns],
                                      check_dtype=False)
    # the same vocabularies, reference time and units: statistics evaluate the same on the users kept
    assert sub.vocabularies == seqs.vocabularies and sub.reference_time == seqs.reference_time
    stat, values, agg, table = per_user
    positions = [seqs.user_index(u) for u in want]
    np.testing.assert_array_equal(stat.evaluate(sub), values[positions])
    # and the aggregator's rows line up with sub.users
    np.testing.assert_array_equal(agg.transform(sub), table[positions])


def test_indexing_as_scikit_learn_does(payments):
    _, seqs, _ = payments
    idx = np.array([3, 1, 2])
    assert list(seqs[idx, ...].users) == list(seqs[idx].users) == list(seqs.users[idx])
    assert list(seqs[(idx,)].users) == list(seqs.users[idx])
    assert len(seqs) == seqs.n_users == seqs.shape[0] == 600


def test_subset_still_sorts_and_deduplicates(payments):
    _, seqs, _ = payments
    assert list(seqs.subset([5, 2, 2, 9]).users) == list(seqs.users[[2, 5, 9]])


def test_indexing_errors(payments):
    _, seqs, _ = payments
    with pytest.raises(TypeError, match=r"seqs\[3\] is ambiguous: write seqs\[\[3\]\]"):
        seqs[3]
    assert list(seqs[[3]].users) == [seqs.users[3]]  # a Sequences of one user
    with pytest.raises(TypeError, match="indexed by positions"):
        seqs["u000003"]
    with pytest.raises(TypeError, match="integers or booleans"):
        seqs[["u000003"]]
    with pytest.raises(TypeError, match="integers or booleans"):
        seqs[np.array([0.0, 1.0])]
    with pytest.raises(IndexOutOfRange, match="user position 600 is out of range for 600 users"):
        seqs[[0, 600]]
    with pytest.raises(IndexError, match="-601"):
        seqs[[-601]]
    with pytest.raises(ValueError, match="one entry per user"):
        seqs[np.ones(599, dtype=bool)]
    with pytest.raises(ValueError, match=r"repeats users \('u000004'\)"):
        seqs[[4, 1, 4]]
    with pytest.raises(ValueError, match="holds no user"):
        seqs[np.zeros(600, dtype=bool)]
    with pytest.raises(ValueError, match="holds no user"):
        seqs[[]]
    with pytest.raises(ValueError, match="one-dimensional"):
        seqs[np.array([[0, 1]])]
    with pytest.raises(TypeError, match="users only"):
        seqs[[0, 1], 0]
    with pytest.raises(TypeError, match="not iterated"):
        list(seqs)
    with pytest.raises(TypeError, match="not an array"):
        np.asarray(seqs)
