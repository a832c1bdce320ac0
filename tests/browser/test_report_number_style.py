"""Weights and points in one style in the widget, as in the static copy (issue 28, polish).

Over the standalone report's page (the widget's own front end) in Chromium, over seeds: every rule
card's weight, a user's fired rules, the waterfall's steps and the rule score read exactly as
``static_view.points_text`` writes them (3 significant digits, at most 3 decimals, the ASCII minus);
no U+2212 and no exponent anywhere in the views; a tiny weight (8.86e-4) reads "-0.001", not "-8.86e-4".
"""

from __future__ import annotations

import json
import re

import pytest
from tiny import tiny_payments

from rudi_explain.views.report import report_html
from rudi_explain.views.static_view import points_text


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    folder = tmp_path_factory.mktemp("numbers")
    paths = []
    for seed in (0, 1, 2):
        path = folder / f"report-{seed}.html"
        path.write_text(report_html(tiny_payments(200, random_state=seed), n_users=0), encoding="utf-8")
        paths.append(path)
    # one weight made tiny in the page's payload: the case that read "-8.86e-4" beside "-0.001"
    text = paths[0].read_text(encoding="utf-8")
    head, _, rest = text.partition('<script type="application/json" id="rx-state">')
    payload, _, tail = rest.partition("</script>")
    state = json.loads(payload)
    state["results"]["rules"][-1]["weight"] = -8.86e-4
    tiny = folder / "tiny-weight.html"
    tiny.write_text(head + '<script type="application/json" id="rx-state">' + json.dumps(state).replace("<", "\\u003c")
                    + "</script>" + tail, encoding="utf-8")
    # and large ones (three significant digits, not every digit; an exponent only past 1e15) and halves (the
    # widget's toLocaleString rounds the shortest decimal away from zero: 1.125 reads +1.13, 1.005 +1.01)
    rules = state["results"]["rules"]
    state["results"]["rules"] = [dict(rules[k % len(rules)], weight=w) for k, w in enumerate(LARGE + HALVES)]
    large = folder / "large-weights.html"
    large.write_text(head + '<script type="application/json" id="rx-state">' + json.dumps(state).replace("<", "\\u003c")
                     + "</script>" + tail, encoding="utf-8")
    return paths, tiny, large


#: weights whose every digit was written ("+1,234,567"), a tie at the third digit, and one past 1e15
LARGE = (1234567.89, -1245000.0, 1235.0, -1.2345e300, 999.96)
#: halves at the last digit shown, where Python's f"{x:.2f}" and the widget's toLocaleString had parted
HALVES = (1.005, 1.125, -0.0625, 12.35, -12.25, 2.5, 0.1115, 1.0005, 999.5, 0.00045)


def _texts(locator) -> list[str]:
    return [t.strip() for t in locator.all_inner_texts()]


def test_weights_and_points_read_alike_everywhere(chromium, reports, shots):
    reports, tiny, large = reports
    page = chromium.new_page(viewport={"width": 1100, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_default_timeout(10_000)
    try:
        for path in reports:
            page.goto(path.as_uri())
            page.locator("#rx-app[data-ready='1'] .rx-tab[data-tab='rules']").click(timeout=15_000)  # it opens on the Scorecard
            page.locator(".rx-card").first.wait_for(timeout=15_000)
            state = json.loads(page.locator("#rx-state").text_content())
            users = json.loads(page.locator("#rx-users").text_content())
            cards = state["results"]["rules"]
            assert _texts(page.locator(".rx-card .rx-weight")) == [points_text(c["weight"]) for c in cards]
            for tab in ("rules", "effects", "thresholds", "statistics"):
                page.locator(f".rx-tab[data-tab='{tab}']").click()
                text = page.locator("#rx-app").inner_text()
                assert "\u2212" not in text, tab
                assert not re.search(r"\d[eE][-+]?\d", text), (tab, re.findall(r"\S*\d[eE][-+]?\d\S*", text))
            page.locator(".rx-tab[data-tab='user']").click()
            for uid in [u["id"] for u in state["results"]["top_users"][:3]]:
                d = users[uid]
                page.locator(f".rx-top-users .rx-user-link[data-user='{uid}']").click()
                page.locator(f".rx-user[data-user='{uid}'] .rx-waterfall").wait_for()
                want = [points_text(c["weight"]) for c in d["contributions"]]
                assert _texts(page.locator(".rx-fired-rule .rx-weight")) == want
                labels = page.locator(".rx-user .rx-waterfall text").all_text_contents()
                # the step labels: the intercept, each fired rule's weight, the rule score
                assert [points_text(d["intercept"], sign=False), *want, points_text(d["student"], sign=False)] == \
                    [t for t in labels if re.fullmatch(r"[+-]?[\d,.]+", t)]
                assert page.locator(".rx-rule-score").inner_text() == points_text(d["student"], sign=False)
                text = page.locator("#rx-app").inner_text()
                assert "\u2212" not in text and not re.search(r"\d[eE][-+]?\d", text)
        shots(page, "number-style-user", top=page.locator(".rx-user"))
        # a tiny weight (the page's payload edited): no exponent, as the static copy writes it
        page.goto(tiny.as_uri())
        page.locator("#rx-app[data-ready='1'] .rx-tab[data-tab='rules']").click(timeout=15_000)  # it opens on the Scorecard
        page.locator(".rx-card").first.wait_for(timeout=15_000)
        card = page.locator(".rx-card").filter(has=page.locator(".rx-weight", has_text="-0.001"))
        assert card.count() == 1
        assert "lowers the score by 0.001" in card.inner_text()
        assert "e-4" not in page.locator("#rx-app").inner_text()
        # large weights (the payload edited again): as points_text writes them
        page.goto(large.as_uri())
        page.locator("#rx-app[data-ready='1'] .rx-tab[data-tab='rules']").click(timeout=15_000)
        page.locator(".rx-card").first.wait_for(timeout=15_000)
        # the cards come in the widget's own order: each weight's text once
        shown = sorted(_texts(page.locator(".rx-card .rx-weight")))
        assert [points_text(w) for w in LARGE] == ["+1,230,000", "-1,250,000", "+1,240", "-1.23e+300", "+1,000"]
        assert [points_text(w) for w in HALVES] == \
            ["+1.01", "+1.13", "-0.063", "+12.4", "-12.3", "+2.50", "+0.112", "+1.00", "+1,000", "+0.0005"]
        assert shown == sorted(points_text(w) for w in LARGE + HALVES), shown
        assert not errors, errors
    finally:
        page.close()
