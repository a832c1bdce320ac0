"""Bounds on the text of a statistic read from outside (a saved file, a SQL export, a user).

A statistic text comes from a shared explanation file as much as from a person, and
operators compress well: ``"Select(amount)" + " | Abs" * 200_000`` is 1.2 MB of JSON that
deflates to a few kB, and reading it built 200,000 operators (minutes and gigabytes in
``rx.load``). Every text parsed by :func:`rudi_explain.statistics.text.parse_operators` is
therefore checked here first, in constant time for its length and before any operator is
built for its operator count.

The bounds are generous: a readable statistic has at most a handful of operators (the
search's default depth is 4, so 5 operators with ``Select``), and even the paper's grammar
with one filter per categorical column stays far below :data:`MAX_STATISTIC_OPERATORS` for
any depth a search can afford. :data:`MAX_STATISTIC_CHARACTERS` leaves room for long column
names and long category values in ``RetainBy``/``FilterBy``.
"""

from __future__ import annotations

from rudi_explain.exceptions import InputError

__all__ = ["MAX_STATISTIC_CHARACTERS", "MAX_STATISTIC_OPERATORS", "check_text_length", "check_operator_count"]

#: The longest statistic text read, in characters.
MAX_STATISTIC_CHARACTERS = 10_000
#: The most operators one statistic text may hold, ``Select`` and the aggregation included.
MAX_STATISTIC_OPERATORS = 32


def _start(text: str, limit: int = 60) -> str:
    return repr(text[:limit]) + ("..." if len(text) > limit else "")


def check_text_length(text: str) -> None:
    """Refuse a statistic text longer than :data:`MAX_STATISTIC_CHARACTERS`, before reading it."""
    if len(text) > MAX_STATISTIC_CHARACTERS:
        raise InputError(
            f"a statistic's text may hold at most {MAX_STATISTIC_CHARACTERS:,} characters; this one has "
            f"{len(text):,} (it starts {_start(text)}): it is not a statistic this library wrote"
        )


def check_operator_count(n_operators: int, text: str) -> None:
    """Refuse a statistic text of more than :data:`MAX_STATISTIC_OPERATORS` operators, before building them."""
    if n_operators > MAX_STATISTIC_OPERATORS:
        raise InputError(
            f"a statistic may hold at most {MAX_STATISTIC_OPERATORS} operators; {_start(text)} has "
            f"{n_operators:,}: it is not a statistic this library wrote"
        )
