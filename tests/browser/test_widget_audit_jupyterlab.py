"""The audit views of the widget in a real JupyterLab (issue 16): attributions, counterfactual, what-if.

One notebook explains demo payments with a small demo GRU (so the widget can
ask the model), on three statistics given (``statistics=``, ``search=False``) that each read only some
of a user's events. In the drill-down the test presses "Model attributions" and
sees the strip (one cell per event row, bars signed as the kernel's figures)
and the agreement the kernel computes; it sees the user's counterfactual. In
the Thresholds tab it types a threshold from the keyboard and sees the
held-out fidelity change to what ``exp.with_threshold`` gives in the kernel,
then Reset (and Escape) bring back the explained figures. In the Summary it
asks for the rule-model agreement on held-out users and sees the histogram,
deciles, mean and counts ``exp.agreement()`` gives in the kernel. A cell
displays ``rx.compare`` of two seeds: its tables scroll in their boxes at
640 px, its text and status pills keep their contrast. Light and dark
theme: screenshots under test-output/screenshots/audit-*.png, and the WCAG
contrast of the new text and bars.
"""

from __future__ import annotations

import pytest

nbformat = pytest.importorskip("nbformat", reason="browser test packages are missing: pip install -e '.[test]'")

from lab import open_notebook, run_cell, wait_file, write_notebook  # noqa: E402
from test_widget_layout_jupyterlab import CONTRAST, _check_narrow, _theme, close_light  # noqa: E402

SETUP = """\
import json, numpy as np, rudi_explain as rx
from rudi_explain.views import payloads as ws
demo = rx.datasets.make_payments(600, random_state=0)
history = rx.datasets.make_payments(600, random_state=1)
gru = rx.datasets.train_demo_gru(history.sequences(), history.labels, hidden_size=16, epochs=2, random_state=0)
# statistics that read some of a user's events (not all), so the rule-model agreement is informative:
# every user is in a band of every card, and a card on all events would read them all
exp = rx.explain(gru, demo.sequences(), labels=demo.labels, background="thread", n_rules=8, random_state=0,
                 statistics=["Select(amount) | RetainBy(merchant_category=gambling) | Sum",
                             "Select(amount) | RetainBy(channel=atm) | Max",
                             "Select(hour) | RetainBy(channel=online) | Mean"], search=False)
exp.widget()"""

# The kernel's figures for the page to show: a user whose fired rules read several of their events,
# that user's attributions, and a threshold that changes the held-out fidelity, moved for good.
EXPECTED = """\
exp.wait(timeout=300)
seqs = exp.sequences
pool = [u for u in seqs.users[np.argsort(-exp.teacher_scores.to_numpy())][:60] if 8 <= len(seqs.events(u)) <= 60]
# a user whose fired rules read some of their events, not all: the strip then tells the two apart
uid, a = next(((u, s) for u in pool for s in [ws.attribution_state(exp, u)]
               if s["agreement"] is not None and 0.15 < s["event_share"] < 0.85), (pool[0], ws.attribution_state(exp, pool[0])))
th = [x for t in ws.thresholds(exp) for x in t["thresholds"] if x["in_rules"]][0]
lit = th["literal"]
v = exp.result.values[~exp.is_test, exp.literals.column[lit]]
value = max((float(np.round(np.nanpercentile(v, q), 3)) for q in (25, 50, 75)),
            key=lambda x: abs(ws.what_if(exp, lit, x)["fidelity_test_moved"] - ws.what_if(exp, lit, x)["fidelity_test"]))
cf = exp.user(uid).counterfactual(50, "below")
if cf.found and not len(cf.changes):  # already below the median: the widget shows the move above it
    cf = exp.user(uid).counterfactual(50, "above")
exp.to_html("audit-report.html")
json.dump({"user": str(uid), "n_events": len(seqs.events(uid)), "values": a["values"], "agreement": a["agreement"],
           "informative": a["informative"],
           "literal": lit, "input_text": th["input_text"], "value": value,
           "unit": exp.literals.output_unit[exp.literals.column[lit]],
           "before": exp.report()["fidelity_test"], "after": exp.with_threshold(lit, value).report()["fidelity_test"],
           "cf": cf.to_dict()}, open("audit.json", "w"))
print("EXPECTED", uid)"""

# The Summary's agreement on held-out users as the kernel computes it (no time budget: the whole sample).
AGREEMENT = """\
s = exp.agreement(time_budget=None)
json.dump(s.to_dict(), open("agree.json", "w"))
print("AGREEMENT", s)"""

