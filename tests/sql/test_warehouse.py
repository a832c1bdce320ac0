"""Tables larger than memory: explain on a sample, every user scored in DuckDB.

The DuckDB side must give what the in-memory engine gives on the same
users: the same rules when the sample is every user, and for a smaller
sample the same statistic values and rule scores for all users as
``Sequences`` of the whole table built with the sample's categories and
"now".
"""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest

import rudi_explain as rx
from rudi_explain.sql.warehouse import EventTable
from rudi_explain.statistics import Mean, Std, Sum

FAST = dict(n_stats=3, n_rules=5, n_simulations=30, background=False, random_state=0,
            student_params={"epochs": 20}, progress=lambda event: None)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    folder = tmp_path_factory.mktemp("warehouse")
    data = rx.datasets.make_payments(400, random_state=2)
    path = folder / "events.parquet"
    data.events.to_parquet(path, index=False)
    return data, path, folder


def same_values(stats, got: pd.DataFrame, seqs) -> None:
    """Columns of EventTable.statistics against Statistic.evaluate, output by output."""
    got = got.reindex(seqs.users)
    column = 1 if got.columns[0] == seqs.user_column else 0
    for stat in stats:
        want = stat.evaluate(seqs).reshape(seqs.n_users, -1)
        part = got.iloc[:, column:column + want.shape[1]].to_numpy(dtype=float, na_value=np.nan)
        column += want.shape[1]
        if isinstance(stat.aggregation, (Mean, Sum, Std)):  # sums in another order
            np.testing.assert_allclose(part, want, rtol=1e-9, atol=1e-9, equal_nan=True, err_msg=str(stat))
        else:
            np.testing.assert_array_equal(part, want, err_msg=str(stat))
    assert column == got.shape[1]


@pytest.mark.slow
def test_parquet_explains_as_the_data_frame_and_scores_every_user(demo):
    data, path, _ = demo
    memory = rx.explain(None, data.events, scores=data.risk, **FAST)
    table = rx.explain(None, str(path), scores=data.risk, **FAST)  # 400 users: the sample is all of them
    assert table.sequences.n_users == 400 and str(table.rules) == str(memory.rules)
    assert [str(s) for s in table.statistics] == [str(s) for s in memory.statistics]
    seqs = memory.sequences
    every = table.event_table.score(table, include_literals=True).reindex(seqs.users)
    np.testing.assert_array_equal(every["score"].to_numpy(), memory.rules.score(seqs))
    fires = every[[f"rule_{j + 1}" for j in range(len(memory.rules))]].to_numpy().astype(bool)
    np.testing.assert_array_equal(fires, memory.rules.fires(seqs))
    np.testing.assert_array_equal(every[memory.literals.names].to_numpy().astype(bool),
                                  memory.literals.transform(seqs))
    same_values(memory.statistics, table.event_table.statistics(memory.statistics, seqs), seqs)
    predicted = table.predict(path)
    np.testing.assert_array_equal(predicted.reindex(seqs.users).to_numpy(), memory.predict(data.events).to_numpy())


@pytest.mark.slow
def test_sample_fits_and_the_whole_table_is_scored(demo):
    data, path, _ = demo
    exp = rx.explain(None, EventTable(path, n_users=150), scores=data.risk, labels=data.labels, **FAST)
    sample = exp.sequences
    assert sample.n_users == 150 and set(sample.users) < set(data.events["user_id"])
    # Every event of the sampled users, as the in-memory table holds them.
    rows = data.events[data.events["user_id"].isin(sample.users)]
    assert sample.n_events == len(rows)
    # The teacher's scores were cut to the sample.
    np.testing.assert_array_equal(exp.teacher_scores.reindex(sample.users).to_numpy(),
                                  data.risk.reindex(sample.users).to_numpy())
    # All 400 users, in DuckDB, against Sequences of the whole table with the sample's categories and "now".
    whole = rx.Sequences(data.events, vocabularies=sample.vocabularies, reference_time=sample.reference_time)
    every = exp.event_table.score(exp).reindex(whole.users)
    assert len(every) == 400
    np.testing.assert_array_equal(every["score"].to_numpy(), exp.rules.score(whole))
    same_values(exp.statistics, exp.event_table.statistics(exp.statistics, sample), whole)


