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
    if kind == "count" and x == int(x):
        text = f"{int(x):,}"
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
    values = np.concatenate([rng.lognormal(0, 4, 300) * rng.choice([-1, 1], 300), rng.integers(0, 10**6, 50)])
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
