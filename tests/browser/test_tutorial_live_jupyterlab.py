"""The first tutorial shows live progress in the cell that starts the job, in JupyterLab and Notebook 7
(issue 14, item 9).

The test opens notebooks/01_quickstart.ipynb itself (its outputs cleared, so any widget on screen is
the live one) and runs its code cells, in order, up to the cell that starts ``rx.explain``. One cell
is injected at the top: it shrinks the job (400 demo users, one GRU epoch, 3 statistics, 20 simulations) by
wrapping the library's functions, so the tutorial's own cells run unchanged and the job ends in
seconds. The cell that starts the job must end at once, and its own output must show the widget
running, with its progress bar moving, before the same widget shows the rules.

Both apps open the same notebook, so Notebook 7 joins the kernel JupyterLab started (the server
keeps one session per path): no second kernel start. JupyterLab runs in the light theme at full
width; Notebook 7 in the dark theme in a 640 px window, where the running view is checked for
contrast (WCAG >= 4.5) and for nothing wider than the widget.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="browser test packages are missing: pip install -e '.[test]'")

from lab import APPS, LISTENERS, open_notebook, run_cell  # noqa: E402
from test_widget_layout_jupyterlab import CONTRAST, OVERFLOW, _theme, close_light  # noqa: E402

TUTORIAL = Path(__file__).resolve().parents[2] / "notebooks" / "01_quickstart.ipynb"

# Injected above the tutorial's cells: the same calls, on a job small enough for a test.
SMALL = LISTENERS + """\
# injected by the browser test: the tutorial's cells as written, on a smaller job (paced: running for some seconds)
import rudi_explain as rx
if "_explain" not in globals():  # run again in the same kernel (Notebook 7 joins it): wrap once
    _make, _train, _explain = rx.datasets.make_payments, rx.datasets.train_demo_gru, rx.explain
