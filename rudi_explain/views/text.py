"""Long texts from the data, shortened for display (payloads, report, static view).

A category value, a column name or a user's event cell can be any length: a
20,000-character value repeats in every rule, literal and event that holds
it, and would make the report hundreds of times its usual size. Every view
shows such texts shortened, with an ellipsis ``…`` in the middle so both
ends stay readable (a rule's threshold is at its end). The full value stays
in the explanation (``exp.rules[k].text``, ``exp.user(id).events``), and one
click away in the widget and the report: a payload carries, under
``full_values``, each shortened form once with the whole value it stands for
(:func:`shorten_payload`), up to :data:`FULL_LIMIT` characters a value and
:data:`FULL_BUDGET` in all, so its size stays bounded.

Escaping is the caller's business, as before: shortening never adds markup.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["shorten", "shorten_words", "shorten_payload", "FullValues", "ELLIPSIS", "WORD_LIMIT", "TEXT_LIMIT",
           "CELL_LIMIT", "FULL_LIMIT", "FULL_BUDGET", "FULL_VALUES_KEY"]

ELLIPSIS = "…"
#: Longest run of non-space characters (a category value, a name) shown whole.
WORD_LIMIT = 80
#: Longest text (a rule, a sentence) shown whole, after its long words are shortened.
TEXT_LIMIT = 500
#: Longest event cell shown whole in a user's drill-down.
CELL_LIMIT = 80
#: Longest whole value a payload carries for its click; a longer one carries its start and says how long it is.
FULL_LIMIT = 100_000
#: Characters of whole values one payload carries at most; past it a shortened form opens a note instead.
FULL_BUDGET = 2_000_000
#: The payload key of the whole values (:class:`FullValues`).
FULL_VALUES_KEY = "full_values"


class FullValues:
    """The whole values behind the shortened forms of one payload, each form once, bounded in size.

    ``as_dict()`` maps a shortened form to its whole value, or to ``None``
    where two different values shorten alike or the budget is spent (the
    front end then says where the whole value is).
    """

    def __init__(self, budget: int = FULL_BUDGET) -> None:
        self.values: dict[str, str | None] = {}
        self.budget = budget

    def add(self, short: str, whole: str) -> None:
        """Record that ``short`` stands for ``whole``."""
        if short == whole:
            return
        if short in self.values:
            if self.values[short] is not None and self.values[short] != _bounded(whole):
                self.values[short] = None  # two values shorten alike: neither can be told from the form
            return
        kept = _bounded(whole)
        if len(kept) > self.budget:
            self.values[short] = None
            return
        self.budget -= len(kept)
        self.values[short] = kept

    def as_dict(self) -> dict[str, str | None]:
        return dict(self.values)


def _bounded(whole: str) -> str:
    if len(whole) <= FULL_LIMIT:
        return whole
    return whole[:FULL_LIMIT] + f"{ELLIPSIS} (the first {FULL_LIMIT:,} of {len(whole):,} characters)"


def shorten(text: str, limit: int = WORD_LIMIT) -> str:
    """``text`` if at most ``limit`` characters, else its start and end around ``…`` (``limit`` characters in all)."""
    if len(text) <= limit:
        return text
    keep = max(limit - len(ELLIPSIS), 2)
    head = (keep + 1) // 2
    return text[:head] + ELLIPSIS + text[len(text) - (keep - head):]


def shorten_words(text: str, word_limit: int = WORD_LIMIT, limit: int = TEXT_LIMIT,
                  full: FullValues | None = None) -> str:
    """``text`` with each run of more than ``word_limit`` non-space characters shortened, then at most ``limit``.

    A sentence keeps its words and its threshold; only the overlong value in it is cut.
    ``full``, if given, records each shortened form with the whole it stands for.
    """
    if len(text) <= word_limit:
        return text

    def cut(match: re.Match[str]) -> str:
        short = shorten(match.group(0), word_limit)
        if full is not None:
            full.add(short, match.group(0))
        return short

    words_cut = re.sub(rf"\S{{{word_limit + 1},}}", cut, text)
    short = shorten(words_cut, limit)
    if full is not None:  # the sentence with its long words already cut: each of those opens on its own
        full.add(short, words_cut)
    return short


def shorten_payload(value: Any, keep: frozenset[str] = frozenset({"id"}), full: FullValues | None = None) -> Any:
    """A JSON payload with every string shortened by :func:`shorten_words`.

    Dict keys and the values under a key in ``keep`` (user ids, which the
    front end sends back to look a user up) are left whole. Called without
    ``full`` on a dict, the result carries the whole values of what was
    shortened under :data:`FULL_VALUES_KEY` (see :class:`FullValues`).
    """
    if full is None and isinstance(value, dict):
        full = FullValues()
        out = shorten_payload(value, keep, full)
        out[FULL_VALUES_KEY] = full.as_dict()
        return out
    if isinstance(value, str):
        return shorten_words(value, full=full)
    if isinstance(value, dict):
        return {k: (v if k in keep else shorten_payload(v, keep, full)) for k, v in value.items()}
    if isinstance(value, list):
        return [shorten_payload(v, keep, full) for v in value]
    return value
