"""Widget payload size and drill-down latency at 1,000,000 users; notebook and report sizes; time to first progress.

Targets (issue 6): the notebook grows by a few MB at most (the widget state
saved into the .ipynb), and a drill-down answers within 200 ms.

The statistics and rules come from a real (small) explain() on the demo
payments; the 1,000,000 users are synthetic but real Sequences, evaluated by
the same statistics, literals and rules. Prints one line per figure.

Then (issue 14) the figures of a real notebook with one explanation widget:
the saved .ipynb executed by nbclient (which stores the widget state as
JupyterLab's saveState does), in bytes per output of the explain cell, with
and without the widget state; the standalone report's size (``to_html``) of
that same explanation; and the time from calling ``rx.explain`` to the first
progress event in the widget's state, in process and through a real kernel
(the first comm message with a job stage reaching the client, as a browser
gets it).

    python benchmarks/bench_widget.py [--users 1000000] [--events 3] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

import rudi_explain as rx

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from synthetic import scaled_explanation  # noqa: E402  (shared with tests/test_widget.py)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--events", type=int, default=3, help="events per synthetic user")
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=5, help="runs of the time-to-first-progress figures")
    parser.add_argument("--demo-users", type=int, default=2000, help="users of the notebook's explanation")
    args = parser.parse_args()

    from rudi_explain.views.widget import ExplanationWidget

    demo = rx.datasets.make_payments(2000, random_state=0)
    small = rx.explain(None, demo.events, scores=demo.risk, background=False, progress=lambda e: None,
                       n_stats=6, n_rules=12, n_simulations=60, student_params={"epochs": 60})
    t = time.perf_counter()
    exp = scaled_explanation(small, args.users, args.events, string_ids=True)
    print(f"users                 {exp.sequences.n_users:>12,}  ({exp.sequences.n_events:,} events, "
          f"{len(exp.rules)} rules, {exp.literals.n_literals} literals; built in {time.perf_counter() - t:.1f} s)")

    t = time.perf_counter()
    w = ExplanationWidget(exp)
    print(f"widget build          {time.perf_counter() - t:>12.2f} s")
    state = w.get_state()
    data = {k: v for k, v in state.items() if k not in ("_esm", "_css")}
    size_data = len(json.dumps(data))
    size_all = len(json.dumps(state))
    print(f"widget state (data)   {size_data / 1e3:>12.1f} kB")
    print(f"widget state (+JS/CSS){size_all / 1e3:>12.1f} kB   <- what saveState writes into the .ipynb")

    replies = []
    w.send = lambda content, buffers=None: replies.append(content)
    rng = np.random.default_rng(1)
    ids = [str(exp.sequences.users[i]) for i in rng.integers(0, exp.sequences.n_users, args.requests)]
    t = time.perf_counter()
    w._on_message(w, {"type": "user", "id": ids[0], "request": 0})  # the first one builds the id index
    first = time.perf_counter() - t
    times = []
    for k, uid in enumerate(ids[1:], start=1):
        t = time.perf_counter()
        w._on_message(w, {"type": "user", "id": uid, "request": k})
        json.dumps(replies[-1])  # what the comm serializes
        times.append(time.perf_counter() - t)
    assert all(r["ok"] for r in replies)
    sizes = [len(json.dumps(r)) for r in replies]
    print(f"drill-down, first     {first * 1e3:>12.1f} ms   (builds the user id index once)")
    print(f"drill-down, median    {statistics.median(times) * 1e3:>12.1f} ms")
    print(f"drill-down, max       {max(times) * 1e3:>12.1f} ms   over {len(times)} requests")
    print(f"drill-down reply      {statistics.median(sizes) / 1e3:>12.1f} kB median")

    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        path = exp.to_html(Path(tmp) / "report.html")
        print(f"to_html               {time.perf_counter() - t:>12.2f} s    {path.stat().st_size / 1e6:.2f} MB")

    notebook_sizes(args.demo_users)
    first_progress(args.demo_users, args.repeats)


EXPLAIN_CELL = """\
import rudi_explain as rx
demo = rx.datasets.make_payments({n}, random_state=0)
exp = rx.explain(None, demo.events, scores=demo.risk, n_stats=6, n_rules=12, n_simulations=60,
                 student_params={{"epochs": 60}})
