"""Reading the text form of a pipeline: ``Select(amount) | RetainBy(card_type=debit) | Sum``."""

from __future__ import annotations

import ast
import re
from typing import cast

from rudi_explain.exceptions import InputError, InputTypeError
from rudi_explain.statistics.bounds import check_operator_count, check_text_length
from rudi_explain.statistics.operators import OPERATORS, Operator

__all__ = ["parse_operators", "output_name_parts"]

_TOKEN = re.compile(
    r"""\s*(?:(?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")|(?P<word>[A-Za-z0-9_.\-+<>]+|\*)|(?P<punct>[|(),=]))"""
)


def _short(text: str, limit: int = 120) -> str:
    """The text for a message: quoted, and cut short if long."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"... ({len(text):,} characters)"


def _tokens(text: str) -> list[tuple[str, str, int]]:
    # One pass, no copies of the rest of the text per token: linear in its length
    # (a statistic read from a shared file can be arbitrarily long).
    out, i, end = [], 0, len(text.rstrip())
    while i < end:
        m = _TOKEN.match(text, i)
        if m is None:
            raise InputError(f"cannot read {_short(text)}: unexpected character {text[i:].lstrip()[:1]!r} "
                             f"at position {i}")
        kind = cast(str, m.lastgroup)  # every alternative of the pattern is a named group
        value = m.group(kind)
        if kind == "string":
            value = ast.literal_eval(value)
        out.append((kind, value, m.start(kind)))
        i = m.end()
    return out


def parse_operators(text: str) -> list[Operator]:
    """Operators of a pipeline text, in order; ``ValueError`` naming what is wrong."""
    if not isinstance(text, str):
        raise InputTypeError(f"a statistic's text must be a string, got {type(text).__name__}")
    check_text_length(text)
    tokens = _tokens(text)
    if not tokens:
        raise InputError("cannot read an empty statistic")
    check_operator_count(1 + sum(kind == "punct" and value == "|" for kind, value, _ in tokens), text)
    ops: list[Operator] = []
    i = 0

    def expect_atom() -> str:
        nonlocal i
        if i >= len(tokens) or tokens[i][0] == "punct":
            where = tokens[i][2] if i < len(tokens) else len(text)
            raise InputError(f"cannot read {_short(text)}: expected a name or value at position {where}")
        i += 1
        return tokens[i - 1][1]

    while True:
        kind, name, pos = tokens[i] if i < len(tokens) else ("end", "", len(text))
        if kind != "word":
            raise InputError(f"cannot read {_short(text)}: expected an operator name at position {pos}")
        cls = OPERATORS.get(name)
        if cls is None:
            raise InputError(f"unknown operator {name!r} in {_short(text)}; known: {sorted(OPERATORS)}")
        i += 1
        positional, keyword = [], []
        if i < len(tokens) and tokens[i][1] == "(" and tokens[i][0] == "punct":
            i += 1
            if i < len(tokens) and tokens[i][1] == ")":
                i += 1
            else:
                while True:
                    atom = expect_atom()
                    if i < len(tokens) and tokens[i] [0] == "punct" and tokens[i][1] == "=":
                        i += 1
                        keyword.append((atom, expect_atom()))
                    else:
                        positional.append(atom)
                    if i < len(tokens) and tokens[i][0] == "punct" and tokens[i][1] == ",":
                        i += 1
                        continue
                    if i < len(tokens) and tokens[i][0] == "punct" and tokens[i][1] == ")":
                        i += 1
                        break
                    raise InputError(f"cannot read {_short(text)}: expected ',' or ')' in the arguments of {name}")
        try:
            ops.append(cls.from_arguments(positional, keyword))
        except (ValueError, TypeError) as err:
            raise InputError(f"cannot read {_short(text)}: {err}") from None
        if i == len(tokens):
            return ops
        if tokens[i][0] != "punct" or tokens[i][1] != "|":
            raise InputError(f"cannot read {_short(text)}: expected '|' at position {tokens[i][2]}")
        i += 1


def output_name_parts(output: str | None) -> dict[str, str]:
    """The categories an output name ``c=v[, g=w]`` stands for, ``{column: value}``, read from the name."""
    if not output:
        return {}
    return dict(p.split("=", 1) for p in output.split(", ") if "=" in p)
