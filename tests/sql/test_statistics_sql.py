"""Statistics and rule sets compiled to SQL, run by DuckDB, against the engine.

The engine (``Statistic.evaluate``, ``RuleSet.score``) is itself tested
against the per-user reference (test_engine.py, test_time_operators.py);
here DuckDB's answers must equal the engine's for random statistics of both
grammars on small random tables with NaNs, missing categories, ties in time,
a datetime and a numerical time column, and users that no event of a filter
matches.
"""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest

import rudi_explain as rx
from rudi_explain.rules.formula import And, Lit, Or
from rudi_explain.rules.ruleset import LinearTerm, Rule, RuleSet
from rudi_explain.rules.scorecard import Scorecard
from rudi_explain.rules.scorecard_cards import Band, Card, Linear
from rudi_explain.sql.ruleset import sql_comment
from rudi_explain.sql.statistics import float_literal, quote_identifier, quote_string, statistics_sql
from rudi_explain.statistics import Mean, Pipeline, Schema, Std, Sum, Top, Within, next_operators

CATEGORICAL = ["a", "b"]
NUMERICAL = ["u", "v"]
BASE = pd.Timestamp("2024-03-01")


def event_table(rng: np.random.Generator, datetime_time: bool) -> pd.DataFrame:
    n_users = int(rng.integers(1, 8))
    rows = []
    for user in range(n_users):
        for _ in range(int(rng.integers(1, 8))):
            step = int(rng.integers(0, 6))  # few distinct times: ties in time
            rows.append({
                "user_id": f"u{user}",
                "ts": BASE + pd.Timedelta(hours=12 * step) if datetime_time else float(step),
                "a": rng.choice(np.array(["x", "y", "z", None], dtype=object)),
                "b": rng.choice(["p", "q", "r"]),
                "u": rng.choice([np.nan, -3.5, -1.0, 0.0, 0.1, 0.5, 2.0, 2.0, 10.0]),
                "v": rng.choice([np.nan, -2.0, 0.0, 0.3, 1.0, 1.0, 3.0, 1e6]),
            })
    df = pd.DataFrame(rows).iloc[rng.permutation(len(rows))].reset_index(drop=True)
    df["row"] = np.arange(len(df))  # the input order, which breaks ties in time
    return df


def random_statistic(rng: np.random.Generator, schema: Schema, grammar: str, max_depth: int):
    pipeline = Pipeline((), schema=schema)
    while not pipeline.complete:
        options = list(next_operators(pipeline, schema, max_depth, grammar=grammar))
        # The search proposes no window on a numerical time column: add some by hand.
        extra = [Within(2), Within(3.5)] if schema.time_unit == "number" else [Within(36, "h")]
        state = pipeline.state
        for w in extra:
            # Not where the room left is kept for a Top that must follow a SortBy.
            if state.depth + 2 <= max_depth and not state.needs_order_use and w.check(state, schema) is None:
                options.append(w)
        op = options[int(rng.integers(len(options)))]
        if isinstance(op, Top):
            op = Top(int(rng.integers(1, 5)))
        pipeline = pipeline.then(op, schema)
    return pipeline.statistic()


# With exact_sums=True, DuckDB and Spark add a user's values in the engine's event order (ordered
# arrays), so every value is equal to the bit. A plain SUM (the default, and standard SQL) adds in
# the database's own order: there Mean, Sum and Std of numbers may differ in the last bits.
_REORDERED = (Mean, Sum, Std)


def assert_same(stat, got: np.ndarray, want: np.ndarray, ordered_sums: bool = False) -> None:
    assert got.shape == want.shape, str(stat)
    if not ordered_sums and isinstance(stat.aggregation, _REORDERED):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9, equal_nan=True, err_msg=str(stat))
    else:
        np.testing.assert_array_equal(got, want, err_msg=str(stat))


def check_against_engine(got: pd.DataFrame, stat, seqs, ordered_sums: bool) -> None:
    """One statistic's SQL result (``got``) against the engine on the same users."""
    assert list(got.columns) == ["user_id", *stat.output_names(seqs)], str(stat)
    assert list(got["user_id"]) == list(seqs.users)
    want = stat.evaluate(seqs)
    assert_same(stat, as_values(got, seqs.users).reshape(want.shape), want, ordered_sums=ordered_sums)


