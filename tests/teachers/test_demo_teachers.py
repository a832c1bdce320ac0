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
    # Rates over three training seeds, not one seed's luck. Four epochs, not the default six: the same
    # margins at two thirds of the training. Measured on seeds 0-4 (the planted risk's AUC 0.745):
    # 4 epochs: AUC 0.702, 0.714, 0.720, 0.711, 0.708, Spearman 0.788, 0.776, 0.809, 0.776, 0.777;
    # 6 epochs: AUC 0.708, 0.717, 0.715, 0.716, 0.718, Spearman 0.812, 0.776, 0.737, 0.806, 0.809;
    # 3 epochs fall short (seed 3: AUC 0.677, Spearman 0.654), so 4 is kept.
    data, train, test, y_train, y_test = split
    risk = data.risk.loc[test.users].to_numpy()
    auc_risk = roc_auc_score(y_test, risk)  # labels are draws from sigmoid(risk): the ceiling
    aucs, spearmans = [], []
    for seed in range(3):
        start = time.perf_counter()
        gru = train_demo_gru(train, y_train, epochs=4, random_state=seed, in_users_order=True)
        seconds = time.perf_counter() - start
        scores = as_teacher(gru).score(test)
        aucs.append(roc_auc_score(y_test, scores))
        spearmans.append(np.corrcoef(np.argsort(np.argsort(scores)), np.argsort(np.argsort(risk)))[0, 1])
        print(f"\ndemo GRU, seed {seed}: trained on {train.n_users} users ({train.n_events} events) in "
              f"{seconds:.1f} s; held-out AUC {aucs[-1]:.3f} (planted risk {auc_risk:.3f}), Spearman with "
              f"the risk {spearmans[-1]:.3f}")
        assert not gru.training
    assert np.mean(aucs) > 0.69 and min(aucs) > auc_risk - 0.08, (aucs, auc_risk)
    assert np.mean(spearmans) > 0.72 and min(spearmans) > 0.65, spearmans
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


@pytest.mark.slow
def test_demo_pipeline(split):
    # A rate over four train/test splits (and model seeds), not one split's luck. When written:
    # held-out AUC 0.694, 0.702, 0.666, 0.705 at splits 0-3 (the model's seed changes nothing).
    data = split[0]
    seqs = data.sequences()
    labels = data.labels.to_numpy()
    aucs = []
    for seed in range(4):
        order = np.random.default_rng(seed).permutation(seqs.n_users)
        train, test = np.sort(order[:4000]), np.sort(order[4000:])
        start = time.perf_counter()
        model = make_demo_pipeline(random_state=seed, in_users_order=True).fit(seqs.subset(train), labels[train])
        seconds = time.perf_counter() - start
        aucs.append(roc_auc_score(labels[test], as_teacher(model).score(seqs.subset(test))))
        print(f"\ndemo pipeline, split {seed}: fitted in {seconds:.1f} s; held-out AUC {aucs[-1]:.3f}")
        assert model.steps[-1][1].random_state == seed
    assert np.mean(aucs) > 0.67 and min(aucs) > 0.64, aucs
