"""Event tables larger than memory: a sample to explain, every user scored in DuckDB.

``explain(model, "events.parquet")`` (or a DuckDB relation, or a table of a
DuckDB database) does not read the table into memory. The search and the
student need batches of users, not all of them, so a seeded sample of users
is read, with all their events, into :class:`~rudi_explain.Sequences`, and
the explanation is fitted on it. The statistics and the rule scores of
*every* user are then computed inside DuckDB from the compiled SQL
(:func:`rudi_explain.sql.statistics.statistics_sql`, ``RuleSet.to_sql``):
only one row per user comes back.

What makes the two sides agree
------------------------------
* "Now" of the time statistics is the latest event time of the whole table,
  given to the sample's ``Sequences`` as ``reference_time`` and to the SQL.
* Ties in time keep the input order. A single Parquet file has one (its row
  numbers, read as ``file_row_number``); for a relation, a database table or
  several files, name a column holding it with ``event_order=`` (otherwise
  tied events come in an order the database picks, which matters only to
  ``Top`` and ``First`` at equal times).
* The categories are the sample's (lumped to ``<other>`` past
  ``max_categories`` as usual); values the sample never met are unseen in
  the SQL as in ``Sequences``.

The sample is drawn by ``numpy.random.default_rng(random_state)`` from the
sorted distinct user ids, so it does not depend on how the database orders
rows or splits work between threads.
"""

from __future__ import annotations

import glob
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rudi_explain.data.sequences import Sequences
from rudi_explain.exceptions import InputError, InputTypeError, MissingFileError
from rudi_explain.sql.checks import refuse_missing_users
from rudi_explain.sql.statistics import quote_identifier, quote_string, statistics_sql
from rudi_explain.validation import check_random_state_seed, check_whole

__all__ = ["EventTable", "DEFAULT_SAMPLE_USERS", "is_event_source", "as_event_table", "within_sample"]

#: Users read into memory to fit an explanation on, by default.
DEFAULT_SAMPLE_USERS = 20_000

_VIEW = "_rudi_events"
_ROW = "_rudi_row"  # the input order of a single Parquet file
_PARQUET = (".parquet", ".pq", ".parq")
_DATABASE = (".duckdb", ".db", ".ddb")


def _duckdb():
    import duckdb

    return duckdb


def is_event_source(data: Any) -> bool:
    """Whether ``data`` is something :class:`EventTable` reads (and not an in-memory table)."""
    if isinstance(data, EventTable):
        return True
    if isinstance(data, (str, Path)):
        return True
    try:
        duckdb = _duckdb()
    except ImportError:
        return False
    if isinstance(data, duckdb.DuckDBPyRelation):
        return True
    return (isinstance(data, tuple) and len(data) == 2 and isinstance(data[0], duckdb.DuckDBPyConnection)
            and isinstance(data[1], (str, tuple, list)))


