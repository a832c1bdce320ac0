"""The global importance payload (issue 28, item 17), against a per-user pandas reference.

For each held-out user and each statistic output, the points the fired rules reading it add (a rule
reading two outputs gives each half its weight); an output's importance is the variance of those
points over the held-out users. The reference builds the per-user table row by row from the rule
cards (the literals each rule reads) and the firing matrix, then takes pandas' variance.
"""

from __future__ import annotations

import pandas as pd
import pytest
from tiny import tiny_payments

from rudi_explain.views import payloads as ws


@pytest.mark.parametrize("random_state", [0, 1, 2])
def test_importance_is_the_variance_of_each_outputs_points_over_held_out_users(random_state):
    exp = tiny_payments(240, random_state=random_state)
    cards = {c["index"]: c for c in ws.rule_cards(exp)}
    rows = []
    for u in range(len(exp.sequences.users)):
        if not exp.is_test[u]:
            continue
        row: dict[int, float] = {}
        for k, rule in enumerate(exp.rules):
            cols = sorted({lit["column"] for lit in cards[k]["literals"]})
            for c in cols:
                row[c] = row.get(c, 0.0) + (rule.weight / len(cols) if exp.result.fires[u, k] else 0.0)
        rows.append(row)
    table = pd.DataFrame(rows).fillna(0.0)
    want = table.var(ddof=0).sort_values(ascending=False)
    got = ws.global_importance(exp)
    assert got["n_users"] == len(table)
    assert [b["column"] for b in got["bars"]] == [int(c) for c in want.index]
    assert [b["variance"] for b in got["bars"]] == pytest.approx(want.to_numpy(), rel=1e-5, abs=1e-9)
    assert sum(b["share"] for b in got["bars"]) == pytest.approx(1.0, abs=1e-3)
    assert ws.results_state(exp)["importance"]["bars"] == got["bars"]
