"""The catalog on worker threads (issue 27): the same screen, gains, statistics and rules with 1 and 2 cores."""

import re
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from reference_impl import varying_new_outputs

import rudi_explain as rx
import rudi_explain.search.catalog as catalog_module
import rudi_explain.search.statistics_search as search_module
from rudi_explain.correlation import batch_reward
from rudi_explain.exceptions import InputError, InputTypeError
from rudi_explain.search.catalog import CHUNK, ColumnScreen, short_catalog
from rudi_explain.search.parallel import DEFAULT_N_JOBS, Workers, resolve_n_jobs
from rudi_explain.search.statistics_search import SearchCancelled, StatisticsSearch
from rudi_explain.statistics.frame import FrameCache

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from planted import make_scenario  # noqa: E402

BAD = [0, -1, -2, 1.5, "2", True]


def _data(name: str, seed: int, n_users: int = 500):
    """Sequences and a target over its users: the demo data or a planted scenario."""
    if name == "planted":
        sc = make_scenario(seed, n_users=n_users)
        seqs = sc.sequences()
        return seqs, sc.scores.loc[seqs.users].to_numpy(float)
    demo = (rx.datasets.make_payments if name == "payments" else rx.datasets.make_edits)(n_users, random_state=seed)
    seqs = demo.sequences()
    return seqs, demo.risk.loc[seqs.users].to_numpy(float)


def _screen(seqs, target, n_jobs, max_columns=None, seen=None, cancel=None):
    rows = np.arange(0, seqs.n_users, 2)
    stats = short_catalog(seqs, "readable", 4)
    return ColumnScreen.build(stats, seqs, set() if seen is None else seen, cancel=cancel, max_columns=max_columns,
                              target=target, rows=rows, frames=FrameCache(seqs), n_jobs=n_jobs)


def _same(a: ColumnScreen, b: ColumnScreen) -> None:
    assert [(str(s), j) for s, j in a.owners] == [(str(s), j) for s, j in b.owners]
    assert a.bins.dtype == b.bins.dtype and np.array_equal(a.bins, b.bins)
    assert a.values.dtype == b.values.dtype and a.values.tobytes() == b.values.tobytes()  # NaN-safe, to the bit


# ------------------------------------------------------------------ n_jobs
@pytest.mark.parametrize("bad", BAD)
def test_bad_n_jobs_are_refused_naming_the_value(bad):
    seqs, target = _data("payments", 0, n_users=40)
    stats = short_catalog(seqs)[:3]
    message = re.escape(repr(bad))
    calls = [lambda: resolve_n_jobs(bad), lambda: Workers(bad),
             lambda: ColumnScreen.build(stats, seqs, n_jobs=bad),  # one chunk: refused all the same
             lambda: ColumnScreen.build_each(stats, seqs, n_jobs=bad)]
    screen = ColumnScreen.build(stats, seqs)
    calls.append(lambda: screen.gains(target, np.arange(seqs.n_users), 1.0, n_jobs=bad))
    for call in calls:
        with pytest.raises((InputError, InputTypeError), match=rf"n_jobs.*{message}"):
            call()


def test_n_jobs_default_and_whole_numbers():
    assert DEFAULT_N_JOBS in (1, 2)
    assert resolve_n_jobs(None) == DEFAULT_N_JOBS
    assert resolve_n_jobs(3) == 3 and resolve_n_jobs(np.int64(2)) == 2 and type(resolve_n_jobs(np.int64(2))) is int


def test_workers_keep_the_order_and_run_each_item_once():
    rng = np.random.default_rng(0)
    delays = rng.uniform(0, 0.004, 40)
    ran: list[int] = []

    def work(i):
        time.sleep(delays[i])  # later items often finish first
        ran.append(i)
        return i * i

    for n_jobs in (1, 2, 3):
        ran.clear()
        checks = []
        with Workers(n_jobs) as workers:
            out = list(workers.map_ordered(work, range(40), before=lambda checks=checks: checks.append(1)))
        assert out == [i * i for i in range(40)]
        assert sorted(ran) == list(range(40)) and len(checks) == 40


