"""The notebook widget: an anywidget over the payloads of :mod:`widget_state`.

The front end is a plain ES module and a CSS file in the repository's
``widgets/`` folder (no build step, no CDN). :func:`rudi_explain.views.report.front_end_dir`
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

Three more requests answer the audit views, each echoing ``request`` (and
``id`` or ``literal``) with ``ok`` and either a payload or an ``error``:

* ``{"type": "attributions", "id": ...}``: the user's attribution strip
  (:func:`widget_state.attribution_state`, under ``"state"``). It asks the
  model, so the page sends it only when asked (a button);
* ``{"type": "counterfactual", "id": ..., "percentile": 50, "max_literals": 3}``: the smallest
  change that moves the user's rule score below that percentile (above it
  for a user already below), :meth:`Counterfactual.to_dict` under
  ``"counterfactual"``;
* ``{"type": "what_if", "literal": i, "text": "25%"}``: the coverage of the
  rules using literal ``i`` and the held-out fidelity with its threshold
  at the typed value, read the way the card writes it (a share in percent:
  "25" or "25%" is 0.25, :func:`rudi_explain.audit.cards.read_value`;
  an older page sends the raw ``"value"`` instead) (:func:`widget_state.what_if`,
  under ``"state"``); the explanation itself is unchanged
  (``exp.with_threshold`` makes the move, and takes the raw value);
* ``{"type": "agreement", "request": n}``: the rule-model agreement over a
  sample of held-out users (:func:`widget_state.agreement_state`, under
  ``"state"``), preceded by ``agreement_progress`` messages. It asks the
  model, so the page sends it only when asked (a button in the Summary).
"""

from __future__ import annotations

import threading
import time
import weakref
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import anywidget
import traitlets as t

from rudi_explain.audit.cards import read_value
from rudi_explain.exceptions import InputError
from rudi_explain.explanation.job import add_wait_context
from rudi_explain.validation import check_whole
from rudi_explain.views import payloads as ws
from rudi_explain.views.kernel_messages import widget_messages
from rudi_explain.views.report import front_end, front_end_dir, report_html
from rudi_explain.views.scorecard_view import value_text

if TYPE_CHECKING:
    from rudi_explain.explanation import Explanation

__all__ = ["ExplanationWidget", "front_end", "front_end_dir"]

#: Seconds between two progress pushes of one stage (stage changes go at once).
PUSH_INTERVAL = 0.2
#: the widgets showing each explanation, for :func:`views` (a blocked wait routes their messages)
_VIEWS: weakref.WeakKeyDictionary[Any, weakref.WeakSet] = weakref.WeakKeyDictionary()


#: The stages (and statuses) a job ends in.
_ENDS = ("done", "failed", "cancelled")


def views(explanation: Explanation) -> list[ExplanationWidget]:
    """The open widgets showing ``explanation`` (closed ones have no comm and are left out)."""
    return [w for w in list(_VIEWS.get(explanation, ())) if getattr(w, "comm", None) is not None]


def _route_messages(explanation: Explanation) -> AbstractContextManager[bool]:
    """While ``explanation.wait()`` blocks a kernel's cell, its widgets' messages (Cancel) are still
    handled (:mod:`rudi_explain.views.kernel_messages`); nothing changes outside a kernel."""
    return widget_messages(views(explanation))


