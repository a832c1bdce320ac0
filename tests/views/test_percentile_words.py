"""A percentile in words (issue 28, polish): ordinals for whole percentiles, "percentile 3.2" otherwise."""

from __future__ import annotations

import re

import pytest
from tiny import tiny_payments

from rudi_explain.audit.ranks import percentile_words


@pytest.mark.parametrize("p, words", [
    (1, "1st percentile"), (2, "2nd percentile"), (3, "3rd percentile"), (4, "4th percentile"),
    (11, "11th percentile"), (12, "12th percentile"), (13, "13th percentile"), (21, "21st percentile"),
    (22, "22nd percentile"), (50.0, "50th percentile"), (100, "100th percentile"), (111, "111th percentile"),
    (3.22, "percentile 3.2"), (99.75, "percentile 99.8"), (49.96, "50th percentile"), (0.04, "0th percentile"),
    (None, "percentile -"), (float("nan"), "percentile -"),
])
def test_percentile_words(p, words):
    assert percentile_words(p) == words


def test_a_user_view_never_writes_a_fraction_with_an_ordinal():
    exp = tiny_payments(120)
    texts = [repr(exp.user(u)) for u in exp.sequences.users[:40]]
    assert all(re.search(r"\d\.\d+(st|nd|rd|th)\b", t) is None for t in texts), texts
    # the 40 users hold fractional percentiles (mid-rank of 120): the other form is used, not dropped
    assert any(re.search(r"percentile \d+\.\d", t) for t in texts), texts
