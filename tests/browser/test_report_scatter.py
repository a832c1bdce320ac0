"""The fidelity scatter: percentiles, a diagonal, hover and click to open a user (issue 28, item 18), in Chromium.

Over the standalone report's page (the widget's own front end): each held-out user drawn sits at its
teacher and rule-score percentiles (the payload's), beside a diagonal from (0, 0) to (100, 100); its
hover names the user and both scores; a click opens that user's drill-down; the headline rank
correlation is said with what it measures and how the summary's fidelity differs.
"""

from __future__ import annotations

import json

import pytest
from tiny import tiny_payments

from rudi_explain.views import payloads as ws
from rudi_explain.views.report import report_html


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    exp = tiny_payments(200)
    path = tmp_path_factory.mktemp("scatter") / "report.html"
    path.write_text(report_html(exp, n_users=40), encoding="utf-8")
    return path, ws.faithfulness(exp)


def test_scatter_points_open_their_users(chromium, report, shots):
    path, f = report
    page = chromium.new_page(viewport={"width": 1100, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_default_timeout(10_000)
    try:
        page.goto(path.as_uri())
        page.locator("#rx-app[data-ready='1'] .rx-tab[data-tab='rules']").click(timeout=15_000)  # it opens on the Scorecard
        page.locator(".rx-card").first.wait_for(timeout=15_000)
        users = json.loads(page.locator("#rx-users").text_content())
        page.locator(".rx-tab[data-tab='effects']").click()
        chart = page.locator("svg.rx-scatter")
        frame = chart.locator("rect.rx-chart-frame").bounding_box()
        diagonal = chart.locator("line.rx-diagonal")
        x, y, w, h = (float(chart.locator("rect.rx-chart-frame").get_attribute(k)) for k in ("x", "y", "width", "height"))
        # from the frame's bottom left (0, 0) to its top right (100, 100)
        assert [float(diagonal.get_attribute(a)) for a in ("x1", "y1", "x2", "y2")] == pytest.approx([x, y + h, x + w, y])
        points = chart.locator("circle.rx-scatter-point")
        assert points.count() == len(f["points"])
        for k in (0, len(f["points"]) // 2, len(f["points"]) - 1):
            p, c = f["points"][k], points.nth(k)
            assert c.get_attribute("data-user") == p["id"]
            box = c.bounding_box()
            cx, cy = box["x"] + box["width"] / 2 - frame["x"], box["y"] + box["height"] / 2 - frame["y"]
            assert cx / frame["width"] == pytest.approx(p["teacher_pct"] / 100, abs=0.01)
            assert 1 - cy / frame["height"] == pytest.approx(p["student_pct"] / 100, abs=0.01)
            hover = c.locator("title").text_content()
            assert hover.startswith(f"user {p['id']}: teacher ") and "rules " in hover
        help_text = page.locator(".rx-effects .rx-help").first.inner_text()
        assert "Spearman" in help_text and "held-out fidelity counts pairs" in help_text
        shots(page, "scatter", top=chart)
        k = next(k for k, p in enumerate(f["points"]) if p["id"] in users)
        uid = f["points"][k]["id"]
        points.nth(k).click()
        page.locator(f".rx-user[data-user='{uid}']").wait_for()
        assert page.locator(".rx-tab[data-tab='user']").get_attribute("aria-selected") == "true"
        assert not errors, errors
    finally:
        page.close()
