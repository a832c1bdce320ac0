"""A shortened value opens whole on a click (issue "bad input, round three", item 6), in Chromium from file://.

A category value of 20,000 characters is shown shortened in every view (``abc…xyz``); the report carries
each whole value once, and a click on the shortened form shows it under it (scrollable), a second click
hides it. Checked in the Thresholds table, the rule cards and a user's events.
"""

from __future__ import annotations

import pytest
from views.test_long_values import LONG, _explanation


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    exp = _explanation(LONG)
    path = tmp_path_factory.mktemp("report") / "report.html"
    exp.to_html(path, n_users=5)
    holder = next(str(u) for u in exp.sequences.users[:80] if (exp.user(u).events["merchant_category"] == LONG).any())
    return path, holder


def _open_whole(page, scope) -> None:
    link = page.locator(f"{scope} .rx-full").first
    link.wait_for(timeout=5_000)
    box = link.locator("xpath=following-sibling::*[1]")
    assert box.is_hidden()
    link.click()
    assert box.is_visible() and link.get_attribute("aria-expanded") == "true"
    whole = box.text_content()
    assert whole == LONG or LONG in whole, len(whole)
    link.click()
    assert box.is_hidden()


def test_a_shortened_value_opens_whole(chromium, shots, report):
    path, holder = report
    page = chromium.new_page(viewport={"width": 1100, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_default_timeout(10_000)
    try:
        page.goto(path.as_uri())
        page.locator("#rx-app[data-ready='1'] .rx-tab[data-tab='rules']").click(timeout=15_000)  # it opens on the Scorecard
        page.locator(".rx-card").first.wait_for(timeout=15_000)
        _open_whole(page, ".rx-card")  # a rule card's text; the click stays on the value, the card stays as it was
        assert page.locator(".rx-card").first.get_attribute("aria-expanded") != "true"
        page.locator(".rx-tab[data-tab='thresholds']").click()
        _open_whole(page, ".rx-panel")
        page.locator(".rx-tab[data-tab='user']").click()
        page.locator(".rx-panel input").first.fill(holder)
        page.locator(".rx-panel input").first.press("Enter")
        page.locator(f".rx-user[data-user='{holder}']").wait_for(timeout=5_000)
        _open_whole(page, ".rx-user")
        shots(page, "report-full-value")
        assert not errors, errors
    finally:
        page.close()
