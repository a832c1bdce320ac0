"""The tutorials show live progress: a cell that starts a background explain shows its widget (issue 14, item 9).

A cell that ends in ``exp.wait()`` blocks with nothing on screen and the widget
appears later, finished; the cell that starts the job must show it instead
(``exp``, ``display(exp)`` or ``exp.widget()``), and the cells below read the
results (which wait for the job, with a note).
"""

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def _starting_cells(path: Path):
    """(variable, source) of each code cell that starts a background explain."""
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] != "code":
            continue
        src = "".join(cell["source"])
        m = re.search(r"^(\w+)\s*=\s*rx\.explain\(", src, re.M)
        if m and "background=False" not in src:  # background=False prints timed progress as it runs
            yield m.group(1), src


def _shows(name: str, src: str) -> bool:
    code = [line.split("#")[0].rstrip() for line in src.splitlines()]
    code = [line for line in code if line.strip()]
    return code[-1].strip() in (name, f"{name}.widget()") or f"display({name})" in src


def test_the_check_tells_a_blocking_cell_from_a_showing_one():
    assert _shows("exp", "exp = rx.explain(m, s)\nexp  # the widget")
    assert _shows("exp", "exp = rx.explain(m, s)\ndisplay(exp)\nprint(exp.rules)")
    assert not _shows("exp", "exp = rx.explain(m, s)\nexp.wait();")
    assert not _shows("exp", "exp = rx.explain(m, s)\nexp.wait()\nexp2")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_a_cell_that_starts_a_job_shows_its_widget(path):
    for name, src in _starting_cells(path):
        assert f"{name}.wait()" not in src, f"{path.name}: {name}.wait() blocks the cell that starts the job"
        assert _shows(name, src), f"{path.name}: the cell that starts {name} does not show it"


def test_the_tutorials_start_jobs():
    assert sum(1 for p in NOTEBOOKS for _ in _starting_cells(p)) >= 4  # the check has something to check
