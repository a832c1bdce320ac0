"""Where an explain job runs, and its progress outside a notebook.

:func:`in_kernel` and :func:`interactive_kernel` tell a live notebook (where the widget shows the
progress and a worker thread keeps the kernel free) from a headless notebook run and a script;
:func:`notebook_cell` names the cell a kernel is running (so that a re-run can replace the job the
cell started before); :class:`TerminalBar` writes the progress on stderr for scripts.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from rudi_explain.explanation.job import JobProgress

__all__ = ["TerminalBar", "in_kernel", "interactive_kernel", "notebook_cell"]

#: the events that end a run
ENDED = ("done", "failed", "cancelled")


def _shell() -> Any:
    """The running IPython shell, without importing IPython (None in a plain script)."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return None
    try:
        return ipython.get_ipython()
    except Exception:
        return None


def in_kernel() -> bool:
    """Whether we run in a Jupyter kernel, live or headless (nbclient, nbval): its output goes to a notebook."""
    shell = _shell()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def interactive_kernel() -> bool:
    """Whether we run in a live notebook kernel (not nbclient/nbval or a script)."""
    # Headless runners (nbclient, nbval, papermill) shut the kernel down before
    # a background thread ends, so the saved state would show a progress bar.
    return in_kernel() and not any(os.environ.get(v) for v in ("RUDI_EXPLAIN_BLOCK", "NBVAL", "PAPERMILL", "CI"))


def notebook_cell() -> str | None:
    """The id of the notebook cell being run, as the front end sent it; None where none is known.

    JupyterLab and Notebook 7 put ``cellId`` in the metadata of every ``execute_request``
    (ipykernel keeps the request as the shell's parent). Other front ends (a console, nbclient,
    an old notebook) send none: then None, and nothing is tied to a cell.
    """
    shell = _shell()
    kernel = getattr(shell, "kernel", None) if shell is not None else None
    try:
        parent = kernel.get_parent("shell") if kernel is not None else None
    except Exception:  # an older ipykernel, or no request in flight
        return None
    if not isinstance(parent, dict) or (parent.get("header") or {}).get("msg_type") != "execute_request":
        return None
    cell = (parent.get("metadata") or {}).get("cellId")
    return str(cell) if isinstance(cell, str) and cell else None


class TerminalBar:
    """Progress on stderr where no notebook shows it (a script, a terminal).

    On a terminal, one live bar redrawn in place (four times a second at most); elsewhere
    (a log, a pipe, CI), plain lines: one when a stage starts and when it ends, one per
    statistic found, and the end of the run.
    """

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.last = 0.0
        self.stage = ""
        self.step = -1
        self.message = ""

    def __call__(self, event: JobProgress) -> None:
        if not self.tty:
            self._line(event)
            return
        now = time.perf_counter()
        if now - self.last < 0.25 and event.step not in (0, event.total) and event.stage == self.stage:
            return
        self.last, self.stage = now, event.stage
        width = 24
        filled = int(width * event.step / event.total) if event.total else 0
        line = f"\r[{'#' * filled}{'-' * (width - filled)}] {event.stage:<8} {event.message[:70]:<70}"
        end = "\n" if event.stage in ENDED else ""
        self.stream.write(line + end)
        self.stream.flush()

    def _line(self, event: JobProgress) -> None:
        started = event.stage != self.stage
        if event.stage == "search":  # its step is the statistics found so far: a line for each
            worth = started or event.step != self.step or event.step == event.total
        else:  # a stage's start, its end, and a new phase of it (the evaluate stage's pruning, then scoring)
            worth = started or event.step == event.total or event.stage in ENDED or (
                event.step == 0 and event.message != self.message)
        self.stage, self.step = event.stage, event.step
        if worth:
            self.message = event.message
            self.stream.write(f"[{event.elapsed:7.1f} s] {event.stage:<8} {event.message}\n")
            self.stream.flush()
