"""Checks that SQL and a DataFrame see the same data: column names, missing user ids.

* DuckDB and Spark (by default) match column names regardless of case: ``"amount"``
  binds to a column ``Amount``, and a table cannot even hold both (DuckDB renames the second
  to ``amount_1``). A query written for columns ``Amount`` and ``amount`` would read one of
  them twice, silently, so :func:`check_case_clashes` refuses it, naming both. ANSI SQL
  compares quoted names exactly, so the ``'ansi'`` dialect is not checked.
* :class:`~rudi_explain.Sequences` refuses an event without a user id, naming its row; the
  DuckDB path (:class:`~rudi_explain.sql.warehouse.EventTable`) would drop such events
  without a word (``WHERE user IS NOT NULL``). :func:`refuse_missing_users` applies the
  same rule there: the count, and the row of the first.
"""

from __future__ import annotations

from collections.abc import Iterable
from os import PathLike
from typing import Any

from rudi_explain.exceptions import InputError

__all__ = ["check_case_clashes", "refuse_missing_users"]

#: Dialects whose column names match regardless of case.
CASE_INSENSITIVE = ("duckdb", "spark")


def check_case_clashes(names: Iterable[str | None], dialect: str) -> None:
    """Refuse column names that differ only in case, for a dialect that cannot tell them apart."""
    if dialect not in CASE_INSENSITIVE:
        return
    seen: dict[str, str] = {}
    for name in names:
        if name is None:
            continue
        other = seen.setdefault(name.casefold(), name)
        if other != name:
            raise InputError(
                f"columns {other!r} and {name!r} differ only in case, and {dialect} SQL matches column names "
                "regardless of case, so the query would read one of them for both: rename one of them "
                "(in the data, before explaining)"
            )


def refuse_missing_users(table: Any) -> None:
    """Refuse an :class:`~rudi_explain.sql.warehouse.EventTable` with events of no user (NULL id).

    Names the count and where the first is: its row (the row number of a single Parquet
    file, or the ``event_order`` column) or, without one, its values.
    """
    def q(name: str) -> str:  # DuckDB's quoting (as sql.statistics.quote_identifier)
        return '"' + name.replace('"', '""') + '"'

    view, user = q("_rudi_events"), q(table.user)
    n = int(table.query(f"SELECT COUNT(*) AS n FROM {view} WHERE {user} IS NULL").fetchone()[0])
    if n == 0:
        return
    order = table.event_order
    if order is not None:
        first = table.query(f"SELECT MIN({q(order)}) AS r FROM {view} WHERE {user} IS NULL").fetchone()[0]
        where = f"row {first!r}" if order == "_rudi_row" else f"{order} = {first!r}"
    else:
        row = table.query(f"SELECT * FROM {view} WHERE {user} IS NULL LIMIT 1").df().iloc[0]
        shown = ", ".join(f"{k}={v!r}" for k, v in list(row.items())[:4])
        where = f"the row {shown}"
    source = str(table.source) if isinstance(table.source, (str, PathLike)) else "the table"
    ids = "a missing (NULL) user id" if n == 1 else f"{n:,} missing (NULL) user ids"
    raise InputError(
        f"user column {table.user!r} of {source} has {ids}, the first at {where}: every event needs a user; "
        "drop those events or fill their ids first"
    )