def run(con, sql: str) -> pd.DataFrame:
    return con.execute(sql).df()


def as_values(frame: pd.DataFrame, users, user: str = "user_id") -> np.ndarray:
    frame = frame.set_index(user).reindex(users)
    return frame.to_numpy(dtype=np.float64, na_value=np.nan)


@pytest.mark.slow
@pytest.mark.parametrize("grammar", ["readable", "paper"])
def test_random_statistics_match_engine(grammar):
    rng = np.random.default_rng(15 if grammar == "readable" else 16)
    tested = 0
    for table in range(24):
        datetime_time = table % 2 == 0
        df = event_table(rng, datetime_time)
        given_reference = table % 3 == 0
        # Some events after the reference: negative recency, outside every window.
        reference = df["ts"].iloc[0] if given_reference else None
        seqs = rx.Sequences(df, categorical=CATEGORICAL, numerical=NUMERICAL, reference_time=reference)
        schema = Schema.of(seqs)
        con = duckdb.connect()
        con.register("events", df)
        exact = table % 2 == 1  # half the tables with sums in the engine's order, equal to the bit
        stats = {}
        for _ in range(10):
            stat = random_statistic(rng, schema, grammar, max_depth=int(rng.integers(1, 6)))
            sql = stat.to_sql(vocabularies=seqs.vocabularies, event_order="row", reference_time=reference,
                              time_unit=schema.time_unit, exact_sums=exact)
            check_against_engine(run(con, sql), stat, seqs, ordered_sums=exact)
            stats[str(stat)] = stat
            tested += 1
        # The same statistics in one query (one scan; their row conditions, windows and aggregates
        # side by side, equal ones shared): each statistic's columns as the engine's.
        together = list(stats.values())
        got = run(con, statistics_sql(together, vocabularies=seqs.vocabularies, event_order="row",
                                      reference_time=reference, time_unit=schema.time_unit, exact_sums=exact))
        assert list(got["user_id"]) == list(seqs.users)
        start = 1
        for stat in together:
            width = len(stat.output_names(seqs))
            want = stat.evaluate(seqs)
            assert_same(stat, got.iloc[:, start:start + width].to_numpy(dtype=np.float64, na_value=np.nan)
                        .reshape(want.shape), want, ordered_sums=exact)
            start += width
        assert start == got.shape[1]
    assert tested == 240


def test_users_without_matching_events_and_unseen_categories():
    df = pd.DataFrame({"user_id": ["a", "a", "b", "c"], "ts": [1.0, 2.0, 1.0, 1.0],
                       "a": ["x", "new", "y", None], "u": [1.0, np.nan, 2.0, 4.0]})
    df["row"] = np.arange(len(df))
    vocab = {"a": ("<NA>", "x", "y", "w")}  # 'new' is unseen, 'w' never occurs
    seqs = rx.Sequences(df, categorical=["a"], numerical=["u"], vocabularies=vocab)
    con = duckdb.connect()
    con.register("events", df)
    for text in ["Select(u) | RetainBy(a=w) | Sum", "Select(u) | RetainBy(a=w) | Mean", "Select(a) | Mean",
                 "Select(u) | FilterBy(a=x) | GroupBy(a) | Count", "Select(a) | First", "Select(u) | GroupBy(a) | Max",
                 "Select(*) | RetainBy(a=y) | Recency"]:
        stat = rx.Statistic.parse(text)
        got = run(con, stat.to_sql(vocabularies=vocab, event_order="row", time_unit="number"))
        want = stat.evaluate(seqs)
        assert_same(stat, as_values(got, seqs.users).reshape(want.shape), want)
    # A lumped vocabulary: values it lacks count as "<other>".
    lumped = {"a": ("<other>", "x")}
    seqs = rx.Sequences(df, categorical=["a"], numerical=["u"], vocabularies=lumped)
    stat = rx.Statistic.parse("Select(a) | Sum")
    got = run(con, stat.to_sql(vocabularies=lumped))
    np.testing.assert_array_equal(as_values(got, seqs.users), stat.evaluate(seqs))


