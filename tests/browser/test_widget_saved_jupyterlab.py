"""A saved notebook reopened without the kernel that drew it (issue 14, item 3), in JupyterLab and Notebook 7.

The notebook runs a small explanation, is saved with its widget state, and
its kernel is shut down. Reopened (a fresh kernel, which knows nothing of the
saved widget), the widget is drawn from the saved state: the summary and the
rule cards are there, but nothing can ask the kernel. Opening a user must say
"needs the running kernel: re-run the cell" at once instead of hanging on
"Loading…", and so must a typed what-if threshold. Re-running the cell then
gives a live widget whose drill-down answers.

Without the widget state (JupyterLab's default settings save none), the
reopened notebook shows the static copy instead: the summary and the rules
in words, as the kernel wrote them. So does the notebook's nbconvert HTML
export opened offline in Chromium (its widget scripts come from CDNs).
"""

from __future__ import annotations

import copy
import json

import pytest

nbformat = pytest.importorskip("nbformat", reason="browser test packages are missing: pip install -e '.[test]'")

from lab import APPS, notebook7_own, open_notebook, open_tab, run_cell, wait_file, write_notebook  # noqa: E402
from test_widget_layout_jupyterlab import CONTRAST, _check_narrow, _theme  # noqa: E402

SETUP = """\
import rudi_explain as rx
demo = rx.datasets.make_payments(400, random_state=0)  # small: the job runs twice per app
exp = rx.explain(None, demo.events, scores=demo.risk, background="thread",
                 n_stats=3, n_rules=6, n_simulations=20, student_params={"epochs": 30})
exp"""

TEXTS = """\
import json
exp.wait(timeout=300)
json.dump([r.text for r in exp.rules.rules], open("saved_rules.json", "w"))"""

NO_KERNEL = "needs the running kernel: re-run the cell"
STATE = "application/vnd.jupyter.widget-state+json"


def _saved_models(path) -> list[dict]:
    """The explanation widgets' saved states in the notebook file."""
    nb = json.loads(path.read_text())
    models = nb.get("metadata", {}).get("widgets", {}).get(STATE, {}).get("state", {})
    return [m["state"] for m in models.values() if "results" in m.get("state", {})]


def _rule_alignment(static) -> list[str]:
    """The computed text-align of each rule's sentence in the static copy's rules table (after the scorecard's),
    and of each band of the scorecard's cards."""
    rules = static.locator("table").filter(has_text="a user's score is the intercept")
    bands = static.locator(".rudi-explain-card table tbody td:first-child")
    return rules.locator("tbody td:nth-child(2)").evaluate_all("els => els.map(e => getComputedStyle(e).textAlign)") \
        + bands.evaluate_all("els => els.map(e => getComputedStyle(e).textAlign)")


def _worst(locator) -> float:
    """The lowest WCAG contrast ratio of the located elements' text."""
    ratios = [r["ratio"] for r in locator.evaluate_all(f"els => els.map(e => ({CONTRAST})(e, 'color'))")]
    assert ratios, "nothing to measure"
    return min(ratios)


def _page_theme(page, name: str, light: bool) -> None:
    """Switch the theme where no widget is drawn (layout's _theme waits on the widget's background)."""
    page.evaluate("t => window.jupyterapp.commands.execute('apputils:change-theme', {theme: t})", name)
    page.wait_for_function("light => document.body.dataset.jpThemeLight === String(light)", arg=light, timeout=30_000)
    page.wait_for_timeout(500)  # the theme's stylesheet in, transitions settled


def _dark_narrow(page, good, app: str, shots) -> None:
    """The no-kernel messages in the dark theme, in a 640 px window; light and full width again after."""
    try:
        _theme(page, "JupyterLab Dark", light=False)
        page.set_viewport_size({"width": 640, "height": 1000})
        if app == "lab":
            page.evaluate("() => window.jupyterapp.shell.collapseLeft()")
        page.wait_for_timeout(400)
        _check_narrow(page, good, "thresholds", None)
        worst = _worst(good.locator(".rx-no-kernel, .rx-whatif-error"))
        good.locator(".rx-tab[data-tab='user']").click()
        _check_narrow(page, good, "user", None)
        worst = min(worst, _worst(good.locator(".rx-no-kernel, .rx-user-error")))
        assert worst >= 4.5, worst
        shots(page, f"saved-{app}-no-kernel-dark-640", top=good)
    finally:
        page.set_viewport_size({"width": 1280, "height": 1300})
        if app == "lab":
            page.evaluate("() => window.jupyterapp.shell.expandLeft()")
        _theme(page, "JupyterLab Light", light=True)


