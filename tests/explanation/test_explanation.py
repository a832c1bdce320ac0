"""explain(): every teacher kind, the background job, the per-user view, save/load, predict, errors."""

import json
import tempfile
import threading
import time
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import rudi_explain as rx
from rudi_explain.explanation import FORMAT_VERSION, ExplanationCancelled
from rudi_explain.rules.ruleset import LinearTerm
from rudi_explain.teachers.adapters import TeacherError

FAST = dict(n_stats=4, n_rules=8, n_simulations=40, student_params={"epochs": 25})


@pytest.fixture(scope="module")
def demo():
    return rx.datasets.make_payments(800, random_state=7)


@pytest.fixture(scope="module")
def exp(demo):
    return rx.explain(None, demo.events, scores=demo.risk, labels=demo.labels, background=False, **FAST)


def test_report(exp, demo):
    r = exp.report()
    for key in ("fidelity_train", "fidelity_test", "auc_teacher", "auc_student", "n_users", "n_rules",
                "max_literals", "seconds"):
        assert key in r
    assert r["n_users"] == 800 and r["n_test"] == 160 and r["n_train"] == 640
    assert 0.6 < r["fidelity_test"] <= 1 and 0.6 < r["fidelity_train"] <= 1
    assert 0.5 < r["auc_teacher"] < 1 and r["auc_student"] is not None
    assert r["n_rules"] == len(exp.rules) and r["max_literals"] <= 4
    assert set(r["seconds"]) >= {"teacher", "search", "literals", "student", "evaluate", "total"}
    # The figures are what they say: recompute fidelity on held-out users.
    y, s = exp.teacher_scores.to_numpy(), exp.student_scores.to_numpy()
    assert r["fidelity_test"] == pytest.approx(rx.metrics.fidelity(y[exp.is_test], s[exp.is_test]))
    assert exp.teacher_scores.index.tolist() == exp.sequences.users.tolist()
    np.testing.assert_allclose(exp.teacher_scores.to_numpy(), demo.risk.to_numpy())


@pytest.fixture(scope="module")
def background_job(demo):
    """A job in a thread, given no labels, and the progress events it sent; read by two tests (one fit)."""
    events = []
    e = rx.explain(None, demo.events, scores=demo.risk, background="thread", progress=events.append, **FAST)
    assert e.wait(timeout=300) is e
    return e, events


@pytest.mark.slow
def test_no_labels_no_auc(background_job):
    e, _ = background_job
    assert e.status == "done"
    assert e.report()["auc_teacher"] is None and e.report()["auc_student"] is None


def test_user_view_against_a_hand_check(exp, demo):
    uid = demo.risk.idxmax()
    u = exp.user(uid)
    assert u.teacher_score == pytest.approx(demo.risk[uid])
    # mid-rank: the share below, plus half the share tied (rudi_explain.audit.ranks)
    assert u.percentile == pytest.approx(100 * ((demo.risk < demo.risk[uid]).mean()
                                                + (demo.risk == demo.risk[uid]).mean() / 2))
    # By hand: each literal from its statistic evaluated on this user alone.
    one = exp.sequences.subset(np.array([exp.sequences.user_index(uid)]))
    by_hand = np.concatenate([np.atleast_1d(s.evaluate(one)[0]) for s in exp.statistics])
    values = by_hand[exp.literals.column]
    np.testing.assert_allclose(u.literals["value"].to_numpy(), values, equal_nan=True)
    holds = np.where(np.isnan(values), False, values > exp.literals.thresholds)
    np.testing.assert_array_equal(u.literals["holds"].to_numpy(), holds)
    # a rule fires where its literals hold; a linear term (a linear card) adds weight x clipped value
    def added(rule):
        if isinstance(rule, LinearTerm):
            return rule.weight * float(rule.value(by_hand[None, :])[0])
        return rule.weight if rule.fires(holds[None, :])[0] else 0.0

    fired_by_hand = [k for k, rule in enumerate(exp.rules) if added(rule) != 0.0]
    assert sorted(u.fired) == fired_by_hand
    assert u.student_score == pytest.approx(u.intercept + u.contributions.sum())
    assert u.student_score == pytest.approx(exp.student_scores[uid])
    by_weight = sorted(u.fired, key=lambda k: -abs(added(exp.rules[k])))
    assert list(u.contributions.index) == [exp.rules[k].text for k in by_weight]
    pd.testing.assert_frame_equal(u.events.reset_index(drop=True), exp.sequences.events(uid))
    with pytest.raises(KeyError, match="user 'nobody'"):
        exp.user("nobody")


