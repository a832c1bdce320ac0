"""The live widget opens on the Scorecard (issue 26, item 6), in JupyterLab.

A kernel builds a small explanation whose scorecard has interaction rules and a card with an undefined
band, writes what ``exp.scorecard`` says (each card's name and rows, each interaction rule's text form),
and shows the widget: it opens on the Scorecard tab, the first, with those cards, rows and rules.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="browser test packages are missing: pip install -e '.[test]'")

from lab import notebook_page, wait_file  # noqa: E402

TESTS = Path(__file__).resolve().parents[1]

SETUP = f"""\
import json, re, sys
sys.path[:0] = [{str(TESTS)!r}]
from views.test_scorecard_view import interacting_explanation, rows_written
exp = interacting_explanation(2, n_users=160)
sc = exp.scorecard
json.dump({{"headline": str(sc).splitlines()[0],
           "cards": [{{"name": c.name, "rows": [list(r[:4]) for r in rows_written(c)]}} for c in sc.cards],
           "lines": [re.sub(r"\\s+", " ", x).strip() for x in str(sc).splitlines()],
           "interactions": [r.text for r in sc.interactions]}}, open("scorecard.json", "w"))
exp.widget()"""


def test_the_widget_opens_on_the_scorecard(jupyter_lab, chromium, shots):
    root = jupyter_lab.root
    (root / "scorecard.json").unlink(missing_ok=True)
    with notebook_page(chromium, jupyter_lab, "scorecard-lab.ipynb", [SETUP], "lab", height=1000) as (page, errors):
        want = wait_file(root / "scorecard.json", 120)
        view = page.locator(".rx-root").first
        view.locator(".rx-scorecard").wait_for(timeout=120_000)
        first = view.locator(".rx-tab").first
        assert first.get_attribute("data-tab") == "scorecard" and first.get_attribute("aria-selected") == "true"
        assert first.inner_text() == "Scorecard"
        assert view.locator(".rx-sc-headline").inner_text() == want["headline"]
        cards = view.locator(".rx-sc-card")
        assert cards.count() == len(want["cards"]) > 0
        for k, card in enumerate(want["cards"]):
            block = cards.nth(k)
            assert block.locator(".rx-sc-name").inner_text() == card["name"]
            rows = block.locator(".rx-sc-table tbody tr").evaluate_all(
                "trs => trs.map(tr => [...tr.querySelectorAll('td')].map(td => td.textContent))")
            assert rows == card["rows"], card["name"]
            assert block.locator("svg.rx-sc-chart").count() == 1
        inter = view.locator(".rx-sc-interactions tbody tr").evaluate_all(
            "trs => trs.map(tr => [...tr.querySelectorAll('td')].slice(0, 2).map(td => td.textContent))")
        assert [rule for _, rule in inter] == want["interactions"] and inter
        assert all(re.sub(r"\s+", " ", f"{p} {r}") in want["lines"] for p, r in inter), inter
        shots(page, "scorecard-widget-lab")
        # the other views are a click away
        view.locator(".rx-tab[data-tab='rules']").click()
        view.locator(".rx-card").first.wait_for()
        assert not errors, errors
