"""Spark DataFrames in and out: a sample to explain drawn in Spark, every user scored by Spark.

``explain(model, spark_df)`` (or a :class:`SparkEventTable`, to set the
sample's size or the tie-breaking column) never brings the whole table to the
driver. Spark draws a seeded sample of users, and only their events come back
as pandas, to :class:`~rudi_explain.Sequences`; the explanation is fitted on
them as on the DuckDB path (:mod:`rudi_explain.sql.warehouse`).
``exp.predict(spark_df)`` and ``exp.score_spark(spark_df)`` give back a Spark
DataFrame: every user's rule score, computed by Spark from the rules' SQL
(``RuleSet.to_sql(dialect="spark")``), one row a user, lazily (nothing runs
until you act on it).

What makes the two sides agree
------------------------------
* The sample: the ``n_users`` users with the smallest
  ``xxhash64(random_state, user id)`` (ties by id), Spark's own hash of each
  id, so the same seed gives the same users however the table is split into
  partitions, and the draw needs no list of all users on the driver.
* "Now" of the time statistics is the latest event time of the whole table:
  given to the sample's ``Sequences`` as ``reference_time``; the SQL computes
  the same maximum in Spark.
* Ties in time keep the order of ``event_order=`` (a column whose ascending
  values give the input order); a Spark DataFrame has no input order of its
  own, so without it tied events come in an order Spark picks (which matters
  only to ``Top`` and ``First`` at equal times).
* Datetimes come to pandas as ``toPandas`` reads them, as wall-clock times of
  the session's time zone (``spark.sql.session.timeZone``); UTC keeps every
  day 24 hours long on both sides.

PySpark is optional (``pip install "rudi-explain[spark]"``): a Spark DataFrame is
recognised by its type's module name, without importing PySpark.
"""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import pandas as pd

from rudi_explain.data.sequences import Sequences
from rudi_explain.exceptions import InputError, InputTypeError
from rudi_explain.sql.statistics import quote_identifier
from rudi_explain.sql.warehouse import DEFAULT_SAMPLE_USERS, EventTable, as_event_table, is_event_source
from rudi_explain.sql.warehouse import within_sample as series_within_sample
from rudi_explain.validation import check_random_state_seed, check_whole

__all__ = ["SparkEventTable", "is_spark_dataframe", "is_spark_source", "is_table_source", "as_table", "score_spark",
           "predict_spark", "within_sample"]

_INSTALL = 'pip install "rudi-explain[spark]" (or pip install "pyspark>=3.5")'


def _functions() -> Any:
    """``pyspark.sql.functions``, or an error saying what to install."""
    try:
        from pyspark.sql import functions
    except ImportError:
        raise InputError(f"reading a Spark DataFrame needs PySpark, which is not installed: {_INSTALL}") from None
    return functions


def is_spark_dataframe(data: Any) -> bool:
    """Whether ``data`` is a PySpark DataFrame (classic or Spark Connect), told without importing PySpark."""
    return any(c.__name__ == "DataFrame" and c.__module__.startswith("pyspark.sql") for c in type(data).__mro__)


def is_spark_source(data: Any) -> bool:
    """Whether ``data`` is a Spark DataFrame or a :class:`SparkEventTable`."""
    return isinstance(data, SparkEventTable) or is_spark_dataframe(data)


def is_table_source(data: Any) -> bool:
    """Whether ``data`` is a table larger than memory: a Spark DataFrame or what EventTable reads."""
    return is_spark_source(data) or is_event_source(data)


def as_table(data: Any, user: str, time: str | None) -> EventTable | SparkEventTable:
    """``data`` as a :class:`SparkEventTable` or an :class:`~rudi_explain.sql.warehouse.EventTable` (kept if one)."""
    if isinstance(data, SparkEventTable):
        return data
    if is_spark_dataframe(data):
        return SparkEventTable(data, user=user, time=time)
    return as_event_table(data, user=user, time=time)


def within_sample(values: Any, seqs: Sequences) -> Any:
    """Scores or labels of a whole table cut to the sample's users (None stays None).

    A pandas Series indexed by user id is cut as on the DuckDB path
    (:func:`rudi_explain.sql.warehouse.within_sample`); a Spark DataFrame of
    two columns, the user id and the value, is filtered in Spark, so only the
    sample's rows come to the driver.
    """
    if not is_spark_dataframe(values):
        return series_within_sample(values, seqs)
    if len(values.columns) != 2:
        raise InputError("scores or labels in a Spark DataFrame take two columns, the user id and the value; got "
                         f"{values.columns}")
    user, value = values.columns
    ids = values[quote_identifier(user, "spark")]
    frame = values.where(ids.isin(np.asarray(seqs.users).tolist())).toPandas()
    return frame.set_index(user)[value]


