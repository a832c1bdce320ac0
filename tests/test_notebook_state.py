"""The committed tutorials carry no stale widget state (issue 28, item 5).

Reopened in JupyterLab with its default settings, a widget-view output whose model is not
saved shows "Error displaying widget: model not found"; the reader must meet the static copy
instead. ``tests/tutorial_outputs.py`` strips a notebook; this checks every committed one.
"""

from pathlib import Path

import nbformat
import pytest
from tutorial_outputs import (
    STATIC_COPY,
    WIDGET_STATE,
    WIDGET_VIEW,
    has_static_copy,
    strip_widget_state,
    widget_problems,
)

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def _notebook_with_state():
    """A notebook as nbclient leaves it: saved state, a static copy then the view, and a view alone."""
    nb = nbformat.v4.new_notebook()
    static = nbformat.v4.new_output("display_data", data={
        "text/html": f'<div class="{STATIC_COPY}"><b>rudi-explain</b>: 3 rules</div>',
        "text/plain": "Explanation(...)"})
    view = {WIDGET_VIEW: {"model_id": "abc", "version_major": 2, "version_minor": 1},
            "text/plain": "ExplanationWidget(done)"}
    shown = nbformat.v4.new_code_cell("exp", outputs=[static, nbformat.v4.new_output("display_data", data=dict(view))])
    bare = nbformat.v4.new_code_cell("w", outputs=[nbformat.v4.new_output("display_data", data=dict(view))])
    nb.cells = [nbformat.v4.new_markdown_cell("# t"), shown, bare]
    nb.metadata["widgets"] = {WIDGET_STATE: {"state": {"abc": {"model_name": "AnyModel"}}, "version_major": 2}}
    return nb


def test_the_check_finds_state_and_views_and_stripping_leaves_the_static_copy():
    nb = _notebook_with_state()
    problems = widget_problems(nb)
    assert any("widget state" in p for p in problems) and any(p.startswith("cell 2:") for p in problems)
    nb.metadata["widgets"][WIDGET_STATE]["state"] = {}  # the model is gone: both views would show the error
    assert sum("model not found" in p for p in widget_problems(nb)) == 2
    assert strip_widget_state(nb) == 2
    assert widget_problems(nb) == [] and "widgets" not in nb.metadata
    shown, bare = nb.cells[1], nb.cells[2]
    assert has_static_copy(shown) and len(shown.outputs) == 1  # the static copy stays, the view goes
    assert bare.outputs[0]["data"] == {"text/plain": "ExplanationWidget(done)"}  # no copy: its repr stays


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_a_committed_tutorial_has_no_stale_widget_state(path):
    nb = nbformat.read(path, as_version=4)
    assert widget_problems(nb) == [], (f"{path.name}: run .venv/bin/python tests/tutorial_outputs.py {path}",
                                       widget_problems(nb))


def test_the_tutorials_that_show_an_explanation_keep_its_static_copy():
    shown = {p.name for p in NOTEBOOKS if any(has_static_copy(c) for c in nbformat.read(p, as_version=4).cells
                                              if c.cell_type == "code")}
    assert {"01_quickstart.ipynb", "03_audit_a_user.ipynb", "05_audit_one_user.ipynb"} <= shown
