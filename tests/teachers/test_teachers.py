"""Teacher adapters with real models: a trained GRU, a fitted pipeline, callables, given scores."""

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

import rudi_explain as rx
from rudi_explain.datasets import make_payments
from rudi_explain.teachers.adapters import (
    CallableTeacher,
    GivenScores,
    SklearnTeacher,
    TeacherError,
    TorchTeacher,
    as_teacher,
    encode_padded,
    given_scores,
)
from rudi_explain.teachers.demo_gru import make_demo_pipeline, train_demo_gru

# One thread for torch and BLAS: see tests/conftest.py.


GAMBLING = rx.Statistic.parse("Select(amount) | RetainBy(merchant_category=gambling) | Sum")


@pytest.fixture(scope="module")
def data():
    return make_payments(400, random_state=7)


@pytest.fixture(scope="module")
def seqs(data):
    return data.sequences()


@pytest.fixture(scope="module")
def gru(data, seqs):
    # A real GRU, trained briefly: enough for distinct, input-dependent scores.
    return train_demo_gru(seqs, data.labels, hidden_size=8, embedding_dim=4, epochs=1, max_len=32)


@pytest.fixture(scope="module")
def pipeline(data, seqs):
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.pipeline import make_pipeline
    return make_pipeline(rx_aggregator(), HistGradientBoostingClassifier(max_iter=30, random_state=0)).fit(
        seqs, data.labels)


def rx_aggregator():
    from rudi_explain.teachers.aggregator import SequenceAggregator
    return SequenceAggregator()


def shuffled_subset(data, seqs, users):
    """The events of some users, rows shuffled, as new Sequences (its own vocabularies)."""
    ev = data.events[data.events["user_id"].isin(users)].sample(frac=1.0, random_state=0)
    return rx.Sequences(ev, user="user_id", time="ts", categorical=data.categorical, numerical=data.numerical)


