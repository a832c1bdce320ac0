"""The widget's Python side: its state, its messages, the report, the payload size.

The front end itself is checked in a real browser in ``tests/browser/``.
"""

from __future__ import annotations

import html
import json
import re
import threading
import time

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("anywidget")

from html_parts import ReportParts  # noqa: E402
from synthetic import scaled_explanation  # noqa: E402

import rudi_explain as rx  # noqa: E402
from rudi_explain.views import payloads as ws
from rudi_explain.views.widget import ExplanationWidget

EVIL = "<img src=x onerror=alert(1)>"
EVIL_SCRIPT = "</script><img src=x onerror=alert(2)>"
FAST = dict(n_stats=4, n_rules=8, n_simulations=40, student_params={"epochs": 25})


def evil_demo(n_users: int = 1500, random_state: int = 0) -> rx.datasets.DemoData:
    """Demo payments whose planted category and another are named like an attack."""
    demo = rx.datasets.make_payments(n_users, random_state=random_state)
    events = demo.events.copy()
    events["merchant_category"] = events["merchant_category"].cat.rename_categories(
        {"gambling": EVIL, "fuel": EVIL_SCRIPT})
    demo.events = events
    return demo


@pytest.fixture(scope="module")
def demo():
    return evil_demo()


@pytest.fixture(scope="module")
def exp(demo):
    return rx.explain(None, demo.events, scores=demo.risk, labels=demo.labels, background=False,
                      progress=lambda e: None, **FAST)


@pytest.fixture()
def sent(monkeypatch):
    """Messages the widget sends to the page, captured instead of sent."""
    box: list = []
    monkeypatch.setattr(ExplanationWidget, "send", lambda self, content, buffers=None: box.append(content))
    return box


# ---------------------------------------------------------------- state
def test_state_of_a_finished_explanation(exp):
    w = ExplanationWidget(exp)
    assert w.status == "done" and w.error == ""
    r = w.results
    assert set(r) == {"summary", "rules", "thresholds", "statistics", "top_users", "curve", "effects", "faithful",
                      "audit", "full_values", "importance", "slices", "user_picks", "scorecard"}
    report = exp.report()
    assert r["summary"]["n_rules"] == report["n_rules"] == len(r["rules"])
    assert r["summary"]["fidelity_test"] == pytest.approx(report["fidelity_test"], abs=1e-4)
    assert r["summary"]["auc_teacher"] == pytest.approx(report["auc_teacher"], abs=1e-4)
    # the card that moves scores most first: a rule by |weight|, a linear term by |weight| x its values' range
    spreads = [c["spread"] for c in r["rules"]]
    assert spreads == sorted(spreads, reverse=True)
    y = exp.teacher_scores.to_numpy()
    train = ~exp.is_test
    for card in r["rules"]:
        k = card["index"]
        fires = exp.result.fires[:, k]
        rule = exp.rules[k]
        assert card["text"] == rule.text
        assert card["coverage"] == pytest.approx(fires.mean(), abs=1e-4)
        assert card["mean_fires"] == pytest.approx(y[fires].mean(), rel=1e-3)
        assert card["mean_not"] == pytest.approx(y[~fires].mean(), rel=1e-3)
        assert card["direction"] == ("raises" if rule.weight > 0 else "lowers")
        if not hasattr(rule, "formula"):  # a linear term: no literals; what it adds ranges over its values
            added = rule.weight * rule.value(exp.result.values[train])
            assert card["literals"] == [] and card["spread"] == pytest.approx(np.ptp(added), rel=1e-3)
            continue
        assert card["spread"] == pytest.approx(abs(rule.weight), rel=1e-3)
        assert [exp.literals.names[p["literal"]] for p in card["literals"]] == list(rule.literals)
        assert [p["op"] for p in card["literals"]] == ["<=" if neg else ">" for neg in rule.negated]
        assert 0 < len(card["examples"]) <= ws.N_EXAMPLES
        for example in card["examples"]:  # every example user really fires the rule
            assert exp.result.fires[exp.sequences.user_index(example["id"]), k]
    top = [u["teacher"] for u in r["top_users"]]
    assert top == sorted(top, reverse=True) and top[0] == pytest.approx(y.max(), rel=1e-3)
    assert [s["text"] for s in r["statistics"]] == [str(s) for s in exp.statistics]
    assert [s["depth"] for s in r["statistics"]] == [s.depth for s in exp.statistics]


