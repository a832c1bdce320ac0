"""Moving code must not change what ``make demo`` shows: its printed text, rules, report figures,
saved JSON and saved arrays at seed 0 equal the record taken before the layout moved
(``tests/golden/demo.json``; timings left out)."""

import json

import pytest
from demo_golden import GOLDEN, run_demo

pytestmark = pytest.mark.slow


def test_make_demo_is_unchanged(tmp_path):
    expected = json.loads(GOLDEN.read_text())
    got = json.loads(json.dumps(run_demo(tmp_path / "demo"), sort_keys=True))
    for part in ("rules", "printed", "report", "explanation", "arrays"):
        assert got[part] == expected[part], f"make demo's {part} changed"
