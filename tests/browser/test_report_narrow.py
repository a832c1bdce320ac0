"""Charts and tables at 640 px keep their text readable and no column cut (issue 28, item 4), in Chromium.

The standalone report runs the widget's own ES module (the front end JupyterLab and Notebook 7 load),
so the narrow layout is checked over its page: at a 640 px window, and with the view as narrow as a
640 px JupyterLab leaves it beside its file browser (300 px). Every chart's text in every tab (the
curve, the scatter, the effect steps, the histograms, a user's waterfall) must render at 10 px or more
(its computed font size times the SVG's scale on screen), and every table must either fit in the widget
or sit in a box that scrolls sideways (no column cut off out of reach).
"""

from __future__ import annotations

import pytest
from test_widget_progress_page import _with_state
from tiny import tiny_payments

from rudi_explain.views.report import report_html

MIN_PX = 10.0

# Each visible SVG text's rendered size: computed font size x the SVG's scale on the screen (the length of
# the screen matrix's first column, so a rotated axis title counts too).
TEXT_SIZES = """
(root) => [...root.querySelectorAll("svg text")].filter((t) => t.getClientRects().length && t.textContent.trim())
  .map((t) => ({ px: parseFloat(getComputedStyle(t).fontSize) * Math.hypot(t.getScreenCTM().a, t.getScreenCTM().b),
                 text: t.textContent, chart: t.ownerSVGElement.getAttribute("class") }))
"""

# A table is cut when part of it lies past the widget's right edge with no sideways scroll to reach it:
# its nearest ancestor that clips (overflow-x not visible) must scroll, and must itself fit in the widget.
CUT_TABLES = """
(root) => {
  const r = root.getBoundingClientRect(), out = [];
  for (const t of root.querySelectorAll("table")) {
    if (!t.getClientRects().length) continue;
    let box = t.parentElement;
    while (box && box !== root && getComputedStyle(box).overflowX === "visible") box = box.parentElement;
    const scrolls = box && box !== root && ["auto", "scroll"].includes(getComputedStyle(box).overflowX);
    const outer = scrolls ? box.getBoundingClientRect() : t.getBoundingClientRect();
    if (outer.right > r.right + 0.5 || (!scrolls && t.scrollWidth > t.clientWidth + 1))
      out.push(`${t.className}: right ${Math.round(outer.right)} > ${Math.round(r.right)} (scrolls: ${!!scrolls})`);
  }
  if (root.scrollWidth > root.clientWidth + 1) out.push(`the widget itself: ${root.scrollWidth} > ${root.clientWidth}`);
  return out;
}
"""


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    path = tmp_path_factory.mktemp("narrow") / "report.html"
    def with_curve(state):  # the tiny explanation is not pruned: a curve as a pruned one has it
        state["results"]["curve"] = [{"n_rules": k, "fidelity_test": 0.8 + 0.01 * k, "fidelity_valid": 0.79 + 0.01 * k,
                                      "default": k == 6, "current": k == 6} for k in range(1, 9)]

    path.write_text(_with_state(report_html(tiny_payments(200), n_users=2), with_curve), encoding="utf-8")
    return path


def _views(page):
    """Every tab, the compact rule table, and a user opened: yields each view's name once drawn."""
    app = page.locator("#rx-app")
    app.locator(".rx-tab[data-tab='scorecard']").click()
    app.locator(".rx-scorecard .rx-sc-chart").first.wait_for()
    yield "scorecard"
    app.locator(".rx-tab[data-tab='rules']").click()
    yield "rules"
    app.locator(".rx-rule-compact").click()
    app.locator(".rx-rule-table").wait_for()
    yield "rules-compact"
    for tab in ("effects", "thresholds", "statistics"):
        app.locator(f".rx-tab[data-tab='{tab}']").click()
        yield tab
    app.locator(".rx-tab[data-tab='user']").click()
    app.locator(".rx-top-users .rx-user-link").first.click()
    app.locator(".rx-user .rx-waterfall").wait_for()
    yield "user"


@pytest.mark.parametrize("width, app_width", [(640, None), (640, 300)])
def test_chart_text_stays_readable_and_tables_are_not_cut(chromium, report, shots, width, app_width):
    page = chromium.new_page(viewport={"width": width, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_default_timeout(10_000)
    try:
        page.goto(report.as_uri())
        if app_width:  # the widget as narrow as JupyterLab leaves it at 640 px with its file browser open
            page.add_style_tag(content=f"#rx-app {{ width: {app_width}px; }}")
        page.locator("#rx-app[data-ready='1'] .rx-tab[data-tab='rules']").click(timeout=15_000)  # it opens on the Scorecard
        page.locator(".rx-card").first.wait_for(timeout=15_000)
        root = page.locator("#rx-app .rx-root")
        small, cut, charts = [], [], set()
        for view in _views(page):
            sizes = root.evaluate(f"({TEXT_SIZES})")
            charts |= {s["chart"].split()[1] for s in sizes}
            small += [f"{view}: {s['chart']} '{s['text']}' {s['px']:.1f} px" for s in sizes if s["px"] < MIN_PX - 0.05]
            cut += [f"{view}: {c}" for c in root.evaluate(f"({CUT_TABLES})")]
            shots(page, f"narrow-{width}-{app_width or 'full'}-{view}")
        assert {"rx-curve", "rx-effect", "rx-scatter", "rx-hist", "rx-waterfall"} <= charts, charts
        assert not small, small[:12]
        assert not cut, cut
        assert not errors, errors
    finally:
        page.close()
