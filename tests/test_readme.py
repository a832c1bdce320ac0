"""The README's API table names only what exists: every rx.X, exp.X and keyword it shows."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import rudi_explain as rx
from rudi_explain.explanation import Explanation

README = Path(__file__).resolve().parents[1] / "README.md"


def api_table() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text.split("## The API in brief", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| `")]


def test_every_rx_and_exp_name_in_the_api_table_exists():
    rows = api_table()
    assert len(rows) >= 10
    text = "\n".join(rows)
    rx_names = set(re.findall(r"\brx\.([A-Za-z_]\w*)", text))
    exp_names = set(re.findall(r"\bexp\.([A-Za-z_]\w*)", text))
    assert {"SumOfTrees", "load", "explain", "Sequences"} <= rx_names
    assert {"fidelity_curve", "with_rules"} <= exp_names
    assert [n for n in rx_names if not hasattr(rx, n)] == []
    assert [n for n in exp_names if not hasattr(Explanation, n)] == []


def test_keywords_in_the_api_table_are_parameters():
    def row_of(call: str) -> str:
        return next(r for r in api_table() if f"`{call}(" in r)

    for call, function in (("rx.explain", rx.explain), ("rx.Sequences", rx.Sequences), ("rx.load", rx.load)):
        row = row_of(call)
        shown = set(re.findall(r"`?\b([a-z_]+)=", row))
        params = set(inspect.signature(function).parameters)
        assert shown and shown <= params, (call, shown - params)
    shown = set(re.findall(r'student="(\w+)"|`"(\w+)"`', row_of("rx.explain")))
    from rudi_explain.explanation import STUDENTS

    students = {a or b for a, b in shown} - {"readable", "paper"}
    assert students and students <= set(STUDENTS)


def test_report_keys_named_in_the_api_table_exist():
    from tiny import tiny_payments

    row = next(r for r in api_table() if r.startswith("| `exp.report()`"))
    keys = set(re.findall(r"`(\w+)` \(", row))
    assert {"fidelity_test_ci", "warnings", "score_unit"} <= keys
    assert keys <= set(tiny_payments(150).report())


WIDGET_JS = README.parent / "widgets" / "explanation.js"


def widget_tabs() -> set[str]:
    """The tab labels the widget draws (``const tabs = [["rules", `Rules (${...})`], ...]``), without counts."""
    line = next(x for x in WIDGET_JS.read_text(encoding="utf-8").splitlines() if "const tabs = [[" in x)
    labels = re.findall(r"\[\"\w+\", [`\"]([^`\"]+)[`\"]\]", line)
    return {label.split(" (")[0] for label in labels}


def named_tabs(text: str) -> set[str]:
    """Every "X tab" the text names (``**The Faithfulness tab**``, "the User tab (...)")."""
    return set(re.findall(r"\b([A-Z][a-z]+) tab\b", text))


def test_the_check_reads_the_widget_tabs_and_the_tabs_a_text_names():
    assert {"Rules", "Faithfulness", "Thresholds", "User", "Statistics"} <= widget_tabs()
    assert named_tabs("**The Effects tab** draws; the User tab (attributions); a table view") == {"Effects", "User"}


def test_every_tab_the_readme_names_is_a_tab_of_the_widget():
    named = named_tabs(README.read_text(encoding="utf-8"))
    assert named, "the README names no tab: the check checks nothing"
    assert named <= widget_tabs(), f"the README names tabs the widget lacks: {sorted(named - widget_tabs())}"


def untested_apps(text: str) -> str:
    """The README's "Known limits" line on where the widget is untested."""
    limits = text.split("## Known limits", 1)[1].split("\n## ", 1)[0]
    return next(item for item in limits.split("\n- ") if "untested" in item)


def test_the_readme_does_not_call_untested_an_app_the_browser_tests_run():
    browser = "".join(p.read_text(encoding="utf-8") for p in (README.parent / "tests" / "browser").glob("*.py"))
    line = untested_apps(README.read_text(encoding="utf-8"))
    assert "notebook7_url" in browser and "/lab/tree/" in browser  # the suite runs both apps
    untested = line.split("untested")[0].rsplit(";", 1)[-1]
    assert "Notebook 7" not in untested and "JupyterLab" not in untested, line
    assert "Notebook 7" in line and "JupyterLab" in line, line
