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
