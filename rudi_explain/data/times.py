"""What is wrong with a time column that cannot order events: the cell, its row and why.

:class:`~rudi_explain.Sequences` reads a time column of text or objects with
``pandas.to_datetime``; when that fails, pandas' own message names neither the row nor,
often, the value. :func:`bad_time_cell` finds the first cell at fault, looking at the
cells' types, then at the text that does not parse, then at the time zones, and
:func:`refuse_infinite_times` refuses an infinite value in a numerical time column (an
event at the end of time has no place in an order).
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any

import numpy as np
import pandas as pd

from rudi_explain.exceptions import InputError

__all__ = ["bad_time_cell", "refuse_infinite_times"]

#: A time zone written at the end of an ISO 8601 text: Z, +01:00, -0500, +01.
_OFFSET = re.compile(r"(?:Z|[+-]\d{2}(?::?\d{2})?)$", re.IGNORECASE)


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _zone(value: Any) -> str | None:
    """The time zone of a datetime or an ISO 8601 text, None for a naive one."""
    if isinstance(value, str):
        m = _OFFSET.search(value.strip())
        if m is None:
            return None
        text = m.group(0).upper()
        return "UTC" if text in ("Z", "+00:00", "+0000", "+00") else text
    tz = getattr(value, "tzinfo", None)
    return None if tz is None else str(tz)


def bad_time_cell(column: pd.Series, name: str) -> str:
    """A sentence naming the first cell of ``column`` that keeps it from being read as times.

    Looks, in order, for a cell that is neither text nor a datetime (a number among
    datetimes), a text that is not an ISO 8601 time, and a cell whose time zone differs
    from the first cell's (or that has none where the first has one).
    """
    present = column.notna().to_numpy()
    values = column.to_numpy(dtype=object)
    is_text = np.fromiter((isinstance(v, str) for v in values), dtype=bool, count=len(values))
    is_time = np.fromiter((isinstance(v, (_dt.date, np.datetime64)) for v in values), dtype=bool, count=len(values))

    def cell(i: int) -> str:
        return f"the value {_plain(values[i])!r} at row {_plain(column.index[i])!r}"

    odd = np.flatnonzero(present & ~is_text & ~is_time)
    if len(odd):
        i = int(odd[0])
        held = "datetimes" if is_time.any() else "text" if is_text.any() else type(values[i]).__name__
        return (f"{cell(i)} is of type {type(values[i]).__name__}, not a time (the column holds {held}); "
                "use numbers, datetimes or ISO 8601 strings")
    texts = np.flatnonzero(present & is_text)
    if len(texts):
        parsed = pd.to_datetime(pd.Series(values[texts], dtype=object), format="ISO8601", utc=True, errors="coerce")
        unreadable = np.flatnonzero(parsed.isna().to_numpy())
        if len(unreadable):
            return f"{cell(int(texts[unreadable[0]]))} is not a time; use numbers, datetimes or ISO 8601 strings"
    first = int(np.flatnonzero(present)[0]) if present.any() else None
    if first is not None:
        zone = _zone(values[first])
        for row in np.flatnonzero(present):
            other = _zone(values[row])
            if other != zone:
                mine = f"is in {other}" if other is not None else "has no time zone"
                theirs = f"is in {zone}" if zone is not None else "has none"
                return (f"its time zones differ: {cell(int(row))} {mine}, while the value at row "
                        f"{_plain(column.index[first])!r} {theirs}; convert the column to one zone first "
                        "(for example with pandas.to_datetime(..., utc=True))")
    return "its values are not all times; use numbers, datetimes or ISO 8601 strings"


def refuse_infinite_times(values: np.ndarray, column: pd.Series, name: str) -> None:
    """Refuse an infinite value in a numerical time column, naming its row."""
    inf = np.isinf(values)
    if inf.any():
        i = int(np.flatnonzero(inf)[0])
        more = f" ({int(inf.sum()):,} infinite values in all)" if inf.sum() > 1 else ""
        raise InputError(
            f"time column {name!r} has the infinite value {_plain(values[i])!r} at row {_plain(column.index[i])!r}"
            f"{more}: an event cannot be placed in time; replace it with the event's time"
        )
