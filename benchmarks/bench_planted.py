"""Stage 1 on a family of planted scenarios, against the practitioner's peers (issue 11).

For each scenario of ``planted.make_scenario`` (random schema, 3,000 to 5,000
users, 2 to 6 planted statistics of depth 1 to 4, a score made of them):

* the search, ``rx.search_statistics`` on the training users (80%) with
  :data:`SEARCH_OPTIONS`, and the flat-catalog baselines ``method="lasso"``
  and ``method="gbm"``: per planted statistic whether it was recovered (a
  found statistic with the same equivalence key, or a found output with
  |r| >= 0.99 on the held-out users), the held-out R of a linear model on the
  decile literals of the found statistics (``rx.Literals.fit`` on the
  training users), seconds; the same R for the planted statistics themselves
  (the ceiling);
* the peers (``peers.py``): featuretools DFS + CART (20 leaves), + FIGS (20
  rules), + RuleFit (20 rules): held-out fidelity, seconds, and which planted
  statistics a DFS feature that CART / FIGS use matches at |r| >= 0.99;
* ``rx.explain(None, seqs, scores=...)`` with :data:`EXPLAIN_OPTIONS`: its
  held-out fidelity (``report()["fidelity_test"]``; its held-out users are
  the scenario's: checked) against the best peer's.

Printed: one line per scenario, then per depth (1, 2, 3, 4) the share of
planted statistics recovered by each method, and overall figures: mean
held-out R, fidelity, seconds, and the share of scenarios in which explain()
is at least as faithful as the best peer. Everything also goes to a JSON file
(``out/bench_planted.json`` by default).

It needs featuretools and imodels, so it runs in the benchmark environment::

    make peers-env                                     # once: .venv-peers
    .venv-peers/bin/python benchmarks/bench_planted.py --quick          # 3 small scenarios
    .venv-peers/bin/python benchmarks/bench_planted.py --n 50          # the full benchmark
    make bench-planted ARGS="--n 50"                                   # the same

Options: ``--n`` scenarios (seeds ``--first`` .. ``--first + n - 1``),
``--users`` users per scenario (default: each scenario's own 3,000-5,000),
``--quick`` (3 scenarios of 1,000 users and :data:`QUICK_OPTIONS`),
``--skip peers,explain,baselines`` to leave parts out, ``--out`` the JSON path,
``--merge a.json b.json`` the summary of runs split over processes.
To change the settings of the search or of explain(), edit
:data:`SEARCH_OPTIONS` / :data:`EXPLAIN_OPTIONS` (or pass ``--search-options``
as JSON, merged over them).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from planted import Scenario, make_scenario  # noqa: E402

import rudi_explain as rx  # noqa: E402

#: Passed as keywords to ``rx.search_statistics`` (the final settings go here).
SEARCH_OPTIONS: dict = {"n_stats": 20, "max_depth": 4, "random_state": 0}
#: Passed as keywords to ``rx.explain`` (besides the scores; random_state=0 and test_size=0.2
#: are fixed: they draw the scenario's held-out users).
EXPLAIN_OPTIONS: dict = {"n_stats": 20, "max_depth": 4, "n_rules": 20}
#: Merged over both with --quick: a few seconds per search on the current code.
QUICK_OPTIONS: dict = {"n_stats": 10, "n_simulations": 100}
#: The flat-catalog baselines (``method=`` of search_statistics).
BASELINES = ("lasso", "gbm")
#: |r| on held-out users at which a found output counts as the planted statistic.
RECOVERY_R = 0.99
#: Held-out R^2 a planted statistic alone must carry (see unique_contributions) to count in the
#: second, "identifiable" recovery table; the first table counts every planted statistic.
IDENTIFIABLE = 0.005


# ------------------------------------------------------------------ helpers
def _columns(values: np.ndarray) -> np.ndarray:
    return values.reshape(len(values), -1)


def abs_corr(a: np.ndarray, B: np.ndarray) -> np.ndarray:
    """|Pearson r| of ``a`` with every column of ``B`` over the users where both are defined.

    0 where fewer than 10 users have both, or either is constant there.
    """
    a = np.asarray(a, dtype=float)
    B = _columns(np.asarray(B, dtype=float))
    mask = np.isfinite(a)[:, None] & np.isfinite(B)
    n = mask.sum(axis=0)
    A = np.where(mask, a[:, None], 0.0)
    Bm = np.where(mask, B, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        ma, mb = A.sum(0) / n, Bm.sum(0) / n
        da, db = np.where(mask, A - ma, 0.0), np.where(mask, Bm - mb, 0.0)
        r = (da * db).sum(0) / np.sqrt((da ** 2).sum(0) * (db ** 2).sum(0))
    r = np.abs(np.nan_to_num(r, nan=0.0))
    r[n < 10] = 0.0
    return r


def recovery(found: list[rx.Statistic], sc: Scenario, test: rx.Sequences, planted_test: np.ndarray) -> list[dict]:
    """Per planted statistic: recovered (same key, or |r| >= RECOVERY_R), how, and the best |r|."""
    keys = {s.key: s for s in found}
    F = np.column_stack([_columns(s.evaluate(test)) for s in found]) if found else np.zeros((test.n_users, 0))
    out = []
    for j, text in enumerate(sc.planted):
        key = rx.Statistic.parse(text).key
        r = abs_corr(planted_test[:, j], F) if F.shape[1] else np.zeros(1)
        best = float(r.max()) if len(r) else 0.0
        same = key in keys
        out.append({"planted": text, "output": sc.outputs[j], "depth": sc.depths[j], "same_key": same,
                    "best_r": round(best, 4), "recovered": bool(same or best >= RECOVERY_R)})
    return out


def literal_r(found: list, train: rx.Sequences, test: rx.Sequences, y_train: np.ndarray,
              y_test: np.ndarray) -> float:
    """Held-out R of a ridge fit on the decile literals of ``found`` (thresholds from the training users)."""
    from sklearn.linear_model import Ridge

    if not found:
        return 0.0
    lits = rx.Literals.fit(train, found)
    if lits.n_literals == 0:
        return 0.0
    model = Ridge(alpha=1.0).fit(lits.transform(train).astype(float), y_train)
    pred = model.predict(lits.transform(test).astype(float))
    return float(np.corrcoef(pred, y_test)[0, 1]) if np.ptp(pred) > 0 else 0.0


def _step_design(values: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Decile-bin indicators (edges from ``reference``, one more bin for undefined) and the value
    clipped to the reference range, per column: an additive step-and-line model's inputs."""
    cols = []
    for v, ref in zip(_columns(values).T, _columns(reference).T):
        finite = ref[np.isfinite(ref)]
        edges = np.unique(np.quantile(finite, np.linspace(0.1, 0.9, 9))) if len(finite) else np.zeros(0)
        b = np.where(np.isfinite(v), np.searchsorted(edges, v, side="left"), len(edges) + 1)
        cols.append(b[:, None] == np.arange(1, len(edges) + 2)[None, :])
        lo, hi = (finite.min(), finite.max()) if len(finite) else (0.0, 0.0)
        cols.append(np.nan_to_num(np.clip(v, lo, hi), nan=float(np.mean(finite)) if len(finite) else 0.0)[:, None])
    return np.hstack(cols).astype(float)


