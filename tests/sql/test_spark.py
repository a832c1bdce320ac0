"""The spark dialect, run by PySpark in local mode, against the engine.

As test_sql.py does for DuckDB: random statistics of both grammars on small
random tables (NaNs, missing categories, ties in time, datetime and
numerical time columns), a demo rule set, and hostile names. One local
SparkSession serves the module (``local[1]``, UI off, quiet logs), started
with ANSI mode on, Spark 4's default, so that a division by zero or an
overflow in the generated SQL fails here rather than on a cluster.

Skipped, with the reason, where PySpark or a Java runtime is missing;
``make test`` installs both.
"""

from __future__ import annotations

import os
import shutil
import signal

import numpy as np
import pandas as pd
import pytest
from test_statistics_sql import (
    CATEGORICAL,
    NUMERICAL,
    as_values,
    check_against_engine,
    event_table,
    linear_scorecard,
    random_statistic,
)

import rudi_explain as rx
from rudi_explain.rules.formula import And, Lit, Or
from rudi_explain.rules.ruleset import RuleSet
from rudi_explain.statistics import Schema

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (make test installs it)")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("no Java runtime for Spark (make test installs default-jre-headless)", allow_module_level=True)

# PySpark's own pandas conversion warns under pandas 3; not ours to fix. Slow: the SparkSession
# alone takes 15 s (test_statistics_sql.py checks the spark dialect's text without it).
pytestmark = [pytest.mark.slow,
              pytest.mark.filterwarnings("ignore:The copy keyword is deprecated:DeprecationWarning",
                                         "ignore:The copy keyword is deprecated")]


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    handler = signal.getsignal(signal.SIGINT)  # before PySpark puts its own in place
    session = (SparkSession.builder.master("local[1]").appName("rudi-explain-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.driver.memory", "1g")
               # A short-lived JVM: the quick compiler only, one GC thread.
               .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
               .config("spark.sql.shuffle.partitions", "1")
               .config("spark.default.parallelism", "1")
               .config("spark.sql.ansi.enabled", "true")
               # Naive pandas datetimes are read as wall-clock times of the session: UTC, as the engine.
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               .config("spark.ui.showConsoleProgress", "false")
               # Tiny tables: planning and code generation cost more than they save.
               .config("spark.sql.adaptive.enabled", "false")
               .config("spark.sql.codegen.wholeStage", "false")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
    # PySpark puts its own SIGINT handler in place (it cancels Spark jobs); give the process its own back
    signal.signal(signal.SIGINT, handler if handler is not None else signal.default_int_handler)


def register(spark, df: pd.DataFrame, name: str) -> None:
    spark.createDataFrame(df).createOrReplaceTempView(name)


def run(spark, sql: str) -> pd.DataFrame:
    return spark.sql(sql).toPandas()


@pytest.mark.parametrize("grammar", ["readable", "paper"])
def test_random_statistics_match_engine(spark, grammar):
    rng = np.random.default_rng(25 if grammar == "readable" else 26)
    tested = 0
    for table in range(4):
        datetime_time = table % 2 == 0
        df = event_table(rng, datetime_time)
        reference = df["ts"].iloc[0] if table % 3 == 0 else None
        seqs = rx.Sequences(df, categorical=CATEGORICAL, numerical=NUMERICAL, reference_time=reference)
        schema = Schema.of(seqs)
        register(spark, df, "events")
        for _ in range(5):
            stat = random_statistic(rng, schema, grammar, max_depth=int(rng.integers(1, 6)))
            exact = table % 2 == 1  # half the tables with sums in the engine's order, equal to the bit
            sql = stat.to_sql(dialect="spark", vocabularies=seqs.vocabularies, event_order="row",
                              reference_time=reference, time_unit=schema.time_unit, exact_sums=exact)
            check_against_engine(run(spark, sql), stat, seqs, ordered_sums=exact)
            tested += 1
    assert tested == 20


def test_demo_rule_set_matches_score_fires_and_literals(spark):
    data = rx.datasets.make_payments(n_users=200, random_state=0)
    seqs = data.sequences()
    extra = ["Select(*) | Within(7d) | Count", "Select(channel) | GroupBy(card_type) | Mean",
             "Select(amount) | SortBy(amount, desc) | Top(3) | Percentile(25)", "Select(*) | Recency"]
    literals = rx.Literals.fit(seqs, list(data.planted) + [rx.Statistic.parse(t) for t in extra])
    events = data.events.copy()
    events["row"] = np.arange(len(events))
    register(spark, events, "payments")
    rng = np.random.default_rng(7)
    n = literals.n_literals
    formulas, weights = [], []
    for _ in range(6):
        lits = [Lit(int(rng.integers(n)), bool(rng.integers(2))) for _ in range(int(rng.integers(1, 4)))]
        formulas.append(And(tuple(lits)) if rng.integers(2) else Or((And(tuple(lits[:1])), *lits[1:])))
        weights.append(float(rng.normal()))
    rules = RuleSet.from_formulas(formulas, weights, intercept=0.25, literals=literals)
    sql = rules.to_sql(table="payments", user="user_id", time="ts", dialect="spark", include_literals=True,
                       event_order="row", reference_time=seqs.reference_time, time_unit="datetime",
                       exact_sums=True)
    got = run(spark, sql).set_index("user_id").reindex(seqs.users)
    np.testing.assert_array_equal(got["score"].to_numpy(dtype=float), rules.score(seqs))
    fires = got[[f"rule_{j + 1}" for j in range(len(rules))]].to_numpy()
    np.testing.assert_array_equal(fires.astype(bool), rules.fires(seqs))
    np.testing.assert_array_equal(got[literals.names].to_numpy().astype(bool), literals.transform(seqs))


def test_linear_cards_and_undefined_values_score_as_the_rules(spark):
    """One CASE per card in Spark SQL: a linear card (with an undefined band and without), a band card and an
    interaction rule score every user as RuleSet.score, to the bit, and as the scorecard."""
    data = rx.datasets.make_payments(n_users=200, random_state=1)
    seqs = data.sequences()
    literals = rx.Literals.fit(seqs, list(data.planted))
    events = data.events.copy()
    events["row"] = np.arange(len(events))
    register(spark, events, "payments")
    V = literals.values(seqs)
    sc = linear_scorecard(literals, V, np.random.default_rng(5))
    rules = sc.to_rules()
    sql = rules.to_sql(table="payments", user="user_id", time="ts", dialect="spark", event_order="row",
                       reference_time=seqs.reference_time, time_unit="datetime", exact_sums=True)
    got = run(spark, sql).set_index("user_id").reindex(seqs.users)
    np.testing.assert_array_equal(got["score"].to_numpy(dtype=float), rules.score(seqs))
    np.testing.assert_allclose(got["score"].to_numpy(dtype=float), sc.predict(V), rtol=1e-12, atol=1e-12)
    fires = got[[f"rule_{j + 1}" for j in range(len(rules))]].to_numpy()
    np.testing.assert_array_equal(fires.astype(bool), rules.fires(seqs))


def test_hostile_names_and_values_round_trip(spark):
    col = 'weird "col"; DROP TABLE events; --'
    cat = "card\n\"type\""
    num = "amount'); --`"
    evil = "x'; DROP TABLE events; --"
    slash = "π \\ back\\slash \\'"
    user = "user id\"`"
    df = pd.DataFrame({
        user: ["ü1", "ü1", "o'2", "o'2", "z"],
        "t s": [1.0, 2.0, 1.0, 3.0, 1.0],
        cat: [evil, slash, evil, "ok", None],
        col: ["a", "b", "a", "a", "b"],
        num: [1.0, 2.0, 3.0, np.nan, 5.0],
    })
    seqs = rx.Sequences(df, user=user, time="t s", categorical=[cat, col], numerical=[num])
    spark.createDataFrame(pd.DataFrame({"x": [1]})).createOrReplaceTempView("events")
    register(spark, df, "my_events")
    for text in [f"Select({num!r}) | RetainBy({cat!r}={evil!r}) | Sum",
                 f"Select({num!r}) | RetainBy({cat!r}={slash!r}) | Sum",
                 f"Select({cat!r}) | GroupBy({col!r}) | Mean",
                 f"Select({num!r}) | FilterBy({cat!r}={slash!r}) | Max"]:
        stat = rx.Statistic.parse(text)
        sql = stat.to_sql(table="my_events", user=user, time="t s", dialect="spark",
                          vocabularies=seqs.vocabularies)
        got = run(spark, sql)
        assert list(got.columns) == [user, *stat.output_names(seqs)]
        want = stat.evaluate(seqs)
        np.testing.assert_array_equal(as_values(got, seqs.users, user).reshape(want.shape), want, err_msg=text)
    assert run(spark, "SELECT x FROM events")["x"].tolist() == [1]  # still there
