"""The Thresholds payload lists each statistic's literals by value (issue 28, item 10).

Refined or moved thresholds are appended to a statistic's literals after its deciles; the payload
sorts them, checked against the literals' own thresholds per output column.
"""

from __future__ import annotations

import numpy as np
from tiny import tiny_payments

from rudi_explain.views import payloads as ws


def moved_past_others(exp):
    """``exp`` with a rule threshold moved past other literals of its statistic (not past another band edge of
    its card, which what-if refuses): the highest one in rules of the statistic read at most thresholds, to
    between the two largest of its literals. Returns (the moved explanation, the literal, the new value)."""
    t = max(ws.thresholds(exp), key=lambda t: sum(x["in_rules"] for x in t["thresholds"]))
    top = max((x for x in t["thresholds"] if x["in_rules"]), key=lambda x: x["threshold"])
    a, b = sorted(x["threshold"] for x in t["thresholds"])[-2:]
    assert top["threshold"] < a, "the fixture has no literal to move past"
    value = float(f"{(a + b) / 2:.3g}")
    return exp.with_threshold(top["literal"], value), top["literal"], value


def test_each_statistics_literals_come_by_value_after_a_threshold_moves():
    exp = tiny_payments(200)
    moved, literal, value = moved_past_others(exp)  # its literal stays in place, its value now past others
    L = moved.literals
    column = int(L.column[literal])
    assert np.any(np.diff(L.thresholds[L.column == column]) < 0), "the moved literal must be out of order"
    for t in ws.thresholds(moved):
        got = [x["threshold"] for x in t["thresholds"]]
        assert got == sorted(L.thresholds[L.column == t["column"]].tolist()), t["words"]
        # each entry is still its own literal's
        assert all(L.thresholds[x["literal"]] == x["threshold"] for x in t["thresholds"])
    assert any(x["literal"] == literal and x["threshold"] == value for t in ws.thresholds(moved)
               for x in t["thresholds"])