def test_thresholds_are_pre_binned_and_match_the_literals(exp):
    y = exp.teacher_scores.to_numpy()
    for t in ws.thresholds(exp):
        values = exp.result.values[:, t["column"]]
        assert sum(t["counts"]) + t["n_undefined"] == exp.sequences.n_users
        assert len(t["counts"]) == len(t["edges"]) - 1 == len(t["mean_teacher"]) <= ws.N_BINS + 1
        for th in t["thresholds"]:
            assert th["threshold"] == exp.literals.thresholds[th["literal"]]  # exact, not rounded
            assert th["share_above"] == pytest.approx((values > th["threshold"]).mean(), abs=1e-4)
            assert th["name"] == exp.literals.names[th["literal"]]
        if t["n_undefined"]:
            assert t["mean_undefined"] == pytest.approx(y[np.isnan(values)].mean(), rel=1e-3)
    used = {lit["literal"] for c in ws.rule_cards(exp) for lit in c["literals"]}
    shown = {th["literal"] for t in ws.thresholds(exp) for th in t["thresholds"] if th["in_rules"]}
    assert used == shown


def test_front_end_is_shipped(exp):
    w = ExplanationWidget(exp)
    assert "export default" in w._esm and "rx-card" in w._esm and ".rx-root" in w._css
    assert w.get_state()["_esm"] == w._esm


def test_repr_is_stable(exp):
    text = repr(ExplanationWidget(exp))
    assert "0x" not in text and text.startswith("ExplanationWidget(done: ")
    assert text == repr(ExplanationWidget(exp))


def test_state_is_plain_json(exp):
    w = ExplanationWidget(exp)
    for name in ("status", "progress", "chart", "results", "error"):
        json.dumps(getattr(w, name), allow_nan=False)  # no NaN, no numpy types


# ---------------------------------------------------------------- messages
def test_user_request_answers_like_exp_user(exp, sent):
    w = ExplanationWidget(exp)
    for uid in exp.sequences.users[:25]:
        w._on_message(w, {"type": "user", "id": str(uid), "request": 7})
        reply = sent.pop()
        assert reply["ok"] and reply["request"] == 7 and reply["type"] == "user"
        d, u = reply["detail"], exp.user(uid)
        assert d["fired"] == u.fired
        assert [c["text"] for c in d["contributions"]] == list(u.contributions.index)
        assert d["teacher"] == pytest.approx(u.teacher_score, rel=1e-5)
        assert d["student"] == pytest.approx(u.student_score, rel=1e-5)
        assert d["percentile"] == pytest.approx(u.percentile, abs=0.01)
        assert d["student"] == pytest.approx(d["intercept"] + sum(c["weight"] for c in d["contributions"]), abs=1e-4)
        assert d["student_percentile"] == pytest.approx(u.student_percentile, abs=0.01)
        # literal rows as the rules write them: holds is the truth of the literal as written
        written = {(c.notation, c.holds) for c in u.conditions.itertuples()}
        for row in d["literals"]:
            positive = bool(u.literals["holds"][row["literal"]])
            assert row["holds"] == (not positive if row["negated"] else positive)
            assert (row["notation"], row["holds"]) in written
            assert row["op"] == ("<=" if row["negated"] else ">")
        assert d["n_events"] == len(u.events)
        json.dumps(reply, allow_nan=False)
    assert w.selected_user == str(exp.sequences.users[24])


def test_unknown_user_and_junk_messages(exp, sent):
    w = ExplanationWidget(exp)
    w._on_message(w, {"type": "user", "id": "no-such-user", "request": 1})
    assert sent[-1]["ok"] is False and "no-such-user" in sent[-1]["error"]
    n = len(sent)
    w._on_message(w, "not a dict")
    w._on_message(w, {"type": "what"})
    assert len(sent) == n


def test_feeding_rows_follow_the_row_operators(exp):
    seqs = exp.sequences
    events_all = seqs.to_frame()
    checked = 0
    for k, stat in enumerate(exp.statistics):
        for uid in seqs.users[:40]:
            i = seqs.user_index(uid)
            rows = ws.feeding_rows(exp, i, k)
            ev = events_all.iloc[seqs.offsets[i]:seqs.offsets[i + 1]].reset_index(drop=True)
            keep = np.ones(len(ev), dtype=bool)
            for op in stat.row_operators:  # this data's statistics filter only (no Top)
                if type(op).__name__ == "RetainBy":
                    keep &= (ev[op.column] == op.value).to_numpy()
                elif type(op).__name__ == "FilterBy":
                    keep &= (ev[op.column] != op.value).to_numpy()
            if not any(type(op).__name__ in ("Top", "SortBy") for op in stat.row_operators):
                assert rows == np.flatnonzero(keep).tolist()
                checked += 1
    assert checked