class SparkEventTable:
    """A long event table in a Spark DataFrame, sampled and scored by Spark.

    Parameters
    ----------
    source : pyspark.sql.DataFrame
        One row per event.
    user, time : str
        The user column and the time column (None: no time).
    event_order : str, optional
        A column whose ascending values give the input order of events, to
        break ties in time as ``Sequences`` does.
    n_users : int, default=20000
        Users read into memory by :meth:`sample`.

    Raises
    ------
    InputError
        Naming a user, time or ``event_order`` column the table lacks, and
        what to install when PySpark is missing.

    Examples
    --------
    >>> table = SparkEventTable(spark.table("events"), user="user_id", time="ts",
    ...                         n_users=50_000)                              # doctest: +SKIP
    >>> exp = rx.explain(model, table, scores=...)                         # doctest: +SKIP
    >>> exp.score_spark(spark.table("events")).write.parquet("scores")     # doctest: +SKIP
    """

    def __init__(self, source: Any, user: str = "user_id", time: str | None = "ts", *,
                 event_order: str | None = None, n_users: int = DEFAULT_SAMPLE_USERS) -> None:
        if not is_spark_dataframe(source):
            raise InputTypeError(f"a SparkEventTable reads a pyspark.sql.DataFrame, got {type(source).__name__}")
        _functions()
        check_whole(n_users, "n_users", min_value=1)
        self.source, self.user, self.time = source, user, time
        self.event_order, self.n_users = event_order, int(n_users)
        columns = list(source.columns)
        for what, name in (("user", user), ("time", time), ("event_order", event_order)):
            if name is not None and name not in columns:
                raise InputError(f"{what} column {name!r} is not in the Spark DataFrame; columns are {columns}")
        self._checked: dict[str, Any] | None = None

    def _col(self, name: str) -> Any:
        return self.source[quote_identifier(name, "spark")]

    # ------------------------------------------------------------ one pass: NULL ids, "now"
    def _check(self) -> dict[str, Any]:
        """Refuse events without a user (as ``Sequences`` does), and find the latest time, in one Spark job."""
        if self._checked is None:
            F = _functions()
            aggs = [F.sum(F.when(self._col(self.user).isNull(), 1).otherwise(0)).alias("n")]
            if self.time is not None:
                aggs.append(F.max(self._col(self.time)).alias("t"))
            row = self.source.agg(*aggs).toPandas().iloc[0]  # toPandas: times as the events come
            n = int(row["n"] or 0)
            if n:
                self._refuse_missing_users(n)
            self._checked = {"reference_time": row["t"] if self.time is not None else None}
        return self._checked

    def _refuse_missing_users(self, n: int) -> None:
        F = _functions()
        missing = self.source.where(self._col(self.user).isNull())
        if self.event_order is not None:
            first = missing.agg(F.min(self._col(self.event_order)).alias("r")).collect()[0]["r"]
            where = f"{self.event_order} = {first!r}"
        else:
            row = missing.limit(1).toPandas().iloc[0]
            shown = [(k, None if k == self.user else v) for k, v in list(row.items())[:4]]  # NULL, not nan
            where = "the row " + ", ".join(f"{k}={v!r}" for k, v in shown)
        ids = "a missing (NULL) user id" if n == 1 else f"{n:,} missing (NULL) user ids"
        raise InputError(f"user column {self.user!r} of the Spark DataFrame has {ids}, the first at {where}: every "
                         "event needs a user; drop those events or fill their ids first")

    @property
    def reference_time(self) -> Any:
        """The latest event time of the whole table (computed by Spark): "now" of the time statistics."""
        return self._check()["reference_time"]

    # ------------------------------------------------------------ the sample
    def sample_users(self, n_users: int | None = None, random_state: int | None = 0) -> Any:
        """A seeded sample of user ids, as a one-column Spark DataFrame (all users when there are no more).

        The users with the smallest ``xxhash64(random_state, id)``, ties by id:
        the same on any number of partitions. None draws a seed at random.
        """
        self._check()
        F = _functions()
        if n_users is not None:
            check_whole(n_users, "n_users", min_value=1)
        n = self.n_users if n_users is None else int(n_users)
        seed = check_random_state_seed(random_state)
        if seed is None:
            seed = int(np.random.default_rng().integers(2**32))
        users = self.source.select(self._col(self.user).alias("_rudi_u")).distinct()
        order = F.xxhash64(F.lit(seed).cast("bigint"), F.col("_rudi_u"))
        return users.orderBy(order, F.col("_rudi_u")).limit(n)

    def read(self, users: Any = None) -> pd.DataFrame:
        """The events of ``users`` as pandas, in (user, time, ``event_order``) order.

        ``users`` is a DataFrame from :meth:`sample_users` (None: every user);
        only their events come to the driver.
        """
        self._check()
        events = self.source
        if users is not None:
            events = events.join(users, self._col(self.user) == users["_rudi_u"], "left_semi")
        frame = events.toPandas()
        order = [c for c in (self.user, self.time, self.event_order) if c is not None]
        return frame.sort_values(order, kind="stable", ignore_index=True)  # a stable multi-key sort

    def sample(self, n_users: int | None = None, random_state: int | None = 0, **sequences_params: Any) -> Sequences:
        """A seeded sample of users with all their events, as :class:`Sequences`.

        ``reference_time`` defaults to the latest time of the whole table;
        ``sequences_params`` go to :class:`Sequences`.
        """
        frame = self.read(self.sample_users(n_users, random_state))
        if self.time is not None:
            sequences_params.setdefault("reference_time", self.reference_time)
        return Sequences(frame, user=self.user, time=self.time, **sequences_params)

    # ------------------------------------------------------------ every user, by Spark
    def score(self, explanation: Any, include_literals: bool = False, reference_time: Any = None,
              exact_sums: bool = False) -> Any:
        """Every user's statistic values, rule firings and rule score, computed by Spark.

        Parameters
        ----------
        explanation : Explanation
            A fitted explanation.
        include_literals : bool, default=False
            Also each literal's truth (0/1).
        reference_time : optional
            "Now" of the time statistics; by default the latest time of the table.
        exact_sums : bool, default=False
            Add sums in the engine's event order, equal to ``exp.predict`` on
            pandas to the bit, at the cost of holding each user's values in
            memory (see :mod:`rudi_explain.sql.statistics`).

        Returns
        -------
        pyspark.sql.DataFrame
            One row per user: the columns of ``RuleSet.to_sql`` (the user,
            the statistic values the rules use, ``score``, ``rule_1`` ...).
        """
        self._check()
        seqs = explanation.sequences
        name = f"_rudi_events_{uuid.uuid4().hex}"  # a name no column or value holds
        sql = explanation.rules.to_sql(
            table=name, user=self.user, time=self.time, dialect="spark", literals=explanation.literals,
            include_literals=include_literals, vocabularies=explanation.literals.vocabularies, schema=seqs,
            event_order=self.event_order, reference_time=reference_time, exact_sums=exact_sums)
        # spark.sql's own way to read a DataFrame in a query (classic and Spark Connect alike, no view left
        # behind): "{events}" stands for it, so every other brace of the text (in a category value) is doubled.
        template = sql.replace("{", "{{").replace("}", "}}").replace(quote_identifier(name, "spark"), "{events}")
        return self.source.sparkSession.sql(template, events=self.source)

    def __repr__(self) -> str:
        return f"SparkEventTable(user={self.user!r}, time={self.time!r}, n_users={self.n_users})"


