"""Spark DataFrames in and out: explain() samples users in Spark, every user is scored by Spark.

One local SparkSession serves the module (as test_spark.py: ``local[2]`` here,
so that partitions really run apart; UI off, ANSI mode on, session time zone
UTC). The fast tests need neither PySpark nor Java: they check that a Spark
DataFrame is recognised by its type's module and that, without PySpark, the
error says what to install.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

import rudi_explain as rx
from rudi_explain.rules.formula import Lit
from rudi_explain.rules.ruleset import RuleSet
from rudi_explain.sql.spark import SparkEventTable, is_spark_dataframe, is_table_source

FAST = dict(n_stats=3, n_rules=5, n_simulations=30, background=False, random_state=0,
            student_params={"epochs": 20}, progress=lambda event: None)


def _fake_spark_frame_type(module: str = "pyspark.sql.classic.dataframe") -> type:
    """A class that looks like PySpark's DataFrame by its module and name, and is nothing else."""
    return type("DataFrame", (), {"__module__": module})


# ------------------------------------------------------------------ fast: no PySpark needed
def test_a_spark_dataframe_is_told_by_its_type_without_importing_pyspark(monkeypatch):
    for name in [m for m in sys.modules if m == "pyspark" or m.startswith("pyspark.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "pyspark", None)  # import pyspark now raises ImportError
    frame_type = _fake_spark_frame_type()
    connect_type = type("Sub", (_fake_spark_frame_type("pyspark.sql.connect.dataframe"),), {"__module__": "mine"})
    assert is_spark_dataframe(frame_type()) and is_spark_dataframe(connect_type())
    assert is_table_source(frame_type())
    elsewhere = type("DataFrame", (), {"__module__": "polars.dataframe.frame"})
    assert not any(is_spark_dataframe(x) for x in (elsewhere(), pd.DataFrame({"a": [1]}), "events.parquet", None))
    scores = pd.Series([0.1, 0.2], index=["a", "b"])
    install = r'needs PySpark, which is not installed: pip install "rudi-explain\[spark\]"'
    with pytest.raises(rx.RudiExplainError, match=install):
        rx.explain(None, frame_type(), scores=scores, **FAST)
    with pytest.raises(rx.RudiExplainError, match=r"needs PySpark"):
        SparkEventTable(frame_type())
    with pytest.raises(TypeError, match=r"reads a pyspark\.sql\.DataFrame, got DataFrame"):
        SparkEventTable(pd.DataFrame({"user_id": [1]}))


# ------------------------------------------------------------------ Spark in local mode
# PySpark's own pandas conversion warns under pandas 3; not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore:The copy keyword is deprecated:DeprecationWarning",
                                        "ignore:The copy keyword is deprecated")


@pytest.fixture(scope="module")
def spark():
    # Skipped here, not at import: the fast tests above run without PySpark or Java.
    pytest.importorskip("pyspark", reason="pyspark is not installed (make test installs it)")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java runtime for Spark (make test installs default-jre-headless)")
    from pyspark.sql import SparkSession

    handler = signal.getsignal(signal.SIGINT)  # before PySpark puts its own in place
    session = (SparkSession.builder.master("local[2]").appName("rudi-explain-tests-spark-io")
               .config("spark.ui.enabled", "false")
               .config("spark.driver.memory", "1g")
               .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
               .config("spark.sql.shuffle.partitions", "3")
               .config("spark.sql.ansi.enabled", "true")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.adaptive.enabled", "false")
               .config("spark.sql.codegen.wholeStage", "false")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
    signal.signal(signal.SIGINT, handler if handler is not None else signal.default_int_handler)


@pytest.fixture(scope="module")
def payments():
    data = rx.datasets.make_payments(400, random_state=2)
    # Spark has no categorical dtype: the table holds the categories as text, as does the pandas side here.
    events = data.events.astype({c: str for c in ("card_type", "channel", "merchant_category", "country")})
    assert not events.duplicated(["user_id", "ts"]).any()  # no ties in time: the order is the same on both sides
    return data, events


@pytest.fixture(scope="module")
def fitted(spark, payments):
    """An explanation fitted from a Spark DataFrame of 400 users on a sample of 250, drawn in Spark."""
    data, events = payments
    frame = spark.createDataFrame(events).repartition(3)
    exp = rx.explain(None, SparkEventTable(frame, n_users=250), scores=data.risk, **FAST)
    return exp, frame


@pytest.mark.slow
def test_the_sample_is_seeded_and_the_same_on_any_number_of_partitions(spark, payments):
    data, events = payments
    frame = spark.createDataFrame(events)
    samples = {}
    for parts in (1, 4):
        table = SparkEventTable(frame.repartition(parts, "amount"), n_users=60)
        samples[parts] = table.sample_users(random_state=3).toPandas()["_rudi_u"].tolist()
    assert len(samples[1]) == 60 and len(set(samples[1])) == 60
    assert set(samples[1]) == set(samples[4])
    table = SparkEventTable(frame, n_users=60)
    draws = [set(table.sample_users(random_state=seed).toPandas()["_rudi_u"]) for seed in range(6)]
    assert len({frozenset(d) for d in draws}) == 6  # another seed, another sample
    # Not the first users by id: over 6 draws the sampled users' mean position is mid-table (199.5, sd about 6).
    users = np.sort(events["user_id"].unique())
    positions = np.concatenate([np.searchsorted(users, sorted(d)) for d in draws])
    assert 150 < positions.mean() < 250
    assert len(set().union(*draws)) > 0.5 * len(users)  # 6 draws of 15% cover 62% on average (sd 2.4%)
    # All the events of the sampled users, with "now" of the whole table.
    seqs = table.sample(random_state=3)
    mine = events[events["user_id"].isin(samples[1])]
    assert seqs.n_users == 60 and seqs.n_events == len(mine)
    assert seqs.reference_time == events["ts"].max()
    assert SparkEventTable(frame, n_users=1000).sample().n_users == 400  # no more users than that: all of them


@pytest.mark.slow
def test_explain_from_spark_equals_explain_from_pandas_on_the_sampled_users(spark, fitted, payments):
    data, events = payments
    exp, frame = fitted
    sample = exp.sequences.users
    assert len(sample) == 250
    restricted = events[events["user_id"].isin(sample)]
    # "now" is the latest time of the whole table on the Spark side: the same for the pandas side.
    seqs = rx.Sequences(restricted, reference_time=events["ts"].max())
    memory = rx.explain(None, seqs, scores=data.risk[data.risk.index.isin(sample)], **FAST)
    assert [str(s) for s in exp.statistics] == [str(s) for s in memory.statistics]
    assert str(exp.rules) == str(memory.rules)
    np.testing.assert_array_equal(exp.student_scores.to_numpy(), memory.student_scores.to_numpy())
    np.testing.assert_array_equal(exp.teacher_scores.to_numpy(), memory.teacher_scores.to_numpy())
    assert exp.report()["fidelity_test"] == memory.report()["fidelity_test"]
    # Scores in Spark too (user id, score): cut to the sample in Spark, the same explanation.
    in_spark = spark.createDataFrame(data.risk.rename("risk").reset_index())
    again = rx.explain(None, SparkEventTable(frame, n_users=250), scores=in_spark, **FAST)
    assert str(again.rules) == str(exp.rules)
    np.testing.assert_array_equal(again.teacher_scores.to_numpy(), exp.teacher_scores.to_numpy())


@pytest.mark.slow
def test_every_user_scored_in_spark_equals_predict_on_pandas(fitted, payments, monkeypatch):
    from pyspark.sql import DataFrame  # classic PySpark: the session above

    _, events = payments
    exp, frame = fitted
    want = exp.predict(events)  # all 400 users, in memory
    assert len(want) == 400
    # Nothing but one-row aggregates (the check for NULL ids) comes to the driver while the scores are set up.
    collected: list[int] = []

    def counting(original):
        def call(self, *args, **kwargs):
            got = original(self, *args, **kwargs)
            collected.append(len(got))
            return got
        return call

    for name in ("toPandas", "collect"):
        monkeypatch.setattr(type(frame), name, counting(getattr(type(frame), name)))
    exact = exp.score_spark(frame, exact_sums=True, include_literals=True)
    predicted = exp.predict(frame)
    assert collected and max(collected) <= 1
    monkeypatch.undo()
    assert isinstance(exact, DataFrame) and isinstance(predicted, DataFrame)
    assert predicted.columns == ["user_id", "rules"]
    exact_pd = exact.toPandas().set_index("user_id").reindex(want.index)
    np.testing.assert_array_equal(exact_pd["score"].to_numpy(), want.to_numpy())  # to the last bit
    seqs = rx.Sequences(events, vocabularies=exp.sequences.vocabularies)
    fires = exact_pd[[f"rule_{j + 1}" for j in range(len(exp.rules))]].to_numpy().astype(bool)
    np.testing.assert_array_equal(fires, exp.rules.fires(seqs))
    np.testing.assert_array_equal(exact_pd[exp.literals.names].to_numpy().astype(bool), exp.literals.transform(seqs))
    # Sums in Spark's own order: equal within 1e-12.
    fast = predicted.toPandas().set_index("user_id")["rules"].reindex(want.index)
    np.testing.assert_allclose(fast.to_numpy(), want.to_numpy(), rtol=0, atol=1e-12)
    assert isinstance(exp.event_table, SparkEventTable)  # exp.event_table.score(exp): the same, as on DuckDB


@pytest.mark.slow
def test_ties_in_time_keep_the_event_order_column(spark):
    frame = pd.DataFrame({"user_id": ["a"] * 4 + ["b"] * 2, "ts": [1.0, 1.0, 1.0, 2.0, 5.0, 5.0],
                          "row": [3, 1, 2, 4, 6, 5], "amount": [30.0, 10.0, 20.0, 40.0, 60.0, 50.0]})
    table = SparkEventTable(spark.createDataFrame(frame).repartition(2), event_order="row")
    assert table.read()["amount"].tolist() == [10.0, 20.0, 30.0, 40.0, 50.0, 60.0]


@pytest.mark.slow
def test_bad_input_gets_the_errors_of_the_dataframe_path(spark, payments, fitted):
    data, events = payments
    frame = spark.createDataFrame(events)
    with pytest.raises(ValueError, match=r"user column 'uid' is not in the Spark DataFrame; columns are \['user_id', "):
        rx.explain(None, frame, user="uid", scores=data.risk, **FAST)
    with pytest.raises(ValueError, match=r"time column 'when' is not in the Spark DataFrame"):
        rx.explain(None, frame, time="when", scores=data.risk, **FAST)
    exp, _ = fitted
    with pytest.raises(ValueError, match=r"user column 'user_id' is not in the Spark DataFrame"):
        exp.score_spark(frame.withColumnRenamed("user_id", "customer"))
    broken = events.head(60).copy()
    broken.loc[[7, 30], "user_id"] = None
    broken["row"] = np.arange(len(broken))
    with pytest.raises(ValueError, match=r"user column 'user_id' has a missing user id at row 7"):
        rx.Sequences(broken)
    spark_broken = spark.createDataFrame(broken)
    with pytest.raises(rx.RudiExplainError, match=r"user column 'user_id' of the Spark DataFrame has 2 missing "
                                                  r"\(NULL\) user ids, the first at the row user_id=None, ts="):
        rx.explain(None, spark_broken, scores=data.risk, **FAST)
    with pytest.raises(ValueError, match=r"has 2 missing \(NULL\) user ids, the first at row = 7"):
        exp.score_spark(spark_broken, event_order="row")
    with pytest.raises(rx.RudiExplainError, match=r"pass scores and labels as a pandas Series indexed by user id"):
        rx.explain(None, frame, scores=data.risk.to_numpy(), in_users_order=True, **FAST)


@pytest.mark.slow
def test_hostile_names_and_braces_in_values_are_scored_by_spark(spark):
    user, cat = "user id`", "kind {events}"
    values = ["{events}", "x}{", "it's \\ {{"]
    df = pd.DataFrame({user: ["a", "a", "b", "c", "c", "c", "d"], "ts": [1.0, 2.0, 1.0, 1.0, 2.0, 3.0, 1.0],
                       cat: [values[0], values[1], values[0], values[2], values[1], values[0], values[2]],
                       "amount": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]})
    seqs = rx.Sequences(df, user=user, time="ts", categorical=[cat], numerical=["amount"])
    stats = [rx.Statistic.parse(f"Select(amount) | RetainBy({cat!r}={v!r}) | Sum") for v in values]
    literals = rx.Literals.fit(seqs, stats)
    assert len({literals.column[i] for i in range(literals.n_literals)}) == 3  # a literal of every value
    rules = RuleSet.from_formulas([Lit(i, False) for i in range(literals.n_literals)],
                                  [2.0 ** -i for i in range(literals.n_literals)], intercept=0.5, literals=literals)
    explanation = SimpleNamespace(rules=rules, literals=literals, sequences=seqs)  # what score() reads of one
    got = SparkEventTable(spark.createDataFrame(df), user=user, time="ts").score(explanation).toPandas()
    assert got[user].tolist() == ["a", "b", "c", "d"]
    np.testing.assert_array_equal(got["score"].to_numpy(), rules.score(seqs))
