"""The standalone report offers no view that can only answer "no kernel" (issue 28, item 13), in Chromium.

The report has no model behind it: the rule-model agreement, model attributions, the counterfactual
and the what-if controls are left out of its page (its header says they are in the notebook's
widget), and no button left in any tab answers "this report has no kernel". The same front end in a
notebook (the state without the report's mark) still shows them.
"""

from __future__ import annotations

import pytest
from test_widget_progress_page import _with_state
from tiny import tiny_payments

from rudi_explain.views.report import report_html

ASK_THE_MODEL = ".rx-agree-panel, .rx-agree-button, .rx-attr-panel, .rx-attr-button, .rx-cf, .rx-cf-title, .rx-whatif"


@pytest.fixture(scope="module")
def page_html():
    return report_html(tiny_payments(200), n_users=2)


def _open(chromium, tmp_path, html: str):
    path = tmp_path / "report.html"
    path.write_text(html, encoding="utf-8")
    page = chromium.new_page(viewport={"width": 1100, "height": 900}, accept_downloads=True)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_default_timeout(10_000)
    page.goto(path.as_uri())
    page.locator("#rx-app[data-ready='1'] .rx-tab[data-tab='rules']").click(timeout=15_000)  # it opens on the Scorecard
    page.locator(".rx-card").first.wait_for(timeout=15_000)
    return page, errors


def _each_view(page):
    for tab in ("scorecard", "rules", "effects", "thresholds", "statistics", "user"):
        page.locator(f".rx-tab[data-tab='{tab}']").click()
        if tab == "user":
            page.locator(".rx-top-users .rx-user-link").first.click()
            page.locator(".rx-user").wait_for()
        yield tab


def test_the_report_leaves_out_what_needs_the_model(chromium, tmp_path, page_html, shots):
    page, errors = _open(chromium, tmp_path, page_html)
    try:
        assert "in the notebook's widget" in page.locator(".rx-report-head").inner_text()
        app = page.locator("#rx-app")
        for tab in _each_view(page):
            assert app.locator(ASK_THE_MODEL).count() == 0, tab
            # every button left in the panel does something here: none answers "no kernel"
            buttons = app.locator(".rx-panel button.rx-button")
            for k in range(buttons.count()):
                if buttons.nth(k).is_visible():
                    buttons.nth(k).click()
            assert "no kernel" not in app.inner_text(), tab
            shots(page, f"report-no-kernel-views-{tab}", top=app)
        assert not errors, errors
    finally:
        page.close()


def test_a_notebook_widget_still_offers_them(chromium, tmp_path, page_html):
    page, errors = _open(chromium, tmp_path, _with_state(page_html, lambda state: state.pop("standalone")))
    try:
        app = page.locator("#rx-app")
        assert app.locator(".rx-agree-button").count() == 1
        views = dict.fromkeys(_each_view(page))
        assert "user" in views
        assert app.locator(".rx-attr-button").count() == 1 and app.locator(".rx-cf").count() == 1
        page.locator(".rx-tab[data-tab='thresholds']").click()
        assert app.locator(".rx-whatif").count() >= 1
        assert not errors, errors
    finally:
        page.close()
