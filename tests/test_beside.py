"""Work beside the job in a forked process (rudi_explain.beside): the child's JSON value back, its
changes kept from this process, its output silenced, a stop at once."""

import sys
import time

import pytest
from forks import gone

from rudi_explain import beside as beside_module
from rudi_explain.beside import Beside, can_fork

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="work goes beside only on Linux")


def test_the_childs_value_comes_back_and_its_changes_stay_there():
    state = {"n": 1}

    def work():
        state["n"] = 99  # the child's copy
        return {"n": state["n"], "values": [1.5, 2.5]}
    job = Beside(work)
    assert job.result() == {"n": 99, "values": [1.5, 2.5]}
    assert state == {"n": 1}
    assert job.result() == {"n": 99, "values": [1.5, 2.5]}  # read once, kept


def test_a_failing_child_gives_none_and_prints_nothing(capfd):
    def work():
        print("from the child")
        raise RuntimeError("boom")
    assert Beside(work).result() is None
    assert Beside(lambda: object()).result() is None  # not JSON
    out, err = capfd.readouterr()
    assert "from the child" not in out + err and "boom" not in out + err


def test_close_stops_a_running_child_at_once_and_reaps_it():
    job = Beside(lambda: time.sleep(60))
    pid = job._pid
    assert not job.ready()
    started = time.perf_counter()
    job.close()
    assert time.perf_counter() - started < 1.0
    assert gone(pid)
    job.close()  # idempotent


def test_the_switch_and_one_worker_keep_the_work_in_this_process(monkeypatch):
    assert not can_fork(1)
    monkeypatch.setenv(beside_module.ENV_SWITCH, "0")
    assert not can_fork(2)
    monkeypatch.setenv(beside_module.ENV_SWITCH, "1")
    assert can_fork(2)



def test_a_child_forks_no_further(monkeypatch):
    monkeypatch.setenv(beside_module.ENV_SWITCH, "1")
    assert can_fork(2)
    assert Beside(lambda: can_fork(2)).result() is False


def test_a_wait_honours_a_cancel_check_within_a_poll():
    job = Beside(lambda: time.sleep(60))
    pid = job._pid
    calls = []

    def cancel():
        calls.append(time.perf_counter())
        if len(calls) == 3:
            raise KeyboardInterrupt
    started = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        job.result(should_stop=cancel)
    assert time.perf_counter() - started < 3 * beside_module.POLL + 0.5
    assert gone(pid)
    job = Beside(lambda: time.sleep(60))
    pid = job._pid
    assert job.result(should_stop=lambda: True) is None and gone(pid)
    assert Beside(lambda: 7).result(should_stop=lambda: False) == 7  # checked only while it runs
