"""After "Model attributions", the events table shows the attributed rows (issue 28, item 11), in Chromium.

A model that reads a user's last events attributes only the rows at the bottom of a long table. Over
the standalone report's page (the widget's own front end, its state marked as a notebook's so that
the attributions are offered), with its model stand-in answering the attributions request with a
given state (the report has no kernel to ask): the attributed values are
on the last rows only, and once they arrive the events box is scrolled so that the first attributed
row shows at its top; the panel names the rows and a button goes back to them.
"""

from __future__ import annotations

import pytest
from test_widget_progress_page import _with_state
from tiny import tiny_payments

from rudi_explain.views.report import report_html

# The stand-in answers an attributions request from window.rxAttribution (set by the test) when present.
ANSWER = """if (msg && msg.type === "attributions" && window.rxAttribution) {
      setTimeout(() => emit("msg:custom", { type: "attributions", request: msg.request, id: msg.id, ok: true,
                                            state: window.rxAttribution() }, []), 0);
      return;
    }
    """
HOOK = 'if (msg && msg.request !== undefined && msg.type !== "user") {'

# An attribution state over the shown rows: values on the last `n` only, as a model reading the last events.
STATE = """n => {
  const rows = document.querySelectorAll(".rx-events tbody tr").length;
  const values = Array.from({ length: rows }, (_, r) => (r >= rows - n ? ((r % 3) - 1) * 0.1 + 0.05 : null));
  window.rxAttribution = () => ({ available: true, method: "occlusion", values, feeds: values.map(() => false), columns: {},
    max_abs: 0.15, agreement: null, event_share: null, informative: true, lift: null, score: 0.5, note: null });
  return rows;
}"""


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    # the report leaves the attributions out (it has no model): shown here as in a notebook's widget
    html = _with_state(report_html(tiny_payments(200), n_users=2, max_events=100),
                       lambda state: state.update(standalone=False))
    assert html.count(HOOK) == 1
    path = tmp_path_factory.mktemp("attr") / "report.html"
    path.write_text(html.replace(HOOK, ANSWER + HOOK), encoding="utf-8")
    return path


def test_the_table_scrolls_to_the_first_attributed_row(chromium, report, shots):
    page = chromium.new_page(viewport={"width": 1100, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_default_timeout(10_000)
    try:
        page.goto(report.as_uri())
        page.locator("#rx-app[data-ready='1'] .rx-tab[data-tab='rules']").click(timeout=15_000)  # it opens on the Scorecard
        page.locator(".rx-card").first.wait_for(timeout=15_000)
        page.locator(".rx-tab[data-tab='user']").click()
        page.locator(".rx-top-users .rx-user-link").first.click()  # the top-scored users have 100 rows shown
        page.locator(".rx-user .rx-events").wait_for()
        rows = page.evaluate(f"({STATE})(12)")
        assert rows >= 60, rows
        box = page.locator(".rx-events-wrap")
        assert box.evaluate("b => b.scrollTop") == 0
        page.locator(".rx-attr-button").click()
        page.locator(".rx-attr-cell").first.wait_for()
        first = page.locator(".rx-events tbody tr").nth(rows - 12)
        assert first.locator("td.rx-attr-cell:not(.rx-attr-none)").count() == 1

        def shown(row) -> bool:  # the row's top lies inside the box, below its sticky header
            return row.evaluate("""r => { const b = r.closest('.rx-events-wrap').getBoundingClientRect(),
                                           t = r.getBoundingClientRect(), head = r.closest('table').querySelector('thead');
                                          return t.top >= b.top + head.offsetHeight - 1 && t.bottom <= b.bottom + 1; }""")

        assert shown(first), box.evaluate("b => [b.scrollTop, b.scrollHeight, b.clientHeight]")
        assert not shown(page.locator(".rx-events tbody tr").nth(rows - 13 - 12))  # scrolled, not a box that shows all
        assert f"rows {rows - 11} to {rows}" in page.locator(".rx-attr-rows").inner_text()
        shots(page, "attributed-rows", top=page.locator(".rx-attr-panel"))
        box.evaluate("b => { b.scrollTop = 0; }")
        assert not shown(first)
        page.locator(".rx-attr-goto").click()
        assert shown(first)
        assert not errors, errors
    finally:
        page.close()