# Two seeds compared, shown by the notebook's HTML view (a name to escape).
COMPARE = """\
exp_b = rx.explain(gru, demo.sequences(), labels=demo.labels, background=False, n_stats=4, n_rules=8,
                   n_simulations=40, random_state=1, progress=lambda e: None)
cmp = rx.compare(exp, exp_b, names=("seed 0", "seed <1>"))
json.dump({"counts": cmp.counts(), "n_cards": len(cmp.cards), "by_card": cmp.by_card}, open("compare.json", "w"))
cmp"""

# Text colour against what it shows on, and an HTML bar's fill against its cell (CONTRAST walks from
# the element itself, which for a filled box is the box).
BAR_CONTRAST = """
(el) => {
  const rgba = (c) => { const v = c.match(/[\\d.]+/g).map(Number); return [v[0], v[1], v[2], v.length > 3 ? v[3] : 1]; };
  const over = (top, under) => [0, 1, 2].map((i) => top[i] * top[3] + under[i] * (1 - top[3])).concat(1);
  const layers = [];
  for (let n = el.parentElement; n && n.nodeType === 1; n = n.parentElement) {
    const b = rgba(getComputedStyle(n).backgroundColor);
    if (b[3] > 0) layers.push(b);
    if (b[3] >= 1) break;
  }
  let bg = [255, 255, 255, 1];
  for (const l of layers.reverse()) bg = over(l, bg);
  const fg = over(rgba(getComputedStyle(el).backgroundColor), bg);
  const lum = (c) => { const [r, g, b] = c.slice(0, 3).map((x) => { x /= 255; return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
  return { ratio: Math.round(100 * (a + 0.05) / (b + 0.05)) / 100 };
}
"""


def _fmt3(x: float) -> str:
    """The page's fmt(x, 3) for a fidelity (three significant digits)."""
    return f"{float(f'{x:.3g}'):g}"


def _worst(locator, script: str) -> float:
    got = locator.evaluate_all(f"(els) => els.map(e => ({script})(e, 'color'))")
    assert got, "nothing to measure"
    return min(g["ratio"] for g in got)


def _contrast(good, theme: str) -> dict:
    """Worst WCAG ratio of each kind of new element; the user and thresholds tabs must show them."""
    out = {}
    good.locator(".rx-tab[data-tab='user']").click()
    out["agreement text"] = _worst(good.locator(".rx-attr-sentence, .rx-attr-key, .rx-attr-agreement .rx-figure-value"), CONTRAST)
    out["counterfactual text"] = _worst(good.locator(".rx-cf-message, .rx-cf-changes td, .rx-cf-flipped li span"), CONTRAST)
    out["attribution bars"] = _worst(good.locator(".rx-attr-bar"), BAR_CONTRAST)
    good.locator(".rx-tab[data-tab='thresholds']").click()
    out["what-if text"] = _worst(good.locator(".rx-whatif-label, .rx-whatif-result span, .rx-whatif-result li"), CONTRAST)
    out["what-if input"] = _worst(good.locator(".rx-whatif-input"), CONTRAST)
    out["agreement on held-out users"] = _worst(good.locator(
        ".rx-agree-panel .rx-figure-value, .rx-agree-panel .rx-figure-label, .rx-agree-deciles, .rx-agree-panel .rx-attr-key"),
        CONTRAST)
    low = {k: v for k, v in out.items() if v < (3.0 if "bars" in k else 4.5)}
    assert not low, f"{theme}: too little contrast: {low}"
    return out


def _agreement(page, good, root, shots) -> None:
    """Press the Summary's agreement button; the page shows what exp.agreement() gives in the kernel."""
    panel = good.locator(".rx-agree-panel")
    assert panel.locator(".rx-agree-hist").count() == 0  # nothing asked of the model yet
    button = panel.locator(".rx-agree-button")
    assert button.inner_text() == "Rule-model agreement on held-out users"
    button.click()
    panel.locator(".rx-agree-body, .rx-agree-error, .rx-attr-unavailable").first.wait_for(timeout=120_000)
    assert panel.locator(".rx-agree-error, .rx-attr-unavailable").count() == 0, panel.inner_text()
    run_cell(page, 2)
    ref = wait_file(root / "agree.json", 120)
    assert ref["n_users"] == ref["n_sampled"] and ref["n_defined"] >= 10, ref
    text = panel.inner_text()
    pct0 = lambda x: f"{100 * round(x, 4):.0f}%"  # noqa: E731 -- the page's pct(x, 0) of the rounded figure
    assert panel.locator(".rx-agree-mean-figure .rx-figure-value").inner_text() == pct0(ref["agreement_mean"])
    assert f"{ref['n_users']} of {ref['n_pool']}" in text  # the whole sample reached (no time budget cut)
    deciles = " · ".join(f"{(i + 1) * 10}th {pct0(d)}" for i, d in enumerate(ref["deciles"]))
    assert panel.locator(".rx-agree-deciles").inner_text() == f"Deciles: {deciles}"
    assert f"No rule fired for {ref['n_no_rule']} of the {ref['n_users']} users" in text
    assert "Method: integrated gradients" in text
    hist = panel.locator("svg.rx-agree-hist")
    assert hist.get_attribute("viewBox") == "0 0 360 130"
    titles = hist.locator("rect.rx-hist-bar").evaluate_all("els => els.map(e => e.querySelector('title').textContent)")
    assert [int(t.split(": ")[1].split(" ")[0].replace(",", "")) for t in titles] == ref["counts"]
    shots(page, "audit-light-agreement", top=panel)