def test_datetime_time_in_days_and_nanosecond_windows():
    ts = pd.to_datetime(["2024-01-01 00:00:00", "2024-01-07 23:59:59.999999999", "2024-01-08", "2024-01-09 06:00"],
                        format="ISO8601")
    df = pd.DataFrame({"user_id": [1, 1, 2, 2], "ts": ts, "u": [1.0, 2.0, 3.0, 4.0]})
    seqs = rx.Sequences(df, numerical=["u"], reference_time="2024-01-09")
    con = duckdb.connect()
    con.register("events", df)
    for text in ["Select(*) | Within(1d) | Count", "Select(*) | Within(36h) | Tenure", "Select(*) | Recency",
                 "Select(*) | MaxGap", "Select(*) | MeanGap", "Select(u) | Within(7d) | Sum"]:
        stat = rx.Statistic.parse(text)
        got = run(con, stat.to_sql(schema=seqs, reference_time=seqs.reference_time))
        np.testing.assert_array_equal(as_values(got, seqs.users).ravel(), stat.evaluate(seqs), err_msg=text)
    # Time zones: both sides measure in UTC (DuckDB keeps microseconds of a zoned timestamp).
    zoned = df.assign(ts=pd.to_datetime(["2024-01-01 00:00", "2024-01-07 23:00", "2024-01-08 00:00",
                                         "2024-01-09 06:00"]).tz_localize("Europe/Paris"))
    seqs = rx.Sequences(zoned, numerical=["u"], reference_time="2024-01-09 00:00+01:00")
    con.register("zoned", zoned)
    for text in ["Select(*) | Within(36h) | Count", "Select(*) | Recency"]:
        stat = rx.Statistic.parse(text)
        got = run(con, stat.to_sql(table="zoned", schema=seqs, reference_time="2024-01-09 00:00+01:00"))
        np.testing.assert_array_equal(as_values(got, seqs.users).ravel(), stat.evaluate(seqs), err_msg=text)


# ---------------------------------------------------------------- rule sets
@pytest.fixture(scope="module")
def demo():
    data = rx.datasets.make_payments(n_users=300, random_state=0)
    seqs = data.sequences()
    extra = ["Select(*) | Within(7d) | Count", "Select(channel) | GroupBy(card_type) | Mean",
             "Select(amount) | SortBy(amount, desc) | Top(3) | Percentile(25)", "Select(*) | Recency"]
    literals = rx.Literals.fit(seqs, list(data.planted) + [rx.Statistic.parse(t) for t in extra])
    con = duckdb.connect()
    events = data.events.copy()
    events["row"] = np.arange(len(events))
    con.register("events", events)
    return data, seqs, literals, con


def check_rules(rules: RuleSet, seqs, literals, con) -> None:
    sql = rules.to_sql(table="events", user="user_id", time="ts", include_literals=True, event_order="row",
                       reference_time=seqs.reference_time, time_unit="datetime", exact_sums=True)
    got = run(con, sql).set_index("user_id").reindex(seqs.users)
    np.testing.assert_array_equal(got["score"].to_numpy(), rules.score(seqs))
    fires = got[[f"rule_{j + 1}" for j in range(len(rules))]].to_numpy()
    np.testing.assert_array_equal(fires.astype(bool), rules.fires(seqs))
    truth = got[literals.names].to_numpy()
    np.testing.assert_array_equal(truth.astype(bool), literals.transform(seqs))


def test_random_rule_sets_match_score_and_fires(demo):
    data, seqs, literals, con = demo
    rng = np.random.default_rng(3)
    n = literals.n_literals
    for _ in range(5):
        formulas, weights = [], []
        for _ in range(6):
            lits = [Lit(int(rng.integers(n)), bool(rng.integers(2))) for _ in range(int(rng.integers(1, 4)))]
            formulas.append(And(tuple(lits)) if rng.integers(2) else Or((And(tuple(lits[:1])), *lits[1:])))
            weights.append(float(rng.normal()))
        rules = RuleSet.from_formulas(formulas, weights, intercept=float(rng.normal()), literals=literals)
        check_rules(rules, seqs, literals, con)


def test_nan_threshold(demo):
    # A literal against a NaN threshold is never true, as numpy's comparison; its negation always.
    data, seqs, literals, con = demo
    wider = literals.extended([0, 1], [np.nan, np.nan])
    n = literals.n_literals
    rules = RuleSet.from_formulas([Lit(n), Or((Lit(n + 1, negated=True), Lit(0)))], [1.0, 2.0], literals=wider)
    assert sorted(rules.fires(seqs).sum(axis=0)) == [0, seqs.n_users]
    check_rules(rules, seqs, wider, con)