def score_spark(explanation: Any, data: Any, *, include_literals: bool = False, reference_time: Any = None,
                event_order: str | None = None, exact_sums: bool = False) -> Any:
    """Every user's statistic values, rule firings and rule score, computed by Spark (``exp.score_spark``).

    Parameters
    ----------
    explanation : Explanation
        A fitted explanation.
    data : pyspark.sql.DataFrame or SparkEventTable
        Events with the explanation's user and time columns and the columns its rules read.
    include_literals : bool, default=False
        Also each literal's truth (0/1).
    reference_time : optional
        "Now" of the time statistics; by default the latest time of ``data``.
    event_order : str, optional
        A column giving the input order of events tied in time (for a DataFrame;
        a :class:`SparkEventTable` has its own).
    exact_sums : bool, default=False
        As :meth:`SparkEventTable.score`.

    Returns
    -------
    pyspark.sql.DataFrame
        Lazy; one row per user, as :meth:`SparkEventTable.score`.
    """
    if not isinstance(data, SparkEventTable):
        if not is_spark_dataframe(data):
            raise InputTypeError(f"score_spark needs a pyspark.sql.DataFrame of events, got {type(data).__name__}")
        seqs = explanation.sequences
        data = SparkEventTable(data, user=seqs.user_column, time=seqs.time_column, event_order=event_order)
    return data.score(explanation, include_literals=include_literals, reference_time=reference_time,
                      exact_sums=exact_sums)


def predict_spark(explanation: Any, data: Any) -> Any:
    """``exp.predict`` of a Spark DataFrame: a Spark DataFrame of two columns, the user and ``rules``."""
    scored = score_spark(explanation, data)
    user = quote_identifier(scored.columns[0], "spark")
    return scored.select(scored[user], scored["score"].alias("rules"))
