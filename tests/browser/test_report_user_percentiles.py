"""A user's teacher score is compared by percentile, not drawn on the rule-score axis (issue 28, item 8 and polish).

Over the standalone report's page (the widget's own front end) in Chromium: the waterfall holds the
rule score's steps only (no teacher line on its axis: a logit of -1.91 is not a rule score of -1.91);
beneath it a 0-100 strip marks the teacher's percentile beside the rule score's, each where its value
puts it; and no percentile is written "3.22th" (ordinals only for whole percentiles).
"""

from __future__ import annotations

import json
import re

import pytest
from tiny import tiny_payments

from rudi_explain.views.report import report_html


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    path = tmp_path_factory.mktemp("pct") / "report.html"
    path.write_text(report_html(tiny_payments(200), n_users=6), encoding="utf-8")
    return path


def test_the_teacher_percentile_sits_on_a_strip_beside_the_rule_percentile(chromium, report, shots):
    page = chromium.new_page(viewport={"width": 1100, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_default_timeout(10_000)
    try:
        page.goto(report.as_uri())
        page.locator("#rx-app[data-ready='1'] .rx-tab[data-tab='rules']").click(timeout=15_000)  # it opens on the Scorecard
        page.locator(".rx-card").first.wait_for(timeout=15_000)
        users = json.loads(page.locator("#rx-users").text_content())
        page.locator(".rx-tab[data-tab='user']").click()
        links = page.locator(".rx-top-users .rx-user-link")
        checked = 0
        for k in range(min(5, links.count())):
            uid = links.nth(k).get_attribute("data-user")
            links.nth(k).click()
            page.locator(f".rx-user[data-user='{uid}'] .rx-pct-strip").wait_for()
            d = users[uid]
            wf = page.locator(".rx-user .rx-waterfall")
            assert wf.locator(".rx-teacher-line, .rx-teacher-label").count() == 0
            assert "teacher" not in wf.text_content()
            strip = page.locator(".rx-user .rx-pct-strip")
            axis = strip.locator("line.rx-pct-axis").first.bounding_box()
            for cls, p in (("rx-teacher-line", d["percentile"]), ("rx-rules-pct-line", d["student_percentile"])):
                mark = strip.locator(f"line.{cls}")
                assert float(mark.get_attribute("data-percentile")) == pytest.approx(p)
                box = mark.bounding_box()
                at = (box["x"] + box["width"] / 2 - axis["x"]) / axis["width"]
                assert at == pytest.approx(p / 100, abs=0.01), (cls, at, p)
            text = page.locator(".rx-user").inner_text()
            assert re.search(r"\d\.\d+(st|nd|rd|th)\b", text) is None, re.findall(r"\S+ percentile", text)
            fractional = (round(d["percentile"], 1) % 1) != 0
            assert ("teacher score, raw (percentile " in text) == fractional, text[:300]
            checked += 1
        assert checked >= 3
        shots(page, "user-percentile-strip", top=page.locator(".rx-user"))
        assert not errors, errors
    finally:
        page.close()
