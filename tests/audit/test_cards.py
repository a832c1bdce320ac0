"""A value typed the way its card writes it (issue 26, left-out 1): a share in percent, an amount in its unit.

The what-if box reads what :func:`value_text` writes: ``input_text`` then ``read_value`` gives the raw value
back exactly, and the reference is plain Python: the text's number over 100 for a share, computed in decimal.
"""

from decimal import Decimal
from types import SimpleNamespace

import numpy as np
import pytest

from rudi_explain.audit.cards import input_scale, input_text, output_kind, output_unit, read_value, value_text
from rudi_explain.exceptions import InputError

L = SimpleNamespace(output_kind=np.array(["share", "value", "count", "value"]),
                    output_unit=np.array(["", "EUR", "", ""]))
SHARE, AMOUNT, COUNT, PLAIN = 0, 1, 2, 3


@pytest.mark.parametrize(("text", "want"), [
    ("25", 0.25), ("25%", 0.25), (" 25 % ", 0.25), ("10.8", 0.108), ("0.25", 0.0025), ("100", 1.0), ("0", 0.0),
    ("2.26%", 0.0226), ("99.4", 0.994),
])
def test_a_share_is_typed_in_percent(text, want):
    assert read_value(L, SHARE, text) == want  # exactly: 10.8 reads 0.108, not 10.8 / 100 = 0.10800000000000001


@pytest.mark.parametrize(("text", "want"), [
    ("1200", 1200.0), ("1,200", 1200.0), ("1,200 EUR", 1200.0), ("7.5EUR", 7.5), ("-3", -3.0), ("0.25", 0.25),
])
def test_an_amount_is_typed_in_its_unit(text, want):
    assert read_value(L, AMOUNT, text) == want


@pytest.mark.parametrize("column", [SHARE, AMOUNT, COUNT, PLAIN])
@pytest.mark.parametrize("text", ["", "  ", "abc", "25%%", "1e999", "nan", "inf", "12 USD"])
def test_not_a_number_is_refused_saying_how_to_type_it(column, text):
    with pytest.raises(InputError, match="type a"):
        read_value(L, column, text)


def test_what_the_box_shows_reads_back_exactly_over_many_values():
    rng = np.random.default_rng(0)
    values = np.concatenate([rng.random(300), np.round(rng.random(200), 3), [0.0, 1.0, 0.5, 1e-7, 0.994]])
    for x in values:  # the reference: the shortest decimal of x, times 100 in decimal, back over 100
        text = input_text(L, SHARE, x)
        assert "%" not in text and "," not in text
        assert Decimal(text) == Decimal(repr(float(x))) * 100
        assert read_value(L, SHARE, text) == x
        assert read_value(L, SHARE, value_text(L, SHARE, x, exact=True)) == x  # what the card writes reads too
    for x in rng.normal(0, 1e4, 200):
        assert read_value(L, AMOUNT, input_text(L, AMOUNT, x)) == x
        assert read_value(L, AMOUNT, value_text(L, AMOUNT, x, exact=True)) == x  # "1,234.5 EUR"


def test_scale_kind_and_unit_in_one_place_with_the_fallback_for_old_tables():
    assert [input_scale(L, c) for c in range(4)] == [100, 1, 1, 1]
    assert output_kind(L, SHARE) == "share" and output_unit(L, AMOUNT) == "EUR"
    old = SimpleNamespace()  # a literal table saved before kinds and units
    assert output_kind(old, 0) == "value" and output_unit(old, 0) == "" and input_scale(old, 0) == 1
    assert read_value(old, 0, "25") == 25.0 and input_text(old, 0, 0.25) == "0.25"


def test_the_is_defined_threshold_reads_back_and_stays_short():
    """A scorecard's "is defined" literal reads value > -1.8e308: its box text is exact and short."""
    x = -np.finfo(np.float64).max
    for column in (SHARE, AMOUNT):
        text = input_text(L, column, x)
        assert len(text) < 30 and read_value(L, column, text) == x
