"""MCTS-SG's tree grown in a forked process beside the job (rudi_explain.beside): the same
statistics and rules as in the calling thread, the job run again where the checking users keep the
tree's statistic, and no process left behind by a cancel or an error."""

import os
import sys
import threading
import time

import pytest
from forks import gone, record_children

import rudi_explain as rx
from rudi_explain import beside as beside_module
from rudi_explain.beside import Beside
from rudi_explain.explanation import ExplanationCancelled
from rudi_explain.search.statistics_search import StatisticsSearch

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the tree runs beside only on Linux")


@pytest.fixture
def children(monkeypatch):
    """Every Beside made, with its child's pid."""
    return record_children(monkeypatch)


# ------------------------------------------------------------------ the search
def _payments(seed: int, n: int = 1500):
    demo = rx.datasets.make_payments(n, random_state=seed)
    return demo.sequences(), demo.risk


@pytest.mark.slow
def test_a_search_with_its_tree_beside_finds_what_one_in_this_thread_finds(children):
    # Over seeds: the same statistics, rewards and check R^2; the tree's seconds added once it ended.
    forked = 0
    for seed in range(4):
        seqs, target = _payments(seed)
        found = {}
        for beside in (False, True):
            before = len(children)
            search = StatisticsSearch(random_state=seed, n_jobs=2).fit(seqs, target, beside=beside)
            refused = search.mcts_refused()
            found[beside] = ([str(s) for s in search.statistics_], search.rewards_, search.check_r2_, refused)
            assert search.stage_seconds_["mcts"] > 0 and search.tree_seconds_ > 0
            if beside:
                forked += len(children) > before
        assert found[False] == found[True], seed
    assert forked >= 2, forked
    assert all(gone(pid) for _, pid in children)


@pytest.mark.slow
def test_the_tree_runs_beside_in_most_jobs_and_changes_nothing(children, monkeypatch):
    # Over payments and edits seeds: explain() with the tree beside (two workers) and without (the switch
    # off) give the same statistics, rules and figures; the tree went beside in most of them (a search
    # that fills n_stats or stops on a check never grows it).
    cases = [("payments", s) for s in range(3)] + [("edits", s) for s in range(3)]
    ran = 0
    for kind, seed in cases:
        demo = getattr(rx.datasets, f"make_{kind}")(1200, random_state=seed)
        out = {}
        for switch in ("0", "1"):
            monkeypatch.setenv(beside_module.ENV_SWITCH, switch)
            before = len(children)
            exp = rx.explain(None, demo.events, scores=demo.risk, background=False, progress=False,
                             random_state=seed, search_params={"n_jobs": 2})
            out[switch] = ([str(s) for s in exp.statistics], str(exp.rules), exp.report()["fidelity_test"])
            if switch == "1":
                ran += len(children) > before
            else:
                assert len(children) == before
        assert out["0"] == out["1"], (kind, seed)
    assert ran >= len(cases) // 2, ran
    assert all(gone(pid) for _, pid in children)


@pytest.mark.slow
def test_a_kept_statistic_runs_the_job_again_in_this_process(children, monkeypatch):
    # The verdict is forced to "kept": the job must search again without the fork and end as a job that
    # never forked, saying so in a progress event.
    demo = rx.datasets.make_payments(1200, random_state=0)
    monkeypatch.setenv(beside_module.ENV_SWITCH, "0")
    reference = rx.explain(None, demo.events, scores=demo.risk, background=False, progress=False,
                           search_params={"n_jobs": 2})
    monkeypatch.setenv(beside_module.ENV_SWITCH, "1")
    result = Beside.result

    def kept(self, should_stop=None):
        value = result(self, should_stop)
        return {**value, "kept": True}
    monkeypatch.setattr(Beside, "result", kept)
    events = []
    exp = rx.explain(None, demo.events, scores=demo.risk, background=False, progress=events.append,
                     search_params={"n_jobs": 2})
    assert len(children) == 1, "the tree did not run beside: nothing to test"
    assert [e for e in events if e.numbers.get("rerun")], "no event said the search runs again"
    assert str(exp.rules) == str(reference.rules)
    assert [str(s) for s in exp.statistics] == [str(s) for s in reference.statistics]
    assert exp.report()["fidelity_test"] == reference.report()["fidelity_test"]


