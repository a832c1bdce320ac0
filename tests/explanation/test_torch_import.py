"""PyTorch imported only where the job's student needs it, once, and said to the time left (issue 27)."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from rudi_explain.explanation.config import ExplainConfig
from rudi_explain.explanation.torch_import import needs_torch, torch_importer


def test_only_the_neural_student_needs_it_and_only_until_imported(monkeypatch):
    import torch  # noqa: F401  (the test process may not have it yet)

    assert not needs_torch(ExplainConfig())  # imported: nothing to do
    monkeypatch.delitem(sys.modules, "torch")
    assert needs_torch(ExplainConfig())  # the default student is GS-NLN
    assert not needs_torch(ExplainConfig(student="brl"))
    assert not needs_torch(ExplainConfig(student="cart"))


def test_the_importer_starts_one_thread_once(monkeypatch):
    started = []
    monkeypatch.setattr(threading.Thread, "start", lambda self: started.append(self.name))
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    start = torch_importer(ExplainConfig())
    start()
    start()
    assert started == ["rudi-explain: import torch"]
    started.clear()
    torch_importer(ExplainConfig(student="brl"))()
    assert started == []


#: A job in a fresh process (PyTorch cannot be imported twice in one): its first event's word on the import.
FIRST_EVENT = """
import sys
import rudi_explain as rx
if sys.argv[1] == "1":
    import torch
assert ("torch" in sys.modules) is (sys.argv[1] == "1")
demo = rx.datasets.make_payments(300, random_state=1)
events = []
rx.explain(None, demo.events, scores=demo.risk, background=False, n_stats=1, progress=events.append,
           student_params={"epochs": 2})
print(events[0].stage, events[0].step, events[0].numbers["torch_import"], "torch" in sys.modules)
"""


@pytest.mark.slow  # a fresh process each: 3-6 s
@pytest.mark.parametrize("imported", [True, False])
def test_the_first_event_says_whether_the_job_imports_it(imported):
    done = subprocess.run([sys.executable, "-c", FIRST_EVENT, "1" if imported else "0"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    # the teacher's first event; the import said where the job made it; PyTorch there at the end either way
    assert done.stdout.split() == ["teacher", "0", str(not imported), "True"]
