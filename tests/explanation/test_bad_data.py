"""Tiny or near-constant data: errors that say what is wrong with the data, not an internal one."""
import numpy as np
import pandas as pd
import pytest

import rudi_explain as rx
from rudi_explain.exceptions import InputError
from rudi_explain.explanation import pipeline, search_stage


def _explain(seqs, scores, **kw):
    return rx.explain(None, seqs, scores=scores, n_stats=2, background=False, progress=lambda e: None, **kw)


def test_twelve_users_named_before_search(monkeypatch):
    small = rx.datasets.make_payments(12, random_state=0)
    searched = []
    monkeypatch.setattr(search_stage.StatisticsSearch, "fit", lambda self, *a, **k: searched.append(1) or self)
    with pytest.raises(InputError, match=r"only 12 users .*needs at least 20 training users") as err:
        _explain(small.sequences(), small.risk)
    assert "need at least one statistic" not in str(err.value)
    assert not searched  # checked before the search


@pytest.mark.parametrize("tiny", [1e-300, 1.0])
def test_near_constant_scores_named_before_search(monkeypatch, tiny):
    demo = rx.datasets.make_payments(200, random_state=0)
    seqs = demo.sequences()
    scores = pd.Series(0.0, index=demo.risk.index)
    scores.iloc[::50] = tiny  # 4 of 200 users differ: 98% tied
    searched = []
    monkeypatch.setattr(search_stage.StatisticsSearch, "fit", lambda self, *a, **k: searched.append(1) or self)
    with pytest.raises(InputError, match=r"the scores barely vary: 9\d% of the training users share one score"):
        _explain(seqs, scores)
    assert not searched


def test_no_statistic_found_names_the_cause():
    small = rx.datasets.make_payments(30, random_state=0)
    with pytest.raises(InputError, match="the search found no statistic that explains the scores") as err:
        _explain(small.sequences(), small.risk)
    assert "more users" in str(err.value)
    assert "need at least one statistic" not in str(err.value)


def test_enough_varied_data_is_not_refused():
    rng = np.random.default_rng(0)
    y = rng.normal(size=100)
    pipeline._check_enough_data(125, 100, y)
    y[:90] = 0.0  # 90% tied: still allowed
    pipeline._check_enough_data(125, 100, y)
