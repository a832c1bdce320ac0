"""The command line: run on CSV and Parquet, outputs written, clear errors."""

import json

import pandas as pd
import pytest

import rudi_explain as rx
from rudi_explain.cli import main

FAST = ["--n-stats", "3", "--n-rules", "6", "--simulations", "30", "--epochs", "20"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cli")
    demo = rx.datasets.make_payments(400, random_state=1)
    events, scores = folder / "events.csv", folder / "scores.parquet"
    demo.events.to_csv(events, index=False)
    pd.DataFrame({"user_id": demo.risk.index, "risk": demo.risk.to_numpy(),
                  "label": demo.labels.to_numpy()}).to_parquet(scores)
    return folder, events, scores


@pytest.mark.slow
def test_run_writes_rules_report_and_explanation(files, capsys):
    folder, events, scores = files
    out = folder / "out"
    code = main(["run", str(events), "--scores", str(scores), "--user", "user_id", "--time", "ts",
                 "--score-column", "risk", "--label-column", "label", "--out", str(out), *FAST])
    assert code == 0
    printed = capsys.readouterr().out
    assert "Fidelity to the teacher" in printed and str(out / "rules.txt") in printed
    report = json.loads((out / "report.json").read_text())
    assert report["n_users"] == 400 and 0 < report["fidelity_test"] <= 1 and report["auc_teacher"] is not None
    rules = rx.RuleSet.from_json((out / "rules.json").read_text())
    assert str(rules) == (out / "rules.txt").read_text().rstrip("\n")
    exp = rx.load(out / "explanation.rudi")
    assert str(exp.rules) == str(rules) and len(exp.statistics) == 3


@pytest.mark.parametrize("args, message", [
    (["--user", "uid"], "has no 'uid' column"),
    (["--user", "user_id"], "name the score column with --score-column"),
    (["--user", "user_id", "--score-column", "risk", "--time", "when"], "time column 'when'"),
])
def test_run_errors(files, capsys, args, message):
    folder, events, scores = files
    try:
        code = main(["run", str(events), "--scores", str(scores), "--out", str(folder / "bad"), *args, *FAST])
    except SystemExit as exit:
        code, text = exit.code, str(exit.code)
    else:
        text = capsys.readouterr().err
    assert code != 0 and message in text


def test_missing_file(tmp_path):
    with pytest.raises(SystemExit, match="does not exist"):
        main(["run", str(tmp_path / "nope.csv"), "--scores", str(tmp_path / "s.csv"), "--user", "u"])


# ------------------------------------------------- issue 13: --out checked first, all outputs or none
def _tiny_explain(*args, **kwargs):
    """explain() stand-in: a finished explanation of the given scores, without search or training."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from tiny import tiny_explanation

    seqs = rx.Sequences(args[1], user=kwargs["user"], time=kwargs["time"])
    return tiny_explanation(seqs, kwargs["scores"])


def _no_work(*args, **kwargs):
    raise AssertionError("explain() ran before --out was checked")


def _run(files, out, *extra):
    folder, events, scores = files
    return main(["run", str(events), "--scores", str(scores), "--user", "user_id", "--time", "ts",
                 "--score-column", "risk", "--out", str(out), *extra, *FAST])


@pytest.mark.parametrize("make_bad, message", [
    (lambda out: out.write_text("not a folder"), "is a file, not a folder"),
    (lambda out: (out.mkdir(), (out / "explanation.rudi").mkdir()), "holds explanation.rudi, which is not a file"),
])
def test_out_is_checked_before_any_work(files, tmp_path, monkeypatch, make_bad, message):
    monkeypatch.setattr(rx, "explain", _no_work)
    out = tmp_path / "out"
    make_bad(out)
    with pytest.raises(SystemExit, match=message):
        _run(files, out)


def test_an_unwritable_out_is_checked_before_any_work(files, tmp_path, monkeypatch):
    monkeypatch.setattr(rx, "explain", _no_work)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(SystemExit, match="cannot write in --out"):
        _run(files, blocker / "out")


def test_outputs_are_written_all_or_none(files, tmp_path, monkeypatch):
    monkeypatch.setattr(rx, "explain", _tiny_explain)
    out = tmp_path / "out"
    assert _run(files, out) == 0
    written = sorted(p.name for p in out.iterdir())
    assert written == ["explanation.rudi", "report.html", "report.json", "rules.json", "rules.sql", "rules.txt"]

    def broken_html(self, path, n_users=40):
        raise OSError("disk full")

    monkeypatch.setattr(rx.Explanation, "to_html", broken_html)
    fresh = tmp_path / "fresh"
    with pytest.raises(OSError, match="disk full"):
        _run(files, fresh)
    assert list(fresh.iterdir()) == []  # no rules.txt, report.json, explanation.rudi or .partial


def test_a_failed_save_removes_its_partial(files, tmp_path, monkeypatch):
    monkeypatch.setattr(rx, "explain", _tiny_explain)
    folder, events, scores = files
    exp = _tiny_explain(None, pd.read_csv(events), user="user_id", time="ts",
                        scores=pd.read_parquet(scores).set_index("user_id")["risk"])
    target = tmp_path / "x.rudi"
    target.mkdir()  # the final rename fails
    with pytest.raises(OSError):
        exp.save(target)
    assert not (tmp_path / "x.rudi.partial").exists()


def test_missing_label_column_and_zero_epochs_are_named(files, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(rx, "explain", _no_work)
    with pytest.raises(SystemExit, match="no label column 'nope'"):
        _run(files, tmp_path / "o", "--label-column", "nope")
    with pytest.raises(SystemExit):
        _run(files, tmp_path / "o", "--epochs", "0")
    assert "--epochs: must be at least 1" in capsys.readouterr().err


def test_a_time_column_left_as_a_category_is_refused_at_once(files, tmp_path, monkeypatch, capsys):
    import rudi_explain.explanation.search_stage as explanation  # where the job starts the search

    def no_search(*args, **kwargs):
        raise AssertionError("the search started")

    monkeypatch.setattr(explanation, "StatisticsSearch", no_search)
    folder, events, scores = files
    code = main(["run", str(events), "--scores", str(scores), "--user", "user_id", "--score-column", "risk",
                 "--out", str(tmp_path / "o"), *FAST])  # no --time: 'ts' would be a category per event
    err = capsys.readouterr().err
    assert code == 2
    assert "categorical column 'ts'" in err and "looks time-like" in err and "--time" in err


# ------------------------------------------------- issue 15: DuckDB databases in, rules.sql out
@pytest.mark.slow
def test_run_reads_a_duckdb_database_on_a_sample_and_writes_rules_sql(files, tmp_path, capsys):
    import duckdb
    import numpy as np

    folder, events, scores = files
    database = tmp_path / "events.duckdb"
    con = duckdb.connect(str(database))
    con.execute(f"CREATE TABLE payments AS SELECT * FROM read_csv('{events}')")
    con.close()
    out = tmp_path / "out"
    code = main(["run", str(database), "--table", "payments", "--sample-users", "300", "--scores", str(scores),
                 "--user", "user_id", "--time", "ts", "--score-column", "risk", "--out", str(out), *FAST])
    assert code == 0
    report = json.loads((out / "report.json").read_text())
    assert report["n_users"] == 300  # fitted on the sample
    exp = rx.load(out / "explanation.rudi")
    # rules.sql scores all 400 users of the database table, as the rules do in memory.
    con = duckdb.connect(str(database), read_only=True)
    got = con.execute((out / "rules.sql").read_text()).df().set_index("user_id")
    whole = rx.Sequences(con.execute("SELECT * FROM payments").df(), vocabularies=exp.sequences.vocabularies,
                         reference_time=con.execute("SELECT MAX(ts) FROM payments").fetchone()[0])
    assert len(got) == 400
    np.testing.assert_array_equal(got.reindex(whole.users)["score"].to_numpy(), exp.rules.score(whole))


def test_sql_writes_the_rules_of_a_saved_explanation(files, tmp_path, monkeypatch, capsys):
    import duckdb
    import numpy as np

    folder, events, scores = files
    monkeypatch.setattr(rx, "explain", _tiny_explain)
    assert _run(files, tmp_path / "out") == 0
    saved = tmp_path / "out" / "explanation.rudi"
    exp = rx.load(saved)
    target = tmp_path / "deploy" / "score.sql"
    target.parent.mkdir()
    assert main(["sql", str(saved), "--out", str(target), "--table", "main.payments", "--include-literals"]) == 0
    assert str(target) in capsys.readouterr().out
    con = duckdb.connect()
    frame = pd.read_csv(events)
    con.register("payments", frame)
    got = con.execute(target.read_text()).df().set_index("user_id")
    seqs = rx.Sequences(frame, vocabularies=exp.sequences.vocabularies)
    np.testing.assert_array_equal(got.reindex(seqs.users)["score"].to_numpy(), exp.rules.score(seqs))
    np.testing.assert_array_equal(got.reindex(seqs.users)[exp.literals.names].to_numpy().astype(bool),
                                  exp.literals.transform(seqs))
    # Spark, to the terminal: backquoted names, the qualified table.
    assert main(["sql", str(saved), "--out", "-", "--dialect", "spark", "--table", "db.payments"]) == 0
    printed = capsys.readouterr().out
    assert "FROM `db`.`payments`" in printed and '"' not in printed.split("SELECT", 1)[1].split("FROM")[0]
    with pytest.raises(SystemExit, match="does not exist"):
        main(["sql", str(tmp_path / "nope.rudi")])
    with pytest.raises(SystemExit):
        main(["sql", str(saved), "--dialect", "oracle"])


def test_a_database_needs_its_table(files, tmp_path, monkeypatch):
    monkeypatch.setattr(rx, "explain", _no_work)
    folder, events, scores = files
    with pytest.raises(SystemExit, match="--table"):
        main(["run", str(tmp_path / "x.duckdb"), "--scores", str(scores), "--user", "user_id",
              "--out", str(tmp_path / "o")])

