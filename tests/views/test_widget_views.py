"""The data behind the widget's working views: statistic importance, the audit header of the report.

Each figure is checked against a computation written out here from the rules themselves.
"""

from __future__ import annotations

import datetime
import html
import json
import re

import numpy as np
import pytest

pytest.importorskip("anywidget")

import rudi_explain as rx  # noqa: E402
from rudi_explain.rules.ruleset import LinearTerm
from rudi_explain.views import payloads as ws
from rudi_explain.views import report

FAST = dict(n_stats=4, n_rules=8, n_simulations=40, student_params={"epochs": 25})


@pytest.fixture(scope="module")
def exp():
    demo = rx.datasets.make_payments(1200, random_state=1)
    return rx.explain(None, demo.events, scores=demo.risk, labels=demo.labels, background=False,
                      progress=lambda e: None, random_state=3, **FAST)


def test_importance_is_the_sum_of_abs_weights_of_rules_reading_each_output(exp):
    want: dict[int, float] = {}
    for rule in exp.rules:
        if isinstance(rule, LinearTerm):
            continue
        cols = {int(exp.literals.column[lit.index]) for lit in _walk(rule.formula)}
        for c in cols:
            want[c] = want.get(c, 0.0) + abs(rule.weight)
    got = ws.importance(exp)
    assert got.keys() == want.keys() and want
    for c in want:
        assert got[c] == pytest.approx(want[c], rel=1e-12)
    # the Thresholds view lists them most important first, unused outputs last
    entries = ws.thresholds(exp)
    imp = [t["importance"] for t in entries]
    used = [t for t in entries if t["importance"] > 0]
    assert imp[:len(used)] == sorted(imp[:len(used)], reverse=True)
    assert all(t["importance"] == 0 for t in entries[len(used):])
    for t in entries:
        assert t["importance"] == pytest.approx(want.get(t["column"], 0.0), rel=1e-5)


def _walk(formula):
    """Every Lit in a formula tree, by a plain recursive walk over its attributes."""
    from rudi_explain.rules.formula import Lit

    if isinstance(formula, Lit):
        return [formula]
    out = []
    for part in getattr(formula, "children", ()):  # And / Or; Const has none
        out += _walk(part)
    return out


def test_audit_header_holds_the_data_shape_params_and_seed(exp):
    when = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
    a = ws.audit(exp, when=when)
    seqs = exp.sequences
    assert a["n_users"] == len(seqs.users)
    assert a["n_events"] == int(np.diff(seqs.offsets).sum())
    assert set(a["columns"]["categorical"]) | set(a["columns"]["numerical"]) == set(seqs.columns)
    assert a["date"] == "2026-01-02T03:04:05+00:00"
    assert a["version"] == rx.__version__
    assert a["random_state"] == 3 and a["params"]["random_state"] == 3
    assert a["params"]["n_rules"] == 8 and a["params"]["student_params"] == {"epochs": 25}
    json.dumps(a, allow_nan=False)  # JSON-safe as it is
    assert ws.results_state(exp)["audit"]["params"] == a["params"]


def test_report_page_carries_the_audit_header_escaped_and_a_print_stylesheet(exp):
    text = report.report_html(exp, n_users=5)
    head = re.search(r'<table class="rx-audit-head".*?</table>', text, re.S)
    assert head, "no audit header"
    cells = dict(re.findall(r'<th scope="row">(.*?)</th><td>(.*?)</td>', head.group(0)))
    assert set(cells) == {"Date", "rudi-explain", "Data", "Model (teacher)", "Rules (student)", "Seed", "Parameters",
                          "Statistics"}  # given or searched (tests/views/test_statistics_given.py)
    assert cells["Seed"] == "3"
    assert cells["rudi-explain"] == rx.__version__
    assert f"{len(exp.sequences.users):,} users" in cells["Data"]
    params = json.loads(html.unescape(re.sub(r"</?code>", "", cells["Parameters"])))
    assert params["n_simulations"] == 40
    assert "@media print" in text


def test_audit_header_escapes_what_it_shows():
    a = {"date": "d", "version": "v", "n_users": 1, "n_events": 2, "teacher": "<b>t</b>", "score_unit": "raw",
         "student": "s", "random_state": None, "params": {"x": "</table><script>"},
         "columns": {"categorical": ["<img src=x>"], "numerical": []}}
    out = report.audit_header(a)
    assert "<script>" not in out and "<img" not in out and "<b>" not in out
    assert "&lt;img src=x&gt;" in out


def test_widget_answers_a_report_request_with_the_report_page(exp):
    from rudi_explain.views.widget import ExplanationWidget

    w = ExplanationWidget(exp)
    reply = w.answer_report(request=7)
    assert reply["type"] == "report" and reply["request"] == 7 and reply["ok"] is True
    page = reply["html"]
    assert page.startswith("<!DOCTYPE html>") and '<table class="rx-audit-head"' in page
    # the page embeds the same rules as the widget's state
    state = json.loads(re.search(r'<script type="application/json" id="rx-state">(.*?)</script>', page, re.S).group(1))
    # the cards' order: by spread (a rule's |weight|; a linear card's term |weight| x its clipped values' range)
    def spread(rule):
        if not isinstance(rule, LinearTerm):
            return abs(rule.weight)
        v = exp.result.values[~exp.is_test, rule.column]
        v = np.clip(np.where(np.isnan(v), rule.fill, v), rule.lo, rule.hi)
        return abs(rule.weight) * (v.max() - v.min())

    by_spread = sorted(range(len(exp.rules)), key=lambda k: (-spread(exp.rules[k]), k))
    assert [r["text"] for r in state["results"]["rules"]] == [str(exp.rules[k].text) for k in by_spread]
