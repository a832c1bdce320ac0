"""Cancel while ``exp.wait()`` blocks, in a real JupyterLab and Notebook 7 (issue 14, item 2).

One cell starts a slow background explanation, shows it and waits for it.
While that cell is still busy (its prompt shows ``[*]``) the test clicks the
widget's Cancel button: the cell must end within a few seconds, the job
cancelled (the wait raises the cancel), the statistics found kept, and the
widget must say so calmly, as in the stop test. The next cell then runs.

The kernel's Interrupt is checked in the same notebook, on the same kernel and page, after the
cancel (one kernel start and one page per app, not two): its own job, its own watcher file.
"""

from __future__ import annotations

import time

import pytest

nbformat = pytest.importorskip("nbformat", reason="browser test packages are missing: pip install -e '.[test]'")

from lab import APPS, LISTENERS, open_notebook, run_cell, wait_file, write_notebook  # noqa: E402
from test_widget_layout_jupyterlab import _theme, check_looks, close_light  # noqa: E402

# Notebook 7 runs each flow in the dark theme in a 640 px window, JupyterLab light at full width;
# at the end each shows the stopped widget in the other theme and width (readable, nothing wider).
LOOK = {"lab": (("light", 1280), ("dark", 640)), "nb7": (("dark", 640), ("light", 1280))}


def _open(page, lab, name: str, app: str) -> None:
    open_notebook(page, lab, name, app)
    if LOOK[app][0][0] == "dark":
        _theme(page, "JupyterLab Dark", light=False)


def _looks(page, widget, app: str, shots, name: str) -> None:
    for theme, width in LOOK[app]:
        check_looks(page, widget, theme, width, shots, f"{name}-{app}-{theme}-{'full' if width > 640 else 640}")

# A watcher in the kernel writes in_wait.json once the main thread is blocked inside wait(): the test
# acts on that, not on a sleep (the 60 s deadline is only a safety net).
WATCH = """\
import json, sys, threading, time
def _watch(path, main=threading.main_thread().ident):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        frame, names = sys._current_frames().get(main), []
        while frame is not None:
            names.append(frame.f_code.co_name)
            frame = frame.f_back
        if "wait" in names:
            json.dump({"waiting": True}, open(path, "w"))
            return
        time.sleep(0.01)
"""

def _waiting_job(out: str) -> str:
    """A cell that starts a long job, shows it and waits for it, then writes how it ended to ``out``."""
    return WATCH + LISTENERS + f"""\
import rudi_explain as rx
demo = rx.datasets.make_payments(1500, random_state=0)
exp = rx.explain(None, demo.events, scores=demo.risk, background="thread", n_stats=20, n_simulations=3000,
                 progress=hold)
display(exp)
threading.Thread(target=_watch, args=("in_wait.json",), daemon=True).start()
try:
    exp.wait()
finally:
    json.dump({{"ended": time.time(), "status": exp.status, "found": [str(s) for s in exp.statistics]}},
              open("{out}", "w"))"""


WAITING = _waiting_job("cancel_wait.json")

AFTER = """json.dump({"after": time.time()}, open("cancel_wait_after.json", "w"))"""



def start_cell(page, index: int) -> None:
    """Run cell ``index`` without waiting for it (lab.run_cell returns once the cell has ended)."""
    page.evaluate("""k => { const nb = window.jupyterapp.shell.currentWidget.content;
                           nb.activeCellIndex = k; window.jupyterapp.commands.execute('notebook:run-cell'); }""", index)


PROMPT = "k => window.jupyterapp.shell.currentWidget.content.widgets[k].model.executionCount"


INTERRUPTED = _waiting_job("interrupt_wait.json")

AGAIN = """\
job = rx.explain(None, demo.events, scores=demo.risk, background="thread", n_stats=20, n_simulations=3000,
                 progress=hold)
job"""

LISTED = """\
listed = [e.status for e in rx.running()]
for e in rx.running():
    e.cancel()
for e in list(rx.running()):
    try:
        e.wait(timeout=30)
    except Exception:  # cancelled: wait() says so
        pass
json.dump({"listed": listed, "after": [e.status for e in rx.running()]}, open("running.json", "w"))"""