def unique_contributions(train_values: np.ndarray, test_values: np.ndarray, y_train: np.ndarray,
                         y_test: np.ndarray) -> list[float]:
    """Per planted statistic, the held-out R^2 an additive step model of all planted statistics
    loses when that one is left out: how much of the score only it carries. Near 0, the score
    does not tell it apart from the others (it is implied by them, or its effect is lost in the
    noise), and no method can recover it from the scores."""
    from sklearn.linear_model import Ridge

    def r2(cols: list[int]) -> float:
        Xtr = _step_design(train_values[:, cols], train_values[:, cols])
        Xte = _step_design(test_values[:, cols], train_values[:, cols])
        pred = Ridge(alpha=1e-3).fit(Xtr, y_train).predict(Xte)
        return 1.0 - float(np.sum((y_test - pred) ** 2) / np.sum((y_test - y_test.mean()) ** 2))

    k = train_values.shape[1]
    everything = r2(list(range(k)))
    return [round(everything - r2([i for i in range(k) if i != j]), 4) for j in range(k)]


def _search(train: rx.Sequences, y_train: np.ndarray, options: dict, method: str | None) -> tuple[list, float]:
    kwargs = dict(options)
    if method is not None:
        kwargs["method"] = method
    t0 = time.perf_counter()
    found = rx.search_statistics(train, y_train, **kwargs)
    return list(found), time.perf_counter() - t0


