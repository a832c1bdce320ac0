"""``make test`` holds numpy, OpenBLAS and PyTorch to the same kernels as the golden record's child process."""

import re
from pathlib import Path

from demo_golden import PINNED

MAKEFILE = Path(__file__).resolve().parents[2] / "Makefile"


def test_make_test_pins_the_kernels_the_golden_record_pins():
    text = MAKEFILE.read_text().replace("\\\n", " ")
    line = re.search(r"^PINNED_KERNELS := (.*)$", text, re.M)
    assert line, "the Makefile sets no PINNED_KERNELS"
    pinned = dict(re.findall(r'(\w+)=("[^"]*"|\S+)', line.group(1)))
    assert {k: v.strip('"') for k, v in pinned.items()} == PINNED
    for target in ("test", "test-fast"):
        recipe = re.search(rf"^{target}:.*\n\t(.*)$", text, re.M)
        assert recipe and "$(PINNED_KERNELS)" in recipe.group(1), target
