"""The Faithfulness tab's fidelity by slice (issue 28, item 20): the payload is exp.fidelity_by's table."""

from __future__ import annotations

import numpy as np
import pytest
from tiny import tiny_payments

from rudi_explain.views.slices import OTHER, fidelity_slices


@pytest.mark.parametrize("seed", [3, 5])
def test_each_columns_slices_are_fidelity_by(seed):
    exp = tiny_payments(400, random_state=seed)
    slices = fidelity_slices(exp, max_slices=3)
    assert [s["column"] for s in slices] == [c for c in exp.sequences.categorical
                                             if exp.fidelity_by(c)["n_users"].size >= 2]
    for sl in slices:
        full = exp.fidelity_by(sl["column"])
        assert sl["fidelity_all"] == pytest.approx(full.attrs["fidelity_all"], abs=1e-4)
        rows = {r["value"]: r for r in sl["rows"]}
        assert sum(r["n_users"] for r in rows.values()) == exp.is_test.sum()
        shown = [v for v in rows if v != OTHER]
        assert len(shown) == min(3, len(full))
        assert shown == list(full.index[: len(shown)])  # the largest slices, largest first
        for v in shown:
            want = full.loc[v, "fidelity"]
            got = rows[v]["fidelity"]
            assert (got is None) if np.isnan(want) else got == pytest.approx(want, abs=1e-4)
            assert rows[v]["n_users"] == full.loc[v, "n_users"]
        if len(full) > 3:  # the rest lumped into one slice, last
            assert sl["rows"][-1]["value"] == OTHER
            assert sl["rows"][-1]["n_users"] == full["n_users"].iloc[3:].sum()