def explain_keywords(base: dict, extra: dict) -> dict:
    """``base`` with the search settings ``extra`` merged in: explain()'s own parameters as they
    are, the others (``reward``, ``grammar``, ...) through ``search_params``. The split's
    ``random_state`` and ``test_size`` stay explain()'s defaults (the scenario's held-out users)."""
    import inspect

    own = set(inspect.signature(rx.explain).parameters) - {"random_state", "test_size", "model", "data", "scores"}
    out = {k: v for k, v in base.items()}
    search_params = dict(out.pop("search_params", {}) or {})
    for k, v in extra.items():
        if k in own:
            out[k] = v
        elif k not in ("random_state", "method"):
            search_params[k] = v
    if search_params:
        out["search_params"] = search_params
    return out


# ------------------------------------------------------------------ one scenario
def run_scenario(sc: Scenario, search_options: dict, explain_options: dict, skip: set[str]) -> dict:
    """Every method on one scenario; a JSON-ready dict."""
    seqs, train, test = sc.sequences(), sc.train_sequences(), sc.test_sequences()
    y = sc.scores.to_numpy()
    y_train, y_test = y[sc.train_index], y[sc.test_index]
    planted_test = sc.planted_values(test)
    res: dict = {"seed": sc.seed, "n_users": int(len(sc.users)), "n_events": int(len(sc.events)),
                 "categorical": {c: int(sc.events[c].nunique()) for c in sc.categorical},
                 "numerical": sc.numerical, "noise": round(sc.noise, 3), "has_time": sc.has_time,
                 "planted": [{"text": t, "output": o, "depth": d, "kind": k, "weight": round(w, 3)}
                             for t, o, d, k, w in zip(sc.planted, sc.outputs, sc.depths, sc.kinds, sc.weights)],
                 "methods": {}, "peers": {}}
    res["planted_r"] = literal_r([rx.Statistic.parse(t) for t in sc.planted], train, test, y_train, y_test)
    res["planted_unique"] = unique_contributions(sc.planted_values(train), planted_test, y_train, y_test)

    methods = [("search", None)] + ([] if "baselines" in skip else [(m, m) for m in BASELINES])
    for name, method in methods:
        try:
            found, seconds = _search(train, y_train, search_options, method)
        except Exception as err:  # noqa: BLE001 - a failing method is reported, the benchmark goes on
            res["methods"][name] = {"error": f"{type(err).__name__}: {err}"}
            continue
        res["methods"][name] = {
            "seconds": round(seconds, 2), "found": [str(s) for s in found],
            "recovery": recovery(found, sc, test, planted_test),
            "r_test": round(literal_r(found, train, test, y_train, y_test), 4)}

    if "peers" not in skip:
        from peers import dfs_features, run_peers

        features, info = dfs_features(sc.events, sc.categorical, sc.numerical, sc.users,
                                      train_users=sc.users[sc.train_index])
        res["dfs"] = {"seconds": round(info["seconds"], 2), "n_features": info["n_features"]}
        test_features = features.to_numpy(dtype=float)[sc.test_index]
        column = {name: j for j, name in enumerate(features.columns.astype(str))}
        for name, peer in run_peers(features, y, sc.is_test).items():
            used = test_features[:, [column[f] for f in peer.features]] if peer.features else None
            named = []
            for j in range(len(sc.planted)):
                best = float(abs_corr(planted_test[:, j], used).max()) if used is not None else 0.0
                named.append({"depth": sc.depths[j], "best_r": round(best, 4), "recovered": best >= RECOVERY_R})
            res["peers"][name] = {"fidelity_test": round(peer.fidelity_test, 4), "r_test": round(peer.r_test, 4),
                                  "seconds": round(peer.seconds, 2), "n_rules": peer.n_rules,
                                  "features": peer.features, "recovery": named}

    if "explain" not in skip:
        t0 = time.perf_counter()
        try:
            exp = rx.explain(None, seqs, scores=sc.scores, random_state=0, test_size=0.2, background=False,
                             progress=lambda event: None, **explain_options)
            report = exp.report()
            entry = {"fidelity_test": round(report["fidelity_test"], 4), "seconds": round(time.perf_counter() - t0, 2),
                     "seconds_by_stage": report["seconds"], "n_rules": report["n_rules"],
                     "split_matches": bool(np.array_equal(np.asarray(exp.is_test), sc.is_test))}
            if not entry["split_matches"]:
                # explain() drew other held-out users: score it on those held out by both.
                both = np.asarray(exp.is_test) & sc.is_test
                entry["fidelity_test"] = round(rx.metrics.fidelity(y[both], exp.student_scores.to_numpy()[both]), 4)
            res["explain"] = entry
        except Exception as err:  # noqa: BLE001
            res["explain"] = {"error": f"{type(err).__name__}: {err}"}
    return res


