"""``should_stop`` ends a student's fit within one unit of work (counted, not timed)."""

from __future__ import annotations

import numpy as np
import pytest

from rudi_explain.students import BayesianRuleList, FitStopped, HKLRuleEnsemble
from rudi_explain.students import brl as brl_module


def _data(n: int = 600, p: int = 16, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.random((n, p)) < 0.4
    y = 1.0 * (X[:, 0] & X[:, 1]) + 0.5 * X[:, 2] + rng.normal(scale=0.1, size=n)
    return X, y


@pytest.mark.parametrize("stop_after", [1, 3])
def test_brl_stops_sampling_within_one_check(monkeypatch, stop_after):
    steps = [0]
    real = brl_module._ListPosterior._suffix

    def counted(self, *args, **kwargs):
        steps[0] += 1  # one call a sampling step (and one at each chain's start)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(brl_module._ListPosterior, "_suffix", counted)
    asked, at_flag = [0], []

    def should_stop() -> bool:
        asked[0] += 1
        if asked[0] > stop_after and not at_flag:
            at_flag.append(steps[0])
        return bool(at_flag)

    X, y = _data()
    student = BayesianRuleList(n_iterations=20_000, n_chains=2, random_state=0)
    with pytest.raises(FitStopped, match="asked to stop"):
        student.fit(X, y, should_stop=should_stop)
    assert at_flag, "should_stop was never asked"
    assert steps[0] - at_flag[0] <= brl_module.STEPS_PER_CHECK  # no more sampling once the flag was up
    assert steps[0] < 20_000  # and the first chain was not run to its end


def test_brl_never_stopped_is_unchanged():
    X, y = _data(seed=1)
    a = BayesianRuleList(n_iterations=2_000, random_state=3).fit(X, y)
    b = BayesianRuleList(n_iterations=2_000, random_state=3).fit(X, y, should_stop=lambda: False)
    assert a.list_ == b.list_ and np.array_equal(a.probabilities_, b.probabilities_)


def test_hkl_stop_keeps_the_last_regularization_done():
    X, y = _data(n=400, p=10, seed=2)
    full = HKLRuleEnsemble(n_rules=6, random_state=0).fit(X, y)
    assert len(full.path_) >= 3
    asked = [0]

    def should_stop() -> bool:
        asked[0] += 1
        return len(path_seen) >= 2  # up once two regularizations are done

    path_seen: list = []
    stopped = HKLRuleEnsemble(n_rules=6, random_state=0).fit(
        X, y, progress=lambda info: path_seen.append(info), should_stop=should_stop)
    assert len(stopped.path_) == 2  # not one more solve after the flag
    assert stopped.predict(X).shape == (400,)
    assert stopped.lam_ == pytest.approx(full.path_[1]["lam"])


def test_hkl_stop_before_anything_raises():
    X, y = _data(n=300, p=8, seed=3)
    with pytest.raises(FitStopped, match="before the first regularization"):
        HKLRuleEnsemble(n_rules=4, random_state=0).fit(X, y, should_stop=lambda: True)
