"""A rule-model agreement that cannot say anything is not shown as a pass (issue 28, item 2).

The rules read an average over all of a user's payments, so they read every event: whatever the model
attends to, 100% of its attribution falls on "the events the rules read". The Summary's agreement on
held-out users says it is not informative (no 100% figure, no histogram), and a user's attribution strip
says so for that user, in JupyterLab and in Notebook 7.
"""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="browser test packages are missing: pip install -e '.[test]'")

from lab import APPS, notebook_page  # noqa: E402

TESTS = Path(__file__).resolve().parents[1]

SETUP = f"""\
import sys, numpy as np
sys.path.insert(0, {str(TESTS)!r})
from tiny import tiny_payments
def amount_sum(s):  # the model: each user's total amount
    return np.bincount(s.event_user, weights=np.nan_to_num(s.values["amount"]), minlength=s.n_users)
exp = tiny_payments(300, random_state=3, statistics=("Select(amount) | Mean",), teacher=amount_sum)
uid = str(next(u for u in exp.sequences.users[exp.is_test] if exp.user(u).fired))
open("uid.txt", "w").write(uid)
exp.widget()"""


# Both apps open the same notebook: Notebook 7 joins the kernel JupyterLab started (the server keeps
# one session per path), so the cell runs again there without a second kernel start and import.
@pytest.mark.parametrize("app", APPS)
def test_an_agreement_over_rules_reading_every_event_is_not_shown_as_a_pass(jupyter_lab, chromium, shots, app):
    root = jupyter_lab.root
    (root / "uid.txt").unlink(missing_ok=True)
    with notebook_page(chromium, jupyter_lab, "uninformative.ipynb", [SETUP], app, height=1100) as (page, errors):
        view = page.locator(".rx-root").first
        view.locator(".rx-tab[data-tab='rules']").first.click(timeout=120_000)  # it opens on the Scorecard
        view.locator(".rx-card").first.wait_for(timeout=120_000)
        panel = view.locator(".rx-agree-panel")
        panel.locator(".rx-agree-button").click()
        note = panel.locator(".rx-agree-uninformative")
        note.wait_for(timeout=120_000)
        text = note.inner_text()
        assert text.startswith("Rule-model agreement not informative:") and "whatever the model attends to" in text
        # no figure, histogram or deciles: nothing that reads as a 100% pass
        assert panel.locator(".rx-agree-hist, .rx-figure-value, .rx-agree-deciles").count() == 0

        uid = (root / "uid.txt").read_text()
        view.locator(".rx-tab[data-tab='user']").click()
        box = view.locator(".rx-user-input")
        box.fill(uid)
        box.press("Enter")
        view.locator(f".rx-user[data-user='{uid}']").wait_for()
        view.locator(".rx-attr-button").click()
        sentence = view.locator(".rx-attr-sentence")
        sentence.wait_for(timeout=60_000)
        assert sentence.inner_text().startswith("Not informative for this user: the fired rules read 100%")
        assert view.locator(".rx-attr-agreement .rx-figure-value").inner_text() == "not informative"
        shots(page, f"agreement-uninformative-{app}")
        assert not errors, errors