exp"""


def notebook_sizes(n_users: int) -> None:
    """Bytes of a saved notebook with one explanation widget, and of its standalone report."""
    import tempfile
    from pathlib import Path

    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(EXPLAIN_CELL.format(n=n_users))]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    repo = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
    saved = {k: os.environ.get(k) for k in ("PYTHONPATH", "RUDI_EXPLAIN_BLOCK")}
    # the kernel inherits these: the package from this checkout, the job run to its end in the cell
    os.environ["PYTHONPATH"] = repo + (os.pathsep + saved["PYTHONPATH"] if saved["PYTHONPATH"] else "")
    os.environ["RUDI_EXPLAIN_BLOCK"] = "1"
    try:
        with tempfile.TemporaryDirectory() as tmp:
            t = time.perf_counter()
            NotebookClient(nb, timeout=600, kernel_name="python3", store_widget_state=True,
                           resources={"metadata": {"path": tmp}}).execute()
            took = time.perf_counter() - t
            path = Path(tmp) / "one_widget.ipynb"
            nbformat.write(nb, path)
            with_state = path.stat().st_size
            states = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
            models = states.get("state", {})
            del nb.metadata["widgets"]
            nbformat.write(nb, path)
            without_state = path.stat().st_size
            outputs = nb.cells[0].outputs
            nb.cells[0].outputs = []
            nbformat.write(nb, path)
            bare = path.stat().st_size  # the notebook without the explain cell's outputs
            nb.cells[0].outputs = outputs
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    outputs = nb.cells[0].outputs
    views = [o for o in outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert len(views) == 1 and models, (len(views), list(models))
    print(f"\nnotebook, one explanation widget ({n_users:,} demo users; executed by nbclient in {took:.1f} s)")
    for k, out in enumerate(outputs):
        for mime, value in out.get("data", {}).items():
            print(f"  output {k} {mime:<44}{len(json.dumps(value)):>10,} B")
        if out.get("output_type") == "stream":
            print(f"  output {k} stream {out['name']:<37}{len(json.dumps(out['text'])):>10,} B")
    for model in models.values():  # the widget's model, and any model it refers to
        js = sum(len(json.dumps(model["state"].get(k, ""))) for k in ("_esm", "_css"))
        name = f"{model['model_name']} state"
        print(f"  widget state, {name:<36}{len(json.dumps(model)):>10,} B" + (
              f"   ({js:,} B of it the JS and CSS)" if js > 4 else ""))
    print(f"  .ipynb with widget state                          {with_state:>10,} B")
    print(f"  .ipynb without widget state                       {without_state:>10,} B")
    print(f"  .ipynb, the cell's outputs cleared                {bare:>10,} B")
    print(f"  per widget: outputs only (no saved state)         {without_state - bare:>10,} B")
    print(f"  per widget: outputs and saved state               {with_state - bare:>10,} B")

    demo = rx.datasets.make_payments(n_users, random_state=0)
    exp = rx.explain(None, demo.events, scores=demo.risk, background=False, progress=lambda e: None,
                     n_stats=6, n_rules=12, n_simulations=60, student_params={"epochs": 60})
    with tempfile.TemporaryDirectory() as tmp:
        for n in (40, 200):
            t = time.perf_counter()
            path = exp.to_html(Path(tmp) / "report.html", n_users=n)
            print(f"report (to_html, {n:>3} users embedded)              {path.stat().st_size:>10,} B   "
                  f"in {time.perf_counter() - t:.2f} s")


def first_progress(n_users: int, repeats: int) -> None:
    """Seconds from calling rx.explain to the first job stage in the widget's state."""
    from rudi_explain.views.widget import ExplanationWidget

    demo = rx.datasets.make_payments(n_users, random_state=0)
    in_process = []
    for _ in range(repeats):
        seen: dict = {}
        t = time.perf_counter()
        exp = rx.explain(None, demo.events, scores=demo.risk, background="thread", n_stats=6, n_rules=12,
                         n_simulations=60, student_params={"epochs": 60})
        w = ExplanationWidget(exp)  # what showing it does, at once

        def on_progress(change, w=w, seen=seen, t=t):
            if "first" not in seen and change["new"].get("stage") not in (None, "pending"):
                seen["first"] = time.perf_counter() - t

        w.observe(on_progress, "progress")
        if "first" not in seen and w.progress.get("stage") not in (None, "pending"):
            seen["first"] = time.perf_counter() - t  # the widget caught up from the job's history
        deadline = time.perf_counter() + 60
        while "first" not in seen and time.perf_counter() < deadline:
            time.sleep(0.001)
        exp.cancel()  # the rest of the job is not measured
        try:
            exp.wait(timeout=60)
        except Exception:  # the cancel, re-raised
            pass
        w.close()
        in_process.append(seen.get("first", float("nan")))
    print(f"\nrun -> first progress in the widget state, in process: "
          f"median {statistics.median(in_process) * 1e3:.1f} ms, "
          f"max {max(in_process) * 1e3:.1f} ms over {repeats} runs")
    through = [_first_progress_in_kernel(n_users) for _ in range(repeats)]
    for k, what in enumerate(("first explain of the kernel (imports the widget modules)",
                              "second explain, same kernel")):
        got = [run[k] for run in through]
        print(f"run -> first progress at the client, real kernel, {what}: median "
              f"{statistics.median(got) * 1e3:.1f} ms, max {max(got) * 1e3:.1f} ms over {repeats} kernels")


def _first_progress_in_kernel(n_users: int) -> tuple[float, float]:
    """One real kernel: send the explain cell twice (data made beforehand); seconds from the execute
    request to the first comm message (open or update) whose widget state has a job stage, each time."""
    from jupyter_client import KernelManager

    km = KernelManager(kernel_name="python3")
    repo = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
    km.start_kernel(env=dict(os.environ, PYTHONPATH=repo))
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        kc.execute_interactive(f"import rudi_explain as rx; demo = rx.datasets.make_payments({n_users}, "
                               "random_state=0)", timeout=120, output_hook=lambda m: None)
        times = []
        for run in range(2):
            t = time.perf_counter()
            kc.execute("exp = rx.explain(None, demo.events, scores=demo.risk, background='thread', "
                              "n_stats=6, n_rules=12, n_simulations=60); exp")
            while len(times) <= run:
                msg = kc.get_iopub_msg(timeout=60)
                data = msg["content"].get("data", {}) if msg["msg_type"] in ("comm_open", "comm_msg") else {}
                state = data.get("state", {}) if isinstance(data, dict) else {}
                if state.get("progress", {}).get("stage") not in (None, "pending"):
                    times.append(time.perf_counter() - t)
            kc.get_shell_msg(timeout=60)  # the cell's reply: it has ended
            kc.execute_interactive("exp.cancel()\ntry:\n    exp.wait(timeout=30)\nexcept Exception:\n    pass",
                                   timeout=60, output_hook=lambda m: None)
        return times[0], times[1]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


if __name__ == "__main__":
    main()
