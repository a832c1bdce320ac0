"""Helpers the browser tests share: write a notebook, open it in JupyterLab, run cells, wait for files."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

KERNEL_IDLE = ("() => window.jupyterapp?.shell?.currentWidget?.sessionContext?.session?.kernel"
               "?.status === 'idle'")


#: Progress listeners that keep a test's job running while the test looks at it, however fast or loaded
#: the machine (a warm kernel's whole job took under 6 s; on a loaded machine one ended before the test's
#: click: "done" where "cancelled" was tested). Run this in the kernel, then pass one as ``progress=``:
#: ``hold`` for a job the test stops part way (a Cancel, an Interrupt, a re-run): once the search has found
#: a statistic each event waits 0.5 s (some 36 follow: 18 s; 0.2 s gave 7 s, and a fresh-clone run beside
#: four timing runs saw the job end first), so the job is still searching when the test acts; ``pace`` for a job
#: the test watches to its end (the progress view, the time left, a moving bar): each event waits 0.05 s.
LISTENERS = """\
import time as _time
def hold(event):
    if event.stage == "search" and event.numbers.get("found"):
        _time.sleep(0.5)
def pace(event):
    _time.sleep(0.05)
"""


def open_tab(root, tab: str, shown: str, seconds: float = 60.0) -> None:
    """Click the widget's ``tab`` (within the locator ``root``) until ``shown``, a selector in it, is visible.

    A reopened notebook's widget view can be replaced while the widget manager restores the saved state, and
    a new view opens on its first tab: a click on the view it replaced is lost, so the click is repeated.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    deadline = time.monotonic() + seconds
    while True:
        root.locator(f".rx-tab[data-tab='{tab}']").first.click(timeout=seconds * 1000)
        try:
            root.locator(shown).first.wait_for(timeout=5_000)
            return
        except PlaywrightTimeout:
            if time.monotonic() > deadline:
                raise


def write_notebook(path: Path, cells: list[str]) -> None:
    """A notebook of code cells, with the python3 kernel."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


#: the apps a notebook test runs in: JupyterLab, and Notebook 7 (the ``notebook`` package's app, same server)
APPS = ("lab", "nb7")


def open_notebook(page, lab, name: str, app: str = "lab") -> None:
    """Open ``name`` in JupyterLab (``app="lab"``) or Notebook 7 (``"nb7"``) and wait until its kernel is idle.

    Both expose ``window.jupyterapp``, so :func:`run_cell` and the commands work the same in each.
    """
    url = {"lab": lab.page_url, "nb7": lab.notebook7_url}[app](name)
    page.goto(url, timeout=60_000)
    page.wait_for_function(KERNEL_IDLE, timeout=60_000)
    want = {"lab": "JupyterLab", "nb7": "Jupyter Notebook"}[app]
    assert page.evaluate("() => window.jupyterapp.name") == want


def run_cell(page, index: int) -> None:
    """Run cell ``index`` of the open notebook (it runs in the kernel's order of requests)."""
    page.evaluate("""k => { const nb = window.jupyterapp.shell.currentWidget.content;
                           nb.activeCellIndex = k; return window.jupyterapp.commands.execute('notebook:run-cell'); }""",
                  index)


def wait_file(path: Path, seconds: float) -> dict:
    """The JSON a cell writes to ``path``, once it is there and whole."""
    deadline = time.monotonic() + seconds
    while True:
        if path.exists():
            try:
                return json.loads(path.read_text())
            except json.JSONDecodeError:
                pass  # still being written
        if time.monotonic() > deadline:
            raise AssertionError(f"{path.name} was not written within {seconds} s")
        time.sleep(0.1)


def notebook7_own(error) -> bool:
    """An error thrown wholly inside Notebook 7's own bundles: 7.6.5 throws "Cannot read properties of
    undefined (reading 'schema')" from its shortcuts settings on every page load, with an empty
    notebook too (checked), so it says nothing about the widget."""
    frames = [line for line in (error.stack or "").splitlines()[1:] if "http" in line]
    return bool(frames) and all("/static/notebook/" in line for line in frames)


@contextmanager
def notebook_page(chromium, lab, name: str, cells: list[str], app: str, height: int = 1100) -> Iterator[tuple]:
    """``cells`` written to ``name``, opened in ``app`` with its first cell run: ``(page, errors)``.

    ``errors`` collects the page's own errors (not Notebook 7's, see :func:`notebook7_own`); the page
    is closed afterwards.
    """
    write_notebook(lab.root / name, cells)
    page = chromium.new_page(viewport={"width": 1200, "height": height})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)) if not notebook7_own(e) else None)
    page.set_default_timeout(30_000)
    try:
        open_notebook(page, lab, name, app)
        run_cell(page, 0)
        yield page, errors
    finally:
        page.close()
