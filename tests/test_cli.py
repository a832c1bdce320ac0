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
