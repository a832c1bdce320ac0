"""Moving code must not change what ``make demo`` shows: its printed text, rules, report figures,
saved JSON and saved arrays at seed 0 equal the record taken before the layout moved
(``tests/golden/demo.json``; timings left out), with the numeric kernels held to AVX2 so that the
record holds on any x86-64 CPU (``demo_golden.PINNED``)."""

import json

import pytest
from demo_golden import GOLDEN, run_demo_pinned

pytestmark = pytest.mark.slow


def test_make_demo_is_unchanged(tmp_path):
    expected = json.loads(GOLDEN.read_text())
    got = run_demo_pinned(tmp_path / "demo")
    for part in ("rules", "printed", "report", "explanation", "arrays"):
        assert got[part] == expected[part], f"make demo's {part} changed"