#: The comparison's view at 640 px: the page does not scroll sideways, the view fits its output area,
#: and the boxes that scroll (a table wider than its box).
OVERFLOW_CMP = """
(view) => {
  const area = view.closest(".jp-OutputArea-output") || view.parentElement;
  const boxes = [...view.querySelectorAll(".rudi-compare-scroll")];
  return { page: document.documentElement.scrollWidth, viewport: document.documentElement.clientWidth,
           view: view.getBoundingClientRect().right, area: area.getBoundingClientRect().right,
           scrolls: boxes.filter((b) => b.scrollWidth > b.clientWidth + 1).length, boxes: boxes.length };
}
"""


def _compare(page, root):
    """Run the cell showing rx.compare of two seeds; its view, checked against the kernel's counts."""
    run_cell(page, 3)
    want = wait_file(root / "compare.json", 180)
    cell = page.locator(".jp-Cell").nth(3)
    cell.scroll_into_view_if_needed()
    view = cell.locator(".rudi-compare")
    view.wait_for(timeout=60_000)
    # by card (both are scorecards): cards, bands, interaction rules, statistics, users whose firing changed
    assert want["by_card"]
    assert view.locator(".rudi-compare-scroll > table.rudi-compare-table").count() == 5
    head = view.locator(".rudi-compare-head")
    assert "seed 0 → seed <1>" in head.inner_text()  # the name shown as text, not taken as a tag
    assert view.locator("table").first.locator("tbody tr").count() == min(20, want["n_cards"])
    shown = head.inner_text().split("cards: ")[1].split("; interaction rules")[0].split(", ")
    assert shown == [f"{n} {k}" for k, n in want["counts"]["cards"].items() if n], shown
    shown = head.inner_text().split("interaction rules: ")[1].split("; statistics")[0].split(", ")
    assert shown == [f"{n} {k}" for k, n in want["counts"]["interactions"].items() if n] or ["none"], shown
    return view


def _compare_contrast(view, theme: str) -> dict:
    out = {"compare text": _worst(view.locator(".rudi-compare-head, .rudi-compare-title, th, td.rc-text, td.rc-num"), CONTRAST),
           "compare pills": _worst(view.locator(".rc-pill"), CONTRAST)}
    low = {k: v for k, v in out.items() if v < 4.5}
    assert not low, f"{theme}: too little contrast in rx.compare's view: {low}"
    return out


