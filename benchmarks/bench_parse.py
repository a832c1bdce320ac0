"""Seconds to read statistic texts: linear in their length, and a text over the bound refused at once.

    .venv/bin/python benchmarks/bench_parse.py

Prints the best of five parses of texts from 1,000 characters to the length bound
(rudi_explain.statistics.bounds.MAX_STATISTIC_CHARACTERS), their time per 1,000 characters (about
flat when reading is linear), and the time to refuse a 1.2 MB text. Timing only: the tests count
work instead (tests/test_bad_input.py: no slice of the text is copied; tests/statistics/
test_text_bounds.py: a text over the bound is never tokenized).
"""

from __future__ import annotations

import time

from rudi_explain.statistics.bounds import MAX_STATISTIC_CHARACTERS
from rudi_explain.statistics.text import parse_operators


def best_of(f, repeats: int = 5) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    head = "Select(amount)" + " | Abs" * 29 + " | RetainBy(card_type='"
    tail = "') | Sum"
    print(f"{'characters':>10}  {'parse':>9}  {'per 1,000 characters':>20}")
    for n in (1_000, 2_500, 5_000, MAX_STATISTIC_CHARACTERS):
        text = head + "x" * (n - len(head) - len(tail)) + tail
        seconds = best_of(lambda text=text: parse_operators(text))
        print(f"{len(text):>10,}  {seconds * 1e3:>7.3f} ms  {seconds * 1e6 / len(text):>17.3f} ms")
    huge = "Select(amount)" + " | Abs" * 200_000 + " | Mean"

    def refuse() -> None:
        try:
            parse_operators(huge)
        except ValueError:
            return
        raise AssertionError("a text over the bound was read")

    print(f"refusing a {len(huge):,}-character text: {best_of(refuse) * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