# ------------------------------------------------------------------ summary
def _share(flags: list[bool]) -> str:
    return f"{np.mean(flags):5.0%} " if flags else "   -  "


def summarize(results: list[dict]) -> dict:
    methods = sorted({m for r in results for m, v in r["methods"].items() if "recovery" in v},
                     key=lambda m: (m != "search", m))
    peers = sorted({p for r in results for p in r["peers"]})
    rows = {}
    for d in (1, 2, 3, 4):
        row = {"n": sum(p["depth"] == d for r in results for p in r["planted"])}
        for m in methods:
            row[m] = [x["recovered"] for r in results if "recovery" in r["methods"].get(m, {})
                      for x in r["methods"][m]["recovery"] if x["depth"] == d]
        for p in ("cart", "figs"):
            if p in peers:
                row["dfs+" + p] = [x["recovered"] for r in results if p in r["peers"]
                                   for x in r["peers"][p]["recovery"] if x["depth"] == d]
        rows[d] = row
    summary: dict = {"recovered_by_depth": {d: {k: (float(np.mean(v)) if isinstance(v, list) and v else
                                                    (None if isinstance(v, list) else v))
                                                for k, v in row.items()} for d, row in rows.items()}}
    for group, depths in (("depth<=2", (1, 2)), ("depth3-4", (3, 4))):
        summary["recovered_by_depth"][group] = {
            k: float(np.mean(sum((rows[d][k] for d in depths), []))) if sum((rows[d][k] for d in depths), []) else None
            for k in rows[1] if k != "n"}
    # The same, over the planted statistics the score tells apart (unique_contributions).
    summary["identifiable"] = {}
    for group, depths in (("depth<=2", (1, 2)), ("depth3-4", (3, 4))):
        flags = {m: [x["recovered"] for r in results if "planted_unique" in r and "recovery" in r["methods"].get(m, {})
                     for x, u in zip(r["methods"][m]["recovery"], r["planted_unique"])
                     if x["depth"] in depths and u >= IDENTIFIABLE] for m in methods}
        n_all = sum(1 for r in results if "planted_unique" in r for p in r["planted"] if p["depth"] in depths)
        n_id = sum(1 for r in results if "planted_unique" in r
                   for p, u in zip(r["planted"], r["planted_unique"]) if p["depth"] in depths and u >= IDENTIFIABLE)
        summary["identifiable"][group] = {"n": n_id, "of": n_all,
                                          **{m: float(np.mean(f)) if f else None for m, f in flags.items()}}
    summary["r_test"] = {m: float(np.mean([r["methods"][m]["r_test"] for r in results
                                           if "r_test" in r["methods"].get(m, {})]))
                         for m in methods}
    summary["r_test"]["planted"] = float(np.mean([r["planted_r"] for r in results]))
    summary["seconds"] = {m: float(np.median([r["methods"][m]["seconds"] for r in results
                                              if "seconds" in r["methods"].get(m, {})])) for m in methods}
    if peers:
        summary["fidelity"] = {p: float(np.mean([r["peers"][p]["fidelity_test"] for r in results if p in r["peers"]]))
                               for p in peers}
        summary["seconds"].update({p: float(np.median([r["peers"][p]["seconds"] for r in results if p in r["peers"]]))
                                   for p in peers})
        summary["seconds"]["dfs"] = float(np.median([r["dfs"]["seconds"] for r in results if "dfs" in r]))
    with_explain = [r for r in results if "fidelity_test" in r.get("explain", {})]
    if with_explain:
        summary.setdefault("fidelity", {})["explain"] = float(np.mean([r["explain"]["fidelity_test"]
                                                                        for r in with_explain]))
        summary["seconds"]["explain"] = float(np.median([r["explain"]["seconds"] for r in with_explain]))
        if peers:
            wins = [r["explain"]["fidelity_test"] >= max(v["fidelity_test"] for v in r["peers"].values())
                    for r in with_explain if r["peers"]]
            summary["explain_ge_best_peer"] = {"share": float(np.mean(wins)) if wins else None,
                                               "scenarios": len(wins), "wins": int(sum(wins))}
    summary["_rows"] = rows
    return summary


