"""What pruning cost, and the larger rule set one click away (issue 28, item 9), in JupyterLab and Notebook 7.

The summary says how held-out fidelity moved from all the student's rules to the pruned ones (the kernel's
``exp.report()`` figures); "Show all M rules" makes every view read ``exp.with_rules(M)`` and says so;
"Back" returns to what was explained.
"""

from __future__ import annotations

import pytest

nbformat = pytest.importorskip("nbformat", reason="browser test packages are missing: pip install -e '.[test]'")

from lab import APPS, notebook_page, wait_file  # noqa: E402

SETUP = """\
import json, rudi_explain as rx
demo = rx.datasets.make_payments(600, random_state=0)
exp = rx.explain(None, demo.events, scores=demo.risk, background=False, n_stats=3, n_simulations=20,
                 student_params={"epochs": 20}, progress=False)
r = exp.report()
json.dump({"units": f"{r['n_cards']} card{'s' if r['n_cards'] != 1 else ''} and {r['n_interactions']} interaction rule{'s' if r['n_interactions'] != 1 else ''}",
           "n": r["n_rules"], "m": r["n_rules_unpruned"], "f": r["fidelity_test"], "f_all": r["fidelity_test_unpruned"],
           "m_rules": len(exp.with_rules(r["n_rules_unpruned"]).rules)}, open("pruning.json", "w"))
exp.widget()"""


def _fmt3(x: float) -> str:
    return f"{float(f'{x:.3g}'):g}"


# Both apps open the same notebook: Notebook 7 joins the kernel JupyterLab started (the server keeps
# one session per path), so the cell runs again there without a second kernel start and import.
@pytest.mark.parametrize("app", APPS)
def test_the_cost_of_pruning_and_the_larger_set(jupyter_lab, chromium, shots, app):
    root = jupyter_lab.root
    (root / "pruning.json").unlink(missing_ok=True)
    with notebook_page(chromium, jupyter_lab, "pruning.ipynb", [SETUP], app, height=1000) as (page, errors):
        want = wait_file(root / "pruning.json", 180)
        view = page.locator(".rx-root").first
        view.locator(".rx-tab[data-tab='rules']").first.click(timeout=120_000)  # it opens on the Scorecard
        view.locator(".rx-card").first.wait_for(timeout=120_000)
        line = view.locator(".rx-pruning").inner_text()
        assert line.startswith(f"Pruning from {want['m']} rules to {want['units']} "), line
        assert f"({_fmt3(want['f_all'])} with all {want['m']}, {_fmt3(want['f'])} now)" in line, line
        assert view.locator(".rx-card").count() == want["n"]
        view.locator(".rx-pruning-more").click()
        shown = view.locator(".rx-pruning-shown")
        shown.wait_for()
        assert shown.inner_text().startswith(f"Showing exp.with_rules({want['m']}):")
        assert view.locator(".rx-card").count() == want["m_rules"]
        shots(page, f"pruning-larger-set-{app}")
        view.locator(".rx-pruning-back").click()
        view.locator(".rx-pruning-more").wait_for()
        assert view.locator(".rx-card").count() == want["n"]
        assert not errors, errors