add_wait_context(_route_messages)


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
    chart: t.List[Any] = t.List().tag(sync=True)
    results = t.Dict().tag(sync=True)
    error = t.Unicode("").tag(sync=True)
    selected_user = t.Unicode("").tag(sync=True)

    def __init__(self, explanation: Explanation, **kwargs: Any) -> None:
        # Read per widget (not at import): an edited front end shows on the next widget.
        # anywidget turns these attributes into synced traits in its __init__.
        self._esm, self._css = front_end()
        super().__init__(**kwargs)
        self._exp = explanation
        self._base = explanation  # what was explained; self._exp may show another point (answer_with_rules)
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
            if event.stage in _ENDS:
                pass
            elif event.stage == self._last_stage and time.monotonic() - self._last_push < PUSH_INTERVAL:
                return  # throttled: the next push carries the newest state
            self._last_push, self._last_stage = time.monotonic(), event.stage
        if event.stage in _ENDS:
            self._finish(event)
        else:
            self._push(event)

    def _push(self, event: Any) -> None:
        if self._filled:  # a late progress push must not cover the results
            return
        status = self._exp.status
        if status in _ENDS:
            # The job ended after this event. A view made while the job's last event was being told missed it
            # (the listeners are read before it was added): it finishes from that event here. Otherwise that
            # event is still to come to this view. Either way "failed" is never shown without its error.
            last = self._exp.progress
            if last is not None and last.stage in _ENDS:
                self._finish(last)
                return
            status = "running"
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
        elif kind == "attributions":
            self.send(self.answer_attributions(content.get("id"), content.get("request")))
        elif kind == "counterfactual":
            self.send(self.answer_counterfactual(content.get("id"), content.get("request"),
                                                 content.get("percentile", 50.0), content.get("max_literals", 3)))
        elif kind == "what_if":
            self.send(self.answer_what_if(content.get("literal"), content.get("value"), content.get("request"),
                                          content.get("text")))
        elif kind == "agreement":
            self.send(self.answer_agreement(content.get("request"), content.get("n_users")))
        elif kind == "report":
            self.send(self.answer_report(content.get("request")))
        elif kind == "with_rules":
            self.send(self.answer_with_rules(content.get("k"), content.get("request")))

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

    def _not_ready(self, reply: dict) -> dict | None:
        if not self._exp.done or self._exp.status != "done":
            return reply | {"ok": False, "error": "the explanation is not finished yet"}
        return None

    def answer_with_rules(self, k: Any, request: Any = None) -> dict:
        """Show another point of the fidelity curve, ``exp.with_rules(k)``, or (``k`` None) what was explained.

        Every view then reads that explanation (rules, thresholds, users, the
        counterfactual, what-if); the ``exp`` object in Python is unchanged.
        The results carry ``view``: ``{"with_rules": k, "base_rules": n}``.
        """
        reply: dict = {"type": "with_rules", "request": request, "k": k}
        if (late := self._not_ready(reply)) is not None:
            return late
        try:
            n = check_whole(k, "k", min_value=1, allow_none=True)
            shown = self._base if n is None else self._base.with_rules(n)
            results = ws.results_state(shown)
        except (ValueError, TypeError) as err:  # not pruned, not a whole number: the message says which
            return reply | {"ok": False, "error": str(err)}
        if shown is not self._base:
            results["view"] = {"with_rules": n, "base_rules": len(self._base.rules)}
        self._exp = shown
        self.results = results
        return reply | {"ok": True, "n_rules": len(shown.rules)}

    def answer_report(self, request: Any = None) -> dict:
        """The reply to "Report (HTML)": the standalone report's page as text, for the page to download.

        Returns
        -------
        dict
            ``type``, ``request``, ``ok`` and ``html`` (or ``error``).
        """
        reply: dict = {"type": "report", "request": request}
        if (late := self._not_ready(reply)) is not None:
            return late
        try:
            return reply | {"ok": True, "html": report_html(self._exp)}
        except Exception as err:  # say it in the page; the kernel's handler stays alive
            return reply | {"ok": False, "error": f"{type(err).__name__}: {err}"}

    def answer_attributions(self, user_id: Any, request: Any = None) -> dict:
        """The reply to "Model attributions": the user's attribution strip, or why there is none.

        A model that cannot be reached (given scores, a loaded file) is no
        error: the state says ``available: False`` and the reason in words.
        Any other failure (the model raises) comes back as ``ok: False``.
        """
        reply: dict = {"type": "attributions", "request": request, "id": str(user_id)}
        if (late := self._not_ready(reply)) is not None:
            return late
        try:
            return reply | {"ok": True, "state": ws.attribution_state(self._exp, user_id)}
        except KeyError as err:
            return reply | {"ok": False, "error": str(err.args[0]) if err.args else str(err)}
        except Exception as err:  # the model failed: say so in the page, keep the kernel's handler alive
            return reply | {"ok": False, "error": f"{type(err).__name__}: {err}"}

    def answer_counterfactual(self, user_id: Any, request: Any = None, percentile: Any = 50.0,
                              max_literals: Any = 3) -> dict:
        """The reply to a counterfactual request: the smallest change across ``percentile``.

        Below the percentile for a user at or above it; for a user already
        below, the smallest change that moves them above it (``direction``
        in the payload says which). At most ``max_literals`` literals flip;
        where none reaches the target, the payload holds the nearest score
        reachable (``found`` False, ``new_score`` set).
        """
        reply: dict = {"type": "counterfactual", "request": request, "id": str(user_id)}
        if (late := self._not_ready(reply)) is not None:
            return late
        try:
            u = self._exp.user(ws.resolve_user(self._exp, user_id))
            cf = u.counterfactual(percentile, "below", max_literals)
            if cf.found and not len(cf.changes):  # already below: what would move them up instead
                cf = u.counterfactual(percentile, "above", max_literals)
            return reply | {"ok": True, "counterfactual": cf.to_dict()}
        except KeyError as err:
            return reply | {"ok": False, "error": str(err.args[0]) if err.args else str(err)}
        except Exception as err:  # rules that take no counterfactual (linear terms), a failing model
            return reply | {"ok": False, "error": f"{type(err).__name__}: {err}"}

    def answer_what_if(self, literal: Any, value: Any, request: Any = None, text: Any = None) -> dict:
        """The reply to a typed threshold: coverage of the literal's rules and fidelity, now and moved.

        ``text`` is what the box holds, read the way the card writes the value (a share in percent:
        :func:`~rudi_explain.audit.cards.read_value`); without it ``value`` is the raw number.
        """
        reply: dict = {"type": "what_if", "request": request, "literal": literal}
        if (late := self._not_ready(reply)) is not None:
            return late
        L = self._exp.literals
        try:
            if text is not None:
                i = int(literal)
                if not 0 <= i < len(L.column):
                    raise InputError(f"literal {i} does not exist")
                value = read_value(L, int(L.column[i]), text)
            state = ws.what_if(self._exp, literal, value)
        except (ValueError, TypeError) as err:  # not a number, no such literal: the message says which
            return reply | {"ok": False, "error": str(err)}
        # the moved threshold as a reader reads it (a share as a percent, with the unit); value_text stays the code's
        state["value_shown"] = value_text(L, int(L.column[int(state["literal"])]), state["value"], exact=True)
        return reply | {"ok": True, "state": state}

    def answer_agreement(self, request: Any = None, n_users: Any = None) -> dict:
        """The reply to "Rule-model agreement on held-out users": its distribution, or why there is none.

        Asks the model about a random sample of ``n_users`` held-out users
        (default :data:`widget_state.AGREEMENT_USERS`, 200), in batches; no
        batch starts after :data:`widget_state.AGREEMENT_BUDGET` seconds
        (20). After each batch the page gets ``{"type": "agreement_progress",
        "request": n, "done": k, "of": m}``, so it can say how far it is.
        """
        reply: dict = {"type": "agreement", "request": request}
        if (late := self._not_ready(reply)) is not None:
            return late
        try:
            n = ws.AGREEMENT_USERS if n_users is None else int(n_users)
            if n < 1:
                raise InputError(f"n_users must be at least 1, got {n_users!r}")
        except (TypeError, ValueError) as err:
            return reply | {"ok": False, "error": str(err)}

        def progress(done: int, of: int) -> None:
            self.send({"type": "agreement_progress", "request": request, "done": int(done), "of": int(of)})

        try:
            return reply | {"ok": True, "state": ws.agreement_state(self._exp, n, progress=progress)}
        except Exception as err:  # the model failed: say so in the page, keep the kernel's handler alive
            return reply | {"ok": False, "error": f"{type(err).__name__}: {err}"}

    def __repr__(self) -> str:
        # Stable (no address): notebooks checked by nbval compare the text/plain output.
        results = self.results or {}
        summary = results.get("summary") or {}
        if self.status == "done" and summary:
            return (f"ExplanationWidget(done: {summary['n_rules']} rules, {summary['n_users']:,} users, "
                    f"fidelity {summary['fidelity_test']} held out)")
        # frozen in a saved notebook: say what it needs (the static copy beside it has the result)
        # ("shown while": the text stays as it was when shown, and the job may have ended since)
        return (f"ExplanationWidget(shown while {self.status}; the interactive view needs the running kernel: "
                "re-run the cell)")
