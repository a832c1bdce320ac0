"""Long texts from the data, shortened for display (payloads, report, static view).

A category value, a column name or a user's event cell can be any length: a
20,000-character value repeats in every rule, literal and event that holds
it, and would make the report hundreds of times its usual size. Every view
shows such texts shortened, with an ellipsis ``…`` in the middle so both
ends stay readable (a rule's threshold is at its end). The full value stays
in the explanation (``exp.rules[k].text``, ``exp.user(id).events``); the
payloads do not carry it, so their size stays bounded.

Escaping is the caller's business, as before: shortening never adds markup.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["shorten", "shorten_words", "shorten_payload", "ELLIPSIS", "WORD_LIMIT", "TEXT_LIMIT", "CELL_LIMIT"]

ELLIPSIS = "…"
#: Longest run of non-space characters (a category value, a name) shown whole.
WORD_LIMIT = 80
#: Longest text (a rule, a sentence) shown whole, after its long words are shortened.
TEXT_LIMIT = 500
#: Longest event cell shown whole in a user's drill-down.
CELL_LIMIT = 80

def shorten(text: str, limit: int = WORD_LIMIT) -> str:
    """``text`` if at most ``limit`` characters, else its start and end around ``…`` (``limit`` characters in all)."""
    if len(text) <= limit:
        return text
    keep = max(limit - len(ELLIPSIS), 2)
    head = (keep + 1) // 2
    return text[:head] + ELLIPSIS + text[len(text) - (keep - head):]


def shorten_words(text: str, word_limit: int = WORD_LIMIT, limit: int = TEXT_LIMIT) -> str:
    """``text`` with each run of more than ``word_limit`` non-space characters shortened, then at most ``limit``.

    A sentence keeps its words and its threshold; only the overlong value in it is cut.
    """
    if len(text) <= word_limit:
        return text
    text = re.sub(rf"\S{{{word_limit + 1},}}", lambda m: shorten(m.group(0), word_limit), text)
    return shorten(text, limit)


def shorten_payload(value: Any, keep: frozenset[str] = frozenset({"id"})) -> Any:
    """A JSON payload with every string shortened by :func:`shorten_words`.

    Dict keys and the values under a key in ``keep`` (user ids, which the
    front end sends back to look a user up) are left whole.
    """
    if isinstance(value, str):
        return shorten_words(value)
    if isinstance(value, dict):
        return {k: (v if k in keep else shorten_payload(v, keep)) for k, v in value.items()}
    if isinstance(value, list):
        return [shorten_payload(v, keep) for v in value]
    return value