def test_a_cancel_stops_the_work_and_joins_the_threads(monkeypatch):
    seqs, target = _data("payments", 1, n_users=200)
    before = threading.active_count()
    evaluations = []  # one entry per statistic evaluated (list.append is atomic across threads)
    evaluate = rx.Statistic.evaluate

    def counting(self, *args, **kwargs):
        evaluations.append(1)
        return evaluate(self, *args, **kwargs)

    monkeypatch.setattr(rx.Statistic, "evaluate", counting)

    class Stop(Exception):
        pass

    for n_jobs in (1, 2):
        evaluations.clear()
        at_check = []

        def cancel(at_check=at_check):
            at_check.append(len(evaluations))
            if len(at_check) == 3:
                raise Stop

        with pytest.raises(Stop):
            _screen(seqs, target, n_jobs, cancel=cancel)
        # One check per chunk of CHUNK statistics before it is handed out, and nothing of a chunk evaluated
        # after the check that stops: one worker evaluates each chunk as it is handed out; two take up
        # the chunk before while the next is evaluated, so at the third check the first is done.
        c = CHUNK
        if n_jobs == 1:
            assert at_check == [0, c, 2 * c] and len(evaluations) == 2 * c
        else:
            assert at_check[0] == 0 and at_check[1] <= c <= at_check[2] <= 2 * c
            assert at_check[2] <= len(evaluations) <= 2 * c
        assert threading.active_count() == before  # no worker left running


def test_an_error_in_a_worker_reaches_the_caller():
    with Workers(2) as workers, pytest.raises(ZeroDivisionError):
        list(workers.map_ordered(lambda i: 1 / (i - 5), range(10)))


# ------------------------------------------------------------------ the screen
@pytest.mark.slow
@pytest.mark.parametrize("name", ["payments", "edits", "planted"])
def test_the_screen_is_the_same_with_1_and_2_workers(name, monkeypatch):
    # Small blocks and a column limit: many blocks binned at once, and trims between them.
    monkeypatch.setattr(catalog_module, "_BLOCK", 64)
    for seed in (0, 1):
        seqs, target = _data(name, seed, n_users=300 if name == "planted" else 500)  # planted: many categories
        seen = {n_jobs: set() for n_jobs in (1, 2, 3)}
        screens = {n_jobs: _screen(seqs, target, n_jobs, max_columns=150, seen=seen[n_jobs]) for n_jobs in (1, 2, 3)}
        assert len(screens[1]) == 150
        for n_jobs in (2, 3):
            _same(screens[1], screens[n_jobs])
            assert seen[n_jobs] == seen[1]


