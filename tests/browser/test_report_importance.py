"""A global importance chart comes first (issue 28, item 17), in Chromium over the report's page.

Above the tabs, one bar per statistic the rules read, largest first, each as long as its share of the
rule score's spread on held-out users (the payload's, checked against a pandas reference in
tests/views/test_global_importance.py), with a caption that says what is measured; readable at 640 px.
"""

from __future__ import annotations

import pytest
from tiny import tiny_payments

from rudi_explain.views import payloads as ws
from rudi_explain.views.report import report_html


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    exp = tiny_payments(200)
    path = tmp_path_factory.mktemp("importance") / "report.html"
    path.write_text(report_html(exp, n_users=2), encoding="utf-8")
    return path, ws.global_importance(exp)


@pytest.mark.parametrize("width", [1100, 640])
def test_the_importance_chart_comes_first(chromium, report, shots, width):
    path, want = report
    page = chromium.new_page(viewport={"width": width, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(path.as_uri())
        page.locator("#rx-app[data-ready='1'] .rx-tab[data-tab='rules']").click(timeout=15_000)  # it opens on the Scorecard
        page.locator(".rx-card").first.wait_for(timeout=15_000)
        chart = page.locator(".rx-importance-chart")
        # before the tabs: the global picture first
        assert chart.evaluate("c => !!(c.compareDocumentPosition(document.querySelector('.rx-tabs')) & 4)")
        rows = chart.locator(".rx-imp-row")
        assert rows.count() == len(want["bars"]) >= 2
        assert [int(c) for c in rows.evaluate_all("rs => rs.map(r => r.dataset.column)")] == [b["column"] for b in want["bars"]]
        widths = chart.locator(".rx-imp-bar").evaluate_all("bs => bs.map(b => b.getBoundingClientRect().width)")
        track = chart.locator(".rx-imp-track").first.bounding_box()["width"]
        top = max(b["share"] for b in want["bars"])
        for w, b in zip(widths, want["bars"]):
            assert w == pytest.approx(track * b["share"] / top, abs=1.5), (w, b)
        assert chart.locator(".rx-imp-label").all_inner_texts() == [b["words"] for b in want["bars"]]
        caption = chart.locator(".rx-imp-caption").inner_text()
        assert "variance" in caption and f"{want['n_users']} held-out users" in caption
        sizes = chart.locator(".rx-imp-label, .rx-imp-share").evaluate_all(
            "es => es.map(e => parseFloat(getComputedStyle(e).fontSize))")
        assert min(sizes) >= 10
        assert chart.evaluate("c => c.scrollWidth <= c.clientWidth + 1")
        shots(page, f"importance-{width}", top=chart)
        assert not errors, errors
    finally:
        page.close()
