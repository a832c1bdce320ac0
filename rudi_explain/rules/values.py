"""A statistic's value, written the one way (SEMANTICS.md, "The scorecard").

Shares as percents, counts as whole numbers, values with their column's unit,
thousands separated, at most 3 significant digits; "undefined" for a missing
value. ``exact=True`` writes the very number used instead of 3 digits (a
threshold, a moved threshold), still as a percent for a share.
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal
from typing import Any

import numpy as np

__all__ = ["format_value", "grouped", "percent_text", "points_text", "slope_text", "SIGNIFICANT_DIGITS"]

#: Significant digits of a value shown to people (a threshold shows exactly the number used).
SIGNIFICANT_DIGITS = 3


def format_value(value: Any, kind: str = "value", unit: str = "", *, exact: bool = False) -> str:
    """A statistic output's value for people.

    Parameters
    ----------
    value : float
        The value (a share as a fraction in [0, 1]).
    kind : {"value", "share", "count", "binary"}
        The output's kind (``Literals.output_kind``).
    unit : str
        The output's unit (``Literals.output_unit``), written after the number.
    exact : bool
        Write the exact number (the shortest decimal that reads back as the same float)
        instead of rounding to :data:`SIGNIFICANT_DIGITS`.

    Returns
    -------
    str
        e.g. ``format_value(0.02256, "share")`` is ``"2.26%"``, ``format_value(1234.5, unit="EUR")``
        is ``"1,230 EUR"``, ``format_value(7.0, "count")`` is ``"7"``.
    """
    x = float(value)
    if math.isnan(x):
        return "undefined"
    if math.isinf(x):
        return "infinite" if x > 0 else "minus infinite"
    if kind == "share":
        text = percent_text(_shortest(x)) if exact else _number(Decimal(repr(x)) * 100, exact=False)
        return f"{text}%"
    if kind == "count" and x == int(x) and abs(x) < _PLAIN_UP_TO:
        text = f"{int(x):,}"
    else:
        text = _number(Decimal(_shortest(x)) if exact else Decimal(repr(x)), exact)
    return f"{text} {unit}" if unit else text


def percent_text(text: str) -> str:
    """A share's exact decimal text as a percentage, exactly: "0.34" -> "34" (no "%")."""
    return _number(Decimal(text) * 100, exact=True)


#: a plain decimal's text (no exponent, not "inf")
_PLAIN = re.compile(r"-?\d+(?:\.\d+)?")


def grouped(text: str) -> str:
    """A plain decimal's text with its thousands separated ("7300" -> "7,300", "-1234.5" -> "-1,234.5"), its
    digits kept: a rule's sentence writes its exact threshold as the cards and the per-user view do
    (:func:`format_value` with ``exact=True``). Anything else (an exponent, "inf") is returned as it is."""
    return _number(Decimal(text), exact=True) if _PLAIN.fullmatch(text) else text


def _shortest(x: float) -> str:
    return str(np.format_float_positional(x, unique=True, trim="-"))


def _significant(d: Decimal, rounding: str = ROUND_HALF_EVEN) -> Decimal:
    """``d`` (not 0) rounded to :data:`SIGNIFICANT_DIGITS` significant digits."""
    return d.scaleb(-d.adjusted()).quantize(Decimal(10) ** -(SIGNIFICANT_DIGITS - 1), rounding=rounding) \
        .scaleb(d.adjusted())


#: Values from 1e-6 up to this magnitude are written without an exponent; beyond, as points are
#: (:func:`points_text`), "1.23e+300" and "5e-7": scores or amounts on such scales would otherwise write
#: hundreds of zeros.
_PLAIN_UP_TO = 1e15
_PLAIN_FROM = 1e-6


def _number(d: Decimal, exact: bool) -> str:
    """A decimal thousands separated, rounded to 3 significant digits unless exact; with an exponent
    outside [1e-6, 1e15) ("1.23e+300", "5e-7"), as points are written."""
    if d == 0:
        return "0"
    if not exact:
        d = _significant(d)
    if not _PLAIN_FROM <= abs(d) < _PLAIN_UP_TO:
        at = d.adjusted()
        mantissa = format(d.scaleb(-at).normalize(), "f")
        return f"{mantissa}e{'+' if at > 0 else '-'}{abs(at)}"
    text = format(d.normalize(), "f")
    sign = "-" if text.startswith("-") else ""
    whole, _, frac = text.lstrip("-").partition(".")
    frac = frac.rstrip("0")
    whole = f"{int(whole):,}"
    return f"{sign}{whole}.{frac}" if frac else f"{sign}{whole}"


def points_text(x: float | None, sign: bool = True) -> str:
    """A weight or a number of points as every view writes it (the widget's ``points()`` in explanation.js,
    the rules' text form, the static copy).

    Three significant digits, at most three decimals unless that would write 0 (then one significant
    digit: ``"+0.0004"``), thousands separated, the ASCII minus. No exponent from 1e-6 up to 1e15:
    ``"+1,230,000"``, not every digit of 1,234,567.89; beyond, ``"+1.23e+300"`` (scores on such scales
    would otherwise write hundreds of zeros). A half rounds away from zero as the widget's JavaScript
    rounds: below 1,000 on the shortest decimal of the float (``toLocaleString``), above on its exact
    value (``toPrecision``).

    Parameters
    ----------
    x : float or None
        The value; None or NaN gives ``"–"``.
    sign : bool, default=True
        Write ``"+"`` before a positive value.

    Returns
    -------
    str
    """
    if x is None or not math.isfinite(x):
        return "–"
    if x == 0:
        return "0"
    a = abs(float(x))  # a plain float: repr(np.float64(...)) names its type
    head = "-" if x < 0 else "+" if sign else ""
    if a < 1e-6:
        mantissa, _, power = f"{a:.0e}".partition("e")
        return head + f"{mantissa}e{int(power)}"  # "5e-7", as JavaScript's toExponential(0) writes it
    e = math.floor(math.log10(a))
    if e >= 3:
        # on the float's exact value, a half up: the digits JavaScript's toPrecision(3) picks
        shown = _significant(Decimal(a), ROUND_HALF_UP)
        at = shown.adjusted()
        if at >= 15:
            return head + f"{shown.scaleb(-at):.2f}e+{at}"
        return head + _number(shown, exact=True)
    d = max(0, min(3, 2 - e))
    if round(a, d) == 0:
        d = -e
    # the shortest decimal that reads back as the float, a half away from zero: what the widget's
    # toLocaleString writes ("+1.13" for 1.125 and "+1.01" for 1.005, where f"{a:.2f}" wrote 1.12 and 1.00)
    shown = Decimal(repr(a)).quantize(Decimal(1).scaleb(-d), rounding=ROUND_HALF_UP)
    return head + f"{shown:,f}"


def slope_text(slope: float, lo: float, hi: float, kind: str = "value", unit: str = "") -> str:
    """A slope per unit of the value, written per a round step of the value as a reader reads it.

    ``"+0.02 per 100 EUR"``, ``"-0.00794 per 1%"`` (a share's slope per 1 is per 100%): the step is
    the power of ten a tenth of the range ``[lo, hi]`` rounds down to, at least 1 for a count.
    """
    width = hi - lo
    step = 10.0 ** (math.floor(math.log10(width)) - 1) if width > 0 else 1.0
    if kind == "count":
        step = max(step, 1.0)
    step = float(f"{step:.0e}")  # the float nearest the power of ten, so it prints short
    return f"{slope * step:+.3g} per {format_value(step, kind, unit, exact=True)}"