@pytest.mark.parametrize("name", ["payments", "edits", "planted"])
def test_the_gains_are_the_same_with_1_and_2_workers(name, monkeypatch):
    monkeypatch.setattr(catalog_module, "_GAIN_BLOCK", 100)  # several blocks of columns scored at once
    seqs, target = _data(name, 2)
    screen = _screen(seqs, target, 1)
    assert len(screen) > 300
    rng = np.random.default_rng(3)
    rows = np.sort(rng.choice(seqs.n_users, seqs.n_users // 2, replace=False))
    for residual in (target[rows] - target[rows].mean(), rng.standard_normal(len(rows))):
        # A fresh screen each time: the parts cached per rows are computed by the workers too.
        gains = [ColumnScreen(screen.owners, screen.bins, screen.values).gains(residual, rows, 1.7, n_jobs=k)
                 for k in (1, 2, 3)]
        assert gains[0].tobytes() == gains[1].tobytes() == gains[2].tobytes()


def test_the_screen_matches_a_plain_loop_over_the_statistics():
    # Independent of the chunks, the blocks and the shared frames: every statistic evaluated
    # on its own, outputs that vary kept, a repeat of earlier values dropped.
    seqs, target = _data("planted", 4, n_users=300)
    stats = short_catalog(seqs, "readable", 4)
    expected = [(str(stat), j) for stat, j, _ in varying_new_outputs(stats, seqs)]
    screens = [_screen(seqs, target, n_jobs) for n_jobs in (1, 2)]
    assert [(str(s), j) for s, j in screens[0].owners] == expected
    _same(screens[0], screens[1])


def test_build_each_is_each_statistic_built_alone():
    seqs, _ = _data("edits", 3, n_users=300)
    stats = short_catalog(seqs, "readable", 4)[::7]
    alone = [ColumnScreen.build([s], seqs, set()) for s in stats]
    for n_jobs in (1, 2):
        each = ColumnScreen.build_each(stats, seqs, frames=FrameCache(seqs), n_jobs=n_jobs)
        assert len(each) == len(alone)
        for a, b in zip(alone, each):
            _same(a, b)


# ------------------------------------------------------------------ the search and the rules
@pytest.mark.slow
@pytest.mark.parametrize("name,seed", [("payments", 0), ("payments", 1), ("edits", 0), ("planted", 0)])
def test_same_seed_same_statistics_with_1_and_2_cores(name, seed):
    seqs, target = _data(name, seed, n_users=600)
    found = {}
    for n_jobs in (1, 2):
        search = StatisticsSearch(n_stats=4, n_simulations=40, screen_size=500, random_state=seed,
                                  n_jobs=n_jobs).fit(seqs, target)
        found[n_jobs] = ([str(s) for s in search.statistics_], search.rewards_, search.partial_r_,
                         search.catalog_outputs_, search.catalog_columns_)
    assert found[1][0], "the search kept no statistic: nothing compared"
    assert found[1] == found[2]


@pytest.mark.slow
def test_same_seed_same_rules_with_1_and_2_cores():
    demo = rx.datasets.make_payments(500, random_state=3)
    rules = {}
    for n_jobs in (1, 2):  # explain()'s search takes its workers as search_params
        exp = rx.explain(None, demo.events, scores=demo.risk, n_stats=3, n_rules=5, n_simulations=30,
                         background=False, random_state=0, student_params={"epochs": 20},
                         search_params={"n_jobs": n_jobs},
                         progress=lambda event: None)
        rules[n_jobs] = (str(exp.rules), [str(s) for s in exp.statistics])
    assert rules[1] == rules[2]


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True])
def test_the_search_refuses_a_bad_n_jobs_naming_it(bad):
    seqs, target = _data("payments", 0, n_users=100)
    with pytest.raises((InputError, InputTypeError), match="n_jobs"):
        StatisticsSearch(n_stats=1, n_jobs=bad).fit(seqs, target)