@pytest.mark.parametrize("app", APPS)
def test_cancel_or_interrupt_while_wait_blocks(jupyter_lab, chromium, shots, app):
    """The widget's Cancel while wait() blocks (cells 0-1), then on the same kernel and page
    :func:`_interrupt_and_rerun` (cells 2-4)."""
    root = jupyter_lab.root
    for name in ("cancel_wait.json", "cancel_wait_after.json", "in_wait.json", "interrupt_wait.json", "running.json"):
        (root / name).unlink(missing_ok=True)
    name = f"cancel_wait-{app}.ipynb"  # one kernel session per app
    write_notebook(root / name, [WAITING, AFTER, INTERRUPTED, AGAIN, LISTED])
    page = chromium.new_page(viewport={"width": LOOK[app][0][1], "height": 1400})
    page.set_default_timeout(30_000)
    try:
        _open(page, jupyter_lab, name, app)
        start_cell(page, 0)
        cell = page.locator(".jp-Cell").nth(0)
        widget = cell.locator(".rx-root")
        widget.locator(".rx-found-item").first.wait_for(timeout=120_000)  # the search has found something
        wait_file(root / "in_wait.json", 60)  # and the cell is blocked inside wait()
        assert page.evaluate(PROMPT, 0) is None, "the cell is no longer running: nothing to test"
        assert cell.locator(".jp-InputPrompt").inner_text().strip().startswith("[*]")
        assert not (root / "cancel_wait.json").exists()
        clicked = time.time()
        widget.locator(".rx-cancel").click()
        state = wait_file(root / "cancel_wait.json", 30)
        took = state["ended"] - clicked
        print(f"\nCancel clicked -> cell's wait() ended: {took:.2f} s")
        # counted, not timed (the seconds are printed): the job stopped part way through its 20 statistics,
        # and wait() returned with it; the statistics found are kept
        assert state["status"] == "cancelled" and 1 <= len(state["found"]) < 20

        widget.locator(".rx-status-cancelled").wait_for(timeout=30_000)
        assert widget.locator(".rx-error").count() == 0  # a requested cancel is no error in the widget
        message = widget.locator(".rx-message").inner_text()
        assert message.startswith("cancelled · during the search stage") and message.count("cancelled") == 1, message
        assert widget.locator(".rx-found-item").count() == len(state["found"])
        assert widget.locator(".rx-retry").count() == 1
        assert widget.locator(".rx-chart, .rx-chart-note").count() == 0  # stopped before training: no chart, no note
        # the cell itself ended with the cancel (wait() re-raises it), and has its execution count
        page.wait_for_function(f"() => ({PROMPT})(0) !== null", timeout=30_000)
        errors = cell.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
        assert "Cancelled" in errors.last.inner_text()
        run_cell(page, 1)  # the kernel answers the next cell
        after = wait_file(root / "cancel_wait_after.json", 30)
        assert after["after"] >= state["ended"]
        _looks(page, widget, app, shots, "cancel-while-waiting")
    except BaseException:
        shots(page, f"failure-cancel-wait-{app}")
        close_light(page)
        raise
    # back to the app's own theme and width (_looks left the other), then the Interrupt
    theme, width = LOOK[app][0]
    page.set_viewport_size({"width": width, "height": 1400})
    _theme(page, {"light": "JupyterLab Light", "dark": "JupyterLab Dark"}[theme], light=theme == "light")
    (root / "in_wait.json").unlink(missing_ok=True)  # the cancel's watcher wrote it
    try:
        _interrupt_and_rerun(page, root, shots, app)
    except BaseException:
        shots(page, f"failure-interrupt-{app}")
        raise
    finally:
        close_light(page)


def _interrupt_and_rerun(page, root, shots, app: str) -> None:
    """The kernel's Interrupt while wait() blocks cancels the job (and says so); re-running a cell that
    started a job that still runs cancels that job (the re-run replaces it) and says so; rx.running() lists
    the one left and stops it. Cells 2-4 of the open notebook, whose earlier jobs have all stopped."""
    start_cell(page, 2)
    cell = page.locator(".jp-Cell").nth(2)
    widget = cell.locator(".rx-root")
    widget.locator(".rx-found-item").first.wait_for(timeout=120_000)
    wait_file(root / "in_wait.json", 60)
    assert page.evaluate(PROMPT, 2) is None, "the cell is no longer running: nothing to test"
    interrupted = time.time()
    page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.interrupt()")
    state = wait_file(root / "interrupt_wait.json", 30)
    took = state["ended"] - interrupted
    print(f"\nInterrupt -> cell's wait() ended: {took:.2f} s")
    assert state["status"] == "cancelled" and len(state["found"]) < 20  # stopped part way; seconds printed
    widget.locator(".rx-status-cancelled").wait_for(timeout=30_000)
    assert widget.locator(".rx-error").count() == 0 and widget.locator(".rx-retry").count() == 1
    page.wait_for_function(f"() => ({PROMPT})(2) !== null", timeout=30_000)
    said = "\n".join(cell.locator(".jp-OutputArea-output").all_inner_texts())
    assert "interrupted: the explanation was cancelled" in said and "KeyboardInterrupt" in said

    # The same cell run twice: the second run cancels the job the first one started, and says so.
    run_cell(page, 3)
    again = page.locator(".jp-Cell").nth(3)
    again.locator(".rx-status-running").wait_for(timeout=60_000)
    run_cell(page, 3)
    warning = again.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    warning.first.wait_for(timeout=30_000)
    text = warning.first.inner_text()
    assert text.startswith("cancelled the explanation this cell started before (the re-run replaces it): "
                           "Explanation(running, started "), text
    shots(page, f"rerun-warns-{app}", top=again)
    run_cell(page, 4)
    listed = wait_file(root / "running.json", 60)
    assert listed == {"listed": ["running"], "after": []}  # the replaced job is gone from the list
    again.locator(".rx-status-cancelled").wait_for(timeout=30_000)  # the shown job, stopped from the list
    _looks(page, widget, app, shots, "interrupt-while-waiting")