def check_alignment(teacher, data, seqs, **kw):
    full = teacher.score(seqs, **kw)
    assert full.shape == (seqs.n_users,) and full.dtype == np.float64
    # Drop users and shuffle rows: each user keeps its own score.
    rng = np.random.default_rng(0)
    keep = rng.choice(seqs.n_users, 57, replace=False)
    sub = shuffled_subset(data, seqs, seqs.users[keep])
    part = teacher.score(sub, **kw)
    by_id = pd.Series(full, index=seqs.users)
    np.testing.assert_allclose(part, by_id.loc[sub.users].to_numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(teacher.score(seqs.subset(keep), **kw), full[np.sort(keep)], rtol=1e-5, atol=1e-6)
    return full


# --------------------------------------------------------------------------- torch
def test_torch_gru_scores_align_with_users(gru, data, seqs):
    teacher = as_teacher(gru)
    assert isinstance(teacher, TorchTeacher) and teacher.kind == "torch"
    full = check_alignment(teacher, data, seqs)
    assert np.unique(full).size > seqs.n_users // 2
    # The module's logits, user by user, for a handful of users.
    for i in [0, 17, 399]:
        cat, num, lengths = encode_padded(seqs, np.array([i]), max_len=32)
        with torch.no_grad():
            assert gru(cat, num, lengths).item() == pytest.approx(full[i], rel=1e-5, abs=1e-6)


def test_torch_batching_gives_the_same_scores(gru, seqs):
    one = as_teacher(gru, batch_size=10_000).score(seqs)
    many = as_teacher(gru, batch_size=7).score(seqs)
    np.testing.assert_allclose(many, one, rtol=1e-5, atol=1e-6)
    torch.set_num_threads(2)
    try:
        seen = []
        handle = gru.register_forward_pre_hook(lambda m, i: seen.append(torch.get_num_threads()))
        np.testing.assert_allclose(as_teacher(gru, num_threads=1).score(seqs), one, rtol=1e-5, atol=1e-6)
        assert gru.num_threads == 1 and seen == [1, 1]  # the demo GRU asks for one thread
        handle.remove()
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(1)


def test_torch_eval_mode_no_grad_and_modes_restored(gru, seqs):
    seen = []

    def hook(module, inputs):
        seen.append((module.training, module.head.training, torch.is_grad_enabled()))

    handle = gru.register_forward_pre_hook(hook)
    try:
        gru.train()
        gru.head.eval()  # mixed modes come back exactly
        as_teacher(gru, batch_size=150).score(seqs)
    finally:
        handle.remove()
    assert seen == [(False, False, False)] * 3
    assert gru.training and not gru.head.training and gru.embeddings[0].training
    gru.eval()


def test_torch_modes_restored_when_the_model_raises(gru, seqs):
    def encode(s, idx):
        if 0 in idx:
            raise KeyError("boom")
        return encode_padded(s, idx, max_len=32)

    gru.train()
    with pytest.raises(TeacherError) as info:
        as_teacher(gru, encode=encode, batch_size=100).score(seqs)
    assert gru.training and all(m.training for m in gru.modules())
    assert isinstance(info.value.__cause__, KeyError)
    gru.eval()


class Linear2(nn.Module):
    """A small real model over per-user features from a custom encoder: (B, 2) logits."""

    def __init__(self, softmax=False):
        super().__init__()
        self.linear = nn.Linear(2, 2)
        self.softmax = softmax
        with torch.no_grad():
            self.linear.weight.copy_(torch.tensor([[0.0, 0.0], [0.01, 0.5]]))
            self.linear.bias.zero_()

    def forward(self, features):
        out = self.linear(features)
        return out.softmax(dim=-1) if self.softmax else out


def per_user_features(seqs, idx):
    amount = np.log1p(np.maximum(GAMBLING.evaluate(seqs, idx), 0))
    return {"features": torch.tensor(np.column_stack([seqs.lengths[idx], amount]), dtype=torch.float32)}


def test_torch_custom_encode_and_two_column_outputs(data, seqs):
    expected = 0.01 * seqs.lengths + 0.5 * np.log1p(np.maximum(GAMBLING.evaluate(seqs), 0))
    logits = as_teacher(Linear2(), encode=per_user_features, batch_size=64).score(seqs)
    np.testing.assert_allclose(logits, expected, rtol=1e-5, atol=1e-5)  # class 1 minus class 0
    probs = as_teacher(Linear2(softmax=True), encode=per_user_features, batch_size=64).score(seqs)
    np.testing.assert_allclose(probs, 1 / (1 + np.exp(-expected)), rtol=1e-5, atol=1e-6)
    check_alignment(as_teacher(Linear2(), encode=per_user_features), data, seqs)


def test_encode_padded_layout(seqs):
    idx = np.array([3, 0, 5])
    cat, num, lengths = encode_padded(seqs, idx, max_len=10)
    n_cat, n_num = len(seqs.categorical), len(seqs.numerical)
    assert cat.dtype == torch.int64 and num.dtype == torch.float32 and lengths.dtype == torch.int64
    assert cat.shape == (3, int(lengths.max()), n_cat) and num.shape == (3, int(lengths.max()), 2 * n_num)
    for b, i in enumerate(idx):
        n = int(lengths[b])
        assert n == min(10, seqs.lengths[i])
        rows = slice(seqs.offsets[i + 1] - n, seqs.offsets[i + 1])  # the last n events
        for j, c in enumerate(seqs.categorical):
            np.testing.assert_array_equal(cat[b, :n, j].numpy(), seqs.codes[c][rows] + 1)
        for j, c in enumerate(seqs.numerical):
            v = seqs.values[c][rows]
            np.testing.assert_array_equal(num[b, :n, j].numpy(), np.nan_to_num(v).astype(np.float32))
            np.testing.assert_array_equal(num[b, :n, n_num + j].numpy(), np.isnan(v))
        assert (cat[b, n:] == 0).all() and (num[b, n:] == 0).all()


def test_torch_unseen_categories_are_recoded(gru, data, seqs):
    ev = data.events[data.events["user_id"].isin(seqs.users[:30])].copy()
    ev["card_type"] = ev["card_type"].astype(object)
    ev.loc[ev.index[::4], "card_type"] = "metal"
    new = rx.Sequences(ev, user="user_id", time="ts", categorical=data.categorical, numerical=data.numerical)
    cat, _, _ = encode_padded(new, None, vocabularies=gru.vocabularies_)
    j = new.categorical.index("card_type")
    assert (cat[..., j] == len(gru.vocabularies_["card_type"]) + 1).any()  # the unseen index
    scores = as_teacher(gru).score(new)
    aligned = rx.Sequences(ev, user="user_id", time="ts", categorical=data.categorical,
                           numerical=data.numerical, vocabularies=seqs.vocabularies)
    np.testing.assert_allclose(scores, as_teacher(gru).score(aligned), rtol=1e-6)


def test_torch_model_raising_names_batch_and_users(seqs):
    class Fails(nn.Module):
        def forward(self, cat, num, lengths):
            if lengths.max() > 60:
                raise RuntimeError("sequence too long for this model")
            return lengths.float()

    with pytest.raises(TeacherError, match=r"batch \d+ of 4 \(100 users: '") as info:
        as_teacher(Fails(), batch_size=100).score(seqs)
    assert isinstance(info.value.__cause__, RuntimeError)
    assert "sequence too long" in str(info.value) and "and 95 more" in str(info.value)


def test_torch_bad_outputs(seqs):
    class Wide(nn.Module):
        def forward(self, cat, num, lengths):
            return torch.zeros(len(lengths), 3)

    with pytest.raises(ValueError, match="shape"):
        as_teacher(Wide()).score(seqs)

    class NaNs(nn.Module):
        def forward(self, cat, num, lengths):
            out = lengths.float()
            out[lengths == lengths.max()] = float("nan")
            return out

    longest = seqs.users[seqs.lengths == seqs.lengths.max()][0]
    with pytest.raises(ValueError, match=f"NaN scores for .*'{longest}'"):
        as_teacher(NaNs()).score(seqs)


# --------------------------------------------------------------------------- scikit-learn
def test_sklearn_pipeline(pipeline, data, seqs):
    teacher = as_teacher(pipeline)
    assert isinstance(teacher, SklearnTeacher) and teacher.method == "predict_proba"
    full = check_alignment(teacher, data, seqs)
    np.testing.assert_array_equal(full, pipeline.predict_proba(seqs)[:, 1])
    np.testing.assert_allclose(as_teacher(pipeline, batch_size=33).score(seqs), full, rtol=1e-12)
    margin = as_teacher(pipeline, method="decision_function").score(seqs)
    np.testing.assert_allclose(margin, pipeline.decision_function(seqs))
    hard = as_teacher(pipeline, method="predict").score(seqs, allow_constant=True)
    assert set(np.unique(hard)) <= {0.0, 1.0}


def test_sklearn_regressor_and_demo_pipeline(data, seqs):
    from sklearn.ensemble import HistGradientBoostingRegressor
    from sklearn.pipeline import make_pipeline
    reg = make_pipeline(rx_aggregator(), HistGradientBoostingRegressor(max_iter=10)).fit(seqs, data.risk)
    teacher = as_teacher(reg)
    assert teacher.method == "predict"
    np.testing.assert_allclose(teacher.score(seqs), reg.predict(seqs))
    demo = make_demo_pipeline(random_state=0)
    with pytest.raises(ValueError, match="not fitted"):
        as_teacher(demo)


def test_sklearn_bad_inputs(pipeline, data, seqs):
    with pytest.raises(ValueError, match="no decision_func"):
        from sklearn.ensemble import HistGradientBoostingRegressor
        from sklearn.pipeline import make_pipeline
        as_teacher(make_pipeline(rx_aggregator(), HistGradientBoostingRegressor(max_iter=5)).fit(seqs, data.risk),
                   method="decision_function")
    with pytest.raises(ValueError, match="method must be"):
        as_teacher(pipeline, method="transform")
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.pipeline import make_pipeline
    three = make_pipeline(rx_aggregator(), HistGradientBoostingClassifier(max_iter=5)).fit(
        seqs, pd.Series(np.arange(seqs.n_users) % 3, index=seqs.users))
    with pytest.raises(TeacherError, match="multi-class") as info:
        as_teacher(three).score(seqs)
    assert isinstance(info.value.__cause__, ValueError)
    # An estimator that does not take Sequences fails with the batch named.
    from sklearn.linear_model import LogisticRegression
    plain = LogisticRegression().fit(np.arange(10.0)[:, None], np.arange(10) % 2)
    with pytest.raises(TeacherError, match=r"LogisticRegression.predict_proba failed on batch 1 of 1") as info:
        as_teacher(plain).score(seqs)
    assert info.value.__cause__ is not None


# --------------------------------------------------------------------------- callables
def test_callable(data, seqs):
    teacher = as_teacher(lambda s: np.log1p(np.maximum(GAMBLING.evaluate(s), 0)) + 0.001 * s.lengths)
    assert isinstance(teacher, CallableTeacher)
    full = check_alignment(teacher, data, seqs)
    np.testing.assert_allclose(as_teacher(teacher.model, batch_size=9).score(seqs), full)
    assert as_teacher(teacher) is teacher


def test_callable_returning_a_series_is_aligned_by_id(seqs):
    def scorer(s):
        order = np.random.default_rng(1).permutation(s.n_users)
        return pd.Series(s.lengths[order].astype(float), index=s.users[order])

    np.testing.assert_array_equal(as_teacher(scorer).score(seqs), seqs.lengths)
    np.testing.assert_array_equal(as_teacher(scorer, batch_size=50).score(seqs), seqs.lengths)


def test_callable_raising_names_batch_and_users(seqs):
    def scorer(s):
        if s.users[0] >= seqs.users[200]:
            raise ZeroDivisionError("no")
        return s.lengths.astype(float)

    with pytest.raises(TeacherError) as info:
        as_teacher(scorer, batch_size=100).score(seqs)
    msg = str(info.value)
    assert "batch 3 of 4" in msg and repr(seqs.users[200]) in msg and "ZeroDivisionError" in msg
    assert isinstance(info.value.__cause__, ZeroDivisionError)


@pytest.mark.parametrize("bad, match", [
    (np.inf, "infinite scores for 1 users: 'u"),
    (np.nan, "NaN scores for 1 users: 'u"),
])
def test_non_finite_scores_name_the_users(seqs, bad, match):
    def scorer(s):
        out = s.lengths.astype(float)
        out[s.users == seqs.users[11]] = bad
        return out

    with pytest.raises(ValueError, match=match) as info:
        as_teacher(scorer).score(seqs)
    assert repr(seqs.users[11]) in str(info.value)


def test_constant_and_wrong_length_scores(seqs):
    with pytest.raises(ValueError, match="same score .* all 400 users"):
        as_teacher(lambda s: np.ones(s.n_users)).score(seqs)
    assert as_teacher(lambda s: np.ones(s.n_users)).score(seqs, allow_constant=True).sum() == 400
    with pytest.raises(ValueError, match=r"shape \(399,\) for 400 users"):
        as_teacher(lambda s: np.ones(s.n_users - 1)).score(seqs)
    with pytest.raises(ValueError, match="not numbers"):
        as_teacher(lambda s: ["high"] * s.n_users).score(seqs)


# --------------------------------------------------------------------------- given scores
def test_given_series_is_reindexed(data, seqs):
    shuffled = data.risk.sample(frac=1.0, random_state=0)
    np.testing.assert_array_equal(given_scores(shuffled, seqs), data.risk.to_numpy())
    teacher = as_teacher(shuffled)
    assert isinstance(teacher, GivenScores)
    check_alignment(teacher, data, seqs)
    np.testing.assert_array_equal(given_scores(shuffled.to_frame(), seqs), data.risk.to_numpy())


def test_given_array(data, seqs):
    arr = data.risk.to_numpy()
    # A bare array has no ids: refused unless the caller says it follows seqs.users.
    with pytest.raises(ValueError, match="bare ndarray without user ids"):
        given_scores(arr, seqs)
    np.testing.assert_array_equal(given_scores(arr, seqs, in_users_order=True), arr)
    np.testing.assert_array_equal(as_teacher(arr, in_users_order=True).score(seqs), arr)
    with pytest.raises(ValueError, match="399 scores for 400 users"):
        given_scores(arr[:-1], seqs, in_users_order=True)
    with pytest.raises(ValueError, match="shape"):
        given_scores(np.column_stack([arr, arr]), seqs, in_users_order=True)


def test_given_series_misaligned(data, seqs):
    risk = data.risk
    with pytest.raises(ValueError, match=r"lack 7 of the 400 users: 'u\d+', .* and 2 more"):
        given_scores(risk.drop(risk.index[10:17]), seqs)
    extra = pd.concat([risk, pd.Series([0.1, 0.2], index=["zz1", "zz2"])])
    with pytest.raises(ValueError, match="2 user ids that the sequences lack: 'zz1', 'zz2'"):
        given_scores(extra, seqs)
    with pytest.raises(ValueError, match="more than one entry"):
        given_scores(pd.concat([risk, risk.iloc[:1]]), seqs)
    with pytest.raises(ValueError, match="indexed by int64 ids"):
        given_scores(risk.reset_index(drop=True).set_axis(np.arange(400) + 1000), seqs)
    nan = risk.copy()
    nan.iloc[[3, 5]] = np.nan
    with pytest.raises(ValueError, match=f"NaN scores for 2 users: '{risk.index[3]}', '{risk.index[5]}'"):
        given_scores(nan, seqs)
    with pytest.raises(ValueError, match="same score"):
        given_scores(pd.Series(1.0, index=risk.index), seqs)


# --------------------------------------------------------------------------- dispatch
def test_unsupported_models(seqs):
    with pytest.raises(ValueError, match="no model to explain"):
        as_teacher(None)
    for bad in [42, "model.pt", object()]:
        with pytest.raises(TypeError, match="cannot use a .* as a teacher"):
            as_teacher(bad)
    with pytest.raises(ValueError, match="method"):
        as_teacher(lambda s: s.lengths, method="predict")
    with pytest.raises(ValueError, match="encode"):
        as_teacher(np.ones(3), encode=per_user_features)
    with pytest.raises(TypeError, match="Sequences"):
        as_teacher(lambda s: s.lengths).score(pd.DataFrame({"a": [1]}))
    with pytest.raises(ValueError, match="batch_size"):
        as_teacher(lambda s: s.lengths, batch_size=0)


def test_a_half_imported_torch_does_not_break_as_teacher(monkeypatch):
    """explain() imports torch in a thread beside the search: meanwhile sys.modules holds a half-built
    torch (no torch.nn yet); another explain() in the notebook must still wrap its teacher."""
    import sys
    import types

    import torch

    half = types.ModuleType("torch")  # what another thread's import leaves in sys.modules part way
    monkeypatch.setitem(sys.modules, "torch", half)
    teacher = as_teacher(lambda seqs: np.zeros(seqs.n_users))
    assert teacher.kind == "callable"
    monkeypatch.setitem(sys.modules, "torch", torch)
    assert as_teacher(torch.nn.Linear(2, 1)).kind == "torch"  # a real module is still recognised