rx.datasets.make_payments = lambda n, **kw: _make(min(n, 400), **kw)
rx.datasets.train_demo_gru = lambda *a, **kw: _train(*a, **{**kw, "epochs": 1})
rx.explain = lambda *a, **kw: _explain(*a, **{**kw, "n_stats": 3, "n_simulations": 20, "student_params": {"epochs": 30},
                                          "progress": pace})"""

# The running view inside one cell: status, the bar's value, the stage.
PROGRESS = """cell => {
  const root = cell.querySelector('.rx-root');
  if (!root) return null;
  const bar = root.querySelector('.rx-progress .rx-bar');
  const status = root.querySelector('.rx-status');
  return { status: status ? status.textContent : null, now: bar ? Number(bar.getAttribute('aria-valuenow')) : null,
           stage: (root.querySelector('.rx-stage-active') || {}).dataset?.stage ?? null,
           cards: root.querySelectorAll('.rx-tab').length };
}"""

# Width and text contrast of the running view, read in one synchronous call so the view cannot swap
# to the finished one half-way (two calls raced it: CI saw detached elements with no colour).
RUNNING_VIEW = f"""cell => {{
  const root = cell.querySelector('.rx-root');
  const status = root && root.querySelector('.rx-status');
  if (!status || status.textContent !== 'running') return null;
  const texts = [...root.querySelectorAll('.rx-status, .rx-message, .rx-stage, .rx-cancel')]
    .filter(e => e.getClientRects().length);
  return {{ overflow: ({OVERFLOW})(root), contrast: texts.map(e => ({CONTRAST})(e, 'color').ratio) }};
}}"""

COUNT = "k => window.jupyterapp.shell.currentWidget.content.widgets[k].model.executionCount"


def _tutorial_copy(path: Path) -> int:
    """Write the tutorial, outputs cleared, with SMALL on top; the index of the cell starting the job."""
    nb = nbformat.read(TUTORIAL, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nb.cells.insert(0, nbformat.v4.new_code_cell(SMALL))
    nbformat.write(nb, path)
    starts = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and re.search(r"^exp\s*=\s*rx\.explain\(", c.source, re.M)]
    assert len(starts) == 1, "the tutorial's first job is started by one `exp = rx.explain(` cell"
    return starts[0]


@pytest.mark.parametrize("app", APPS)
def test_tutorial_shows_live_progress_in_the_cell_that_starts_the_job(jupyter_lab, chromium, shots, app):
    name = "tutorial01.ipynb"  # one path: Notebook 7 joins the kernel JupyterLab started
    start = _tutorial_copy(jupyter_lab.root / name)
    dark, width = (False, 1280) if app == "lab" else (True, 640)
    page = chromium.new_page(viewport={"width": width, "height": 1000})
    page.set_default_timeout(30_000)
    try:
        open_notebook(page, jupyter_lab, name, app)
        if dark:
            _theme(page, "JupyterLab Dark", light=False)
        code = page.evaluate("() => window.jupyterapp.shell.currentWidget.content.widgets"
                             ".map((c, i) => c.model.type === 'code' ? i : -1).filter(i => i >= 0)")
        for k in [k for k in code if k <= start]:
            run_cell(page, k)  # resolves once the cell has ended
            assert page.evaluate(COUNT, k) is not None, f"cell {k} did not run"
            errors = page.locator(".jp-Cell").nth(k).locator(".jp-OutputArea-output[data-mime-type="
                                                            "'application/vnd.jupyter.stderr']")
            assert "Traceback" not in "\n".join(errors.all_inner_texts()), f"cell {k} failed"
        cell = page.locator(".jp-Cell").nth(start)
        ended = time.monotonic()  # the starting cell has ended: the job runs on in the background

        # Sample the widget in that cell while the job runs; at the first running sample, a screenshot
        # (and in the dark at 640: contrast and nothing wider than the widget).
        samples, seen_running = [], None
        deadline = ended + 240
        while time.monotonic() < deadline:
            s = cell.evaluate(PROGRESS)
            if s is not None:
                samples.append(s)
                if s["status"] == "done" and s["cards"]:
                    break
                if s["status"] == "running" and s["now"] is not None and seen_running is None:
                    seen_running = cell.evaluate(RUNNING_VIEW)  # null if the view changed since the sample
                    shots(page, f"tutorial-01-{app}-{'dark-640' if dark else 'light-full'}-running", top=cell)
                    continue  # sample again at once: the job may be short
            page.wait_for_timeout(100)
        running = [s for s in samples if s["status"] == "running" and s["now"] is not None]
        print(f"\n{app}: {len(samples)} samples, {len(running)} running, bar values "
              f"{sorted({s['now'] for s in running})}, stages {sorted({s['stage'] for s in running if s['stage']})}")
        assert running, f"the cell that starts the job never showed it running: {samples[:3]} ... {samples[-3:]}"
        nows = [s["now"] for s in running]
        assert nows == sorted(nows), "the progress bar went backwards"
        assert len(set(nows)) >= 2, f"the progress bar did not move while shown: {nows}"
        assert samples[-1]["status"] == "done" and samples[-1]["cards"] > 0, samples[-1]
        assert page.locator(".rx-root").count() == 1  # shown in that cell, not later in another
        assert seen_running is not None, "the running view was never read whole"
        got = seen_running["overflow"]
        assert got["scrollWidth"] <= got["clientWidth"] and not got["out"], got
        if dark:
            assert min(seen_running["contrast"]) >= 4.5, seen_running["contrast"]
            got = cell.locator(".rx-root").evaluate(f"({OVERFLOW})")  # the finished view too
            assert got["scrollWidth"] <= got["clientWidth"] and not got["out"], got
        shots(page, f"tutorial-01-{app}-{'dark-640' if dark else 'light-full'}-done", top=cell)
    except BaseException:
        shots(page, f"failure-tutorial-{app}")
        raise
    finally:
        close_light(page)
