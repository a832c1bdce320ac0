"""A job's life outside the happy path (issue 28, items 14 and 16).

* Re-running a notebook cell that started an explanation cancels the job that cell started
  before (the re-run replaces it); ``rx.running()`` entries tell jobs apart (start time, users,
  settings). Run in a real kernel over jupyter_client, with the ``cellId`` JupyterLab puts in
  each execute request's metadata.
* A script's ``explain()`` (inline by default) shows its progress on stderr: a line per stage
  on a pipe, a bar redrawn in place on a terminal; ``progress=False`` is silent.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import rudi_explain as rx
from rudi_explain.explanation.console import TerminalBar
from rudi_explain.explanation.job import JobProgress

REPO = Path(__file__).resolve().parents[2]
STAGE_ORDER = ["teacher", "search", "literals", "student", "evaluate", "done"]


# ------------------------------------------------------------------ progress in a script
def _events() -> list[JobProgress]:
    out = [JobProgress("teacher", 0, 1, "querying", elapsed=0.0), JobProgress("teacher", 1, 1, "scores", elapsed=0.1)]
    out += [JobProgress("search", k, 3, f"statistic {k + 1}/3, step {s}", elapsed=1.0 + k) for k in range(3)
            for s in range(4)]
    out += [JobProgress("search", 3, 3, "3 statistics found", elapsed=4.0)]
    out += [JobProgress("student", e, 50, f"epoch {e}/50", elapsed=5 + e / 10) for e in range(51)]
    out += [JobProgress("evaluate", 0, 1, "pruning", elapsed=11.0),
            JobProgress("evaluate", 0, 1, "fidelity", elapsed=12.0)]
    return out + [JobProgress("done", 1, 1, "6 rules", elapsed=12.5)]


def test_lines_on_a_pipe_say_each_stage_and_each_statistic_found():
    stream = io.StringIO()
    bar = TerminalBar(stream)
    for event in _events():
        bar(event)
    lines = stream.getvalue().splitlines()
    stages = [line.split()[3] for line in lines]
    assert stages == ["teacher"] * 2 + ["search"] * 4 + ["student"] * 2 + ["evaluate"] * 2 + ["done"], lines
    assert "\r" not in stream.getvalue()


def test_a_terminal_gets_one_bar_redrawn_in_place():
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Tty()
    bar = TerminalBar(stream)
    for event in _events():
        bar(event)
    text = stream.getvalue()
    assert text.count("\n") == 1 and text.endswith("\n")  # one line, ended when the run ends
    assert text.count("\r") >= 5 and "done" in text.rsplit("\r", 1)[1]


SCRIPT = """\
import sys
import rudi_explain as rx
demo = rx.datasets.make_payments(300, random_state=0)
settings = dict(n_stats=1, n_rules=4, n_simulations=10, student_params={"epochs": 5}, random_state=0)
exp = rx.explain(None, demo.events, scores=demo.risk, **settings)
print("FIRST", exp.status, file=sys.stderr, flush=True)
quiet = rx.explain(None, demo.events, scores=demo.risk, progress=False, **settings)
print("SECOND", quiet.status, len(quiet.rules) == len(exp.rules), file=sys.stderr, flush=True)
"""


@pytest.mark.slow
def test_a_script_shows_progress_on_stderr_unless_asked_not_to(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    err = done.stderr.splitlines()
    first = err.index("FIRST done")
    assert err[-1] == "SECOND done True", err  # the silent run printed nothing between
    assert err.index("SECOND done True") == first + 1, err
    lines = [line for line in err[:first] if re.match(r"\[\s*\d+\.\d s\] ", line)]
    stages = [line.split()[3] for line in lines]
    assert [s for k, s in enumerate(stages) if k == 0 or s != stages[k - 1]] == STAGE_ORDER, lines
    assert "rules, fidelity" in lines[-1] and "\r" not in done.stderr
    assert done.stdout == ""


def test_progress_takes_a_callable_or_a_bool():
    demo = rx.datasets.make_payments(300, random_state=0)
    with pytest.raises(TypeError, match="progress must be a callable, True, False or None, got str"):
        rx.explain(None, demo.events, scores=demo.risk, progress="yes")


# ------------------------------------------------------------------ a cell re-run, in a real kernel
CELL = """\
exp = rx.explain(None, demo.events, scores=demo.risk, background="thread", n_stats={n_stats}, n_simulations=5000)
jobs.append(exp)
"""


class Kernel:
    def __init__(self, kc):
        self.kc = kc

    def run(self, code: str, cell: str | None = None, seconds: float = 120) -> dict:
        """Run ``code`` as the cell ``cell`` (JupyterLab's ``cellId`` metadata; None: no metadata)."""
        msg = self.kc.session.msg("execute_request", {"code": code, "silent": False, "store_history": True,
                                                      "user_expressions": {}, "allow_stdin": False,
                                                      "stop_on_error": True},
                                  metadata={"cellId": cell} if cell is not None else {})
        self.kc.shell_channel.send(msg)
        msg_id = msg["header"]["msg_id"]
        out: dict = {"stdout": "", "stderr": "", "error": None}
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                reply = self.kc.get_iopub_msg(timeout=1)
            except Exception:  # queue.Empty
                continue
            if reply["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = reply["msg_type"], reply["content"]
            if kind == "stream":
                out[content["name"]] += content["text"]
            elif kind == "error":
                out["error"] = f"{content['ename']}: {content['evalue']}"
            elif kind == "status" and content["execution_state"] == "idle":
                return out
        raise AssertionError(f"the cell did not end within {seconds} s: {out}")


@pytest.fixture()
def kernel():
    jupyter_client = pytest.importorskip("jupyter_client")
    pytest.importorskip("ipykernel")
    km = jupyter_client.KernelManager(kernel_name="python3")
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    for name in ("RUDI_EXPLAIN_BLOCK", "CI", "NBVAL", "PAPERMILL"):  # a live notebook's kernel
        env.pop(name, None)
    km.start_kernel(env=env)
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        k = Kernel(kc)
        setup = k.run("import time, warnings\nimport rudi_explain as rx\n"
                      "demo = rx.datasets.make_payments(1500, random_state=0)\njobs = []")
        assert setup["error"] is None, setup
        yield k
        k.run("for e in rx.running(): e.cancel()")
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


STATUS = textwrap.dedent("""\
    t = time.monotonic()
    while not jobs[0].done and time.monotonic() - t < 30:
        time.sleep(0.05)
    print("STATUS", [e.status for e in jobs], len(rx.running()), [e.cell for e in jobs])
    for e in rx.running():
        print("RUNNING", repr(e))
""")


@pytest.mark.kernel
def test_re_running_a_cell_cancels_the_job_it_started_before(kernel):
    first = kernel.run(CELL.format(n_stats=20), cell="cell-a")
    assert first["error"] is None and first["stderr"] == "", first
    again = kernel.run(CELL.format(n_stats=19), cell="cell-a")  # the same cell, edited and re-run
    assert again["error"] is None, again
    assert "cancelled the explanation this cell started before (the re-run replaces it): Explanation(" \
        in again["stderr"], again
    assert "other explanation" not in again["stderr"]  # nothing else runs: no warning
    # the re-run waited for the replaced job to stop: at once, only the new one is listed
    now = kernel.run("print([e.status for e in jobs], len(rx.running()))", cell="cell-c")
    assert now["stdout"].strip() == "['cancelled', 'running'] 1", (now, again["stderr"])
    seen = kernel.run(STATUS, cell="cell-b")["stdout"].splitlines()
    assert seen[0] == "STATUS ['cancelled', 'running'] 1 ['cell-a', 'cell-a']", seen
    (entry,) = [line for line in seen if line.startswith("RUNNING")]
    assert re.search(r"Explanation\(running, started \d\d:\d\d:\d\d; 1,500 users; given scores, n_stats=19, "
                     r"n_simulations=5000: ", entry), entry


SLOW_TEACHER_CELL = """\
def slow_teacher(seqs):  # a teacher call the job cannot interrupt: the cancel waits for its next check
    time.sleep(1.0)
    return demo.risk.reindex(seqs.users).to_numpy()
exp = rx.explain(slow_teacher, demo.events, background="thread", n_stats=20, n_simulations=5000)
jobs.append(exp)
"""


@pytest.mark.kernel
def test_a_re_run_waits_for_the_replaced_job_to_stop_before_the_next_cell(kernel):
    """The replaced job is inside a 1 s teacher call when the re-run cancels it: the re-run gives it
    time to stop, so the next cell's rx.running() lists only the new job (CI once listed both)."""
    kernel.run("jobs.clear()")
    first = kernel.run(SLOW_TEACHER_CELL, cell="cell-slow")
    assert first["error"] is None, first
    time.sleep(0.3)  # the first job is inside the teacher's sleep
    again = kernel.run(SLOW_TEACHER_CELL, cell="cell-slow")
    assert again["error"] is None and "the re-run replaces it" in again["stderr"], again
    now = kernel.run("print([e.status for e in jobs], len(rx.running()))", cell="cell-d")
    assert now["stdout"].strip() == "['cancelled', 'running'] 1", (now, again["stderr"])


@pytest.mark.kernel
def test_without_a_cell_id_both_jobs_run_and_the_running_ones_tell_apart(kernel):
    kernel.run(CELL.format(n_stats=20))  # a console or an old front end: no cellId
    again = kernel.run(CELL.format(n_stats=19))
    assert "RuntimeWarning: 1 other explanation still running" in again["stderr"], again
    seen = kernel.run("print([e.status for e in jobs]); print(len({repr(e) for e in rx.running()}))")
    assert seen["stdout"].splitlines() == ["['running', 'running']", "2"], seen
