"""The counterfactual's controls (issue 28, item 12), in JupyterLab and Notebook 7.

A top-scored user is opened; the page asks for the smallest change across the median by itself. The test
sets the target to the 10th percentile with at most one changed condition and presses Search: the title
names the new target, and the page shows what the kernel's ``exp.user(uid).counterfactual(10, "below", 1)``
gives: the change, or, where none reaches the target, the nearest score reachable and its change.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="browser test packages are missing: pip install -e '.[test]'")

from lab import APPS, notebook_page, wait_file  # noqa: E402

TESTS = Path(__file__).resolve().parents[1]

SETUP = f"""\
import sys, json
sys.path.insert(0, {str(TESTS)!r})
from tiny import tiny_payments
exp = tiny_payments(300, random_state=3, statistics=("Select(amount) | Mean", "Select(channel) | Sum",
                                                   "Select(amount) | RetainBy(country=other) | Count"))
uid = str(exp.student_scores.idxmax())
json.dump({{"uid": uid, "cf": exp.user(uid).counterfactual(10, "below", 1).to_dict()}}, open("cf.json", "w"))
exp.widget()"""


# Both apps open the same notebook: Notebook 7 joins the kernel JupyterLab started (the server keeps
# one session per path), so the cell runs again there without a second kernel start and import.
@pytest.mark.parametrize("app", APPS)
def test_the_counterfactual_takes_a_target_and_a_budget(jupyter_lab, chromium, shots, app):
    root = jupyter_lab.root
    (root / "cf.json").unlink(missing_ok=True)
    with notebook_page(chromium, jupyter_lab, "cf-controls.ipynb", [SETUP], app, height=1100) as (page, errors):
        want = wait_file(root / "cf.json", 120)
        view = page.locator(".rx-root").first
        view.locator(".rx-tab[data-tab='rules']").first.click(timeout=120_000)  # it opens on the Scorecard
        view.locator(".rx-card").first.wait_for(timeout=120_000)
        view.locator(".rx-tab[data-tab='user']").click()
        box = view.locator(".rx-user-input")
        box.fill(want["uid"])
        box.press("Enter")
        view.locator(f".rx-user[data-user='{want['uid']}']").wait_for()
        view.locator(".rx-cf:not(.rx-loading)").wait_for()  # the median's, asked by itself
        assert view.locator(".rx-cf-title").inner_text().endswith("across the median")
        view.locator(".rx-cf-percentile").fill("10")
        view.locator(".rx-cf-max").select_option("1")
        view.locator(".rx-cf-go").click()
        view.locator(".rx-cf:not(.rx-loading)").wait_for()
        page.wait_for_function("() => document.querySelector('.rx-cf-message')?.textContent.includes('10')")
        cf = want["cf"]
        assert view.locator(".rx-cf-title").inner_text().endswith("across the 10th percentile")
        assert view.locator(".rx-cf-message").inner_text() == cf["message"]
        assert view.locator(".rx-cf-nearest").count() == (0 if cf["found"] else 1)
        assert view.locator(".rx-cf-changes tbody tr").count() == len(cf["changes"])
        assert not cf["found"] or cf["n_literals"] <= 1
        shots(page, f"counterfactual-controls-{app}")
        assert not errors, errors
        json.dumps(cf)
