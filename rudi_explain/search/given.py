"""Statistics a user gives ``explain(statistics=[...])``: read, then checked against the data.

A given statistic is a text (``"Select(amount) | RetainBy(merchant_category=gambling) | Sum"``,
read by :meth:`Statistic.parse` within the bounds of :mod:`rudi_explain.statistics.bounds`) or a
:class:`Statistic`. Each is checked twice, both times before any long work: its form when the
settings are built (:func:`read_statistics`), and against the data before the teacher is asked
(:func:`check_statistics`): its columns and category values must exist, and it must vary over
the training users. Every error names the statistic by its position and its text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from rudi_explain.data.sequences import Sequences
from rudi_explain.exceptions import InputError, InputTypeError
from rudi_explain.statistics import Schema, Statistic

__all__ = ["read_statistics", "check_statistics", "MAX_GIVEN"]

#: The most statistics one call may be given: far more than a scorecard can show, and each is
#: evaluated over every training user before the teacher is asked.
MAX_GIVEN = 1000


def _name(i: int, stat: Statistic | str) -> str:
    text = str(stat)
    shown = repr(text) if len(text) <= 120 else repr(text[:120]) + f"... ({len(text):,} characters)"
    return f"statistics[{i}] {shown}"


def read_statistics(statistics: Iterable[Statistic | str] | None) -> tuple[Statistic, ...]:
    """The given statistics as :class:`Statistic` objects, in the order given.

    Parameters
    ----------
    statistics : list of str or Statistic, or None
        Texts are parsed (their length and operator count bounded first).

    Returns
    -------
    tuple of Statistic
        Empty for None. The caller's list is read, never changed.

    Raises
    ------
    InputTypeError
        Not a list, or an entry neither a text nor a Statistic.
    InputError
        A text that does not parse, or a statistic given twice (the same pipeline, or one that
        always has the same values), naming its position and text.
    """
    if statistics is None:
        return ()
    if isinstance(statistics, (str, Statistic)):
        raise InputTypeError("statistics must be a list of statistic texts or Statistics, got one "
                             f"{type(statistics).__name__}: pass [{str(statistics)!r}]")
    if not isinstance(statistics, Iterable) or isinstance(statistics, (bytes, dict)):
        raise InputTypeError(f"statistics must be a list of statistic texts or Statistics, got "
                             f"{type(statistics).__name__}")
    items = list(statistics)
    if len(items) > MAX_GIVEN:
        raise InputError(f"statistics holds {len(items):,} entries; at most {MAX_GIVEN:,} can be given")
    out: list[Statistic] = []
    seen: dict[tuple, int] = {}
    for i, item in enumerate(items):
        if isinstance(item, Statistic):
            stat = item
        elif isinstance(item, str):
            try:
                stat = Statistic.parse(item)
            except InputError as err:
                raise InputError(f"{_name(i, item)} is not a statistic: {err}") from None
        else:
            raise InputTypeError(f"statistics[{i}] must be a statistic text or a Statistic, got "
                                 f"{type(item).__name__}")
        if stat.key in seen:
            j = seen[stat.key]
            same = "the same as" if stat == out[j] else "always equal to"
            raise InputError(f"{_name(i, stat)} is {same} {_name(j, out[j])}: give each statistic once")
        seen[stat.key] = i
        out.append(stat)
    return tuple(out)


def _unknown_hint(stat: Statistic, schema: Schema, reason: str) -> str:
    """A few of the names the data has, where the statistic names one it lacks."""
    if "unknown column" in reason:
        columns = sorted(list(schema.vocabularies) + list(schema.numerical))
        return f"; the data's columns are {columns[:30]}" + (" ..." if len(columns) > 30 else "")
    if "is not a category of" in reason:
        for op in stat.operators:
            column, value = getattr(op, "column", None), getattr(op, "value", None)
            vocab = schema.vocabularies.get(column) if isinstance(column, str) else None
            if value is not None and vocab is not None and value not in vocab:
                shown = [str(v) for v in vocab[:20]]
                return f"; {column!r} has the categories {shown}" + (" ..." if len(vocab) > 20 else "")
    return ""


def check_statistics(statistics: Sequence[Statistic], seqs: Sequences, users: np.ndarray | None = None) -> None:
    """Check given statistics against the data: known columns and categories, and values that vary.

    Parameters
    ----------
    statistics : sequence of Statistic
        As :func:`read_statistics` returns them.
    seqs : Sequences
    users : array of int, optional
        Positions of the training users in ``seqs`` (None: all): a statistic must vary over them.

    Raises
    ------
    InputError
        Naming the statistic by position and text: an unknown column or category value, a
        pipeline the data's column kinds do not allow, or values that are one and the same
        (or undefined) for every training user, so that it can explain nothing.
    """
    schema = Schema.of(seqs)
    for i, stat in enumerate(statistics):
        try:
            stat.validate(schema)
        except InputError as err:
            reason = str(err).removeprefix(f"invalid statistic {str(stat)!r}: ")
            raise InputError(f"{_name(i, stat)} does not fit the data: {reason}{_unknown_hint(stat, schema, reason)}") \
                from None
        values = np.asarray(stat.evaluate(seqs, users=users), dtype=np.float64)
        values = values.reshape(len(values), -1)
        if len(values) == 0:
            continue
        defined = ~np.isnan(values)
        # An output varies where two users differ: in value, or in being defined at all.
        highest, lowest = np.where(defined, values, -np.inf).max(axis=0), np.where(defined, values, np.inf).min(axis=0)
        varies = (defined.any(axis=0) & ~defined.all(axis=0)) | (highest > lowest)
        if varies.any():
            continue
        n = len(values)
        if not defined.any():
            what = f"undefined for every one of the {n:,} training users (no events it reads)"
        else:
            one = values[defined][0]
            what = f"the same value ({one:g}) for every one of the {n:,} training users"
            if values.shape[1] > 1:
                what = f"constant in each of its {values.shape[1]} outputs over the {n:,} training users"
        raise InputError(f"{_name(i, stat)} is {what}: it cannot explain anything")