def test_predict_new_users_with_unseen_categories(exp, demo):
    new = rx.datasets.make_payments(50, random_state=99).events
    new = new.assign(user_id="new-" + new["user_id"].astype(str),
                     channel=new["channel"].astype(str).replace({"atm": "kiosk"}))
    before = new.copy()
    scores = exp.predict(new)
    pd.testing.assert_frame_equal(new, before)
    assert len(scores) == 50 and scores.index[0].startswith("new-") and np.isfinite(scores).all()
    # Same users as training data predict the training scores.
    again = exp.predict(demo.events)
    np.testing.assert_allclose(again.to_numpy(), exp.student_scores.to_numpy())
    with pytest.raises(ValueError, match="numerical column 'amount' is not in the data"):
        exp.predict(new.drop(columns=["amount"]))


def test_save_load_round_trip(exp, tmp_path, demo):
    path = exp.save(tmp_path / "audit.rudi")
    back = rx.load(path)
    assert str(back.rules) == str(exp.rules)
    assert [str(s) for s in back.statistics] == [str(s) for s in exp.statistics]
    pd.testing.assert_series_equal(back.teacher_scores, exp.teacher_scores)
    pd.testing.assert_series_equal(back.student_scores, exp.student_scores)
    assert back.report()["fidelity_test"] == pytest.approx(exp.report()["fidelity_test"])
    uid = demo.risk.idxmin()
    assert back.user(uid).fired == exp.user(uid).fired
    np.testing.assert_allclose(back.predict(demo.events).to_numpy(), exp.student_scores.to_numpy())
    with zipfile.ZipFile(path) as zf:  # JSON and .npy only: nothing pickled
        assert all(n == "explanation.json" or n.endswith(".npy") for n in zf.namelist())


def test_load_refuses_foreign_and_damaged_files(exp, tmp_path):
    text = tmp_path / "notes.rudi"
    text.write_text("hello")
    with pytest.raises(ValueError, match="not a rudi-explain explanation file"):
        rx.load(text)
    foreign = tmp_path / "foreign.rudi"
    with zipfile.ZipFile(foreign, "w") as zf:
        zf.writestr("explanation.json", json.dumps({"format": "something-else"}))
    with pytest.raises(ValueError, match="not a rudi-explain explanation file"):
        rx.load(foreign)
    path = exp.save(tmp_path / "a.rudi")
    future = tmp_path / "future.rudi"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(future, "w") as dst:
        for name in src.namelist():
            data = src.read(name)
            if name == "explanation.json":
                meta = json.loads(data)
                meta["version"] = FORMAT_VERSION + 1
                data = json.dumps(meta)
            dst.writestr(name, data)
    with pytest.raises(ValueError, match="format version"):
        rx.load(future)
    damaged = tmp_path / "damaged.rudi"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(damaged, "w") as dst:
        for name in src.namelist():
            if name != "arrays/teacher_scores.npy":
                dst.writestr(name, src.read(name))
    with pytest.raises(ValueError, match="damaged"):
        rx.load(damaged)


@pytest.mark.slow
def test_background_job_progress_and_wait(background_job):
    e, events = background_job
    assert e.wait(timeout=300) is e and e.done and e.status == "done"
    stages = [ev.stage for ev in events]
    assert stages[0] == "teacher" and stages[-1] == "done"
    assert {"search", "literals", "student", "evaluate"} <= set(stages)
    epochs = [ev for ev in events if ev.stage == "student" and ev.step > 0]
    assert epochs and "loss" in epochs[-1].numbers and "fidelity" in epochs[-1].numbers
    searches = [ev for ev in events if ev.stage == "search" and "reward" in ev.numbers]
    assert searches and searches[0].numbers["best"]


