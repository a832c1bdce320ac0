"""Bad input, round three, on the SQL side: NULL user ids in DuckDB, column names differing in case."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import rudi_explain as rx
from rudi_explain.sql.statistics import statistics_sql
from rudi_explain.sql.warehouse import EventTable

duckdb = pytest.importorskip("duckdb")


def _events(n_users: int = 20, per_user: int = 3) -> pd.DataFrame:
    n = n_users * per_user
    return pd.DataFrame({
        "user_id": np.repeat(np.arange(n_users), per_user).astype(float),
        "ts": np.tile(np.arange(per_user, dtype=float), n_users),
        "amount": np.arange(n, dtype=float),
    })


# ------------------------------------------------------------------ item 6: NULL user ids
def test_null_user_ids_are_refused_on_the_parquet_path_as_on_the_dataframe_path(tmp_path):
    frame = _events()
    frame.loc[[7, 30], "user_id"] = np.nan
    with pytest.raises(ValueError, match=r"user column 'user_id' has a missing user id at row 7"):
        rx.Sequences(frame)
    path = tmp_path / "events.parquet"
    frame.to_parquet(path, index=False)
    table = EventTable(str(path), user="user_id", time="ts")
    with pytest.raises(ValueError, match=r"user column 'user_id' of .*events\.parquet has 2 missing \(NULL\) user "
                                         r"ids, the first at row 7") as err:
        table.sample(n_users=5)
    assert isinstance(err.value, rx.RudiExplainError)
    with pytest.raises(ValueError, match=r"2 missing \(NULL\) user ids"):
        assert table.users is not None


def test_null_user_ids_of_a_relation_are_named_by_their_values():
    frame = _events()
    frame.loc[4, "user_id"] = np.nan
    con = duckdb.connect()
    con.register("events", frame)
    table = EventTable(con.sql("SELECT * FROM events"), user="user_id", time="ts")
    with pytest.raises(ValueError, match=r"has a missing \(NULL\) user id, the first at the row user_id=.*ts=1\.0, "
                                         r"amount=4\.0"):
        table.sample()
    clean = EventTable(con.sql("SELECT * FROM events WHERE user_id IS NOT NULL"), user="user_id", time="ts")
    assert len(clean.users) == 20


# ------------------------------------------------------------------ item 8: names differing only in case
def test_columns_differing_only_in_case_are_refused_at_sql_export_naming_both():
    frame = _events().assign(Amount=lambda f: f["amount"] * 10)
    seqs = rx.Sequences(frame)  # pandas tells them apart: fine in memory
    stats = [rx.Statistic.parse("Select(amount) | Sum")]
    for dialect in ("duckdb", "spark"):
        with pytest.raises(ValueError, match=r"columns 'amount' and 'Amount' differ only in case, and "
                                             rf"{dialect} SQL matches column names regardless of case"):
            statistics_sql(stats, schema=seqs, dialect=dialect)
    assert "SELECT" in statistics_sql(stats, schema=seqs, dialect="ansi")  # ANSI compares quoted names exactly
    with pytest.raises(ValueError, match=r"columns 'ts' and 'TS' differ only in case"):
        statistics_sql(stats, schema=rx.Sequences(_events()), time="ts", event_order="TS")
