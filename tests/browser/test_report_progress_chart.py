"""The training chart shows once it has points; during the search, one line says when it comes (issue 28, polish).

The standalone report runs the widget's own ES module over a state it embeds; here that state is
replaced by progress states (as tests/browser/test_widget_progress_page.py does): a search with no
chart points draws no chart frame but the line; a student stage with epochs draws the chart and no
line; a run stopped before training shows neither.
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


def _with_state(html: str, **fields) -> str:
    match = STATE.search(html)
    state = json.loads(match.group(2)) | fields
    text = json.dumps(state).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return html[:match.start(2)] + text + html[match.end(2):]


SEARCH = {"status": "running", "stage": "search", "step": 1, "total": 4, "fraction": 0.25,
          "message": "statistic 2/4", "elapsed": 41.0}
STUDENT = SEARCH | {"stage": "student", "step": 3, "total": 40, "fraction": 0.075, "message": "epoch 3/40"}
STOPPED = SEARCH | {"status": "cancelled", "ended": "cancelled", "message": "cancelled during the search stage"}
EPOCHS = [{"epoch": e, "loss": 1.0 / e, "fidelity": 0.6 + 0.05 * e} for e in (1, 2, 3)]


@pytest.mark.parametrize(("name", "status", "progress", "chart", "drawn", "note"), [
    ("search", "running", SEARCH, [], False, True),
    ("student", "running", STUDENT, EPOCHS, True, False),
    ("stopped", "cancelled", STOPPED, [], False, False),
])
def test_the_chart_shows_once_it_has_points(chromium, tmp_path, page_html, shots, name, status, progress, chart,
                                            drawn, note):
    path = tmp_path / f"{name}.html"
    path.write_text(_with_state(page_html, status=status, results={}, chart=chart, progress=progress), encoding="utf-8")
    page = chromium.new_page(viewport={"width": 1100, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(path.as_uri())
        page.locator("#rx-app[data-ready='1'] .rx-progress").wait_for(timeout=15_000)
        progress_view = page.locator(".rx-progress")
        assert progress_view.locator("svg.rx-chart").count() == int(drawn)
        assert progress_view.locator(".rx-chart-note").count() == int(note)
        if drawn:
            assert progress_view.locator("svg.rx-chart path.rx-line-loss").get_attribute("d").count("L") == 2
        if note:
            assert "appears with the student's first epoch" in progress_view.locator(".rx-chart-note").inner_text()
            shots(page, "progress-search-no-empty-chart")
        assert not errors, errors
    finally:
        page.close()
