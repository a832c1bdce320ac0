"""The static copy beside the widget says how the job ended, whatever the timing (issue 28, item 1).

The copy (``text/html``) is what GitHub, nbconvert and a reopened notebook show. A teacher that
returns NaN fails within a second, possibly while the copy is being sent: the saved copy must
still say "failed: <the message>", never "running". The kernel tests run real kernels: one
notebook executed by nbclient (its saved outputs read back), and one driven over jupyter_client
whose outputs are kept as JupyterLab keeps them (a display is replaced by an
``update_display_data`` with its display id, from whichever request it comes).
"""

from __future__ import annotations

import os
import time
from html import escape
from pathlib import Path

import pytest

import rudi_explain as rx
from rudi_explain.views.static_view import static_html

REPO = Path(__file__).resolve().parents[2]
EVIL = "<b>bad</b> & 'worse'"


def _ended(exp):
    try:
        exp.wait(timeout=120)
    except Exception:  # the failure or the cancel is what the test reads
        pass
    return exp


def test_a_failed_job_says_failed_and_the_message_escaped():
    demo = rx.datasets.make_payments(300, random_state=0)

    def broken(seqs):
        raise ValueError(EVIL)

    exp = _ended(rx.explain(broken, demo.events, background="thread", n_stats=1))
    html = static_html(exp)
    assert exp.status == "failed"
    assert "rudi-explain: failed</b>: " in html and f"ValueError: {escape(EVIL)}" in html
    assert EVIL not in html and "running" not in html


def test_a_cancelled_job_says_cancelled_once_and_where():
    demo = rx.datasets.make_payments(300, random_state=0)
    exp = rx.explain(None, demo.events, scores=demo.risk, background="thread", n_stats=5, n_simulations=2000)
    exp.cancel()
    _ended(exp)
    html = static_html(exp)
    assert exp.status == "cancelled" and exp.stop_message.startswith("cancelled during the ")
    assert "rudi-explain: cancelled</b> during the " in html and html.count("cancelled") == 1


# ------------------------------------------------------------------ in a real kernel
NAN_TEACHER = """\
import threading, time
import numpy as np
import rudi_explain as rx
demo = rx.datasets.make_payments(300, random_state=0)
release = threading.Event()

def nan_teacher(seqs):
    release.wait(60)
    return np.full(seqs.n_users, np.nan)

exp = rx.explain(nan_teacher, demo.events, background="thread", n_stats=1)
"""

# The worst timing, made certain: the job fails right after the copy ("running") is sent, before
# anything else happens in the cell. A display hook (ipykernel's, on the main thread) releases the
# teacher when the copy goes out and holds the cell until the job has failed.
FAIL_AS_THE_COPY_IS_SENT = NAN_TEACHER + """\
def hook(msg):
    html = (msg.get("content", {}).get("data") or {}).get("text/html", "")
    if msg["header"]["msg_type"] == "display_data" and "rudi-explain-static" in html and not release.is_set():
        release.set()
        deadline = time.monotonic() + 60
        while exp.status != "failed" and time.monotonic() < deadline:
            time.sleep(0.01)
    return msg

get_ipython().display_pub.register_hook(hook)
exp
"""


def _copies(outputs) -> list[str]:
    return ["".join(o["data"]["text/html"]) for o in outputs if "text/html" in o.get("data", {})]


def _says_failed(html: str) -> None:
    assert "rudi-explain: failed</b>: InputError: the callable teacher nan_teacher gave NaN scores" in html, html
    assert "running" not in html


@pytest.mark.kernel
def test_a_job_failing_as_its_copy_is_sent_leaves_failed_in_the_saved_notebook(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(FAIL_AS_THE_COPY_IS_SENT),
                nbformat.v4.new_code_cell("print(exp.status)")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute(env=_kernel_env())
    path = tmp_path / "failed.ipynb"
    nbformat.write(nb, path)
    saved = nbformat.read(path, as_version=4)
    assert saved.cells[1].outputs[0]["text"].strip() == "failed"
    copies = _copies(saved.cells[0].outputs)
    assert len(copies) == 1, copies
    _says_failed(copies[0])


def _kernel_env() -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    for name in ("RUDI_EXPLAIN_BLOCK", "CI", "NBVAL", "PAPERMILL"):
        env.pop(name, None)
    return env


class FrontEnd:
    """A notebook's outputs as JupyterLab keeps them: displays by id, updated wherever the update comes from."""

    def __init__(self, kc):
        self.kc = kc
        self.outputs: list[dict] = []
        self.by_id: dict[str, list[int]] = {}
        self.errors: list[str] = []

    def run(self, code: str, seconds: float = 120) -> None:
        """Run a cell; read the kernel's messages until it is idle again."""
        msg_id = self.kc.execute(code)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                msg = self.kc.get_iopub_msg(timeout=1)
            except Exception:  # queue.Empty
                continue
            self._take(msg)
            if (msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle"
                    and msg["parent_header"].get("msg_id") == msg_id):
                return
        raise AssertionError(f"the cell did not end within {seconds} s")

    def _take(self, msg: dict) -> None:
        kind, content = msg["msg_type"], msg["content"]
        display_id = (content.get("transient") or {}).get("display_id")
        if kind == "display_data":
            self.outputs.append({"data": content["data"]})
            if display_id:
                self.by_id.setdefault(display_id, []).append(len(self.outputs) - 1)
        elif kind == "update_display_data":
            for k in self.by_id.get(display_id, []):
                self.outputs[k] = {"data": content["data"]}
        elif kind == "error":
            self.errors.append(f"{content['ename']}: {content['evalue']}")


@pytest.fixture()
def front_end():
    jupyter_client = pytest.importorskip("jupyter_client")
    pytest.importorskip("ipykernel")
    km = jupyter_client.KernelManager(kernel_name="python3")
    km.start_kernel(env=_kernel_env())
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        yield FrontEnd(kc)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


@pytest.mark.kernel
def test_a_job_failing_after_its_cell_ended_rewrites_the_copy(front_end):
    front_end.run(NAN_TEACHER + "exp")
    (before,) = _copies(front_end.outputs)
    assert "rudi-explain: running" in before  # the cell ended with the job still running
    # a later cell lets the teacher fail; the copy in the first cell's output is rewritten
    front_end.run("release.set()\nt = time.monotonic()\n"
                  "while not exp.done and time.monotonic() - t < 60: time.sleep(0.05)\nprint(exp.status)")
    assert not front_end.errors, front_end.errors
    (after,) = _copies(front_end.outputs)
    _says_failed(after)
