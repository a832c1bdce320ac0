"""Bad input, round three, at the command line: ``sql --out``, garbage or empty tables, the score column."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pandas as pd
import pytest
from tiny import tiny_payments

from rudi_explain.cli import main


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    return tiny_payments(60).save(tmp_path_factory.mktemp("cli_bad") / "explanation.rudi")


def _leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if "partial" in p.name or "probe" in p.name)


# ------------------------------------------------------------------ item 3: sql --out checked first, written whole
def test_sql_out_that_is_a_folder_is_refused_before_loading(saved, tmp_path, monkeypatch, capsys):
    import rudi_explain as rx

    def no_load(path):
        raise AssertionError("loaded before --out was checked")

    monkeypatch.setattr(rx, "load", no_load)
    folder = tmp_path / "a_folder"
    folder.mkdir()
    assert main(["sql", str(saved), "--out", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err == f"rudi-explain: --out {folder} is a folder; give the path of the file to write\n"
    assert _leftovers(tmp_path) == [] and list(folder.iterdir()) == []


def test_sql_out_in_a_missing_folder_is_refused_naming_it(saved, tmp_path, capsys):
    target = tmp_path / "missing" / "rules.sql"
    assert main(["sql", str(saved), "--out", str(target)]) == 2
    assert capsys.readouterr().err == (f"rudi-explain: --out {target}: the folder {target.parent} does not exist\n")
    assert _leftovers(tmp_path) == []


@pytest.mark.slow
def test_sql_out_on_a_full_disk_leaves_no_partial_file(saved, tmp_path):
    # A file-size limit makes the write fail as a full disk does (EFBIG instead of ENOSPC).
    target = tmp_path / "rules.sql"
    script = textwrap.dedent(f"""
        import resource, signal, sys
        from rudi_explain.cli import main
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (100, resource.RLIM_INFINITY))
        sys.exit(main(["sql", {str(saved)!r}, "--out", {str(target)!r}]))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"rudi-explain: cannot write --out {target}: ")
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []  # neither the file nor a .partial


def test_sql_out_is_written_whole(saved, tmp_path, capsys):
    target = tmp_path / "rules.sql"
    target.write_text("old")
    assert main(["sql", str(saved), "--out", str(target)]) == 0
    assert target.read_text().startswith("WITH") and list(tmp_path.iterdir()) == [target]


# ------------------------------------------------------------------ item 8: garbage or empty tables, the score column
@pytest.fixture()
def scores_file(tmp_path):
    path = tmp_path / "scores.csv"
    pd.DataFrame({"user_id": ["u1", "u2"], "risk": [0.1, 0.2]}).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("name, content, message", [
    ("empty.csv", b"", "{path} is empty: there is no table to read"),
    ("garbage.csv", bytes(range(256)) * 8, "cannot read {path} as a csv table: "),
    ("header.csv", b"user_id,ts,amount\n", "{path} holds no rows (columns: ['user_id', 'ts', 'amount'])"),
    ("garbage.parquet", b"not parquet at all", "cannot read {path} as a parquet table: "),
])
def test_garbage_or_empty_tables_are_named(tmp_path, scores_file, capsys, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    code = main(["run", str(path), "--scores", str(scores_file), "--user", "user_id", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("rudi-explain: " + message.format(path=path)), err
    assert len(err.strip().splitlines()) == 1


def test_the_score_column_cannot_be_the_user_column(tmp_path, scores_file):
    events = tmp_path / "events.csv"
    pd.DataFrame({"user_id": ["u1", "u2"], "amount": [1.0, 2.0]}).to_csv(events, index=False)
    for option in ("--score-column", "--label-column"):
        with pytest.raises(SystemExit, match=rf"{option} 'user_id' is the user column: it cannot also be the "
                                             r"(score|label) column \(one of \['risk'\]\)"):
            main(["run", str(events), "--scores", str(scores_file), "--user", "user_id", option, "user_id",
                  "--out", str(tmp_path / "o")])
    assert not any((tmp_path / "o").iterdir())  # nothing written
