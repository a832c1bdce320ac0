"""GS-NLN's epochs on a sample of users (``epoch_users``, issue 27)."""

import numpy as np

from rudi_explain.metrics import fidelity
from rudi_explain.students import GSNLN


def _planted(seed: int, n: int = 3000):
    """Teacher = 2 (x0 AND x1) + x2 (plus tiny noise), among 10 random literals."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, 10)) < 0.5
    truth = 2.0 * (X[:, 0] & X[:, 1]) + X[:, 2]
    return X, truth + 0.01 * rng.normal(size=n), truth


def test_a_cap_above_the_users_changes_nothing():
    X, y, _ = _planted(0, 600)
    kw = {"n_rules": 6, "hidden_size": 6, "epochs": 4, "random_state": 3}
    a = GSNLN(epoch_users=None, **kw).fit(X, y)
    b = GSNLN(epoch_users=600, **kw).fit(X, y)
    np.testing.assert_array_equal(a.weights_, b.weights_)
    assert a.loss_curve_ == b.loss_curve_


def test_an_epoch_trains_on_the_cap_of_users():
    X, y, _ = _planted(1, 1000)
    asked = []

    def count() -> bool:  # asked once before every mini-batch
        asked.append(1)
        return False

    GSNLN(n_rules=4, hidden_size=4, epochs=3, batch_size=100, epoch_users=450).fit(X, y, should_stop=count)
    assert len(asked) == 3 * 5  # 450 users a epoch: 4 batches of 100 and one of 50
    asked.clear()
    GSNLN(n_rules=4, hidden_size=4, epochs=3, batch_size=100, epoch_users=None).fit(X, y, should_stop=count)
    assert len(asked) == 3 * 10


def test_sampled_epochs_order_users_about_as_well_over_seeds():
    # a quarter of the users a epoch, as many mini-batches in all (4 times the epochs), on a planted teacher:
    # fidelity within 0.02 of every-user epochs on most seeds, and about as good in mean
    gaps = []
    for seed in range(4):
        X, y, truth = _planted(seed)
        kw = {"n_rules": 8, "hidden_size": 8, "random_state": seed}
        full = GSNLN(epoch_users=None, epochs=12, **kw).fit(X, y)
        part = GSNLN(epoch_users=750, epochs=48, **kw).fit(X, y)
        gaps.append(fidelity(truth, full.predict(X)) - fidelity(truth, part.predict(X)))
    gaps_arr = np.array(gaps)
    assert (gaps_arr <= 0.02).mean() >= 0.75, gaps
    assert gaps_arr.mean() <= 0.02, gaps