def test_students_rule_sets_match(demo):
    data, seqs, literals, con = demo
    target = data.risk.to_numpy()
    Z = literals.transform(seqs)
    cart = rx.students.baselines.CARTRules(n_rules=8, random_state=0).fit(Z, target)
    check_rules(cart.rules(literals), seqs, literals, con)
    lasso = rx.students.baselines.LassoStatistics(n_rules=6).fit(literals.values(seqs), target)
    check_rules(lasso.rules(literals), seqs, literals, con)
    gsnln = rx.GSNLN(n_rules=6, hidden_size=8, n_layers=2, epochs=20, random_state=0).fit(Z, target)
    check_rules(gsnln.rules(literals), seqs, literals, con)


def linear_scorecard(literals, V, rng):
    """A scorecard with a linear card on an output some users lack (undefined band), one on an output every
    user has, a band card and an interaction rule, with random points."""
    numeric = [c for c in range(literals.n_outputs) if literals.output_kind[c] != "binary"
               and np.unique(V[~np.isnan(V[:, c]), c]).size > 3]
    lacking = next(c for c in numeric if np.isnan(V[:, c]).any())
    full = next(c for c in numeric if not np.isnan(V[:, c]).any())
    banded = next(c for c in numeric if c not in (lacking, full))

    def linear(c, undefined):
        lo, hi = np.nanquantile(V[:, c], [0.1, 0.8])
        return Card(c, literals.output_descriptions[c], literals.output_kind[c], literals.output_unit[c], (), (),
                    Band(float(rng.normal())) if undefined else None, linear=Linear(
                        float(rng.normal()) / max(hi - lo, 1e-9), float(lo), float(hi), float(rng.normal())))

    edges = tuple(sorted(set(literals.thresholds[literals.column == banded].tolist()))[:2])
    cards = [linear(lacking, True), linear(full, False),
             Card(banded, literals.output_descriptions[banded], literals.output_kind[banded], "", edges,
                  tuple(Band(float(p)) for p in rng.normal(size=len(edges) + 1)))]
    a, b = (int(np.flatnonzero(literals.column == c)[0]) for c in (lacking, banded))
    rule = Rule(Or((Lit(a), ~Lit(b))), float(rng.normal()), literals.literal_info())
    return Scorecard(cards, [rule], float(rng.normal()), literals)


@pytest.mark.parametrize("seed", range(3))
def test_linear_cards_and_undefined_values_score_as_exp_predict(demo, seed):
    """One CASE per card, in SQL: DuckDB's scores equal the rule set's to the last bit, and the scorecard's."""
    data, seqs, literals, con = demo
    V = literals.values(seqs)
    sc = linear_scorecard(literals, V, np.random.default_rng(seed))
    rules = sc.to_rules()
    assert sum(isinstance(r, LinearTerm) for r in rules) == 2
    check_rules(rules, seqs, rules.literal_table(), con)
    sql = rules.to_sql(table="events", user="user_id", time="ts", reference_time=seqs.reference_time,
                       time_unit="datetime", event_order="row", exact_sums=True)
    got = run(con, sql).set_index("user_id").reindex(seqs.users)["score"].to_numpy()
    np.testing.assert_allclose(got, sc.predict(V), rtol=1e-12, atol=1e-12)
    assert np.isnan(V[:, sc.cards[0].column]).any()  # the undefined band is used
    # the score: the base, one CASE per card (undefined band first where it has its own points), one per rule
    score = sql[sql.index("/* base */"):]
    assert score.count("/* card: ") == 3 and score.count("/* rule: ") == 1
    assert score.count("LEAST(GREATEST(") >= 2
    lacking = score[score.index(f"/* card: {sc.cards[0].name}"):]
    assert lacking.index("IS NULL THEN") < lacking.index("LEAST(GREATEST(") < lacking.index(" END")


def test_sql_comments_cannot_be_left():
    for text in ["a */ DROP TABLE x; /* b", "*/*/", "/*/", "line\nbreak\r\x00 -- end", "x */"]:
        c = sql_comment(text)
        inner = c[3:-3]
        assert c.startswith("/* ") and c.endswith(" */")
        assert "*/" not in inner and "/*" not in inner and "\n" not in c and "\r" not in c and "\x00" not in c


