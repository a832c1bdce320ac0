"""Occlusion hands the teacher the users' real ids (issue 28, item 3).

A teacher that joins per-user data by id (a dict of profiles, a feature store) must look up
the user it is scoring while the user's events are occluded, and an error must name that user.
"""

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from tiny import tiny_explanation

import rudi_explain as rx
from rudi_explain.audit.attributions import agreement_summary, attribute_events
from rudi_explain.exceptions import InputError
from rudi_explain.teachers.adapters import TeacherError


@pytest.fixture(scope="module")
def payments():
    data = rx.datasets.make_payments(80, random_state=5)
    seqs = data.sequences()
    rng = np.random.default_rng(0)
    profiles = {u: float(v) for u, v in zip(seqs.users, rng.normal(size=seqs.n_users))}  # per-user data, by id
    return data, seqs, profiles


def _amounts(s: rx.Sequences) -> np.ndarray:
    return np.bincount(s.event_user, weights=np.nan_to_num(s.values["amount"]), minlength=s.n_users)


class ProfileJoin(TransformerMixin, BaseEstimator):
    """A real scikit-learn step that joins a per-user profile by id, as a feature store would.

    Records every call's ids; an unknown id is a KeyError (as ``dict[...]`` is).
    """

    def __init__(self, profiles=None):
        self.profiles = profiles

    def fit(self, X, y=None):
        self.calls_ = []
        return self

    def transform(self, X):
        self.calls_.append(list(X.users))
        profile = np.array([self.profiles[u] for u in X.users])
        return np.column_stack([np.log1p(np.abs(_amounts(X))), X.lengths, profile])


def _by_hand(teacher, seqs, i):
    """Score one user without each of its events in turn, one call each, as a one-user Sequences with its id."""
    events = seqs.events(seqs.users[i])
    kw = dict(user=seqs.user_column, time=seqs.time_column, categorical=seqs.categorical,
              numerical=seqs.numerical, vocabularies=seqs.vocabularies, reference_time=seqs.reference_time)
    t = rx.teachers.as_teacher(teacher)
    base = t.score(rx.Sequences(events, **kw))[0]
    return np.array([base - t.score(rx.Sequences(events.drop(index=k), **kw))[0] for k in range(len(events))])


def test_a_sklearn_teacher_that_joins_by_id_sees_the_real_users(payments):
    data, seqs, profiles = payments
    pipe = make_pipeline(ProfileJoin(profiles), LogisticRegression(max_iter=500))
    pipe.fit(seqs, data.labels.reindex(seqs.users).to_numpy())
    join = pipe[0]
    idx = np.flatnonzero((seqs.lengths >= 2) & (seqs.lengths <= 10))[:6]
    join.calls_.clear()
    batch = attribute_events(pipe, seqs, idx, "occlusion", max_events=None)
    real = set(seqs.users[idx])
    assert join.calls_ and all(set(c) <= real and len(set(c)) == len(c) for c in join.calls_)
    assert set(join.calls_[0]) == real  # the first call: every user as it is
    assert np.isfinite(batch.attribution).all()
    for b, i in enumerate(idx):  # each event's attribution is the drop of the user's own score
        np.testing.assert_allclose(batch.attribution[batch.segment == b], _by_hand(pipe, seqs, i),
                                   rtol=1e-9, atol=1e-12)


def test_agreement_over_many_users_asks_a_callable_teacher_by_real_id(payments):
    _, seqs, profiles = payments
    seen: list[list] = []

    def teacher(s: rx.Sequences) -> np.ndarray:
        seen.append(list(s.users))
        return np.log1p(np.abs(_amounts(s))) + np.array([profiles[u] for u in s.users])

    exp = tiny_explanation(seqs, pd.Series(_amounts(seqs), index=seqs.users), teacher=teacher)
    seen.clear()
    summary = agreement_summary(exp, n_users=12, max_events=5, chunk_users=5)
    assert len(summary.per_user) == 12 and seen
    assert all(set(c) <= set(summary.per_user.index) and len(set(c)) == len(c) for c in seen)
    # The scores occlusion reports are the teacher's own scores of those users, looked up by their ids.
    expected = pd.Series(teacher(seqs), index=seqs.users).reindex(summary.per_user.index)
    np.testing.assert_allclose(summary.per_user["score"], expected, rtol=1e-12)


def test_a_teacher_failing_for_one_user_is_named_during_occlusion(payments):
    _, seqs, profiles = payments
    i = int(np.argmin(seqs.lengths))
    uid, n = seqs.users[i], int(seqs.lengths[i])

    def nan_without_all_events(s: rx.Sequences) -> np.ndarray:
        # NaN for this user once an event is missing (a join on a full history, say)
        out = s.lengths.astype(float) + np.array([profiles[u] for u in s.users])
        return np.where((s.users == uid) & (s.lengths < n), np.nan, out)

    with pytest.raises(InputError, match=rf"during occlusion of user '{uid}': scoring it without its event 0 "
                                         rf"\(of {n}, .*NaN scores for 1 users: '{uid}'"):
        attribute_events(nan_without_all_events, seqs, [i], "occlusion")
    # Among several users, the error still names the one that failed.
    others = np.argsort(seqs.lengths)[1:6]
    with pytest.raises(InputError, match=rf"during occlusion of \d+ users .*NaN scores for 1 users: '{uid}'"):
        attribute_events(nan_without_all_events, seqs, np.union1d(others, [i]), "occlusion")

    def raises(s: rx.Sequences) -> np.ndarray:
        if (s.lengths < n).any():
            raise RuntimeError("too short")
        return np.array([profiles[u] for u in s.users]) + s.lengths

    with pytest.raises(TeacherError, match=rf"during occlusion of user '{uid}': scoring it without") as caught:
        attribute_events(raises, seqs, [i], "occlusion")
    assert isinstance(caught.value.__cause__, RuntimeError)


def test_repeated_users_are_refused_by_name(payments):
    _, seqs, _ = payments
    with pytest.raises(InputError, match=f"repeat users '{seqs.users[3]}'"):
        attribute_events(_amounts, seqs, [3, 5, 3], "occlusion")