@pytest.mark.parametrize("app", APPS)
def test_reopened_without_its_kernel_the_drill_down_says_re_run(jupyter_lab, chromium, shots, app):
    name = f"saved-{app}.ipynb"
    path = jupyter_lab.root / name
    (jupyter_lab.root / "saved_rules.json").unlink(missing_ok=True)
    write_notebook(path, [SETUP, TEXTS])
    page = chromium.new_page(viewport={"width": 1280, "height": 1300})
    console: list[str] = []
    page.on("pageerror", lambda e: console.append(f"pageerror: {e}") if not notebook7_own(e) else None)
    page.set_default_timeout(30_000)
    try:
        # 1. Run, save with the widget state, shut the kernel down.
        open_notebook(page, jupyter_lab, name, app)
        run_cell(page, 0)
        live = page.locator(".jp-Cell").nth(0).locator(".rx-root")
        live.locator(".rx-tab[data-tab='rules']").first.click(timeout=180_000)  # it opens on the Scorecard
        live.locator(".rx-card").first.wait_for(timeout=180_000)
        n_cards = live.locator(".rx-card").count()
        run_cell(page, 1)
        texts = wait_file(jupyter_lab.root / "saved_rules.json", 60)
        assert page.locator(".jupyter-widgets-disconnected .rx-root").count() == 0  # a live view is connected
        page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
        page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=30_000)
        saved = _saved_models(path)
        assert len(saved) == 1 and saved[0]["status"] == "done" and len(saved[0]["results"]["rules"]) == n_cards
        # the static copy the kernel replaced when the job ended is the one saved
        nb = json.loads(path.read_text())  # as saved (a later autosave may hold the re-run below)
        saved_html = "".join("".join(o["data"]["text/html"]) for o in nb["cells"][0]["outputs"]
                             if "text/html" in o.get("data", {}))
        assert "rudi-explain-static" in saved_html and "rudi-explain: running" not in saved_html
        page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")
        page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.sessionContext.session", timeout=30_000)
    except BaseException:
        shots(page, f"failure-saved-{app}")
        raise
    finally:
        page.close()

    page = chromium.new_page(viewport={"width": 1280, "height": 1300})
    page.on("pageerror", lambda e: console.append(f"pageerror: {e}") if not notebook7_own(e) else None)
    page.set_default_timeout(30_000)
    try:
        # 2. Reopened: the widget comes back from the saved state, with no kernel behind it.
        open_notebook(page, jupyter_lab, name, app)
        good = page.locator(".jp-Cell").nth(0).locator(".rx-root")
        open_tab(good, "rules", ".rx-card")  # it opens on the Scorecard (a click on a view being restored is repeated)
        assert good.locator(".rx-card").count() == n_cards and good.locator(".rx-status").inner_text() == "done"
        assert page.locator(".jupyter-widgets-disconnected .rx-root").count() == 1
        assert good.locator(".rx-no-kernel").count() == 0  # nothing said before anything is asked
        # the drill-down: at once, the reason and the fix, never "Loading…"
        good.locator(".rx-card").first.click()
        link = good.locator(".rx-card.rx-open .rx-user-link").first
        uid = link.get_attribute("data-user")
        link.click()
        error = good.locator(".rx-user-error")
        error.wait_for(timeout=2_000)
        assert NO_KERNEL in error.inner_text()
        assert good.locator(".rx-loading").count() == 0 and good.locator(".rx-user").count() == 0
        page.wait_for_timeout(1_000)  # and it stays so: no late "Loading…"
        assert good.locator(".rx-loading").count() == 0
        assert NO_KERNEL in good.locator(".rx-no-kernel").inner_text()
        # the search box and the top users say the same
        good.locator(".rx-top-users .rx-user-link").first.click()
        assert NO_KERNEL in good.locator(".rx-user-error").inner_text()
        shots(page, f"saved-{app}-no-kernel-user", top=good)
        # a what-if threshold typed without a kernel
        good.locator(".rx-tab[data-tab='thresholds']").click()
        field = good.locator(".rx-whatif-input").first
        field.fill("1")
        whatif = good.locator(".rx-whatif-error").first
        whatif.wait_for(timeout=2_000)
        assert NO_KERNEL in whatif.inner_text()
        assert good.locator(".rx-whatif-result").first.inner_text().count("computing") == 0
        shots(page, f"saved-{app}-no-kernel-whatif", top=good.locator(".rx-threshold-block").first)
        # the same in the dark theme in a 640 px window: readable, and nothing wider than the widget
        _dark_narrow(page, good, app, shots)

        # 3. The advice works: re-run the cell, the new widget's drill-down answers.
        run_cell(page, 0)
        page.wait_for_function("() => !document.querySelector('.jupyter-widgets-disconnected .rx-root')",
                               timeout=60_000)  # the saved view is gone with the cell's old output
        fresh = page.locator(".jp-Cell").nth(0).locator(".rx-root")
        fresh.locator(".rx-tab[data-tab='rules']").first.click(timeout=180_000)  # it opens on the Scorecard
        fresh.locator(".rx-card").first.wait_for(timeout=180_000)
        fresh.locator(".rx-card").first.click()
        fresh.locator(".rx-card.rx-open .rx-user-link").first.click()
        fresh.locator(f".rx-user[data-user='{uid}']").wait_for(timeout=60_000)
        assert fresh.locator(".rx-user-error").count() == 0 and fresh.locator(".rx-no-kernel").count() == 0
        assert not console, console
    except BaseException:
        shots(page, f"failure-saved-{app}-reopened")
        print("\n".join(console[-40:]))
        raise
    finally:
        page.close()

    # 4. Saved without the widget state (JupyterLab's default): the static copy shows the rules in words.
    bare = copy.deepcopy(nb)
    bare["metadata"].pop("widgets", None)
    bare["cells"] = bare["cells"][:1]
    # one name for both apps: Notebook 7 joins the kernel JupyterLab's run started (one session per path)
    bare_name = "saved-no-state.ipynb"
    (jupyter_lab.root / bare_name).write_text(json.dumps(bare))
    page = chromium.new_page(viewport={"width": 1280, "height": 1300})
    page.set_default_timeout(30_000)
    try:
        open_notebook(page, jupyter_lab, bare_name, app)
        static = page.locator(".jp-Cell").nth(0).locator(".rudi-explain-static")
        static.wait_for(timeout=30_000)
        assert static.is_visible() and page.locator(".jp-Cell .rx-root").count() == 0
        shown = static.inner_text()
        assert all(t in shown for t in texts) and "re-run the cell" in shown and "rudi-explain: running" not in shown
        assert set(_rule_alignment(static)) == {"left"}  # sentences read from the left, not JupyterLab's right
        shots(page, f"saved-{app}-no-widget-state", top=static)
        # the copy takes the theme's colours: readable in the dark theme too
        try:
            _page_theme(page, "JupyterLab Dark", light=False)
            assert page.evaluate("() => document.body.dataset.jpThemeLight") == "false"
            worst = _worst(static.locator("td, p > b"))
            assert worst >= 4.5, worst
            shots(page, f"saved-{app}-no-widget-state-dark", top=static)
        finally:
            _page_theme(page, "JupyterLab Light", light=True)
    except BaseException:
        shots(page, f"failure-saved-{app}-no-state")
        raise
    finally:
        page.close()

    # 5. The nbconvert HTML of the saved notebook (widget state and all), opened with no network.
    nbconvert = pytest.importorskip("nbconvert")
    html, _ = nbconvert.HTMLExporter().from_notebook_node(nbformat.reads(json.dumps(nb), as_version=4))
    export = jupyter_lab.root / f"saved-{app}.html"
    export.write_text(html, encoding="utf-8")
    page = chromium.new_page(viewport={"width": 1100, "height": 1100})
    blocked: list[str] = []
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:")
               else (blocked.append(r.request.url), r.abort()))
    try:
        page.goto(export.as_uri(), wait_until="load")
        static = page.locator(".rudi-explain-static")
        assert static.count() == 1 and static.is_visible()
        shown = static.inner_text()
        assert all(t in shown for t in texts) and "fidelity" in shown
        assert set(_rule_alignment(static)) == {"left"}
        assert blocked, "the export was expected to ask a CDN for the widget scripts"
        assert page.locator(".rx-root").count() == 0  # no widget manager offline: the copy is what shows
        shots(page, f"saved-{app}-nbconvert-offline")
    finally:
        page.close()
