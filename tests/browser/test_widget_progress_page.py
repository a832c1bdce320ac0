"""The widget's progress and summary lines, drawn in Chromium from given states (issue 28, polish and item 15).

The standalone report runs the widget's own ES module over a state it embeds; here that state is
replaced by the ones under test, so the front end is checked alone, in about a second a page:

* a cancelled run says "cancelled" once ("cancelled · during the search stage; …");
* the stage times are listed in the order the stages run, also when the state's keys come
  sorted (a saved notebook's widget state is written with sorted keys);
* the time left is the one the job gives (``seconds_left``), and none when it gives none.
"""

from __future__ import annotations

import json
import re

import pytest
from tiny import tiny_payments

from rudi_explain.views.report import report_html

STATE = re.compile(r'(<script type="application/json" id="rx-state">)(.*?)(</script>)', re.S)


@pytest.fixture(scope="module")
def page_html():
    return report_html(tiny_payments(200), n_users=2)


def _with_state(html: str, change) -> str:
    """The report with its embedded widget state changed by ``change(state)``."""
    match = STATE.search(html)
    state = json.loads(match.group(2))
    change(state)
    text = json.dumps(state).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return html[:match.start(2)] + text + html[match.end(2):]


def _open(chromium, tmp_path, html: str, name: str):
    path = tmp_path / f"{name}.html"
    path.write_text(html, encoding="utf-8")
    page = chromium.new_page(viewport={"width": 1100, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    page.locator("#rx-app[data-ready='1']").wait_for(timeout=15_000)
    assert not errors, errors
    return page


def _progress(**fields) -> dict:
    base = {"stage": "search", "step": 1, "total": 4, "fraction": 0.25, "message": "statistic 2/4",
            "elapsed": 41.0}
    return base | fields


def test_a_cancelled_run_says_cancelled_once(chromium, tmp_path, page_html, shots):
    stopped = "cancelled during the search stage; the 1 statistic found is kept (exp.statistics)"

    def cancelled(state):
        state.update(status="cancelled", results={}, chart=[],
                     progress=_progress(status="cancelled", ended="cancelled", message=stopped,
                                        found=["Select(amount) | Mean"]))

    page = _open(chromium, tmp_path, _with_state(page_html, cancelled), "cancelled")
    try:
        line = page.locator(".rx-progress .rx-message").inner_text()
        assert line.startswith("cancelled · during the search stage; the 1 statistic found is kept"), line
        assert line.count("cancelled") == 1, line
        shots(page, "progress-cancelled")
    finally:
        page.close()


def test_stage_times_read_in_the_order_the_stages_run(chromium, tmp_path, page_html):
    def sorted_keys(state):  # as a saved notebook holds them
        state["results"]["summary"]["seconds"] = {"evaluate": 0.5, "literals": 0.25, "pruning": 2.5, "search": 30.0,
                                                  "student": 12.0, "teacher": 1.0, "total": 46.25}

    page = _open(chromium, tmp_path, _with_state(page_html, sorted_keys), "seconds")
    try:
        line = page.locator(".rx-summary-line").filter(has_text="time ").inner_text()
        names = re.findall(r"(\w+) [\d.]+ s", line.rsplit("(", 1)[-1])
        assert names == ["teacher", "search", "literals", "student", "pruning", "evaluate"], line
    finally:
        page.close()


@pytest.mark.parametrize("given, shown", [(107.0, "about 2 min left"), (None, None), (40.0, "about 40 s left")])
def test_the_time_left_is_the_one_the_job_gives(chromium, tmp_path, page_html, given, shown):
    def running(state):
        # 41 % of the run done after 41 s: the stage weights alone would guess about 60 s
        state.update(status="running", results={}, chart=[],
                     progress=_progress(status="running", fraction=0.6, seconds_left=given))

    page = _open(chromium, tmp_path, _with_state(page_html, running), f"eta-{given}")
    try:
        eta = page.locator(".rx-progress .rx-eta")
        if shown is None:
            assert eta.count() == 0, eta.inner_text()
        else:
            assert eta.inner_text().strip() == f"· {shown}"
            assert float(eta.get_attribute("data-seconds")) == given
    finally:
        page.close()