def test_sample_is_seeded_and_uniform(demo):
    _, path, _ = demo
    table = EventTable(path, n_users=40)
    users = table.users
    assert len(users) == 400 and list(users) == sorted(users)
    np.testing.assert_array_equal(table.sample_users(random_state=3), table.sample_users(random_state=3))
    draws = np.array([np.isin(users, table.sample_users(random_state=seed)) for seed in range(300)])
    assert (draws.sum(axis=1) == 40).all()
    rate = draws.mean(axis=0)  # each user's share of draws: 0.1 expected, sd 0.017
    assert 0.09 < rate.mean() < 0.11 and rate.min() > 0.02 and rate.max() < 0.2
    assert len({tuple(table.sample_users(random_state=s)) for s in range(5)}) == 5


def test_sources_relation_connection_database_give_the_same_sample(demo):
    data, path, folder = demo
    want = EventTable(path, n_users=60).sample(random_state=1)
    con = duckdb.connect()
    con.execute(f"CREATE TABLE events AS SELECT * FROM read_parquet('{path}')")
    database = folder / "events.duckdb"
    disk = duckdb.connect(str(database))
    disk.execute(f"CREATE TABLE payments AS SELECT * FROM read_parquet('{path}')")
    disk.close()
    for source in [con.sql("SELECT * FROM events"), (con, "events"), (con, ("main", "events"))]:
        got = EventTable(source, n_users=60).sample(random_state=1)
        np.testing.assert_array_equal(got.users, want.users)
        assert got.n_events == want.n_events
    got = EventTable(str(database), table="payments", n_users=60).sample(random_state=1)
    np.testing.assert_array_equal(got.users, want.users)
    np.testing.assert_array_equal(got.values["amount"], want.values["amount"])
    back = rx.Sequences.from_duckdb(f"SELECT * FROM read_parquet('{path}')", con)
    whole = rx.Sequences(data.events)
    np.testing.assert_array_equal(back.users, whole.users)
    np.testing.assert_array_equal(back.values["amount"], whole.values["amount"])


def test_ties_in_time_keep_the_file_order(tmp_path):
    # Many events at one time: Top and First must take them in the file's row order, as Sequences.
    rng = np.random.default_rng(0)
    n = 600
    df = pd.DataFrame({"user_id": rng.integers(0, 30, n), "ts": rng.integers(0, 3, n).astype(float),
                       "kind": rng.choice(["a", "b", "c"], n), "x": rng.normal(size=n).round(1)})
    path = tmp_path / "ties.parquet"
    df.to_parquet(path, index=False, row_group_size=100)
    stats = [rx.Statistic.parse(t) for t in ["Select(x) | First", "Select(kind) | First", "Select(x) | Top(3) | Sum",
                                             "Select(x) | SortBy(x, desc) | Top(2) | Min", "Select(*) | Recency"]]
    table = EventTable(path, n_users=10)
    sample = table.sample(random_state=0)
    whole = rx.Sequences(df, vocabularies=sample.vocabularies, reference_time=sample.reference_time)
    same_values(stats, table.statistics(stats, sample), whole)


def test_errors(demo, tmp_path):
    data, path, _ = demo
    with pytest.raises(ValueError, match="Series indexed by user id"):
        rx.explain(None, str(path), scores=data.risk.to_numpy(), in_users_order=True, **FAST)
    with pytest.raises(ValueError, match="user column 'uid'"):
        EventTable(path, user="uid")
    with pytest.raises(FileNotFoundError):
        EventTable(tmp_path / "nope.parquet")
    with pytest.raises(ValueError, match="parquet"):
        rx.explain(None, "events.csv", scores=data.risk, **FAST)
    with pytest.raises(ValueError, match="table="):
        database = tmp_path / "x.duckdb"
        duckdb.connect(str(database)).close()
        EventTable(str(database))