def test_audit_views_in_jupyterlab(jupyter_lab, chromium, shots):
    root = jupyter_lab.root
    for name in ("audit.json", "agree.json", "compare.json"):
        (root / name).unlink(missing_ok=True)
    write_notebook(root / "audit.ipynb", [SETUP, EXPECTED, AGREEMENT, COMPARE])
    page = chromium.new_page(viewport={"width": 1280, "height": 1300})
    console: list[str] = []
    page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
    page.set_default_timeout(30_000)
    try:
        open_notebook(page, jupyter_lab, "audit.ipynb")
        run_cell(page, 0)
        good = page.locator(".jp-Cell").nth(0).locator(".rx-root")
        good.locator(".rx-tab[data-tab='rules']").first.click(timeout=240_000)  # it opens on the Scorecard
        good.locator(".rx-card").first.wait_for(timeout=240_000)
        run_cell(page, 1)
        want = wait_file(root / "audit.json", 120)
        uid = want["user"]

        # 1. The drill-down: the counterfactual comes by itself, the attributions on request.
        good.locator(".rx-tab[data-tab='user']").click()
        box = good.locator(".rx-user-input")
        box.fill(uid)
        box.press("Enter")
        user = good.locator(f".rx-user[data-user='{uid}']")
        user.wait_for()
        cf = good.locator(f".rx-cf[data-direction='{want['cf']['direction']}']")
        cf.wait_for()
        assert want["cf"]["message"] in cf.locator(".rx-cf-message").inner_text()
        if want["cf"]["found"] and want["cf"]["changes"]:
            assert cf.locator(".rx-cf-changes tbody tr").count() == len(want["cf"]["changes"])
            assert cf.locator(".rx-cf-flipped li").count() == len(want["cf"]["flipped"])
        assert good.locator(".rx-attr-cell").count() == 0  # nothing asked of the model yet
        button = good.locator(".rx-attr-button")
        assert button.inner_text() == "Model attributions"
        button.click()
        good.locator(".rx-attr-agreement").wait_for(timeout=60_000)
        cells = good.locator(".rx-events tbody tr .rx-attr-cell")
        assert cells.count() == want["n_events"] == good.locator(".rx-events tbody tr").count()
        # The bars as the kernel's figures: a bar where attributed, right for positive, left for negative.
        shown = cells.evaluate_all("""els => els.map(e => {
            const bar = e.querySelector('.rx-attr-bar');
            return bar ? [Number(e.dataset.attribution), bar.style.left ? 1 : -1, parseFloat(bar.style.width)] : null; })""")
        for got, v in zip(shown, want["values"]):
            assert (got is None) == (v is None)
            if v is not None:
                assert got[0] == pytest.approx(v, rel=1e-6, abs=1e-9)
                assert got[1] == (1 if v >= 0 else -1)
        widths = [g[2] for g in shown if g is not None]
        assert max(widths) == pytest.approx(50, abs=0.1)  # the largest fills half the cell
        # The strip sits beside the rows the fired rules read (the highlighted rows).
        assert good.locator(".rx-events tr.rx-feeds .rx-attr-cell").count() >= 1
        # a user whose fired rules read nearly all their events (every user is in a band of each card, and a
        # card's statistic may read all of them) is "not informative" (issue 28, item 2)
        expected_pct = "–" if want["agreement"] is None else "not informative" if want["informative"] is False \
            else f"{100 * want['agreement']:.0f}%"
        assert good.locator(".rx-attr-agreement .rx-figure-value").inner_text() == expected_pct
        assert "rule-model agreement" in good.locator(".rx-attr-agreement").inner_text()
        shots(page, "audit-light-user", top=user.locator(".rx-attr-panel"))
        shots(page, "audit-light-counterfactual", top=user.locator(".rx-cf-title"))

        # 1b. The Summary: the rule-model agreement on held-out users, asked on request.
        _agreement(page, good, root, shots)

        # 2. What-if, from the keyboard: type a threshold, see the fidelity; Reset; Escape.
        good.locator(".rx-tab[data-tab='thresholds']").click()
        lit = want["literal"]
        block = good.locator(f".rx-whatif[data-literal='{lit}']")
        fid = block.locator(".rx-whatif-fid")
        original = fid.inner_text()
        assert _fmt3(want["before"]) in original
        field = block.locator(".rx-whatif-input")
        assert field.input_value() == want["input_text"]
        cells = "() => window.jupyterapp.shell.currentWidget.content.widgets.map(c => c.model.type)"
        assert page.evaluate(cells) == ["code"] * 4
        # the box reads a value the way the card writes it: an amount may carry its unit ("1,200 EUR"), a
        # share is typed in percent (tests/views/test_scorecard_view.py checks the kernel's reading of both)
        hint = block.locator(".rx-whatif-unit")
        assert (hint.inner_text() if hint.count() else "") == want["unit"]
        field.focus()
        page.keyboard.press("Control+A")
        page.keyboard.type(f"{want['value']:,g} {want['unit']}".strip())
        after = block.locator(".rx-whatif-after")
        after.wait_for()
        page.wait_for_function(
            "([el, v]) => el.querySelector('.rx-whatif-fid') && Math.abs(Number(el.querySelector('.rx-whatif-fid').dataset.fidelity) - v) < 2e-6",
            arg=[block.element_handle(), want["after"]], timeout=10_000)
        assert after.inner_text() == _fmt3(want["after"])
        assert f"{_fmt3(want['before'])} →" in fid.inner_text()
        assert block.locator(".rx-whatif-rules li").count() >= 1
        assert f"exp.with_threshold({lit}, " in block.locator(".rx-whatif-code").inner_text()
        assert page.evaluate("() => document.activeElement.dataset.key") == f"whatif-{lit}"  # still typing there
        proposed = good.locator(f"line.rx-hist-proposed[data-literal='{lit}']")
        assert proposed.get_attribute("visibility") == "visible"
        shots(page, "audit-light-whatif", top=good.locator(".rx-threshold-block").filter(has=page.locator(f".rx-whatif[data-literal='{lit}']")))
        block.locator(".rx-whatif-reset").click()
        assert fid.inner_text() == original and block.locator(".rx-whatif-after").count() == 0
        assert field.input_value() == want["input_text"]
        assert proposed.get_attribute("visibility") == "hidden"
        # Escape resets too, and the slider moves the number with it.
        field.focus()
        page.keyboard.press("Control+A")
        page.keyboard.type(f"{want['value']:g}")
        after.wait_for()
        page.keyboard.press("Escape")
        assert fid.inner_text() == original and field.input_value() == want["input_text"]
        assert page.evaluate(cells) == ["code"] * 4  # digits and Escape typed here reached no notebook shortcut
        slider = block.locator(".rx-whatif-range")
        slider.focus()
        page.keyboard.press("End")  # the largest value: the number input follows, the figures come
        assert float(field.input_value()) == pytest.approx(float(slider.get_attribute("max")))
        block.locator(".rx-whatif-after").wait_for()
        block.locator(".rx-whatif-reset").click()

        # 3. Contrast, light and dark, with a what-if result and the strip on screen.
        field.fill(f"{want['value']:g}")
        after.wait_for()
        light = _contrast(good, "light")
        _theme(page, "JupyterLab Dark", light=False)
        dark = _contrast(good, "dark")
        print("\ncontrast (worst): light", light, "\n                  dark ", dark)
        good.locator(".rx-tab[data-tab='user']").click()
        shots(page, "audit-dark-user", top=user.locator(".rx-attr-panel"))
        shots(page, "audit-dark-counterfactual", top=user.locator(".rx-cf-title"))
        good.locator(".rx-tab[data-tab='thresholds']").click()
        shots(page, "audit-dark-whatif", top=good.locator(".rx-threshold-block").filter(has=page.locator(f".rx-whatif[data-literal='{lit}']")))
        shots(page, "audit-dark-agreement", top=good.locator(".rx-agree-panel"))
        assert not console, console

        # 3b. rx.compare of two seeds in a cell: dark now, light and 640 px below.
        view = _compare(page, root)
        dark_cmp = _compare_contrast(view, "dark")
        shots(page, "audit-dark-compare", top=view)

        # 4. A 640 px window: the strip, the counterfactual and the what-if controls fit (tables scroll in their box).
        _theme(page, "JupyterLab Light", light=True)
        page.set_viewport_size({"width": 640, "height": 1000})
        page.evaluate("() => window.jupyterapp.shell.collapseLeft()")
        page.wait_for_timeout(400)
        for tab in ("user", "thresholds"):
            good.locator(f".rx-tab[data-tab='{tab}']").click()
            good.locator(f".rx-panel[data-tab='{tab}']").wait_for()
            _check_narrow(page, good, tab, shots, prefix="audit-narrow")
        light_cmp = _compare_contrast(view, "light")
        print("compare contrast (worst): light", light_cmp, "\n                          dark ", dark_cmp)
        got = view.evaluate(f"({OVERFLOW_CMP})")
        assert got["page"] <= got["viewport"] and got["view"] <= got["area"] + 0.5, f"the comparison widens the page: {got}"
        assert got["scrolls"] >= 1, f"at 640 px the rules table should scroll in its box: {got}"
        shots(page, "audit-narrow-light-compare", top=view)
        page.evaluate("() => window.jupyterapp.shell.expandLeft()")

        # 5. The HTML report has no kernel: it leaves out the audit views that would only say so (issue 28, item 13).
        report = chromium.new_page(viewport={"width": 1280, "height": 1000})
        try:
            report.goto((root / "audit-report.html").as_uri())
            report.locator("#rx-app[data-ready='1']").wait_for()
            assert report.locator(".rx-agree-button").count() == 0
            report.locator(".rx-tab[data-tab='user']").click()
            report.locator(".rx-top-users .rx-user-link").first.click()
            report.locator(".rx-user").wait_for()
            assert report.locator(".rx-cf, .rx-attr-button").count() == 0
            report.locator(".rx-tab[data-tab='thresholds']").click()
            assert report.locator(".rx-whatif").count() == 0
            assert "no kernel" not in report.locator("#rx-app").inner_text()
        finally:
            report.close()
    except BaseException:
        shots(page, "failure-audit")
        print("\n".join(console[-40:]))
        raise
    finally:
        close_light(page)