def test_feeding_rows_with_sort_and_top():
    df = pd.DataFrame({"user_id": ["a"] * 6, "ts": range(6), "kind": list("xyxyxx"),
                       "amount": [5.0, 1.0, 9.0, 7.0, 2.0, 8.0]})
    seqs = rx.Sequences(df, user="user_id", time="ts")
    stat = rx.Statistic.parse("Select(amount) | RetainBy(kind=x) | SortBy(amount, desc) | Top(2) | Mean")
    fake = type("E", (), {"sequences": seqs, "statistics": [stat]})()
    assert ws.feeding_rows(fake, 0, 0) == [2, 5]  # x rows 0, 2, 4, 5 -> the two largest: 9 (row 2), 8 (row 5)


def test_cancel_message_and_background_progress(demo, sent):
    exp = rx.explain(None, demo.events, scores=demo.risk, background="thread", n_stats=20, n_simulations=400)
    w = ExplanationWidget(exp)
    deadline = time.monotonic() + 60
    while exp.progress is None or exp.progress.stage != "search":
        assert time.monotonic() < deadline, "the search never started"
        time.sleep(0.05)
    w._on_message(w, {"type": "cancel"})
    assert sent[-1] == {"type": "cancelling"}
    with pytest.raises(Exception, match="cancel"):
        exp.wait(timeout=60)
    deadline = time.monotonic() + 10
    while w.status != "cancelled":
        assert time.monotonic() < deadline
        time.sleep(0.02)
    # a requested cancel is said in the progress view, not as an error
    assert w.error == "" and w.results == {} and w.progress["ended"] == "cancelled"
    assert "cancelled during the" in w.progress["message"]


@pytest.mark.slow
def test_background_job_fills_in_the_results_with_throttled_pushes(demo):
    exp = rx.explain(None, demo.events, scores=demo.risk, background="thread", **FAST)
    w = ExplanationWidget(exp)
    pushes = []
    w.observe(lambda change: pushes.append(change["new"].get("stage")), names="progress")
    exp.wait(timeout=120)
    deadline = time.monotonic() + 10
    while w.status != "done":
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert w.results["summary"]["n_rules"] == len(exp.rules)
    assert len(w.chart) > 0 and {"epoch", "loss", "fidelity"} <= set(w.chart[-1])
    assert pushes[-1] == "done"


def test_progress_pushes_are_throttled(demo, monkeypatch):
    # A burst of events of one stage pushes once per PUSH_INTERVAL, on a clock of the test's own:
    # a count against the job's real timing would depend on the machine's load.
    import rudi_explain.views.widget as widget_module
    from rudi_explain.explanation import Explanation

    clock = [1000.0]
    monkeypatch.setattr(widget_module.time, "monotonic", lambda: clock[0])
    exp = Explanation(demo.sequences(), {})  # a job that has not started: it never finishes under the test
    w = ExplanationWidget(exp)
    pushes = []
    w.observe(lambda change: pushes.append(change["new"].get("step")), names="progress")

    def burst(first: int, n: int) -> None:
        for k in range(first, first + n):
            exp._job.emit("student", k, 500, f"epoch {k}", epoch=k, loss=0.5, fidelity=0.8)

    burst(1, 100)
    assert pushes == [1]  # the first of the burst; the rest inside the interval are held back
    clock[0] += widget_module.PUSH_INTERVAL * 1.01
    burst(101, 100)
    assert pushes == [1, 101]  # the next one after the interval carries the newest state
    exp._job.emit("evaluate", 0, 1, "pruning")  # a new stage is pushed at once
    assert len(pushes) == 3 and w.chart and w.chart[-1]["epoch"] == 200  # every epoch reached the chart