def print_summary(summary: dict, n: int) -> None:
    rows = summary.pop("_rows")
    cols = [k for k in rows[1] if k != "n"]
    print(f"\nplanted statistics recovered (same key, or |r| >= {RECOVERY_R} on held-out users), {n} scenarios")
    print("depth    n  " + "".join(f"{c:>10s}" for c in cols))
    for d, row in rows.items():
        print(f"{d:5d} {row['n']:4d}  " + "".join(f"{_share(row[c]):>10s}" for c in cols))
    for group in ("depth<=2", "depth3-4"):
        g = summary["recovered_by_depth"][group]
        print(f"{group:>10s}  " + "".join(f"{(f'{g[c]:.0%}' if g[c] is not None else '-'):>10s}" for c in cols))
    print("targets: >= 90% at depth <= 2, >= 70% at depth 3-4 (issue 11)")
    if summary.get("identifiable"):
        print(f"of the planted statistics the score tells apart (leaving one out of a step model of all "
              f"planted costs >= {IDENTIFIABLE} held-out R^2):")
        for group, g in summary["identifiable"].items():
            print(f"{group:>10s}  {g['n']} of {g['of']}: " +
                  ", ".join(f"{m} {g[m]:.0%}" for m in g if m not in ("n", "of") and g[m] is not None))
    print("\nheld-out R of a ridge on decile literals: " +
          ", ".join(f"{k} {v:.3f}" for k, v in summary["r_test"].items()))
    if "fidelity" in summary:
        print("held-out fidelity: " + ", ".join(f"{k} {v:.3f}" for k, v in summary["fidelity"].items()))
    print("seconds (median per scenario): " + ", ".join(f"{k} {v:.1f}" for k, v in summary["seconds"].items()))
    if "explain_ge_best_peer" in summary:
        e = summary["explain_ge_best_peer"]
        # the count and one decimal: a rounded "90%" must not hide 44 of 49
        print(f"explain() >= best peer's held-out fidelity in {e['wins']} of {e['scenarios']} scenarios "
              f"({e['share']:.1%}; target >= 90%)")