@pytest.mark.slow
def test_results_read_while_running_wait_for_the_job_with_a_note(demo, capsys):
    gate = threading.Event()

    def slow(seqs):  # holds the job in its first stage until the main thread is waiting
        gate.wait(30)
        return demo.risk.reindex(seqs.users).to_numpy()

    e = rx.explain(slow, demo.events, background="thread", **FAST)
    assert not e.done
    threading.Timer(0.5, gate.set).start()
    rules = e.rules  # waits: never a silent None
    assert e.done and e.status == "done" and isinstance(rules, rx.RuleSet) and len(rules) > 0
    err = capsys.readouterr().err
    assert "exp.rules: waiting for the explanation to finish" in err and "exp.cancel()" in err
    # said once per explanation; later reads are plain
    assert e.report()["n_rules"] == len(rules) and e.literals is not None
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("read", [lambda e: e.rules, lambda e: e.student_scores, lambda e: e.report(),
                                  lambda e: e.fidelity_curve])
def test_results_of_a_failed_job_raise_and_say_why(demo, read):
    def broken(seqs):
        raise KeyError("feature_x")

    e = rx.explain(broken, demo.events, background="thread", **FAST)
    with pytest.raises(RuntimeError, match=r"did not finish \(failed\).*feature_x.*run explain\(\) again"):
        read(e)


def _no_running_jobs():
    """Stop what earlier tests left running, so a test sees only its own jobs."""
    for e in rx.running():
        e.cancel()
        deadline = time.monotonic() + 30
        while not e.done and time.monotonic() < deadline:
            time.sleep(0.05)


def test_an_interrupted_wait_cancels_the_job(demo, capsys):
    import _thread
    import signal

    _no_running_jobs()
    started = threading.Event()
    e = rx.explain(None, demo.events, scores=demo.risk, background="thread",
                   progress=lambda ev: ev.stage == "search" and started.set(), n_stats=20, n_simulations=5000)
    assert started.wait(60)
    # the interpreter's own SIGINT handler, as in a kernel (a library such as PySpark may have put its own)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Timer(0.3, _thread.interrupt_main).start()  # what the notebook's Interrupt does
        with pytest.raises(KeyboardInterrupt):
            e.wait()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert e.done and e.status == "cancelled"
    assert "interrupted: the explanation was cancelled" in capsys.readouterr().err
    assert e not in rx.running()


def test_running_lists_jobs_and_a_second_job_warns(demo):
    _no_running_jobs()
    gate = threading.Event()

    def slow(seqs):
        gate.wait(30)
        return demo.risk.reindex(seqs.users).to_numpy()

    first = rx.explain(slow, demo.events, background="thread", **FAST)
    try:
        with pytest.warns(RuntimeWarning, match="1 other explanation still running.*rx.running"):
            second = rx.explain(slow, demo.events, background="thread", **FAST)
        assert rx.running() == [first, second]
        second.cancel()
        first.cancel()
    finally:
        gate.set()
    for e in (first, second):
        with pytest.raises(ExplanationCancelled):
            e.wait(timeout=60)
    assert rx.running() == []


@pytest.mark.slow
def test_a_cancelled_search_keeps_what_it_found_and_says_where_it_stopped(demo):
    from rudi_explain.views import payloads as ws
    from rudi_explain.views.widget import ExplanationWidget

    found = threading.Event()

    def progress(event):
        if event.stage == "search" and len(event.numbers.get("found", [])) >= 2:
            found.set()

    e = rx.explain(None, demo.events, scores=demo.risk, background="thread", progress=progress,
                   n_stats=20, n_simulations=400)
    assert found.wait(120)
    e.cancel()
    with pytest.raises((ExplanationCancelled, rx.SearchCancelled)):
        e.wait(timeout=60)
    assert e.status == "cancelled" and len(e.statistics) >= 2
    with pytest.raises(RuntimeError, match="did not finish"):
        e.report()
    event = e.progress
    assert event.stage == "cancelled" and event.numbers["reached"] == "search"
    assert event.numbers["found"] == [str(s) for s in e.statistics]
    assert "cancelled during the search stage" in event.message and "Error" not in event.message
    view = ws.progress_state(event, e.status)
    assert view["stage"] == "search" and view["ended"] == "cancelled" and view["fraction"] > 0
    w = ExplanationWidget(e)
    assert w.status == "cancelled" and w.error == ""  # a requested cancel is no error


