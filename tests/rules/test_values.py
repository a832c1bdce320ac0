"""One way to write a statistic's value (SEMANTICS.md, "The scorecard"), against a plain reference."""

import math

import numpy as np
import pytest

from rudi_explain.rules.values import format_value


def reference(x: float, kind: str, unit: str) -> str:
    """Python's own formatting: 3 significant digits ('g' never drops below them), thousands separated."""
    if math.isnan(x):
        return "undefined"
    if kind == "share":
        x *= 100
    if kind == "count" and x == int(x) and abs(x) < 1e15:
        text = f"{int(x):,}"
    elif x != 0 and not 1e-6 <= abs(float(f"{x:.3g}")) < 1e15:  # as points: "1.23e+300", "5e-7"
        mantissa, _, power = f"{x:.2e}".partition("e")
        text = f"{mantissa.rstrip('0').rstrip('.')}e{'+' if int(power) > 0 else '-'}{abs(int(power))}"
    else:
        rounded = float(f"{x:.3g}")
        decimals = max(0, 2 - math.floor(math.log10(abs(rounded))))
        text = f"{int(rounded):,}" if rounded == int(rounded) else f"{rounded:,.{decimals}f}".rstrip("0").rstrip(".")
    if kind == "share":
        return text + "%"
    return f"{text} {unit}" if unit else text


@pytest.mark.parametrize("seed", range(3))
def test_values_match_a_plain_reference(seed):
    rng = np.random.default_rng(seed)
    values = np.concatenate([rng.lognormal(0, 4, 300) * rng.choice([-1, 1], 300), rng.integers(0, 10**6, 50),
                             10.0 ** rng.uniform(-30, 30, 100) * rng.choice([-1, 1], 100)])
    for x in values:
        for kind, unit in (("value", ""), ("value", "EUR"), ("count", "")):
            assert format_value(x, kind, unit) == reference(float(x), kind, unit), (x, kind)
    for x in rng.random(200):
        assert format_value(x, "share") == reference(float(x), "share", ""), x


def test_shares_are_percents_and_missing_is_undefined():
    assert format_value(0.02256, "share") == "2.26%"
    assert format_value(0.19, "share", exact=True) == "19%"
    assert format_value(float("nan"), "share") == "undefined"
    assert format_value(1234.5, "value", "EUR") == "1,230 EUR"
    assert format_value(45000.0, "value", "EUR", exact=True) == "45,000 EUR"
    assert format_value(0.337599, exact=True) == "0.337599"  # exact: the number used, every digit


def test_extreme_values_are_written_with_an_exponent_as_points_are():
    # a score or an amount near 1e300 was written with every zero (301 digits), one near 1e-300 with 300
    assert format_value(1e300) == "1e+300"
    assert format_value(-1.23456e300, unit="EUR") == "-1.23e+300 EUR"
    assert format_value(-1.23456e300, exact=True) == "-1.23456e+300"
    assert format_value(1e-300) == "1e-300"
    assert format_value(1.234e-7) == "1.23e-7"
    assert format_value(3e15, "count") == "3e+15"
    assert format_value(1e-9, "share") == "1e-7%"
    # the plain range: from 1e-6 up to (not including) 1e15, every digit where exact
    assert format_value(1e-6) == "0.000001"
    assert format_value(999999999999999.0, exact=True) == "999,999,999,999,999"
    assert format_value(999999999999999.0) == "1e+15"  # 3 significant digits round it up to 1e15
    assert max(len(format_value(float(x), exact=exact)) for x in 10.0 ** np.arange(-300, 301, 7)
               for exact in (False, True)) <= 25
