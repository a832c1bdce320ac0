"""The demo teachers: a GRU and a scikit-learn pipeline trained on make_payments."""

import time

import numpy as np
import pytest
import torch
from sklearn.metrics import roc_auc_score

from rudi_explain.datasets import make_payments
from rudi_explain.teachers.adapters import as_teacher
from rudi_explain.teachers.demo_gru import DEMO_MAX_LEN, make_demo_pipeline, train_demo_gru

# One thread for torch and BLAS: see tests/conftest.py.


@pytest.fixture(scope="module")
def split():
    data = make_payments(5000, random_state=0)
    seqs = data.sequences()
    order = np.random.default_rng(0).permutation(seqs.n_users)
    train, test = np.sort(order[:4000]), np.sort(order[4000:])
    return data, seqs.subset(train), seqs.subset(test), data.labels.to_numpy()[train], data.labels.to_numpy()[test]


@pytest.mark.slow
def test_demo_gru_learns_the_planted_risk(split):
    data, train, test, y_train, y_test = split
    start = time.perf_counter()
    gru = train_demo_gru(train, y_train, random_state=0, in_users_order=True)
    seconds = time.perf_counter() - start
    scores = as_teacher(gru).score(test)
    auc = roc_auc_score(y_test, scores)
    risk = data.risk.loc[test.users].to_numpy()
    auc_risk = roc_auc_score(y_test, risk)
    spearman = np.corrcoef(np.argsort(np.argsort(scores)), np.argsort(np.argsort(risk)))[0, 1]
    print(f"\ndemo GRU: trained on {train.n_users} users ({train.n_events} events) in {seconds:.1f} s; "
          f"held-out AUC {auc:.3f} (planted risk {auc_risk:.3f}), Spearman with the risk {spearman:.3f}")
    # Labels are draws from sigmoid(risk): the risk's AUC is the ceiling.
    assert auc > 0.68 and auc > auc_risk - 0.06
    assert spearman > 0.7
    assert not gru.training
    assert gru.max_len == DEMO_MAX_LEN and gru.numerical_ == ["amount", "hour"]
    assert gru.vocabularies_["country"] == ("eu", "home", "other", "us")


@pytest.mark.slow
def test_demo_gru_is_reproducible_and_leaves_global_state(split):
    _, train, test, y_train, _ = split
    small = train.subset(np.arange(300))
    y = y_train[:300]
    torch.manual_seed(123)
    state = torch.get_rng_state()
    threads = torch.get_num_threads()
    a = train_demo_gru(small, y, hidden_size=8, epochs=1, max_len=16, random_state=5, num_threads=2,
                       in_users_order=True)
    assert torch.equal(torch.get_rng_state(), state)
    assert torch.get_num_threads() == threads
    b = train_demo_gru(small, y, hidden_size=8, epochs=1, max_len=16, random_state=5, num_threads=2,
                       in_users_order=True)
    c = train_demo_gru(small, y, hidden_size=8, epochs=1, max_len=16, random_state=6, in_users_order=True)
    for (name, pa), pb in zip(a.state_dict().items(), b.state_dict().values()):
        assert torch.equal(pa, pb), name
    assert not all(torch.equal(pa, pc) for pa, pc in zip(a.state_dict().values(), c.state_dict().values()))
    assert type(a) is type(c)


def test_demo_gru_bad_input(split):
    _, train, _, y_train, _ = split
    small = train.subset(np.arange(50))
    with pytest.raises(ValueError, match="0/1"):
        train_demo_gru(small, np.linspace(0, 2, 50), in_users_order=True)
    with pytest.raises(ValueError, match="50 users"):
        train_demo_gru(small, y_train, in_users_order=True)
    with pytest.raises(ValueError, match="epochs"):
        train_demo_gru(small, y_train[:50], epochs=0, in_users_order=True)
    with pytest.raises(TypeError, match="Sequences"):
        train_demo_gru(None, y_train[:50])


def test_demo_pipeline(split):
    _, train, test, y_train, y_test = split
    start = time.perf_counter()
    model = make_demo_pipeline(random_state=0, in_users_order=True).fit(train, y_train)
    seconds = time.perf_counter() - start
    auc = roc_auc_score(y_test, as_teacher(model).score(test))
    print(f"\ndemo pipeline: fitted in {seconds:.1f} s; held-out AUC {auc:.3f}")
    assert auc > 0.66
    assert model.steps[-1][1].random_state == 0