# ------------------------------------------------------------------ MCTS-SG's candidates on the workers
@pytest.mark.slow
def test_polish_and_contender_scores_equal_a_plain_loop_and_one_worker(monkeypatch):
    # The paper's loop with the readable grammar: every statistic ends in _refine (contenders
    # scored on one batch with shared halves, then polishing rounds). Each scoring on the workers
    # is checked against a plain loop over the candidates evaluated on the whole layout's users,
    # and the whole search against one worker. Batches this small are scored in the calling
    # thread unless the threshold says otherwise: 0 here, so that 2 and 3 workers score them.
    monkeypatch.setattr(search_module, "_THREADED_EVENTS", 0)
    recorded = {"polish": 0, "shared": 0}
    scores_of, shared = StatisticsSearch._scores_of, StatisticsSearch._shared_halves_scores

    def checked_scores_of(self, stats, score, stat, current, batch):
        out = scores_of(self, stats, score, stat, current, batch)
        assert out == [score(s) for s in stats]
        # and equal to each candidate evaluated on those users of the whole layout
        place = {user: i for i, user in enumerate(self._seqs.users)}
        users = np.array([place[user] for user in batch.users])
        target, form = score.keywords["target"], score.keywords["form"]
        assert out == [batch_reward(s.evaluate(self._seqs, users=users), target, form, np.random.default_rng(0))
                       for s in stats]
        recorded["polish"] += len(stats)
        return out

    def checked_shared(self, stats, users, target):
        out = shared(self, stats, users, target)
        halves = np.random.default_rng(0)  # one generator, its halves drawn in the candidates' order
        assert out == [batch_reward(s.evaluate(self._seqs, users=users), target[users], self.reward, halves)
                       for s in stats]
        recorded["shared"] += len(stats)
        return out

    monkeypatch.setattr(StatisticsSearch, "_scores_of", checked_scores_of)
    monkeypatch.setattr(StatisticsSearch, "_shared_halves_scores", checked_shared)
    for name, seed in (("payments", 0), ("payments", 1), ("edits", 2)):
        seqs, target = _data(name, seed, n_users=300)
        found = {}
        for n_jobs in (1, 2, 3):
            search = StatisticsSearch(n_stats=2, catalog=False, n_simulations=40, contender_batch=256,
                                      random_state=seed, n_jobs=n_jobs).fit(seqs, target)
            found[n_jobs] = ([str(s) for s in search.statistics_], search.rewards_, search.partial_r_,
                             search.n_evaluations_)
        assert found[1][0], "the search kept no statistic: nothing compared"
        assert found[1] == found[2] == found[3]
    assert recorded["polish"] > 100 and recorded["shared"] > 20, recorded


def test_a_cancel_while_polishing_scores_nothing_more(monkeypatch):
    # Counted, not timed: a progress event comes before every few edits a polishing round scores
    # (64; 8 here, so that a round holds several), once those before it are scored; after a stop
    # there, no statistic is evaluated, with 2 workers as with one (the threshold 0: workers score
    # even these small batches).
    monkeypatch.setattr(search_module, "_POLISH_CHECK", 8)
    monkeypatch.setattr(search_module, "_THREADED_EVENTS", 0)
    seqs, target = _data("payments", 1, n_users=300)
    evaluations = []  # one entry per evaluation (list.append is atomic across threads)
    evaluate = rx.Statistic.evaluate
    for n_jobs in (1, 2):
        polishing = []

        def progress(event, polishing=polishing):
            if event.step == 0 and event.pipeline:  # a polishing round's event (MCTS-SG's own have a step)
                polishing.append((event.simulation, len(evaluations)))
                return event.simulation < 16  # stop before the third 8 of a round
            return None

        def counting(self, *args, **kwargs):
            evaluations.append(1)
            return evaluate(self, *args, **kwargs)

        evaluations.clear()
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(rx.Statistic, "evaluate", counting)
            with pytest.raises(SearchCancelled):
                StatisticsSearch(n_stats=1, catalog=False, n_simulations=30, contender_batch=128,
                                 random_state=0, n_jobs=n_jobs).fit(seqs, target, progress=progress)
        assert [at for at, _ in polishing[-3:]] == [0, 8, 16], polishing
        assert polishing[-1][1] - polishing[-2][1] == 8  # the 8 edits between the two events, scored
        assert len(evaluations) == polishing[-1][1]  # nothing after the stop


def test_one_blas_thread_limits_and_restores_blas(monkeypatch):
    import sys
    import types

    from threadpoolctl import threadpool_info

    from rudi_explain.search import parallel

    def blas_threads():
        return {lib["filepath"]: lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}

    before = blas_threads()
    assert before  # numpy's BLAS at least
    for _ in range(2):  # the second time from the libraries found the first
        with parallel.one_blas_thread():
            assert set(blas_threads().values()) == {1}
        assert blas_threads() == before
    looked = parallel._controller
    # a module imported since (it may load a BLAS): the libraries are looked for again
    monkeypatch.setitem(sys.modules, "rudi_explain_imported_since", types.ModuleType("rudi_explain_imported_since"))

    with parallel.one_blas_thread():
        pass
    assert parallel._controller is not looked
