"""The User tab offers users beyond the top 15 (issue 28, item 19), in the standalone report too.

Over the standalone report's page (the widget's own front end) in Chromium: the lowest-scored users
are listed and open; a teacher percentile typed in opens the user nearest it (the payload's pick,
whose percentile is said beside); "a random user" opens the seeded random users in turn; a percentile
whose user the report does not embed says so instead of showing nothing.
"""

from __future__ import annotations

import json

import pytest
from tiny import tiny_payments

from rudi_explain.views import payloads as ws
from rudi_explain.views.report import report_html


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    exp = tiny_payments(300)
    path = tmp_path_factory.mktemp("picks") / "report.html"
    path.write_text(report_html(exp, n_users=0), encoding="utf-8")
    return path, ws.user_picks(exp)


def test_lowest_percentile_and_random_users_open_from_the_user_tab(chromium, report, shots):
    path, picks = report
    page = chromium.new_page(viewport={"width": 1100, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_default_timeout(10_000)
    try:
        page.goto(path.as_uri())
        page.locator("#rx-app[data-ready='1'] .rx-tab[data-tab='rules']").click(timeout=15_000)  # it opens on the Scorecard
        page.locator(".rx-card").first.wait_for(timeout=15_000)
        embedded = set(json.loads(page.locator("#rx-users").text_content()))
        page.locator(".rx-tab[data-tab='user']").click()

        bottom = page.locator(".rx-bottom-users .rx-user-link")
        assert [bottom.nth(k).get_attribute("data-user") for k in range(bottom.count())] == \
            [u["id"] for u in picks["bottom"]]
        bottom.first.click()
        page.locator(f".rx-user[data-user='{picks['bottom'][0]['id']}']").wait_for()

        # a percentile between two embedded ones picks the nearest user (rounded to a whole percentile)
        for typed, q in (("50", 50), ("89.6", 90), ("0", 0), ("100", 100)):
            want = picks["by_percentile"][q]
            page.locator(".rx-pick-pct-input").fill(typed)
            page.locator(".rx-pick-pct-input").press("Enter")
            page.locator(f".rx-user[data-user='{want['id']}']").wait_for()
            assert want["id"] in page.locator(".rx-pick-note").inner_text()
        shots(page, "user-picks", top=page.locator(".rx-user-picks"))

        # one not embedded: said, not silent
        missing = next(q for q in range(101) if picks["by_percentile"][q]["id"] not in embedded)
        page.locator(".rx-pick-pct-input").fill(str(missing))
        page.locator(".rx-pick-pct-input").press("Enter")
        page.locator(".rx-user-error").wait_for()
        assert "is not in this report" in page.locator(".rx-user-error").inner_text()

        page.locator(".rx-pick-pct-input").fill("140")
        page.locator(".rx-pick-pct-show").click()
        assert "from 0 to 100" in page.locator(".rx-pick-note").inner_text()

        seen = []
        for k in range(3):
            page.locator(".rx-pick-random").click()
            uid = picks["random"][k]["id"]
            page.locator(f".rx-user[data-user='{uid}']").wait_for()
            seen.append(uid)
        assert page.locator(".rx-pick-random").inner_text() == "Another random user"
        assert len(set(seen)) == 3
        assert not errors, errors
    finally:
        page.close()