class EventTable:
    """A long event table read through DuckDB, without loading it into memory.

    Parameters
    ----------
    source : str or Path, DuckDBPyRelation, or (DuckDBPyConnection, table)
        A Parquet file (or a glob of them: ``"events/*.parquet"``); a DuckDB
        database file, with ``table=``; a DuckDB relation
        (``con.sql("SELECT ...")``); or a connection and the name of a table
        or view in it (a sequence of names for a qualified one).
    user, time : str
        The user column and the time column (None: input order).
    table : str, optional
        The table to read from a DuckDB database file.
    event_order : str, optional
        A column whose ascending values give the input order of events, to
        break ties in time as ``Sequences`` does. A single Parquet file
        uses its row numbers without it.
    n_users : int, default=20000
        Users read into memory by :meth:`sample`.
    memory_limit : str, optional
        DuckDB's memory limit (``"2GB"``) for the connection opened here for
        a file; a connection or relation you give keeps its own settings.
    threads : int, optional
        DuckDB's threads, likewise.
    config : dict, optional
        Other DuckDB settings for that connection (``{"temp_directory": ...}``,
        where a query larger than ``memory_limit`` spills).

    Examples
    --------
    >>> table = EventTable("events.parquet", user="user_id", time="ts")  # doctest: +SKIP
    >>> seqs = table.sample(n_users=5000, random_state=0)                  # doctest: +SKIP
    >>> table.score(exp)   # every user's statistic values, rule firings and score  # doctest: +SKIP
    """

    def __init__(self, source: Any, user: str = "user_id", time: str | None = "ts", *, table: Any = None,
                 event_order: str | None = None, n_users: int = DEFAULT_SAMPLE_USERS,
                 memory_limit: str | None = None, threads: int | None = None,
                 config: dict[str, Any] | None = None) -> None:
        duckdb = _duckdb()
        check_whole(n_users, "n_users", min_value=1)
        self.user, self.time, self.n_users = user, time, int(n_users)
        self.event_order = event_order
        self.source = source
        config = {**(config or {}),
                  **{k: v for k, v in (("memory_limit", memory_limit), ("threads", threads)) if v is not None}}
        self._con = None  # a connection opened here, for a file
        # Everything is read through one relation, queried as "_rudi_events": a relation you give,
        # a table of your connection, or a Parquet file or database opened here.
        if isinstance(source, duckdb.DuckDBPyRelation):
            relation = source
        elif isinstance(source, tuple) and len(source) == 2 and isinstance(source[0], duckdb.DuckDBPyConnection):
            relation = source[0].sql(f"SELECT * FROM {self._table_name(source[1])}")
        elif isinstance(source, (str, Path)):
            path = str(source)
            if path.lower().endswith(_DATABASE):
                if not Path(path).exists():
                    raise MissingFileError(f"the DuckDB database {path} does not exist")
                if table is None:
                    raise InputError(f"name the table to read from {path} with table=")
                self._con = duckdb.connect(path, read_only=True, config=config)
                relation = self._con.sql(f"SELECT * FROM {self._table_name(table)}")
            else:
                if not path.lower().endswith(_PARQUET):
                    raise InputError(f"cannot read {path}: give a .parquet file (or a glob of them), "
                                     "a .duckdb database with table=, or a DuckDB relation")
                files = sorted(glob.glob(path)) if any(ch in path for ch in "*?[") else [path]
                if not files or not Path(files[0]).exists():
                    raise MissingFileError(f"no Parquet file at {path}")
                self._con = duckdb.connect(config=config)
                rows = event_order is None and len(files) == 1
                if rows:  # a single file's row numbers are its input order
                    relation = self._con.sql(f"SELECT * EXCLUDE (file_row_number), file_row_number AS "
                                             f"{quote_identifier(_ROW)} FROM read_parquet({quote_string(path)}, "
                                             "file_row_number = true)")
                    self.event_order = _ROW
                else:
                    relation = self._con.sql(f"SELECT * FROM read_parquet({quote_string(path)})")
        else:
            raise InputTypeError("an event table is a Parquet path, a DuckDB relation or (connection, table name), "
                            f"got {type(source).__name__}")
        self._relation = relation
        columns = self.columns_all
        for what, name in (("user", user), ("time", time), ("event_order", self.event_order)):
            if name is not None and name not in columns:
                raise InputError(f"{what} column {name!r} is not in the table; columns are "
                                 f"{[c for c in columns if c != _ROW]}")
        self._reference_time: Any = None
        self._users: np.ndarray | None = None

    def close(self) -> None:
        """Close the connection opened here for a file (a connection you gave stays open)."""
        if self._con is not None:
            self._con.close()
            self._con = None

    @staticmethod
    def _table_name(table: Any) -> str:
        if isinstance(table, str):
            return quote_identifier(table)
        return ".".join(quote_identifier(p) for p in table)

    # ------------------------------------------------------------ running SQL
    def query(self, sql: str):
        """Run ``sql`` with the table as ``"_rudi_events"``; a DuckDB relation."""
        return self._relation.query(_VIEW, sql)

    @property
    def columns_all(self) -> list[str]:
        return list(self.query(f"SELECT * FROM {quote_identifier(_VIEW)} LIMIT 0").columns)

    @property
    def columns(self) -> list[str]:
        """The columns of the table (without the row-number helper of a Parquet file)."""
        return [c for c in self.columns_all if c != _ROW]

    @property
    def users(self) -> np.ndarray:
        """Every user id of the table, sorted (ids only: one value a user)."""
        if self._users is None:
            refuse_missing_users(self)  # as Sequences does: no event without a user, named
            u = quote_identifier(self.user)
            got = self.query(f"SELECT DISTINCT {u} FROM {quote_identifier(_VIEW)} WHERE {u} IS NOT NULL "
                             f"ORDER BY {u}").fetchnumpy()
            self._users = np.asarray(got[self.user])
        return self._users

    @property
    def reference_time(self) -> Any:
        """The latest event time of the whole table: "now" of the time statistics on both sides."""
        if self.time is None:
            return None
        if self._reference_time is None:
            t = quote_identifier(self.time)
            self._reference_time = self.query(f"SELECT MAX({t}) AS t FROM {quote_identifier(_VIEW)}").df()["t"].iloc[0]
        return self._reference_time

    # ------------------------------------------------------------ the sample
    def sample_users(self, n_users: int | None = None, random_state: int | None = 0) -> np.ndarray:
        """A seeded sample of user ids (all users when the table has no more), sorted."""
        n = self.n_users if n_users is None else int(n_users)
        users = self.users
        if n >= len(users):
            return users
        rng = np.random.default_rng(check_random_state_seed(random_state))
        return users[np.sort(rng.choice(len(users), size=n, replace=False))]

    def read(self, users: Sequence[Any] | np.ndarray | None = None) -> pd.DataFrame:
        """The events of ``users`` (all users: None) as a DataFrame, in (user, time, input) order."""
        q = quote_identifier
        order = [q(self.user)] + ([q(self.time)] if self.time else []) + \
            ([q(self.event_order)] if self.event_order else [])
        hide = f" EXCLUDE ({q(_ROW)})" if _ROW in self.columns_all else ""
        where = f"{q(self.user)} IS NOT NULL"
        if users is not None:
            values = np.asarray(users)
            if values.dtype.kind in "iu":
                listed = ", ".join(str(int(v)) for v in values)
            else:
                listed = ", ".join(quote_string(str(v)) for v in values)
            where = f"{q(self.user)} IN ({listed})" if len(values) else "1 = 0"
        sql = f"SELECT *{hide} FROM {q(_VIEW)} WHERE {where} ORDER BY {', '.join(order)}"
        return self.query(sql).df()

    def sample(self, n_users: int | None = None, random_state: int | None = 0, **sequences_params: Any) -> Sequences:
        """A seeded sample of users with all their events, as :class:`Sequences`.

        ``reference_time`` defaults to the latest time of the whole table,
        so the sample's time statistics are those of the full table.
        ``sequences_params`` go to :class:`Sequences` (``categorical``,
        ``numerical``, ``max_categories``, ...).
        """
        frame = self.read(self.sample_users(n_users, random_state))
        if self.time is not None:
            sequences_params.setdefault("reference_time", self.reference_time)
        return Sequences(frame, user=self.user, time=self.time, **sequences_params)

    # ------------------------------------------------------------ every user, in DuckDB
    def _sql_options(self, schema: Any, reference_time: Any) -> dict:
        refuse_missing_users(self)
        return dict(table=_VIEW, user=self.user, time=self.time, event_order=self.event_order, schema=schema,
                    reference_time=self.reference_time if reference_time is None else reference_time)

    def statistics(self, stats: Sequence[Any], schema: Any, reference_time: Any = None) -> pd.DataFrame:
        """Every user's values of ``stats``, computed in DuckDB: one row per user (indexed by id).

        ``schema`` is the training :class:`Sequences` (its categories and
        time unit); columns as :func:`~rudi_explain.sql.statistics.statistics_sql`.
        """
        vocab = getattr(schema, "vocabularies", None)
        sql = statistics_sql(list(stats), vocabularies=vocab, **self._sql_options(schema, reference_time))
        return self.query(sql).df().set_index(self.user)

    def score(self, explanation: Any, include_literals: bool = False, reference_time: Any = None) -> pd.DataFrame:
        """Every user's statistic values, rule firings and rule score, computed in DuckDB.

        Parameters
        ----------
        explanation : Explanation
            A fitted explanation (its rules, literals and training sequences).
        include_literals : bool, default=False
            Also each literal's truth (0/1).
        reference_time : optional
            "Now" of the time statistics; by default the latest time of the table.

        Returns
        -------
        DataFrame indexed by user id
            The columns of ``RuleSet.to_sql``: the statistic values the rules
            use, ``score``, ``rule_1`` ... and, with ``include_literals``, the literals.
        """
        rules = explanation.rules
        opts = self._sql_options(explanation.sequences, reference_time)
        sql = rules.to_sql(literals=explanation.literals, include_literals=include_literals,
                           vocabularies=explanation.literals.vocabularies, **opts)
        return self.query(sql).df().set_index(self.user)

    def __repr__(self) -> str:
        source = self.source if isinstance(self.source, (str, Path)) else type(self.source).__name__
        return f"EventTable({source!r}, user={self.user!r}, time={self.time!r}, n_users={self.n_users})"


def as_event_table(data: Any, user: str, time: str | None) -> EventTable:
    """``data`` as an :class:`EventTable` (one already is kept as given)."""
    return data if isinstance(data, EventTable) else EventTable(data, user=user, time=time)


def within_sample(values: Any, seqs: Sequences) -> Any:
    """Scores or labels of a whole table, cut to the users of the sample ``seqs`` (None stays None).

    Only a Series indexed by user id can be cut: a bare array has no ids.
    """
    if values is None:
        return None
    if isinstance(values, pd.DataFrame) and values.shape[1] == 1:
        values = values.iloc[:, 0]
    if not isinstance(values, pd.Series):
        raise InputError("with a table larger than memory, pass scores and labels as a pandas Series indexed "
                         f"by user id (the sample is cut from them), got {type(values).__name__}")
    return values[values.index.isin(seqs.users)]