@pytest.mark.slow
def test_retry_runs_a_failed_job_again_and_the_widget_follows(demo):
    from rudi_explain.views.widget import ExplanationWidget

    calls = []

    def flaky(seqs):  # fails once, as a teacher behind a flaky service would
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionError("service unavailable")
        return demo.risk.reindex(seqs.users).to_numpy()

    e = rx.explain(flaky, demo.events, background="thread", **FAST)
    with pytest.raises(TeacherError):
        e.wait(timeout=60)
    w = ExplanationWidget(e)
    assert w.status == "failed" and "service unavailable" in w.error
    with pytest.raises(RuntimeError, match="did not finish"):
        _ = e.rules
    w._on_message(w, {"type": "retry"})
    e.wait(timeout=120)
    assert e.status == "done" and len(calls) == 2 and len(e.rules) > 0
    deadline = time.monotonic() + 10
    while w.status != "done" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert w.status == "done" and w.error == "" and w.results["summary"]["n_rules"] == len(e.rules)
    with pytest.raises(RuntimeError, match="finished: nothing to retry"):
        e.retry()
    saved = rx.load(e.save(Path(tempfile.mkdtemp()) / "e.rudi"))
    assert saved.status == "done"


def test_failure_is_re_raised_on_wait(demo):
    def broken(seqs):
        raise KeyError("feature_x")

    e = rx.explain(broken, demo.events, background="thread", **FAST)
    with pytest.raises(TeacherError, match="feature_x") as info:
        e.wait(timeout=60)
    assert isinstance(info.value.__cause__, KeyError)
    assert e.status == "failed" and "feature_x" in e.progress.message


@pytest.mark.slow
def test_sklearn_teacher(demo):
    seqs = demo.sequences()
    model = rx.datasets.make_demo_pipeline(random_state=0).fit(seqs, demo.labels)
    e = rx.explain(model, seqs, labels=demo.labels, background=False, **FAST)
    assert e.teacher_kind == "sklearn"
    np.testing.assert_allclose(e.teacher_scores.to_numpy(), model.predict_proba(seqs)[:, 1])
    assert e.report()["fidelity_test"] > 0.55


@pytest.mark.slow
def test_torch_teacher(demo):
    seqs = demo.sequences()
    model = rx.datasets.train_demo_gru(seqs, demo.labels, epochs=1, hidden_size=8)
    e = rx.explain(model, seqs, background=False, **FAST)
    assert e.teacher_kind == "torch"
    np.testing.assert_allclose(e.teacher_scores.to_numpy(), rx.as_teacher(model).score(seqs))
    assert not model.training


@pytest.mark.slow
def test_callable_teacher(demo):
    # The number of events is easy to mimic: held-out fidelity as a rate over three seeds, not one
    # (0.943, 0.901, 0.925 at seeds 0-2 when written).
    fids = []
    for seed in range(3):
        e = rx.explain(lambda s: s.lengths.astype(float), demo.events, background=False, random_state=seed, **FAST)
        assert e.teacher_kind == "callable"
        fids.append(e.report()["fidelity_test"])
    assert sum(f > 0.85 for f in fids) >= 2 and min(fids) > 0.8, fids


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(model=None, scores=None), ValueError, "no model to explain"),
    (dict(model=lambda s: s.lengths, scores="x"), ValueError, "either a model or its scores"),
    (dict(n_rules=0), ValueError, "n_rules must be"),
    (dict(student="forest"), ValueError, "student must be one of"),
    (dict(test_size=1.5), ValueError, "test_size"),
    (dict(background="later"), ValueError, "background must be"),
    (dict(labels=np.full(800, 2), in_users_order=True), ValueError, "labels must be 0 or 1"),
    (dict(labels=np.ones(800)), ValueError, "bare ndarray without user ids"),
])
def test_bad_arguments(demo, kwargs, error, message):
    args = dict(model=None, scores=demo.risk) | kwargs
    model = args.pop("model")
    with pytest.raises(error, match=message):
        rx.explain(model, demo.events, **args)


def test_bad_data(demo):
    with pytest.raises(ValueError, match="user column 'uid'"):
        rx.explain(None, demo.events, user="uid", scores=demo.risk)
    with pytest.raises(TypeError, match="DataFrame of events or Sequences"):
        rx.explain(None, [1, 2], scores=demo.risk)
    with pytest.raises(ValueError, match="the given scores lack 5 of the 800 users: 'u000000'"):
        rx.explain(None, demo.events, scores=demo.risk.iloc[5:], background=False, **FAST)