def test_failure_shows_the_error(demo):
    def broken(seqs):  # a teacher that fails: the job fails in the background
        raise RuntimeError("the model server is down")

    # (Scores that lack users are refused before the job starts, so they cannot serve here.)
    exp = rx.explain(broken, demo.events, background="thread", **FAST)
    w = ExplanationWidget(exp)
    with pytest.raises(Exception, match="the model server is down"):
        exp.wait(timeout=60)
    deadline = time.monotonic() + 10
    while w.status != "failed":
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert w.error and str(exp.error) in w.error


def test_widget_of_a_pending_job_is_safe():
    class Pending:
        history: list = []
        progress = None
        status = "pending"
        done = False
        error = None

        def on_progress(self, f):
            self.listener = f

        def cancel(self):
            self.cancelled = True

    job = Pending()
    w = ExplanationWidget(job)
    assert w.status == "pending" and w.progress["stage"] == "pending" and w.results == {}
    # the text a saved notebook keeps: it may outlive the job's end, so it names the moment and the fix
    assert repr(w) == ("ExplanationWidget(shown while pending; the interactive view needs the running kernel: "
                       "re-run the cell)")
    reply = w.answer_user("u1")
    assert reply["ok"] is False and "not finished" in reply["error"]
    threading.Thread(target=job.listener, args=(rx.explanation.JobProgress("search", 1, 4, "m", {
        "best": "Select(amount) | Sum", "reward": 0.5, "statistic": 2}),)).start()


# ---------------------------------------------------------------- report
def test_report_is_self_contained_and_escaped(exp, tmp_path):
    path = exp.to_html(tmp_path / "report.html", n_users=12)
    text = path.read_text(encoding="utf-8")
    assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:)?//", text)  # nothing fetched from a network
    assert EVIL_SCRIPT not in text  # a category cannot close the script element
    parser = ReportParts()
    parser.feed(text)
    assert "img" not in parser.tags  # the attack strings are data, not markup
    assert parser.tags.count("script") == 4
    state = json.loads(parser.scripts["rx-state"])
    users = json.loads(parser.scripts["rx-users"])
    # every user a view links to is embedded, and up to 12 more; the page lists them
    from rudi_explain.views.report import linked_users, sample_users

    linked = ({u["id"] for u in state["results"]["top_users"]}
              | {u["id"] for u in state["results"]["faithful"]["worst"]})
    linked |= {e["id"] for card in state["results"]["rules"] for e in card["examples"]}
    picks = state["results"]["user_picks"]  # the User tab's lowest-scored, random and every tenth percentile
    linked |= {u["id"] for u in picks["bottom"] + picks["random"] + picks["by_percentile"][::10]}
    assert set(linked_users(state["results"])) == linked and linked <= set(users)
    assert set(users) == linked | {ws.user_key(u) for u in sample_users(exp, 12)}
    assert len(linked) > 12 and len(users) > len(linked)
    assert all(html.escape(uid) in text.split("Users in this report")[1].split("</details>")[0] for uid in users)
    assert [c["index"] for c in state["results"]["rules"]] == [c["index"] for c in ws.rule_cards(exp)]
    # The category names come back intact after JSON parsing.
    stats_text = " ".join(s["words"] for s in state["results"]["statistics"])
    events = [v for d in users.values() for row in d["events"] for v in row]
    assert EVIL in events and EVIL_SCRIPT in events or EVIL in stats_text
    uid = next(iter(users))
    assert users[uid]["fired"] == exp.user(ws.resolve_user(exp, uid)).fired
    assert "export default" in parser.scripts["rx-esm"]


def test_faithfulness_against_a_plain_reference(exp):
    f = ws.faithfulness(exp)
    test = exp.is_test
    y = exp.teacher_scores[test]
    s = exp.student_scores[test]
    # rank correlation, by pandas on its own
    assert f["spearman"] == pytest.approx(y.rank().corr(s.rank()), abs=1e-4)
    assert f["n_test"] == int(test.sum()) and len(f["points"]) == min(ws.MAX_SCATTER, int(test.sum()))
    # the worst explained: a per-user loop over percentile gaps, farthest first, ties by id
    n = len(y)
    pct_y = {u: 100 * (r - 0.5) / n for u, r in y.rank().items()}
    pct_s = {u: 100 * (r - 0.5) / n for u, r in s.rank().items()}
    gaps = sorted(((abs(pct_y[u] - pct_s[u]), u) for u in y.index), key=lambda g: (-g[0], list(y.index).index(g[1])))
    assert [u["id"] for u in f["worst"]] == [ws.user_key(u) for _, u in gaps[:ws.N_WORST]]
    first = f["worst"][0]
    # as the payload writes them: each percentile to 3 significant digits
    u0 = gaps[0][1]
    assert (first["teacher_pct"], first["student_pct"]) == (ws._num(pct_y[u0], 3), ws._num(pct_s[u0], 3))
    # every point is a held-out user's pair of scores
    pairs = {(ws._num(a, 4), ws._num(b, 4)) for a, b in zip(y, s)}  # as the payload writes numbers
    assert all((p["teacher"], p["student"]) in pairs for p in f["points"])


