"""Bad input, round three: a random_state that is no seed is named as random_state, wherever it is given."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import rudi_explain as rx
from rudi_explain.metrics import fidelity_interval

MESSAGE = r"random_state must be a whole number from 0 to 4294967295 or None, got 'abc'"


@pytest.mark.parametrize("make", [rx.datasets.make_payments, rx.datasets.make_edits])
def test_demo_data(make):
    with pytest.raises(TypeError, match=MESSAGE):
        make(20, random_state="abc")


def test_fidelity_interval():
    with pytest.raises(TypeError, match=MESSAGE):
        fidelity_interval(np.arange(10.0), np.arange(10.0), random_state="abc")


def test_event_table_sample(tmp_path):
    pytest.importorskip("duckdb")
    path = tmp_path / "events.parquet"
    pd.DataFrame({"user_id": np.arange(30) % 10, "ts": np.arange(30.0), "amount": np.ones(30)}).to_parquet(path)
    table = rx.EventTable(str(path), user="user_id", time="ts")
    with pytest.raises(TypeError, match=MESSAGE):
        table.sample(n_users=5, random_state="abc")


def test_explain():
    demo = rx.datasets.make_payments(40, random_state=0)
    with pytest.raises(TypeError, match=MESSAGE) as err:
        rx.explain(None, demo.sequences(), scores=demo.risk, random_state="abc", background=False)
    assert "student" not in str(err.value)
