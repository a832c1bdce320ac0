"""Fidelity by slice in the Faithfulness tab (issue 28, item 20), in Chromium over the report's page.

The reader picks a categorical column; the table shows each slice's held-out users and fidelity as
``exp.fidelity_by(column)`` gives them (the largest slices, the rest lumped), with no kernel.
"""

from __future__ import annotations

import numpy as np
import pytest
from tiny import tiny_payments

from rudi_explain.views.report import report_html
from rudi_explain.views.slices import OTHER


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    exp = tiny_payments(400, random_state=5)
    path = tmp_path_factory.mktemp("slices") / "report.html"
    path.write_text(report_html(exp, n_users=2), encoding="utf-8")
    return path, exp


def _shown(page) -> dict[str, tuple[int, str]]:
    rows = page.locator(".rx-slices tbody tr")
    cells = rows.evaluate_all("rs => rs.map(r => [r.dataset.value, ...[...r.cells].map(c => c.textContent)])")
    return {c[0]: (int(c[2].replace(",", "")), c[4]) for c in cells}


def test_the_fidelity_of_each_slice_of_a_picked_column(chromium, report, shots):
    path, exp = report
    page = chromium.new_page(viewport={"width": 1100, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(path.as_uri())
        page.locator("#rx-app[data-ready='1'] .rx-tab[data-tab='rules']").click(timeout=15_000)  # it opens on the Scorecard
        page.locator(".rx-card").first.wait_for(timeout=15_000)
        page.locator(".rx-tab[data-tab='effects']").click()
        pick = page.locator(".rx-slices-column")
        columns = pick.locator("option").evaluate_all("os => os.map(o => o.value)")
        assert len(columns) >= 2 and set(columns) <= set(exp.sequences.categorical)
        for column in columns[:2]:
            pick.select_option(column)
            assert page.locator(".rx-slices").get_attribute("data-column") == column
            want = exp.fidelity_by(column)
            shown = _shown(page)
            assert sum(n for n, _ in shown.values()) == exp.is_test.sum()
            for value, (n, fid) in shown.items():
                if value == OTHER:
                    continue
                assert n == want.loc[value, "n_users"]
                f = want.loc[value, "fidelity"]
                assert fid == ("–" if np.isnan(f) else f"{float(f'{f:.3g}'):g}"), (value, fid, f)
        shots(page, "fidelity-by-slice")
        assert not errors, errors
    finally:
        page.close()


def test_no_stray_null_in_the_page(chromium, report):
    """A view part that has nothing to say is left out, never written as the text "null"."""
    path, _ = report
    page = chromium.new_page(viewport={"width": 1100, "height": 900})
    try:
        page.goto(path.as_uri())
        page.locator("#rx-app[data-ready='1'] .rx-tab[data-tab='rules']").click(timeout=15_000)  # it opens on the Scorecard
        page.locator(".rx-card").first.wait_for(timeout=15_000)
        for tab in ("rules", "effects", "thresholds", "user", "statistics"):
            page.locator(f".rx-tab[data-tab='{tab}']").click()
            texts = page.locator(".rx-root").evaluate(
                "r => { const w = document.createTreeWalker(r, NodeFilter.SHOW_TEXT); const out = [];"
                " for (let n = w.nextNode(); n; n = w.nextNode()) if (n.nodeValue.trim() === 'null') out.push(n.parentElement.className);"
                " return out; }")
            assert texts == [], (tab, texts)
    finally:
        page.close()
