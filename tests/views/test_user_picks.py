"""The User tab's picks beyond the top 15 (issue 28, item 19): lowest-scored, by percentile, random.

Checked against a brute-force reference: each user's mid-rank teacher percentile computed with pandas
(``rank(method="average")``), the user nearest each percentile 0..100 found by scanning all users;
over seeds and with heavily tied scores. The standalone report embeds the picks' drill-downs.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from tiny import tiny_explanation, tiny_payments

import rudi_explain as rx
from rudi_explain.views import payloads as ws
from rudi_explain.views.report import report_html


def _reference_percentiles(exp) -> pd.Series:
    y = exp.teacher_scores
    return 100.0 * (y.rank(method="average") - 0.5) / len(y)  # mid-rank: below plus half the tied


def _check(exp) -> None:
    picks = ws.user_picks(exp)
    y = exp.teacher_scores
    pct = _reference_percentiles(exp)
    assert [u["teacher"] for u in picks["bottom"]] == pytest.approx(np.sort(y.to_numpy())[:15], rel=1e-3)
    assert len({u["id"] for u in picks["bottom"]}) == 15
    assert len(picks["by_percentile"]) == 101
    for q, u in enumerate(picks["by_percentile"]):
        best = float((pct - q).abs().min())
        got = pct[ws.resolve_user(exp, u["id"])]
        assert abs(got - q) == pytest.approx(best, abs=1e-9), (q, u)
        assert u["percentile"] == pytest.approx(got, rel=1e-3)
    drawn = [u["id"] for u in picks["random"]]
    assert len(drawn) == len(set(drawn)) == 10
    assert ws.user_picks(exp)["random"] == picks["random"]  # seeded: the same users on every call


@pytest.mark.parametrize("random_state", [0, 1, 2])
def test_picks_match_a_brute_force_reference(random_state):
    _check(tiny_payments(180, random_state=random_state))


@pytest.mark.parametrize("random_state", [0, 1])
def test_picks_with_heavily_tied_scores(random_state):
    demo = rx.datasets.make_payments(160, random_state=random_state)
    tied = demo.risk.round(0)  # a handful of distinct scores: percentiles jump in blocks
    assert tied.nunique() < 20
    _check(tiny_explanation(demo.sequences(), tied, demo.labels))


def test_random_users_differ_by_seed_and_picks_stay_bounded():
    exp = tiny_payments(300)
    draws = {tuple(u["id"] for u in ws.user_picks(exp, random_state=s)["random"]) for s in range(5)}
    assert len(draws) == 5
    size = len(json.dumps(ws.user_picks(exp)))
    assert size < 12_000, size


def test_the_report_carries_the_picks_and_embeds_their_users():
    exp = tiny_payments(200)
    page = report_html(exp, n_users=0)
    state = json.loads(re.search(r'id="rx-state">(.*?)</script>', page, re.S).group(1))
    users = json.loads(re.search(r'id="rx-users">(.*?)</script>', page, re.S).group(1))
    picks = state["results"]["user_picks"]
    assert picks == ws.user_picks(exp)
    wanted = [u["id"] for u in picks["bottom"] + picks["random"] + picks["by_percentile"][::10]]
    assert set(wanted) <= set(users)
