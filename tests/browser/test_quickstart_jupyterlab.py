"""The README quickstart, pasted as one cell into a real JupyterLab and Notebook 7, shows what it promises.

The cell trains the demo GRU and starts ``explain`` in the background, then
reads ``exp.rules`` while the job runs: that read waits (with a note) and
prints the rules, never ``None``; the widget shows the result and hides the
static copy (rudi_explain/static_view.py) that stands in for it where no
kernel runs.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="browser test packages are missing: pip install -e '.[test]'")

from lab import APPS, open_notebook, write_notebook  # noqa: E402
from test_widget_layout_jupyterlab import _theme, check_looks, close_light  # noqa: E402

README = Path(__file__).resolve().parents[2] / "README.md"


def quickstart() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Quickstart", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.mark.parametrize("app", APPS)
def test_readme_quickstart_pasted_as_one_cell(jupyter_lab, chromium, shots, app):
    """JupyterLab runs it light at full width, then shows the result dark at 640 px; Notebook 7 runs it
    dark at 640 px, then shows the result light at full width (readable, nothing wider than the widget)."""
    code = quickstart()
    assert "print(exp.rules)" in code and "display(exp)" in code
    name = f"quickstart-{app}.ipynb"  # one kernel session per app
    write_notebook(jupyter_lab.root / name, [code])
    dark = app == "nb7"
    page = chromium.new_page(viewport={"width": 640 if dark else 1280, "height": 1400})
    page.set_default_timeout(30_000)
    try:
        open_notebook(page, jupyter_lab, name, app)
        if dark:
            _theme(page, "JupyterLab Dark", light=False)
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-cell')")
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
        page.locator(".rx-card").first.wait_for(timeout=60_000)
        assert page.locator(".rx-status").inner_text() == "done"
        # the static copy is there for kernel-less viewers, and hidden under the live widget
        static = page.locator(".rudi-explain-static")
        assert static.count() == 1 and not static.is_visible()
        widget = page.locator(".rx-root")
        first = "dark-640" if dark else "light-full"
        check_looks(page, widget, *(("dark", 640) if dark else ("light", 1280)), shots,
                    f"8-quickstart-one-cell-{app}-{first}", top=page.locator(".jp-Cell").first)
        then = ("light", 1280) if dark else ("dark", 640)
        check_looks(page, widget, *then, shots, f"8-quickstart-one-cell-{app}-{then[0]}-{'full' if then[1] > 640 else 640}")
    except BaseException:
        shots(page, f"failure-quickstart-{app}")
        raise
    finally:
        close_light(page)