def test_card_comments_with_hostile_values_keep_the_query_whole():
    cat = "kind */ DROP TABLE events; /*"
    evil = "x */ SELECT 1; /* \n -- y"
    df = pd.DataFrame({"user_id": ["a", "a", "b", "c", "c"], "ts": [1.0, 2.0, 1.0, 1.0, 2.0],
                       cat: [evil, "ok", evil, "ok", "ok"], "amount": [1.0, 5.0, 3.0, np.nan, 2.0]})
    seqs = rx.Sequences(df, user="user_id", time="ts", categorical=[cat], numerical=["amount"])
    literals = rx.Literals.fit(seqs, [rx.Statistic.parse(f"Select('amount') | RetainBy({cat!r}={evil!r}) | Sum"),
                                      rx.Statistic.parse("Select('amount') | Max")])
    info = literals.literal_info()
    rules = RuleSet([Rule(Lit(0), 1.5, info), LinearTerm(1, 0.25, 0.5, "max", True, 1.0, 4.0)], 0.125, literals)
    con = duckdb.connect()
    con.register("ev", df)
    con.execute("CREATE TABLE events AS SELECT 1 AS x")
    sql = rules.to_sql(table="ev", user="user_id", time="ts")
    got = run(con, sql).set_index("user_id").reindex(seqs.users)
    np.testing.assert_array_equal(got["score"].to_numpy(), rules.score(seqs))
    assert con.execute("SELECT x FROM events").fetchall() == [(1,)]


# ---------------------------------------------------------------- quoting and injection
def test_hostile_names_and_values_round_trip():
    col = 'weird "col"; DROP TABLE events; --'
    cat = "card\n\"type\""
    num = "amount'); --"
    evil = "x'; DROP TABLE events; --"
    slash = "π \\ back\\slash"
    df = pd.DataFrame({
        "user id\"": ["ü1", "ü1", "o'2", "o'2", "z"],
        "t s": [1.0, 2.0, 1.0, 3.0, 1.0],
        cat: [evil, slash, evil, "{a}} {0", None],  # braces: outputs are read by str.format
        col: ["a", "b", "a", "a", "b"],
        num: [1.0, 2.0, 3.0, np.nan, 5.0],
    })
    seqs = rx.Sequences(df, user="user id\"", time="t s", categorical=[cat, col], numerical=[num])
    con = duckdb.connect()
    con.register("my \"events\"", df)
    con.execute("CREATE TABLE events AS SELECT 1 AS x")
    for text in [f"Select({num!r}) | RetainBy({cat!r}={evil!r}) | Sum",
                 f"Select({cat!r}) | GroupBy({col!r}) | Mean",
                 f"Select({num!r}) | FilterBy({cat!r}={slash!r}) | Max", f"Select({cat!r}) | First"]:
        stat = rx.Statistic.parse(text)
        sql = stat.to_sql(table='my "events"', user="user id\"", time="t s", vocabularies=seqs.vocabularies)
        got = run(con, sql)
        assert list(got.columns) == ["user id\"", *stat.output_names(seqs)]
        want = stat.evaluate(seqs)
        np.testing.assert_array_equal(as_values(got, seqs.users, "user id\"").reshape(want.shape), want)
    assert con.execute("SELECT x FROM events").fetchall() == [(1,)]  # the table is still there
    # A qualified table name: each part quoted.
    stat = rx.Statistic.parse(f"Select({num!r}) | Sum")
    got = run(con, stat.to_sql(table=("main", 'my "events"'), user="user id\"", time="t s"))
    np.testing.assert_array_equal(as_values(got, seqs.users, "user id\"").ravel(), stat.evaluate(seqs))
    # Spark: backquoted identifiers, backslash escapes.
    assert quote_identifier("a`b", "spark") == "`a``b`"
    assert quote_string("it's \\", "spark") == "'it\\'s \\\\'"
    assert quote_string(evil) == "'x''; DROP TABLE events; --'"
    with pytest.raises(ValueError, match="NUL"):
        quote_identifier("a\x00b")