def test_report_samples_top_users_and_card_examples(exp):
    from rudi_explain.views.report import sample_users

    chosen = [ws.user_key(u) for u in sample_users(exp, 30)]
    assert len(chosen) == len(set(chosen)) == 30
    top = [u["id"] for u in ws.top_users(exp, 15)]
    assert chosen[:15] == top
    assert sample_users(exp, 30) == sample_users(exp, 30)


# ---------------------------------------------------------------- scale
@pytest.mark.slow
def test_payload_stays_small_for_a_million_users(exp, sent):
    big = scaled_explanation(exp, 1_000_000)
    w = ExplanationWidget(big)
    state = {k: getattr(w, k) for k in ("status", "progress", "chart", "results", "error", "selected_user")}
    size = len(json.dumps(state))
    assert size < 300_000, f"widget state is {size:,} bytes"
    uid = str(big.sequences.users[123_456])
    big.sequences.user_index(uid if not uid.isdigit() else int(uid))  # build the id index once, as a session would
    # Counted, not timed (benchmarks/bench_widget.py prints the latency): a drill-down is one user's
    # work. Python calls as many as for the same user of a 1,000-user explanation (no loop over
    # users), and memory less than one float per user (no per-user array beyond a mask).
    import sys
    import tracemalloc

    small = scaled_explanation(exp, 1_000)
    small.sequences.user_index(123)
    few = ExplanationWidget(small)

    def drill_down(widget, user, request):
        calls = [0]

        def count(frame, event, arg):
            calls[0] += event in ("call", "c_call")

        tracemalloc.start()
        sys.setprofile(count)
        try:
            widget._on_message(widget, {"type": "user", "id": user, "request": request})
        finally:
            sys.setprofile(None)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        return calls[0], peak

    drill_down(few, "7", 0)  # first calls fill caches (pandas, the rule texts) in both
    drill_down(w, str(big.sequences.users[7]), 0)
    few_calls, _ = drill_down(few, str(small.sequences.users[123]), 1)
    calls, peak = drill_down(w, uid, 1)
    assert sent[-1]["ok"] and sent[-1]["detail"]["fired"] == big.user(int(uid)).fired
    assert calls < 2 * few_calls, (calls, few_calls)
    assert peak < 8 * big.sequences.n_users, f"a drill-down peaked at {peak / 1e6:.1f} MB"
    assert len(json.dumps(sent[-1])) < 200_000


def test_a_view_made_as_the_job_fails_never_shows_failed_without_its_error():
    """A view made between the job's status turning 'failed' and its last event (a teacher that fails at
    once): every state pushed that says 'failed' carries the error (it showed 'failed' alone once)."""
    demo = rx.datasets.make_payments(60, random_state=0)
    started, reached, gate = threading.Event(), threading.Event(), threading.Event()

    def failing(seqs):
        started.wait(10)
        raise ConnectionError("scoring service unavailable")

    def hold(event):  # the job's own thread, inside its last event: the status is already 'failed'
        if event.stage == "failed":
            reached.set()
            gate.wait(10)

    exp = rx.explain(failing, demo.events, background="thread", n_stats=2, progress=False)
    exp.on_progress(hold)
    started.set()
    assert reached.wait(10)
    assert exp.status == "failed" and not exp.done  # the window the view is made in
    seen = []
    w = ExplanationWidget(exp)
    seen.append((w.status, w.error))
    w.observe(lambda change: seen.append((change["new"], w.error)), names="status")
    gate.set()
    with pytest.raises(Exception, match="scoring service unavailable"):
        exp.wait()
    deadline = time.monotonic() + 10
    while w.status != "failed" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert w.status == "failed" and "scoring service unavailable" in w.error
    assert all(error for status, error in seen if status == "failed"), seen