def _line(r: dict) -> str:
    parts = [f"#{r['seed']:<3d} {r['n_users']:5d} users {len(r['planted'])} planted "
             f"(d{''.join(str(p['depth']) for p in r['planted'])})"]
    for m, v in r["methods"].items():
        if "recovery" in v:
            parts.append(f"{m} {sum(x['recovered'] for x in v['recovery'])}/{len(v['recovery'])} "
                         f"R {v['r_test']:.2f} {v['seconds']:.0f}s")
        else:
            parts.append(f"{m} FAILED")
    parts.append(f"planted R {r['planted_r']:.2f}")
    for p, v in r["peers"].items():
        parts.append(f"{p} {v['fidelity_test']:.3f}")
    if "explain" in r:
        e = r["explain"]
        parts.append(f"explain {e['fidelity_test']:.3f} {e['seconds']:.0f}s" if "fidelity_test" in e
                     else "explain FAILED")
    return " | ".join(parts)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=None, help="number of scenarios (default 50; 3 with --quick)")
    parser.add_argument("--first", type=int, default=0, help="seed of the first scenario")
    parser.add_argument("--users", type=int, default=None, help="users per scenario (default 3000-5000)")
    parser.add_argument("--quick", action="store_true", help="3 scenarios of 1,000 users, light search settings")
    parser.add_argument("--skip", default="", help="comma-separated: peers, explain, baselines")
    parser.add_argument("--search-options", default="{}", help="JSON merged over SEARCH_OPTIONS and EXPLAIN_OPTIONS")
    parser.add_argument("--out", default="out/bench_planted.json")
    parser.add_argument("--merge", nargs="+", default=None, metavar="JSON",
                        help="print the summary over the scenarios of these result files (runs nothing), e.g. "
                             "of runs split over processes")
    args = parser.parse_args(argv)
    if args.merge:
        parts = [json.loads(Path(p).read_text()) for p in args.merge]
        results = [r for part in parts for r in part["scenarios"]]
        seeds = [r["seed"] for r in results]
        if len(set(seeds)) != len(seeds):
            raise SystemExit(f"the files share scenarios: seeds {sorted(s for s in set(seeds) if seeds.count(s) > 1)}")
        for r in sorted(results, key=lambda r: r["seed"]):
            print(_line(r))
        summary = summarize(results)
        print_summary(summary, len(results))
        print(f"total {sum(r['seconds_total'] for r in results):.0f} s of scenario time, over {len(parts)} files")
        return {"summary": summary, "scenarios": results}
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    if "peers" not in skip:
        try:
            import featuretools  # noqa: F401
            import imodels  # noqa: F401
        except ImportError:
            print("bench_planted needs featuretools and imodels (benchmark-only): run `make peers-env`, then "
                  "`.venv-peers/bin/python benchmarks/bench_planted.py` (or `make bench-planted`). Skipped.")
            return {}
    search_options, explain_options = dict(SEARCH_OPTIONS), dict(EXPLAIN_OPTIONS)
    n, users = args.n if args.n is not None else (3 if args.quick else 50), args.users
    extra = json.loads(args.search_options)
    if args.quick:
        users = users or 1000
        extra = {**QUICK_OPTIONS, **extra}
    search_options.update(extra)
    explain_options = explain_keywords(explain_options, extra)
    print(f"search: {search_options}\nexplain: {explain_options}\n{n} scenarios from seed {args.first}"
          + (f", {users} users each" if users else ""))
    results = []
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)

    def write() -> dict:
        """The results so far, written whole after every scenario: a stopped run keeps what it did."""
        out = {"search_options": search_options, "explain_options": explain_options, "recovery_r": RECOVERY_R,
               "summary": summarize(results), "scenarios": results}
        partial = path.with_name(path.name + ".partial")
        partial.write_text(json.dumps(out, indent=1, default=float))
        partial.replace(path)
        return out

    t_all = time.perf_counter()
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    for seed in range(args.first, args.first + n):
        t0 = time.perf_counter()
        sc = make_scenario(seed, n_users=users)
        gen = time.perf_counter() - t0
        r = run_scenario(sc, search_options, explain_options, skip)
        r["seconds_generate"] = round(gen, 2)
        r["seconds_total"] = round(time.perf_counter() - t0, 1)
        results.append(r)
        print(_line(r), flush=True)
        out = write()
    if not results:
        return {}
    print_summary(out["summary"], len(results))
    print(f"total {time.perf_counter() - t_all:.0f} s")
    print(f"results: {path}")
    return out


if __name__ == "__main__":
    main()
