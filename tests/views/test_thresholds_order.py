"""The Thresholds payload lists each statistic's literals by value (issue 28, item 10).

Refined or moved thresholds are appended to a statistic's literals after its deciles; the payload
sorts them, checked against the literals' own thresholds per output column.
"""

from __future__ import annotations

import numpy as np
from tiny import tiny_payments

from rudi_explain.views import payloads as ws


def test_each_statistics_literals_come_by_value_after_a_threshold_moves():
    exp = tiny_payments(200)
    first = next(x for t in ws.thresholds(exp) for x in t["thresholds"] if x["in_rules"])
    moved = exp.with_threshold(first["literal"], 50.5)  # its literal stays in place, its value now past others
    L = moved.literals
    column = int(L.column[first["literal"]])
    assert np.any(np.diff(L.thresholds[L.column == column]) < 0), "the moved literal must be out of order"
    for t in ws.thresholds(moved):
        got = [x["threshold"] for x in t["thresholds"]]
        assert got == sorted(L.thresholds[L.column == t["column"]].tolist()), t["words"]
        # each entry is still its own literal's
        assert all(L.thresholds[x["literal"]] == x["threshold"] for x in t["thresholds"])
    assert any(x["threshold_text"] == "50.5" for t in ws.thresholds(moved) for x in t["thresholds"])
