"""The ``rudi-explain`` command line: the explain job for a terminal or a scheduled run."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

# The command line speaks the public API, as a user would (``rx.explain``, ``rx.load``, ``rx.datasets``).
import rudi_explain as rx
from rudi_explain.exceptions import InputError
from rudi_explain.explanation.summary import choice_text
from rudi_explain.rules.ruleset import LinearTerm
from rudi_explain.sql.statistics import DIALECTS
from rudi_explain.sql.warehouse import DEFAULT_SAMPLE_USERS, EventTable
from rudi_explain.statistics import Schema
from rudi_explain.teachers.demo_gru import train_demo_gru

__all__ = ["main"]


#: The files a run writes into ``--out``.
OUTPUTS = {"rules": "rules.txt", "rules_json": "rules.json", "rules_sql": "rules.sql", "report": "report.json",
           "explanation": "explanation.rudi", "html": "report.html"}
#: Suffixes of a DuckDB database file, read with ``--table``.
DATABASE_SUFFIXES = (".duckdb", ".db", ".ddb")


def _check_out(out: Path) -> None:
    """Refuse an ``--out`` that cannot take the outputs, before any work is done.

    ``out`` must be a folder (created if missing) that we can write in, and
    no output name in it may be taken by something other than a file.
    """
    if out.exists() and not out.is_dir():
        raise SystemExit(f"rudi-explain: --out {out} is a file, not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=out, prefix=".rudi-explain-probe-", delete=True)
        probe.close()
    except OSError as err:
        raise SystemExit(f"rudi-explain: cannot write in --out {out}: {err.strerror or err}") from None
    for name in OUTPUTS.values():
        target = out / name
        if (target.exists() or target.is_symlink()) and not target.is_file():
            raise SystemExit(f"rudi-explain: --out {out} holds {name}, which is not a file: move it away first")


def _check_file_out(out: Path) -> None:
    """Refuse a file ``--out`` (of ``sql``) that cannot be written, before any work is done."""
    if out.is_dir():
        raise InputError(f"--out {out} is a folder; give the path of the file to write")
    if not out.parent.is_dir():
        raise InputError(f"--out {out}: the folder {out.parent} does not exist")
    try:
        tempfile.NamedTemporaryFile(dir=out.parent, prefix=".rudi-explain-probe-", delete=True).close()
    except OSError as err:
        raise InputError(f"--out {out}: cannot write in {out.parent}: {err.strerror or err}") from None


def _write_file(out: Path, text: str) -> None:
    """Write ``text`` to ``out`` whole or not at all: a temporary file beside it, renamed into place."""
    fd, name = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".partial")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(name, out)
    except OSError as err:  # a full disk, a file too large: one line, and nothing left behind
        raise InputError(f"cannot write --out {out}: {err.strerror or err}") from None
    finally:
        if os.path.exists(name):
            os.unlink(name)


def _rules_sql(exp, table: str = "events", dialect: str = "duckdb", user: str | None = None,
               time: str | None = None, event_order: str | None = None, reference_time: str | None = None,
               include_literals: bool = False) -> str:
    """The rules as one SELECT scoring every user of ``table`` (a dot separates schema and table)."""
    seqs = exp.sequences
    schema = Schema.of(seqs)
    ref: str | float | None = reference_time
    if reference_time is not None and schema.time_unit == "number":
        ref = float(reference_time)
    return exp.rules.to_sql(table=tuple(table.split(".")), user=user or seqs.user_column,
                            time=time or seqs.time_column, dialect=dialect, literals=exp.literals,
                            include_literals=include_literals, schema=seqs, vocabularies=exp.literals.vocabularies,
                            event_order=event_order, reference_time=ref) + "\n"


def _write_outputs(exp, out: Path, table: str = "events") -> dict[str, Path]:
    """Write every output, or none: into a temporary folder in ``out``, then renamed into place."""
    _check_out(out)
    staging = Path(tempfile.mkdtemp(dir=out, prefix=".rudi-explain-"))
    try:
        staged = {key: staging / name for key, name in OUTPUTS.items()}
        staged["rules"].write_text(str(exp.rules) + "\n")
        staged["rules_json"].write_text(exp.rules.to_json(indent=2))
        try:
            staged["rules_sql"].write_text(_rules_sql(exp, table=table))
        except ValueError as err:  # an operator of the user's own without a SQL form
            print(f"rudi-explain: no rules.sql: {err}", file=sys.stderr)
            del staged["rules_sql"]
        report = exp.report()
        report["statistics"] = [str(s) for s in exp.statistics]
        staged["report"].write_text(json.dumps(report, indent=2))
        exp.save(staged["explanation"])
        try:
            exp.to_html(staged["html"])
        except ImportError:  # the HTML report comes with the widget's front end
            del staged["html"]
        paths = {}
        for key, path in staged.items():
            path.replace(out / path.name)
            paths[key] = out / path.name
        return paths
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _units(sc) -> str:
    """"2 cards and 5 interaction rules"."""
    n, m = len(sc.cards), len(sc.interactions)
    return f"{n} card{'s' if n != 1 else ''} and {m} interaction rule{'s' if m != 1 else ''}"


def _print_result(exp, paths: dict[str, Path]) -> None:
    r = exp.report()
    print("\nStatistics found:")
    for i, stat in enumerate(exp.statistics, 1):
        print(f"  {i:2d}. {stat}")
    sc = exp.scorecard
    if sc is None:  # a rule list: first match wins
        print(f"\nRules (weight first; {r['n_rules']} rules, at most {r['max_literals']} literals each):")
        print(exp.rules)
    else:
        print(f"\nScorecard ({_units(sc)}; a user's score is the base plus the points of each card and the "
              "interaction rules that fire):")
        _print_choice(exp)
        print(sc)
    auc = ""
    if r["auc_teacher"] is not None:
        auc = f"; AUC on held-out users: teacher {r['auc_teacher']:.3f}, rules {r['auc_student']:.3f}"
    lo, hi = r["fidelity_test_ci"]
    print(f"\nFidelity to the teacher: {r['fidelity_test']:.3f} on {r['n_test']:,} held-out users "
          f"(95% interval {lo:.3f} to {hi:.3f}; {r['fidelity_train']:.3f} on {r['n_train']:,} training users){auc}")
    for warning in r["warnings"]:
        print(f"Caution: {warning}")
    print("Seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in r["seconds"].items()))
    print("\nWritten:")
    for path in paths.values():
        print(f"  {path}")


def _print_choice(exp) -> None:
    """The sentence saying which form of scorecard explain() kept, where it weighed any."""
    choice = choice_text(exp.result)
    if choice:
        print(choice)


def _demo(args: argparse.Namespace) -> int:
    _check_out(Path(args.out))
    t0 = time.perf_counter()
    demo = rx.datasets.make_payments(args.users, random_state=args.random_state)
    seqs = demo.sequences()
    print(f"demo data: {seqs!r}")
    print(f"planted risk = {demo.formula}")
    # First the planted risk itself as the teacher: does the method find what was planted?
    check = rx.explain(None, seqs, scores=demo.risk, labels=demo.labels, n_stats=args.n_stats, n_rules=args.n_rules,
                       n_simulations=args.simulations, background=False, random_state=args.random_state,
                       student_params={"epochs": args.epochs} if args.epochs is not None else None)
    report = check.report()
    units = _units(check.scorecard) if check.scorecard is not None else f"{report['n_rules']} rules"
    print(f"\nThe planted risk as the teacher: {units}, fidelity {report['fidelity_test']:.3f} "
          f"on {report['n_test']:,} held-out users, search {check.seconds['search']:.1f} s")
    _print_choice(check)
    print(check.scorecard if check.scorecard is not None else check.rules)
    _print_planted(check, demo, seqs)
    print("\nNow a black box: the demo GRU, trained on the labels (drawn from the planted risk).")
    model = train_demo_gru(seqs, demo.labels, random_state=args.random_state)
    print(f"demo teacher: a bidirectional 2-layer GRU trained on the labels in {time.perf_counter() - t0:.1f} s")
    exp = rx.explain(model, seqs, labels=demo.labels, n_stats=args.n_stats, n_rules=args.n_rules,
                     n_simulations=args.simulations, background=False, random_state=args.random_state,
                     student_params={"epochs": args.epochs} if args.epochs is not None else None)
    _print_result(exp, _write_outputs(exp, Path(args.out)))
    _print_planted(exp, demo, seqs)
    return 0


def _print_planted(exp, demo, seqs) -> None:
    """Which of the demo's planted statistics the rules name (a linear card's term included): the same
    statistic, or one whose values match it (|r| >= 0.95 over all users)."""
    lits = exp.literals
    position = {name: i for i, name in enumerate(lits.names)}
    used = {int(lits.output_statistic[lits.column[position[name]]])
            for rule in exp.rules for name in rule.literals if name in position}
    used |= {int(lits.output_statistic[term.column]) for term in exp.rules.rules if isinstance(term, LinearTerm)}
    stats = [exp.statistics[i] for i in sorted(used)]
    lines, named = [], 0
    for planted in demo.planted:
        target = planted.evaluate(seqs).reshape(seqs.n_users, -1)
        best, best_stat = 0.0, None
        for stat in stats:
            if stat.key == planted.key:
                best, best_stat = 1.0, stat
                break
            values = stat.evaluate(seqs).reshape(seqs.n_users, -1)
            for a in target.T:
                for b in values.T:
                    ok = np.isfinite(a) & np.isfinite(b)
                    if ok.sum() > 2 and np.std(a[ok]) > 0 and np.std(b[ok]) > 0:
                        r = abs(float(np.corrcoef(a[ok], b[ok])[0, 1]))
                        if r > best:
                            best, best_stat = r, stat
        if best_stat is not None and best >= 0.95:
            named += 1
            found = f"named as '{best_stat.describe(None, seqs)}' (r = {best:.2f})"
        else:
            found = f"not named (best r = {best:.2f})"
        lines.append(f"  {planted.describe(None, seqs)}: {found}")
    print(f"planted statistics named in the rules: {named} of {len(demo.planted)}")
    print("\n".join(lines))


def _read_events(args: argparse.Namespace) -> Any:
    """The events of ``run``: a DataFrame, or an EventTable read through DuckDB.

    A DuckDB database (with ``--table``), or any table with ``--sample-users``,
    is not read into memory: the explanation is fitted on a sample of users.
    """
    path = Path(args.events)
    database = path.suffix.lower() in DATABASE_SUFFIXES
    if database and args.table is None:
        raise SystemExit(f"rudi-explain: name the table to read from {path} with --table")
    if not database and args.table is not None:
        raise SystemExit("rudi-explain: --table reads a DuckDB database (.duckdb); the events are a file")
    if not database and args.sample_users is None:
        return _read_table(path)
    if not path.exists() and not any(ch in str(path) for ch in "*?["):
        raise SystemExit(f"rudi-explain: {path} does not exist")
    return EventTable(str(path), user=args.user, time=args.time, table=args.table,
                      n_users=args.sample_users or DEFAULT_SAMPLE_USERS)


def _read_table(path: Path) -> pd.DataFrame:
    if not path.exists():
        raise SystemExit(f"rudi-explain: {path} does not exist")
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq", ".csv", ".txt", ".gz"):
        try:
            table = pd.read_parquet(path) if suffix in (".parquet", ".pq") else pd.read_csv(path)
        except pd.errors.EmptyDataError:
            raise InputError(f"{path} is empty: there is no table to read") from None
        except (ValueError, OSError) as err:  # garbage, a binary file, another format
            raise InputError(f"cannot read {path} as a {suffix[1:]} table: {str(err).splitlines()[0][:200]}") \
                from None
        if table.empty:
            raise InputError(f"{path} holds no rows (columns: {list(table.columns)})")
        return table
    raise SystemExit(f"rudi-explain: cannot read {path}: use a .csv or .parquet file, or a .duckdb database "
                     "with --table")


def _run(args: argparse.Namespace) -> int:
    _check_out(Path(args.out))
    events = _read_events(args)
    scores_table = _read_table(Path(args.scores))
    if args.user not in scores_table.columns:
        raise SystemExit(f"rudi-explain: the scores file has no {args.user!r} column; columns are "
                         f"{list(scores_table.columns)}")
    score_columns = [c for c in scores_table.columns if c != args.user]
    for option, name in (("--score-column", args.score_column), ("--label-column", args.label_column)):
        if name is not None and name == args.user:
            raise SystemExit(f"rudi-explain: {option} {name!r} is the user column: it cannot also be the "
                             f"{option[2:7]} column (one of {score_columns})")
    column = args.score_column or (score_columns[0] if len(score_columns) == 1 else None)
    if column is None or column not in scores_table.columns:
        raise SystemExit(f"rudi-explain: name the score column with --score-column (one of {score_columns})")
    scores = scores_table.set_index(args.user)[column]
    labels = None
    if args.label_column is not None:
        if args.label_column not in scores_table.columns:
            raise SystemExit(f"rudi-explain: the scores file has no label column {args.label_column!r}; "
                             f"columns are {list(scores_table.columns)}")
        labels = scores_table.set_index(args.user)[args.label_column]
    exp = rx.explain(None, events, user=args.user, time=args.time, scores=scores, labels=labels,
                     n_stats=args.n_stats, n_rules=args.n_rules, n_simulations=args.simulations,
                     background=False, random_state=args.random_state,
                     student_params={"epochs": args.epochs} if args.epochs is not None else None)
    _print_result(exp, _write_outputs(exp, Path(args.out), table=args.table or "events"))
    return 0


def _sql(args: argparse.Namespace) -> int:
    path = Path(args.explanation)
    if not path.exists():
        raise SystemExit(f"rudi-explain: {path} does not exist")
    if args.out != "-":
        _check_file_out(Path(args.out))
    exp = rx.load(path)
    text = _rules_sql(exp, table=args.table, dialect=args.dialect, user=args.user, time=args.time,
                      event_order=args.event_order, reference_time=args.reference_time,
                      include_literals=args.include_literals)
    if args.out == "-":
        sys.stdout.write(text)
        return 0
    out = Path(args.out)
    _write_file(out, text)
    print(f"Written: {out} ({args.dialect}; columns {exp.sequences.user_column}, the statistic values, score, "
          f"rule_1 ... rule_{len(exp.rules)})")
    return 0


def _positive(text: str) -> int:
    """A whole number >= 1, for argparse."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``rudi-explain`` command."""
    parser = argparse.ArgumentParser(prog="rudi-explain",
                                     description="Explain a model over behaviour sequences with a few weighted rules.")
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser, out: str, n_stats: int, simulations: int) -> None:
        p.add_argument("--out", default=out, help=f"folder for rules.txt, rules.json, report.json and the "
                                                  f"saved explanation (default: {out})")
        p.add_argument("--n-stats", type=_positive, default=n_stats,
                       help=f"statistics to search, K (default {n_stats})")
        p.add_argument("--n-rules", type=_positive, default=20, help="rules, R (default 20)")
        p.add_argument("--simulations", type=_positive, default=simulations,
                       help=f"MCTS simulations per step (default {simulations})")
        p.add_argument("--epochs", type=_positive, default=None, help="student epochs (default: the student's)")
        p.add_argument("--random-state", type=int, default=0)

    demo = sub.add_parser("demo", help="built-in data and a demo GRU teacher, end to end")
    # The demo searches fewer statistics with fewer simulations than the
    # paper's defaults (K=20, 500) so that it ends in a couple of minutes.
    common(demo, "out/demo", n_stats=10, simulations=200)
    demo.add_argument("--users", type=_positive, default=5000, help="demo users (default 5000)")
    demo.set_defaults(func=_demo)

    run = sub.add_parser("run", help="explain given scores of users over an event table (CSV or Parquet)")
    run.add_argument("events", help="event table: one row per event")
    run.add_argument("--scores", required=True, help="table of user id and score (CSV or Parquet)")
    run.add_argument("--user", required=True, help="user id column (in both tables)")
    run.add_argument("--time", default=None, help="time column of the events (default: file order)")
    run.add_argument("--score-column", default=None, help="score column, if the scores table has several")
    run.add_argument("--label-column", default=None, help="0/1 label column in the scores table, for AUC")
    run.add_argument("--table", default=None,
                     help="table to read when EVENTS is a DuckDB database (.duckdb); also the table rules.sql reads")
    run.add_argument("--sample-users", type=_positive, default=None,
                     help="fit on this many users drawn at random, read through DuckDB without loading the table "
                          "(default for a DuckDB database: 20000)")
    common(run, "out/run", n_stats=20, simulations=500)
    run.set_defaults(func=_run)

    sql = sub.add_parser("sql", help="write the rules of a saved explanation as one SQL query scoring every user")
    sql.add_argument("explanation", help="a saved explanation (explanation.rudi)")
    sql.add_argument("--out", default="rules.sql", help="the file to write, '-' for the terminal (default rules.sql)")
    sql.add_argument("--dialect", choices=DIALECTS, default="duckdb", help="SQL dialect (default duckdb)")
    sql.add_argument("--table", default="events", help="the event table the query reads; schema.table for a "
                                                        "qualified name (default events)")
    sql.add_argument("--user", default=None, help="user column (default: the explanation's)")
    sql.add_argument("--time", default=None, help="time column (default: the explanation's)")
    sql.add_argument("--event-order", default=None,
                     help="a column giving the input order of events, to break ties in time")
    sql.add_argument("--reference-time", default=None,
                     help="'now' of the time statistics (default: the latest time in the table)")
    sql.add_argument("--include-literals", action="store_true", help="also a 0/1 column per literal")
    sql.set_defaults(func=_sql)

    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, TypeError, KeyError, rx.RudiExplainError) as err:  # a WriteError is an OSError
        print(f"rudi-explain: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
