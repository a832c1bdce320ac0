"""Stopped runs in a real JupyterLab and Notebook 7: a cancel is said calmly, a failure can be retried.

Two explanations in one notebook: one cancelled from its widget's Cancel
button during the search (the stages it passed stay marked, the bar stays,
the statistics found are listed, no red error); one whose teacher fails on
its first call (an error box said once, without the progress line repeating
it) and then succeeds when the widget's Retry button runs it again.
"""

from __future__ import annotations

import pytest

nbformat = pytest.importorskip("nbformat", reason="browser test packages are missing: pip install -e '.[test]'")

from lab import APPS, LISTENERS, open_notebook, run_cell, wait_file, write_notebook  # noqa: E402
from test_widget_layout_jupyterlab import CONTRAST, _theme  # noqa: E402

CANCELLED = LISTENERS + """\
import json, rudi_explain as rx
demo = rx.datasets.make_payments(1500, random_state=0)
long = rx.explain(None, demo.events, scores=demo.risk, background="thread", n_stats=20, n_simulations=3000,
                  progress=hold)
long"""

FLAKY = """\
calls = []
def flaky(seqs):
    calls.append(1)
    if len(calls) == 1:
        raise ConnectionError("scoring service unavailable")
    return small.risk.reindex(seqs.users).to_numpy()
small = rx.datasets.make_payments(400, random_state=0)  # the retried job runs to its end: a small one
again = rx.explain(flaky, small.events, background="thread", n_stats=3, n_rules=6, n_simulations=40,
                   student_params={"epochs": 20})
again"""

STATE = """\
json.dump({"long": long.status, "found": [str(s) for s in long.statistics], "again": again.status,
           "calls": len(calls)}, open("stop_state.json", "w"))"""




@pytest.mark.parametrize("app", APPS)
def test_cancel_and_retry_in_jupyterlab(jupyter_lab, chromium, shots, app):
    root = jupyter_lab.root
    (root / "stop_state.json").unlink(missing_ok=True)
    name = f"stop-{app}.ipynb"  # one kernel session per app
    write_notebook(root / name, [CANCELLED, FLAKY, STATE])
    page = chromium.new_page(viewport={"width": 1280, "height": 1400})
    page.set_default_timeout(30_000)
    try:
        open_notebook(page, jupyter_lab, name, app)
        tag = "" if app == "lab" else f"-{app}"
        run_cell(page, 0)
        first = page.locator(".jp-Cell").nth(0).locator(".rx-root")
        first.locator(".rx-found-item").first.wait_for(timeout=120_000)  # the search has found something
        first.locator(".rx-cancel").click()
        first.locator(".rx-status-cancelled").wait_for(timeout=60_000)
        assert first.locator(".rx-error").count() == 0  # a requested cancel is no error
        message = first.locator(".rx-message").inner_text()
        assert message.startswith("cancelled · during the search stage") and "Error" not in message, message
        assert first.locator(".rx-stage-done").count() == 1  # the teacher stage stays done
        assert first.locator(".rx-stage-active[data-stage='search']").count() == 1
        assert float(first.locator(".rx-bar").get_attribute("aria-valuenow")) > 5  # the bar stays
        assert first.locator(".rx-found-item").count() >= 1 and first.locator(".rx-retry").count() == 1
        shots(page, f"9-cancelled{tag}", top=first)

        run_cell(page, 1)
        second = page.locator(".jp-Cell").nth(1).locator(".rx-root")
        second.locator(".rx-status-failed").wait_for(timeout=60_000)
        error = second.locator(".rx-error")
        assert error.count() == 1 and "scoring service unavailable" in error.inner_text()
        assert "scoring service unavailable" not in second.locator(".rx-message").inner_text()  # said once
        shots(page, f"10-failed{tag}", top=second)
        # both stopped views read in the dark theme too: pills, the calm message, found statistics, error box
        try:
            _theme(page, "JupyterLab Dark", light=False)
            ratios = {}
            for kind, loc in (("status pills", page.locator(".rx-status")), ("messages", page.locator(".rx-message")),
                              ("found statistics", first.locator(".rx-found-item")), ("error box", second.locator(".rx-error")),
                              ("retry buttons", page.locator(".rx-retry"))):
                got = loc.evaluate_all(f"els => els.map(e => ({CONTRAST})(e, 'color').ratio)")
                assert got, kind
                ratios[kind] = min(got)
            print(f"\n{app} dark, stopped runs (worst WCAG ratio):", ratios)
            assert min(ratios.values()) >= 4.5, ratios
            shots(page, f"9-10-stopped-dark{tag}", top=first)
        finally:
            _theme(page, "JupyterLab Light", light=True)
        second.locator(".rx-retry").click()
        second.locator(".rx-tab[data-tab='rules']").first.click(timeout=180_000)  # it opens on the Scorecard
        second.locator(".rx-card").first.wait_for(timeout=180_000)
        assert second.locator(".rx-status").inner_text() == "done" and second.locator(".rx-error").count() == 0
        shots(page, f"11-retried{tag}", top=second)
        run_cell(page, 2)
        state = wait_file(root / "stop_state.json", 60)
        assert state == {"long": "cancelled", "found": state["found"], "again": "done", "calls": 2}
        assert len(state["found"]) == first.locator(".rx-found-item").count()
    except BaseException:
        shots(page, f"failure-stop-{app}")
        raise
    finally:
        page.close()
