"""The notebook widget: an anywidget over the payloads of :mod:`widget_state`.

The front end is a plain ES module and a CSS file in the repository's
``widgets/`` folder (no build step, no CDN). :func:`rudi_explain.report.front_end_dir`
finds them (the report uses them too, without anywidget), in this order:

1. ``<repository>/widgets/`` next to the package (a source checkout or an
   editable install);
2. ``<sys.prefix>/share/rudi-explain/widgets/``, where a regular install puts
   them (``[tool.setuptools.data-files]`` in pyproject.toml).

State flows as traits (kernel -> page): ``status``, ``progress``, ``chart``,
``results``, ``error``. The page talks back with custom messages:
``{"type": "user", "id": ..., "request": n}`` asks for one user's details,
answered by ``{"type": "user", "request": n, "ok": true, "detail": {...}}``;
``{"type": "cancel"}`` cancels the job. Per-user details are never kept in
the traits, so the notebook file stays small whatever the number of users.
"""

from __future__ import annotations

import threading
import time
import weakref
from typing import Any

import anywidget
import traitlets as t

from rudi_explain import widget_state as ws
from rudi_explain.report import front_end, front_end_dir

__all__ = ["ExplanationWidget", "front_end", "front_end_dir"]

#: Seconds between two progress pushes of one stage (stage changes go at once).
PUSH_INTERVAL = 0.2
#: the widgets showing each explanation, for :func:`views` (a blocked wait routes their messages)
_VIEWS: "weakref.WeakKeyDictionary[Any, weakref.WeakSet]" = weakref.WeakKeyDictionary()


def views(explanation: Any) -> list["ExplanationWidget"]:
    """The open widgets showing ``explanation`` (closed ones have no comm and are left out)."""
    return [w for w in list(_VIEWS.get(explanation, ())) if getattr(w, "comm", None) is not None]


class ExplanationWidget(anywidget.AnyWidget):
    """Live progress, rule cards, thresholds and per-user drill-down.

    Parameters
    ----------
    explanation : Explanation
        Finished or still running: the widget follows its progress events
        and fills in the results when the job is done.

    Attributes
    ----------
    status : str
        The job's status as last pushed ('pending', 'running', 'done',
        'failed', 'cancelled').
    progress : dict
        The progress view (see :func:`widget_state.progress_state`).
    chart : list of dict
        Training points (epoch, loss, fidelity), at most 200.
    results : dict
        Summary, rule cards, thresholds, statistics, top users; empty until done.
    error : str
        The failure, if the job failed.
    selected_user : str
        The last user whose details were sent to the page.
    """

    status = t.Unicode("pending").tag(sync=True)
    progress = t.Dict().tag(sync=True)
    chart = t.List().tag(sync=True)
    results = t.Dict().tag(sync=True)
    error = t.Unicode("").tag(sync=True)
    selected_user = t.Unicode("").tag(sync=True)

    def __init__(self, explanation: Any, **kwargs: Any) -> None:
        # Read per widget (not at import): an edited front end shows on the next widget.
        # anywidget turns these attributes into synced traits in its __init__.
        self._esm, self._css = front_end()
        super().__init__(**kwargs)
        self._exp = explanation
        self._lock = threading.Lock()
        self._points: list[dict] = []
        self._last_push = 0.0
        self._last_stage = ""
        self._filled = False
        self.on_msg(self._on_message)
        _VIEWS.setdefault(explanation, weakref.WeakSet()).add(self)
        # Subscribe first, then catch up from the history, so no event is lost between.
        explanation.on_progress(self._on_event)
        for event in list(explanation.history):
            point = ws.chart_point(event)
            if point is not None:
                self._points.append(point)
        if explanation.done:
            self._finish()
        else:
            self._push(explanation.progress)

    # ---------------------------------------------------------- progress
    def _on_event(self, event: Any) -> None:
        """Called from the job's worker thread on every progress event."""
        point = ws.chart_point(event)
        with self._lock:
            if point is not None:
                self._points.append(point)
            if event.stage in ("done", "failed", "cancelled"):
                pass
            elif event.stage == self._last_stage and time.monotonic() - self._last_push < PUSH_INTERVAL:
                return  # throttled: the next push carries the newest state
            self._last_push, self._last_stage = time.monotonic(), event.stage
        if event.stage in ("done", "failed", "cancelled"):
            self._finish(event)
        else:
            self._push(event)

    def _push(self, event: Any) -> None:
        if self._filled:  # a late progress push must not cover the results
            return
        status = self._exp.status
        with self.hold_sync():  # one comm message for all traits
            self.progress = ws.progress_state(event, status)
            self.chart = ws.thin(self._points)
            self.status = status

    def _finish(self, event: Any = None) -> None:
        with self._lock:
            if self._filled:
                return
            self._filled = True
        exp = self._exp
        event = event if event is not None else exp.progress
        status = exp.status
        results: dict = {}
        error = ""
        if status == "done":
            try:
                results = ws.results_state(exp)
            except Exception as err:  # show the problem in the widget, not a blank view
                error = f"could not show the results: {type(err).__name__}: {err}"
                status = "failed"
        elif status == "failed" and exp.error is not None:
            error = f"{type(exp.error).__name__}: {exp.error}"  # a requested cancel is no error
        with self.hold_sync():
            self.progress = ws.progress_state(event, status)
            self.chart = ws.thin(self._points)
            self.results = results
            self.error = error
            self.status = status

    # ---------------------------------------------------------- messages
    def _on_message(self, widget: Any, content: Any, buffers: Any = None) -> None:
        if not isinstance(content, dict):
            return
        kind = content.get("type")
        if kind == "cancel":
            self._exp.cancel()
            self.send({"type": "cancelling"})
        elif kind == "retry":
            self._retry()
        elif kind == "user":
            self.send(self.answer_user(content.get("id"), content.get("request")))

    def _retry(self) -> None:
        """Run a failed or cancelled job again and follow it from the start."""
        try:
            self._exp.retry()
        except RuntimeError as err:
            self.send({"type": "retry", "ok": False, "error": str(err)})
            return
        with self._lock:
            self._filled = False
            self._points = []
            self._last_stage = ""
        with self.hold_sync():
            self.results = {}
            self.error = ""
        self._push(self._exp.progress)

    def answer_user(self, user_id: Any, request: Any = None) -> dict:
        """The reply to a drill-down request: the user's details, or why not.

        Parameters
        ----------
        user_id : str
            As typed or clicked in the page.
        request : int, optional
            Echoed back, so the page can drop answers to stale requests.
        """
        reply: dict = {"type": "user", "request": request, "id": str(user_id)}
        if not self._exp.done or self._exp.status != "done":
            return reply | {"ok": False, "error": "the explanation is not finished yet"}
        try:
            detail = ws.user_detail(self._exp, user_id)
        except KeyError as err:
            return reply | {"ok": False, "error": str(err.args[0]) if err.args else str(err)}
        self.selected_user = detail["id"]
        return reply | {"ok": True, "detail": detail}

    def __repr__(self) -> str:
        # Stable (no address): notebooks checked by nbval compare the text/plain output.
        results = self.results or {}
        summary = results.get("summary") or {}
        if self.status == "done" and summary:
            return (f"ExplanationWidget(done: {summary['n_rules']} rules, {summary['n_users']:,} users, "
                    f"fidelity {summary['fidelity_test']} held out)")
        # frozen in a saved notebook: say what it needs (the static copy beside it has the result)
        return f"ExplanationWidget({self.status}; the interactive view needs the running kernel: re-run the cell)"
