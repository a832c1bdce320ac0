"""One number style for weights and points (issue 28, polish): the static copy writes them as the widget does.

Three significant digits, at most three decimals (one significant digit where three decimals would
write 0), no exponent, one minus sign (ASCII). Checked on the static copy of real explanations over
seeds (their weights are ragged: "+0.06671" before), and on the formatter's edge cases.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from tiny import tiny_payments

from rudi_explain.views.static_view import points_text, static_html

STYLE = re.compile(r"^[+-]?\d{1,3}(,\d{3})*(\.\d+)?$")


def _in_style(text: str, x: float) -> bool:
    """``text`` writes ``x`` in the one style: the value to its shown precision, no more digits than allowed."""
    if not STYLE.match(text) or "\u2212" in text:
        return False
    decimals = len(text.partition(".")[2])
    digits = len(text.lstrip("+-").replace(",", "").replace(".", "").lstrip("0"))
    one_digit = decimals > 3 and digits == 1  # a small weight: 0.0004, not 0.000
    if decimals > 3 and not one_digit or (digits > 3 and decimals > 0):
        return False
    return math.isclose(float(text.replace(",", "")), x, abs_tol=0.5 * 10.0 ** -decimals + 1e-12)


@pytest.mark.parametrize(("x", "want"), [(0.06671, "+0.067"), (-0.036, "-0.036"), (-8.86e-4, "-0.001"),
                                          (0.00004, "+0.00004"), (1.314, "+1.31"), (-12.345, "-12.3"),
                                          (0.0, "0"), (float("nan"), "–"), (None, "–")])
def test_points_text_cases(x, want):
    assert points_text(x) == want
    if x is not None and math.isfinite(x) and x:
        assert _in_style(want, x)


@pytest.mark.parametrize(("x", "want"), [(1234567.89, "+1,230,000"), (-12345.0, "-12,300"), (999.96, "+1,000"),
                                          (1235.0, "+1,240"), (-1245000.0, "-1,250,000"),
                                          (4.5e14, "+450,000,000,000,000"), (999_999_999_999_999.0, "+1.00e+15"),
                                          (-1.2345e300, "-1.23e+300"),
                                          (5e-7, "+5e-7")])
def test_large_points_keep_three_significant_digits(x, want):
    """Not every digit of a large number: three significant digits (a half rounded up on the float's exact
    value, as the widget's toPrecision does), and an exponent only where zeros would run past 1e15."""
    assert points_text(x) == want
    text = want.lstrip("+-")
    if "e" not in text:  # thousands separated, at most 3 digits before the zeros
        assert STYLE.match(want) and len(text.replace(",", "").rstrip("0")) <= 3
    assert math.isclose(float(text.replace(",", "")), abs(x), rel_tol=5e-3)


@pytest.mark.parametrize(("x", "want"), [(1.125, "+1.13"), (1.005, "+1.01"), (-0.0625, "-0.063"), (12.35, "+12.4"),
                                          (2.5, "+2.50"), (np.float64(1.125), "+1.13"), (np.float32(0.5), "+0.500")])
def test_a_half_rounds_as_the_widget_rounds_it(x, want):
    """A half at the last digit shown goes away from zero on the shortest decimal of the float, as the widget's
    toLocaleString does (f"{1.125:.2f}" is "1.12", the widget wrote "1.13"; test_report_number_style checks the
    widget); numpy scalars alike."""
    assert points_text(x) == want


@pytest.mark.parametrize("random_state", [0, 1, 2])
def test_the_static_copy_writes_every_weight_in_the_one_style(random_state):
    exp = tiny_payments(200, random_state=random_state)
    page = static_html(exp)
    cells = re.findall(r'<tr><td style="text-align: right(?:; white-space: nowrap)?">([^<]*)</td>', page)
    weights = [r.weight for r in exp.rules.rules] + [exp.rules.intercept]
    assert len(cells) == len(weights)
    for text, w in zip(cells, weights):
        assert _in_style(text, w), (text, w)
    assert "\u2212" not in page and not re.search(r"\d[eE][-+]?\d", page)
