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


# ------------------------------------------------------------------ stored outputs match a re-run (issue 28, item 6)
# ``make test`` runs the notebooks with ``--nbval-lax``, which compares the outputs of the cells marked
# ``# NBVAL_CHECK_OUTPUT`` only: a cell so marked that prints the rules makes nbval fail when a re-run
# finds other rules than the page stores. These fast checks keep such a cell in every tutorial.
CHECK = "# NBVAL_CHECK_OUTPUT"
RULES_HEADER = re.compile(r"^(\w+): statistics (\d+), rules (\d+)$")


def _cells(path: Path) -> list[dict]:
    return [c for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]


def _checked_rule_cells(path: Path) -> list[dict]:
    return [c for c in _cells(path) if CHECK in "".join(c["source"]).splitlines() and ".rules" in "".join(c["source"])]


def _stdout(cell: dict) -> str:
    return "".join("".join(o["text"]) for o in cell.get("outputs", [])
                   if o["output_type"] == "stream" and o["name"] == "stdout")


def test_nbval_reads_the_marker_as_compare_this_cells_output():
    from nbval.plugin import find_comment_markers

    source = "".join(_checked_rule_cells(NOTEBOOKS[0])[0]["source"])
    assert dict(find_comment_markers(source)) == {"check": True}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_a_tutorial_that_explains_has_its_rules_compared_with_a_rerun(path):
    explained = set(re.findall(r"^(\w+)\s*=\s*rx\.explain\(", "\n".join("".join(c["source"]) for c in _cells(path)),
                               re.M))
    assert explained, f"{path.name} explains nothing: the check has nothing to check"
    cells = _checked_rule_cells(path)
    assert cells, f"{path.name}: no cell marked {CHECK} prints the rules (nbval --nbval-lax compares no other)"
    shown = set()
    for cell in cells:
        assert all(o["output_type"] == "stream" and o["name"] == "stdout" for o in cell["outputs"]), \
            f"{path.name}: the checked cell stores more than its printed rules: {cell['outputs']}"
        lines = _stdout(cell).splitlines()
        assert lines, f"{path.name}: the checked cell has no stored output: re-run the notebook"
        # each block: "exp: statistics S, rules R", then R rules, one a line
        while lines:
            header = RULES_HEADER.match(lines.pop(0))
            assert header, f"{path.name}: unexpected output in the checked cell: {_stdout(cell)!r}"
            n_rules = int(header.group(3))
            rules, lines = lines[:n_rules], lines[n_rules:]
            assert len(rules) == n_rules and all(r.startswith("  ") and r.strip() for r in rules), _stdout(cell)
            shown.add(header.group(1))
    assert shown <= explained and shown, (shown, explained)


def test_the_prose_quotes_no_figure_a_rerun_may_change():
    # fidelity, agreement, weights: decimals belong in outputs, which a re-run rewrites, not in the prose
    for path in NOTEBOOKS:
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "markdown":
                prose = re.sub(r"`[^`]*`", "", "".join(cell["source"]))
                assert not re.findall(r"\b\d+\.\d+\b", prose), (path.name, re.findall(r"\b\d+\.\d+\b", prose))