@pytest.mark.slow
def test_a_cancel_after_the_search_stops_the_tree_at_once(children, monkeypatch):
    # The tree is made to run for a minute (the child inherits the patch); the job is cancelled in
    # its student stage: it ends cancelled within seconds, the tree's process gone.
    def slow_tree(self, k, target):
        time.sleep(60)
    monkeypatch.setattr(StatisticsSearch, "_mcts_one", slow_tree)
    reached, cancelled = threading.Event(), threading.Event()

    def progress(event):
        if event.stage == "student" and not reached.is_set():
            reached.set()
            assert cancelled.wait(60)

    demo = rx.datasets.make_payments(1200, random_state=0)
    e = rx.explain(None, demo.events, scores=demo.risk, background="thread", progress=progress,
                   search_params={"n_jobs": 2})
    assert reached.wait(300), "the student stage never started"
    assert len(children) == 1 and not children[0][0].ready(), "no tree running beside: nothing to test"
    started = time.perf_counter()
    e.cancel()
    cancelled.set()
    with pytest.raises(ExplanationCancelled):
        e.wait(timeout=60)
    assert time.perf_counter() - started < 5
    assert gone(children[0][1])


def test_an_error_in_the_search_after_the_fork_stops_the_tree(children, monkeypatch):
    import rudi_explain.search.screened as screened

    def slow_tree(self, k, target):
        time.sleep(60)

    class Broken(screened.StepModel):  # the search's next step model once the tree's process has started
        def __init__(self, *args, **kwargs):
            if children:
                raise RuntimeError("after the fork")
            super().__init__(*args, **kwargs)
    monkeypatch.setattr(StatisticsSearch, "_mcts_one", slow_tree)
    monkeypatch.setattr(screened, "StepModel", Broken)
    seqs, target = _payments(0, n=800)
    with pytest.raises(RuntimeError, match="after the fork"):
        StatisticsSearch(random_state=0, n_jobs=2).fit(seqs, target, beside=True)
    assert len(children) == 1, "no tree ran beside: nothing to test"
    assert children[0][0]._done and gone(children[0][1])


def test_the_job_tells_the_time_left_whether_the_tree_grows_beside(monkeypatch):
    from dataclasses import replace

    from rudi_explain.explanation.config import DEFAULTS
    from rudi_explain.explanation.search_stage import mcts_beside
    monkeypatch.setenv(beside_module.ENV_SWITCH, "1")
    two = replace(DEFAULTS, search_params={"n_jobs": 2})
    assert mcts_beside(two)
    assert not mcts_beside(replace(DEFAULTS, search_params={"n_jobs": 1}))
    assert not mcts_beside(replace(two, search=False, statistics=["Select(*) | Count"]))
    assert not mcts_beside(replace(two, grammar="paper"))  # no catalog: the paper's loop, every tree here
    assert not mcts_beside(replace(two, search_params={"n_jobs": 2, "method": "random"}))
    assert not mcts_beside(replace(DEFAULTS, search_params={"n_jobs": "two"}))  # the search names it later
    monkeypatch.setenv(beside_module.ENV_SWITCH, "0")
    assert not mcts_beside(two)


@pytest.mark.slow
def test_where_fork_fails_the_tree_grows_in_this_thread(children, monkeypatch):
    def no_fork():
        raise OSError(12, "Cannot allocate memory")
    seqs, target = _payments(1)
    reference = StatisticsSearch(random_state=1, n_jobs=2).fit(seqs, target, beside=False)
    monkeypatch.setattr(os, "fork", no_fork)
    search = StatisticsSearch(random_state=1, n_jobs=2).fit(seqs, target, beside=True)
    assert search.mcts_refused()
    assert [str(s) for s in search.statistics_] == [str(s) for s in reference.statistics_]
    assert search.stage_seconds_["mcts"] > 0  # grown here


@pytest.mark.slow
def test_a_cancel_while_the_job_waits_for_the_tree_stops_both_at_once(children, monkeypatch):
    def slow_tree(self, k, target):
        time.sleep(60)
    monkeypatch.setattr(StatisticsSearch, "_mcts_one", slow_tree)
    waiting = threading.Event()

    def progress(event):
        if event.stage == "evaluate" and event.message.startswith("fidelity and AUC"):
            waiting.set()  # the job's last stage: then it asks for the tree's verdict

    demo = rx.datasets.make_payments(1200, random_state=0)
    e = rx.explain(None, demo.events, scores=demo.risk, background="thread", progress=progress,
                   search_params={"n_jobs": 2})
    assert waiting.wait(300), "the job never reached its end"
    time.sleep(0.5)  # waiting for the tree, which sleeps a minute
    assert len(children) == 1 and not children[0][0].ready(), "no tree running beside: nothing to test"
    started = time.perf_counter()
    e.cancel()
    with pytest.raises(ExplanationCancelled):
        e.wait(timeout=60)
    assert time.perf_counter() - started < 2
    assert gone(children[0][1])
