"""The README quickstart, pasted as one cell into a real JupyterLab and Notebook 7, shows what it promises.

The cell trains the demo GRU and starts ``explain`` in the background, then
reads ``exp.rules`` while the job runs: that read waits (with a note) and
prints the rules, never ``None``; the widget shows the result and hides the
static copy (rudi_explain/static_view.py) that stands in for it where no
kernel runs.

One cell is injected above it (as test_tutorial_live_jupyterlab.py does): it shrinks the job
(600 demo users, two GRU epochs, 3 statistics, 20 simulations) by wrapping the library's functions,
so the README's code runs unchanged and the kernel's job takes seconds instead of a minute. The
job at the README's own size (5,000 users, the GRU's default epochs, explain's defaults) is
``make demo``'s second half, which tests/golden/test_golden.py runs; what is checked here is what
the notebook shows, which does not depend on the size.

The job runs once, in JupyterLab (light, full width; then dark at 640 px).
Notebook 7 then opens the saved notebook, joining the same kernel (the server
keeps one session per path), and must draw the same result the same way
(dark at 640 px, then light at full width). A second run in Notebook 7 would
check the same kernel code again for a minute more of the suite; Notebook 7's
live progress in the cell that starts a job is checked by
test_tutorial_live_jupyterlab.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="browser test packages are missing: pip install -e '.[test]'")

from lab import open_notebook, run_cell, write_notebook  # noqa: E402
from test_widget_layout_jupyterlab import check_looks, close_light  # noqa: E402

README = Path(__file__).resolve().parents[2] / "README.md"


# Injected above the README's cell: the same calls, on a job small enough for a test (checked: 8-10
# rules at seeds 0-2, against the 2 rule lines asserted below).
SMALL = """\
# injected by the browser test: the README's cell as written, on a smaller job
import rudi_explain as rx
if "_explain" not in globals():  # run again in the same kernel: wrap once
    _make, _train, _explain = rx.datasets.make_payments, rx.datasets.train_demo_gru, rx.explain
rx.datasets.make_payments = lambda n, **kw: _make(min(n, 600), **kw)
rx.datasets.train_demo_gru = lambda *a, **kw: _train(*a, **{**kw, "epochs": 2})
rx.explain = lambda *a, **kw: _explain(*a, **{**kw, "n_stats": 3, "n_simulations": 20, "student_params": {"epochs": 30}})"""


def quickstart() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Quickstart", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_readme_quickstart_pasted_as_one_cell(jupyter_lab, chromium, shots):
    """JupyterLab runs it light at full width, then shows the result dark at 640 px; Notebook 7 shows the
    saved result dark at 640 px, then light at full width (readable, nothing wider than the widget)."""
    code = quickstart()
    assert "print(exp.rules)" in code and "display(exp)" in code
    name = "quickstart.ipynb"
    write_notebook(jupyter_lab.root / name, [SMALL, code])
    page = chromium.new_page(viewport={"width": 1280, "height": 1400})
    page.set_default_timeout(30_000)
    try:
        open_notebook(page, jupyter_lab, name, "lab")
        run_cell(page, 0)  # the injected cell
        run_cell(page, 1)  # the README's
        # the job runs in the background: the widget shows while the cell still waits in print(exp.rules)
        page.locator(".rx-root").wait_for(timeout=240_000)
        stdout = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stdout']")
        stdout.first.wait_for(timeout=300_000)
        page.wait_for_function("() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel"
                               ".status === 'idle'", timeout=300_000)
        printed = "\n".join(stdout.all_inner_texts())
        lines = [line for line in printed.splitlines() if line.strip()]
        assert "None" not in lines
        rules = lines[next(i for i, line in enumerate(lines) if re.match(r"^[+-]\d", line)):]
        end = next(i for i, line in enumerate(rules) if "(intercept)" in line)
        assert end >= 2 and all(re.match(r"^[+-]\d", line) for line in rules[:end])  # weight first, one a line
        errors = "\n".join(page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
                           .all_inner_texts())
        assert "exp.rules: waiting for the explanation to finish" in errors
        assert "Error" not in errors and "Traceback" not in errors
        page.locator(".rx-tab[data-tab='rules']").first.click(timeout=60_000)  # it opens on the Scorecard
        page.locator(".rx-card").first.wait_for(timeout=60_000)
        assert page.locator(".rx-status").inner_text() == "done"
        # the static copy is there for kernel-less viewers, and hidden under the live widget
        static = page.locator(".rudi-explain-static")
        assert static.count() == 1 and not static.is_visible()
        widget = page.locator(".rx-root")
        check_looks(page, widget, "light", 1280, shots, "8-quickstart-one-cell-lab-light-full",
                    top=page.locator(".jp-Cell").nth(1))
        check_looks(page, widget, "dark", 640, shots, "8-quickstart-one-cell-lab-dark-640")
        page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
        page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=30_000)
    except BaseException:
        shots(page, "failure-quickstart-lab")
        raise
    finally:
        close_light(page)

    # the saved notebook in Notebook 7, on the same kernel: the live widget, its static copy hidden
    page = chromium.new_page(viewport={"width": 640, "height": 1400})
    page.set_default_timeout(30_000)
    try:
        open_notebook(page, jupyter_lab, name, "nb7")
        widget = page.locator(".rx-root")
        widget.locator(".rx-tab[data-tab='rules']").first.click(timeout=60_000)  # it opens on the Scorecard
        widget.locator(".rx-card").first.wait_for(timeout=60_000)
        assert widget.locator(".rx-status").inner_text() == "done"
        assert page.locator(".jupyter-widgets-disconnected .rx-root").count() == 0  # drawn by the live kernel
        static = page.locator(".rudi-explain-static")
        assert static.count() == 1 and not static.is_visible()
        check_looks(page, widget, "dark", 640, shots, "8-quickstart-one-cell-nb7-dark-640",
                    top=page.locator(".jp-Cell").nth(1))
        check_looks(page, widget, "light", 1280, shots, "8-quickstart-one-cell-nb7-light-full")
    except BaseException:
        shots(page, "failure-quickstart-nb7")
        raise
    finally:
        close_light(page)
