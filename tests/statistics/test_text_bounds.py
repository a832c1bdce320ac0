"""Bad input, round three: statistic texts are bounded, and their messages say what is wrong."""

from __future__ import annotations

import json
import zipfile

import pytest
from tiny import tiny_payments

import rudi_explain as rx
from rudi_explain.statistics import Statistic

HUGE = "Select(amount)" + " | Abs" * 200_000 + " | Mean"


def _tokenized(monkeypatch) -> list[int]:
    """The length of every text the tokenizer reads from now on (counted work, not seconds)."""
    import rudi_explain.statistics.text as text_module

    lengths: list[int] = []
    real = text_module._tokens

    def counting(text):
        lengths.append(len(text))
        return real(text)

    monkeypatch.setattr(text_module, "_tokens", counting)
    return lengths


def test_a_huge_statistic_text_is_refused_at_once_naming_the_bound(monkeypatch):
    tokenized = _tokenized(monkeypatch)
    with pytest.raises(ValueError, match=r"at most 10,000 characters; this one has 1,200,021") as err:
        Statistic.parse(HUGE)
    assert tokenized == []  # refused on its length: not one token read
    assert isinstance(err.value, rx.RudiExplainError)
    assert "Select(amount) | Abs" in str(err.value)


def test_too_many_operators_are_refused_before_building_them():
    text = "Select(amount)" + " | Abs" * 40 + " | Mean"
    with pytest.raises(ValueError, match=r"at most 32 operators; .* has 42"):
        Statistic.parse(text)
    # A '|' inside a quoted category value is no operator.
    ok = "Select(amount) | RetainBy(card_type='a|b|c|d|e|f|g|h|i|j|k|l|m|n|o|p|q|r|s|t|u|v|w|x|y|z|0|1|2|3|4|5') | Sum"
    assert Statistic.parse(ok).operators[1].value.count("|") == 31
    # The longest text a search could write still reads.
    long_value = "x" * 5_000
    assert Statistic.parse(f"Select(amount) | RetainBy(card_type='{long_value}') | Sum").depth == 2


def test_a_saved_file_with_a_huge_statistic_is_refused_quickly(tmp_path, monkeypatch):
    path = tiny_payments(60).save(tmp_path / "exp.rudi")
    bad = tmp_path / "huge.rudi"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(bad, "w", zipfile.ZIP_DEFLATED) as dst:
        for name in src.namelist():
            data = src.read(name)
            if name == "explanation.json":
                meta = json.loads(data)
                meta["statistics"][1] = HUGE
                data = json.dumps(meta).encode()
            elif name == "arrays/teacher_scores.npy":
                data = b"damaged"  # never reached: the statistic is refused before any array is read
            dst.writestr(name, data)
    assert bad.stat().st_size < 100_000  # compresses about 1000:1
    tokenized = _tokenized(monkeypatch)
    with pytest.raises(ValueError, match=r"huge\.rudi is damaged: field 'statistics\[1\]': a statistic's text may "
                                         r"hold at most 10,000 characters; this one has 1,200,021"):
        rx.load(bad)
    assert all(n <= 10_000 for n in tokenized), tokenized  # the huge text is refused unread


@pytest.mark.parametrize("text, message", [
    ("Select(amount) | Top(2.5) | Mean", "Top takes a whole number of events, got 2.5"),
    ("Select(amount) | Top(five) | Mean", "Top takes a whole number of events, got five"),
    ("Select(amount) | Percentile(x)", "Percentile takes a number from 0 to 100, got x"),
])
def test_argument_messages_say_in_plain_words_what_is_wrong(text, message):
    with pytest.raises(ValueError, match=message) as err:
        Statistic.parse(text)
    assert "invalid literal" not in str(err.value) and "could not convert" not in str(err.value)