def test_float_literals_are_exact():
    con = duckdb.connect()
    for x in [0.1, 0.30000000000000004, -2.5, 1e-300, 1.7976931348623157e308, 123456789.123, -0.0, 5e-324, 1e16]:
        (back,) = con.execute(f"SELECT {float_literal(x)}").fetchone()
        assert back == x and isinstance(back, float)
    with pytest.raises(ValueError):
        float_literal(float("nan"))


def test_errors_name_dialect_and_operator():
    stat = rx.Statistic.parse("Select(*) | Recency")
    with pytest.raises(ValueError, match="time_unit"):
        stat.to_sql()
    with pytest.raises(ValueError, match="'ansi'.*Recency|Recency.*'ansi'"):
        stat.to_sql(dialect="ansi", time_unit="datetime")
    with pytest.raises(ValueError, match="dialect"):
        stat.to_sql(dialect="oracle")
    with pytest.raises(ValueError, match="GroupBy.*vocabularies"):
        rx.Statistic.parse("Select(u) | GroupBy(a) | Sum").to_sql()
    with pytest.raises(ValueError, match="Top.*event order"):
        rx.Statistic.parse("Select(u) | Top(2) | Sum").to_sql(time=None)
    # ansi and spark still write the rest.
    for dialect in ("ansi", "spark"):
        sql = rx.Statistic.parse("Select(u) | SortBy(u, desc) | Top(2) | Mean").to_sql(dialect=dialect)
        assert "ROW_NUMBER()" in sql


def test_operator_without_sql_form_is_refused():
    from dataclasses import dataclass
    from typing import ClassVar

    from rudi_explain.statistics import RowOperator, Select

    @dataclass(frozen=True)
    class Shuffle(RowOperator):
        name: ClassVar[str] = "Shuffle"

    stat = rx.Statistic((Select("u"), Shuffle(), Sum()))
    with pytest.raises(ValueError, match="Shuffle.*'duckdb'|'duckdb'.*Shuffle"):
        stat.to_sql()


def test_ansi_output_runs_on_duckdb():
    # Standard SQL only: DuckDB reads it too (pandas NaN arrive as NULL, which ansi relies on).
    rng = np.random.default_rng(5)
    df = event_table(rng, datetime_time=False)
    seqs = rx.Sequences(df, categorical=CATEGORICAL, numerical=NUMERICAL)
    schema = Schema.of(seqs)
    con = duckdb.connect()
    con.register("events", df)
    # The query states where missing sort keys go (last): the database's default must not matter.
    con.execute("SET default_null_order = 'nulls_first'")
    for _ in range(40):
        stat = random_statistic(rng, schema, "paper", max_depth=4)
        got = run(con, stat.to_sql(dialect="ansi", vocabularies=seqs.vocabularies, event_order="row",
                                   time_unit="number"))
        want = stat.evaluate(seqs)
        assert_same(stat, as_values(got, seqs.users).reshape(want.shape), want, ordered_sums=False)


def test_exact_sums_add_in_the_engine_order_where_a_plain_sum_does_not():
    # mixed magnitudes, many events a user, rows shuffled: the order of addition shows in the last bit
    rng = np.random.default_rng(7)
    n = 40_000
    df = pd.DataFrame({"user_id": rng.integers(0, 200, n).astype(str), "ts": rng.permutation(n).astype(float),
                       "u": np.round(rng.lognormal(3, 1.5, n), 2) * rng.choice([1e-3, 1.0, 1e3], n)})
    df["row"] = np.arange(n)
    seqs = rx.Sequences(df, numerical=["u"], categorical=[])
    con = duckdb.connect()
    con.register("events", df)
    for text in ("Select(u) | Sum", "Select(u) | Mean", "Select(u) | Std"):
        stat = rx.Statistic.parse(text)
        want = stat.evaluate(seqs)
        exact = as_values(run(con, stat.to_sql(event_order="row", exact_sums=True)), seqs.users).reshape(want.shape)
        plain = as_values(run(con, stat.to_sql(event_order="row")), seqs.users).reshape(want.shape)
        np.testing.assert_array_equal(exact, want)
        np.testing.assert_allclose(plain, want, rtol=1e-12)
        if text.endswith("Sum"):
            assert (plain != want).mean() > 0.2  # the plain SUM is off in the last bit for many users
