"""The explanation as static HTML: what a notebook shows where no kernel runs.

A saved notebook opened without its kernel (nbconvert, GitHub, nbviewer, or
JupyterLab before the cell is re-run) cannot draw the widget: it shows the
``text/html`` the display carried instead. :func:`static_html` writes that
fallback: the summary, what fidelity means, the scorecard (each card's bands
and points with a small step chart, then the interaction rules: the text
form's own strings), the rules in words and the fidelity-against-rules curve;
every text from the data is escaped, and long ones shortened
(:func:`rudi_explain.views.text.shorten_words`: a long category value is cut
with ``…`` in the middle).
:meth:`Explanation._ipython_display_` sends it beside the widget and replaces
it when a background job ends, so the saved notebook holds the final one.
"""

from __future__ import annotations

import threading
import uuid
from html import escape
from typing import TYPE_CHECKING, Any

from rudi_explain.rules.values import points_text
from rudi_explain.views.scorecard_view import scorecard_state
from rudi_explain.views.statistics_given import statistics_given, statistics_list
from rudi_explain.views.text import shorten_words

if TYPE_CHECKING:
    from rudi_explain.explanation import Explanation

__all__ = ["static_html", "show", "points_text"]

#: rules listed in the fallback (the default explanation keeps at most 10)
MAX_RULES_SHOWN = 30
#: the job's statuses after which the copy is final
ENDED = ("done", "failed", "cancelled")

_STYLE = ("font-family: sans-serif; font-size: 13px; line-height: 1.4; border: 1px solid #8884; "
          "border-radius: 4px; padding: 8px 12px; max-width: 60em; overflow-x: auto")


def static_html(exp: Explanation) -> str:
    """The explanation's static HTML view: summary, rules in words, fidelity curve.

    Parameters
    ----------
    exp : Explanation
        Finished, still running, failed or cancelled (the text says which).

    Returns
    -------
    str
        One ``<div>``, self-contained (no script, no external resource).
    """
    status = exp.status
    if status in ("pending", "running"):
        stage = exp.progress.message if exp.progress is not None else "starting"
        body = (f"<p><b>rudi-explain: running</b> ({escape(shorten_words(stage))}). The widget shows live "
                "progress in a running notebook; this text is replaced by the result when the job ends. Opened without "
                "the kernel: re-run the cell.</p>")
        return _box(body)
    if status != "done":
        return _box(f"<p><b>rudi-explain: {escape(status)}</b>{escape(shorten_words(_why(exp)))}. No rules to "
                    "show: re-run the cell.</p>")
    r = exp.report()
    low, high = r["fidelity_test_ci"]
    parts = [
        f"<p><b>rudi-explain</b>: {r['n_rules']} rules over {r['n_statistics']} statistics explain the "
        f"{escape(shorten_words(str(r['teacher'])))} teacher on {r['n_users']:,} users; "
        f"fidelity <b>{r['fidelity_test']:.3f}</b> "
        f"on {r['n_test']:,} held-out users (95% interval {low:.3f} to {high:.3f}).</p>",
        f"<p style=\"opacity: 0.8\">{escape(r['fidelity_meaning'].rstrip('.'))}. Score unit: "
        f"{escape(str(r['score_unit']))}.</p>",
    ]
    given = statistics_given(exp)
    parts.append(f'<div style="opacity: 0.8">Statistics: {statistics_list(given)}</div>')
    scorecard = _scorecard_html(exp)
    if scorecard:
        parts.append(scorecard)
    parts.append(_rules_table(exp))
    curve = _curve_table(exp)
    if curve:
        parts.append(curve)
    parts.append("<p style=\"opacity: 0.8\">A static copy: the rule cards, thresholds and the drill-down into "
                 "one user need the running kernel (re-run the cell).</p>")
    return _box("".join(parts))


def show(exp: Explanation) -> None:
    """Display the static copy, then the widget; rewrite the copy whenever the job ends.

    The copy is what a notebook shows where the widget cannot be drawn (nbconvert, GitHub, a
    reopened notebook), so it must say how the job ended, however soon: a job that fails in
    a fraction of a second may end while the copy is being sent. So the listener that rewrites
    it is in place before the copy is made, and once the copy is out it is made again if the
    job ended meanwhile. Every rewrite goes through one lock, in the order made, so a rewrite
    is never overtaken by an older copy. A retried job (the widget's Retry) rewrites it again
    when it ends.
    """
    try:
        from IPython.display import display, update_display
    except ImportError:
        print(repr(exp))
        return
    display_id = f"rudi-explain-{uuid.uuid4().hex}"
    lock = threading.Lock()
    shown: list[Any] = [None]  # what the copy on the page says: (status, where it stopped)

    def write(first: bool = False) -> None:
        with lock:
            said = (exp.status, exp.stop_message)
            if not first and (said == shown[0] or said[0] not in ENDED):
                return
            bundle = {"text/html": static_html(exp), "text/plain": repr(exp)}
            (display if first else update_display)(bundle, raw=True, display_id=display_id)
            shown[0] = said

    def on_end(event: Any) -> None:
        if event.stage in ENDED:
            write()

    exp.on_progress(on_end)  # before the copy is made: an end from now on is heard
    write(first=True)
    write()  # the job ended while the first copy was made or sent
    display(exp.widget())


def _why(exp: Explanation) -> str:
    """After 'failed' or 'cancelled': ': the error' for a failure; where a cancel stopped, said once."""
    said = getattr(exp, "stop_message", "")  # (a stand-in for an explanation may lack it)
    if exp.status == "cancelled":
        return " " + (said.removeprefix("cancelled ") if said else "before it finished")
    error = exp.error
    return ": " + (said or (f"{type(error).__name__}: {error}" if error is not None else "no reason given"))


def _box(inner: str) -> str:
    return f'<div class="rudi-explain-static" style="{_STYLE}">{inner}</div>'


#: the static step chart's size (px): small, its text never under 10 px
_CHART_W, _CHART_H, _CHART_L = 300, 70, 40
_TD = '<td style="text-align: {}; white-space: nowrap">{}</td>'


def _step_svg(card: dict) -> str:
    """A card's points per band as an inline SVG step chart (equal widths, the undefined band first)."""
    vals = [r["value"] or 0.0 for r in card["rows"]]
    if card["linear"]:
        line = card["line"]
        vals = [v for r, v in zip(card["rows"], vals) if r["band"] < 0] + [line["points_lo"] or 0.0,
                                                                           line["points_hi"] or 0.0]
    lo, hi = min(0.0, *vals), max(0.0, *vals)
    top, height = 6, _CHART_H - 20

    def y(v: float) -> float:
        return top + height * (1 - (v - lo) / ((hi - lo) or 1))

    width = (_CHART_W - _CHART_L - 4) / max(1, len(vals) - (1 if card["linear"] else 0))
    marks = [f'<line x1="{_CHART_L}" x2="{_CHART_W - 4}" y1="{y(0):.1f}" y2="{y(0):.1f}" stroke="#888" '
             'stroke-dasharray="3 2"/>']
    if card["linear"]:
        n_und = len(vals) - 2
        for k in range(n_und):
            a = _CHART_L + k * width
            marks.append(f'<line x1="{a + 2:.1f}" x2="{a + width - 2:.1f}" y1="{y(vals[k]):.1f}" y2="{y(vals[k]):.1f}" '
                         'stroke="currentColor" stroke-width="2"/>')
        a = _CHART_L + n_und * width
        marks.append(f'<line x1="{a + 2:.1f}" x2="{_CHART_W - 6:.1f}" y1="{y(vals[-2]):.1f}" y2="{y(vals[-1]):.1f}" '
                     'stroke="currentColor" stroke-width="2"/>')
    else:
        for k, v in enumerate(vals):
            a = _CHART_L + k * width
            marks.append(f'<line x1="{a + 2:.1f}" x2="{a + width - 2:.1f}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
                         'stroke="currentColor" stroke-width="2"/>')
    text = 'font-size="10" fill="currentColor" text-anchor="end"'
    marks.append(f'<text x="{_CHART_L - 4}" y="{y(hi) + 8:.1f}" {text}>{escape(points_text(hi))}</text>')
    marks.append(f'<text x="{_CHART_L - 4}" y="{y(lo):.1f}" {text}>{escape(points_text(lo))}</text>')
    marks.append(f'<text x="{_CHART_W - 4}" y="{_CHART_H - 3}" {text}>bands, low to high</text>')
    return (f'<svg width="{_CHART_W}" height="{_CHART_H}" viewBox="0 0 {_CHART_W} {_CHART_H}" role="img" '
            f'aria-label="points per band of {escape(shorten_words(card["name"]), quote=True)}">'
            + "".join(marks) + "</svg>")


def _scorecard_html(exp: Explanation) -> str:
    """The scorecard first: the headline, each card's rows (the text form's strings) and chart, the interaction
    rules; "" for a rule list."""
    try:
        sc = scorecard_state(exp)
    except Exception:  # a stand-in or an older result without a scorecard: the rules table still shows
        return ""
    if sc is None:
        return ""
    parts = [f"<p><b>Scorecard</b>: <code>{escape(shorten_words(sc['headline']))}</code></p>"]
    if sc.get("choice"):  # which form of scorecard explain() kept, and on what evidence
        parts.append(f"<p class='rudi-explain-choice'>{escape(' '.join(sc['choice']))}</p>")
    for card in sc["cards"]:
        rows = "".join("<tr>" + _TD.format("left", escape(shorten_words(r["label"])))
                       + "".join(_TD.format("right", escape(r[k])) for k in ("points", "users", "teacher")) + "</tr>"
                       for r in card["rows"])
        notes = "".join(f"<p style='opacity: 0.8; margin: 2px 0'>note on '{escape(shorten_words(r['label']))}': "
                        f"{escape(shorten_words(r['note']))}</p>" for r in card["rows"] if r["note"])
        parts.append(f"<div class='rudi-explain-card' style='margin: 6px 0'><b>{escape(shorten_words(card['name']))}"
                     "</b><div style='display: flex; flex-wrap: wrap; gap: 4px 16px; align-items: center'>"
                     "<table><thead><tr><th style='text-align: left'>band</th><th>points</th><th>users</th>"
                     f"<th>teacher</th></tr></thead><tbody>{rows}</tbody></table>{_step_svg(card)}</div>{notes}</div>")
    inter = sc["interactions"]
    if inter:
        # (nowrap first: the rules table's weight cells, which tests/views/test_number_style.py reads, stay its own)
        rows = "".join(f"<tr><td style='white-space: nowrap; text-align: right'>{escape(r['weight_text'])}</td>"
                       + f"<td style='text-align: left'>{escape(shorten_words(r['text']))}</td>"
                       + _TD.format("right", escape(r["users"])) + "</tr>" for r in inter)
        parts.append("<table><thead><tr><th>points</th><th style='text-align: left'>interaction rule (fires when "
                     f"it holds)</th><th>users</th></tr></thead><tbody>{rows}</tbody></table>")
    return "<div class='rudi-explain-scorecard'>" + "".join(parts) + "</div>"


def _rules_table(exp: Explanation) -> str:
    state = exp.result
    rules = state.rules
    fires = state.fires
    rows = []
    for k, rule in enumerate(rules.rules[:MAX_RULES_SHOWN]):
        coverage = f"{100 * fires[:, k].mean():.0f}%" if fires is not None and fires.shape[1] > k else ""
        rows.append(f"<tr><td style=\"text-align: right; white-space: nowrap\">{escape(points_text(rule.weight))}"
                    f"</td><td style=\"text-align: left\">{escape(shorten_words(rule.text))}</td>"
                    f"<td style=\"text-align: right\">{coverage}</td></tr>")
    more = len(rules.rules) - MAX_RULES_SHOWN
    if more > 0:
        rows.append(f"<tr><td></td><td style=\"text-align: left\">… and {more} more rules</td><td></td></tr>")
    rows.append(f"<tr><td style=\"text-align: right\">{escape(points_text(rules.intercept))}</td>"
                "<td style=\"text-align: left\">(intercept: every user's starting score)</td><td></td></tr>")
    # JupyterLab's and nbconvert's stylesheets right-align every table cell: sentences read from the left
    return ("<table><thead><tr><th>weight</th><th style=\"text-align: left\">"
            "rule (a user's score is the intercept plus the weights of the "
            "rules that hold)</th><th>users</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>")


def _curve_table(exp: Explanation) -> str:
    """Fidelity against the number of rules (held out), the default marked; "" when not pruned."""
    if exp.pruning is None:
        return ""
    curve = exp.fidelity_curve
    cells = "".join(
        f"<td style=\"text-align: center{'; font-weight: bold' if row.default else ''}\">"
        f"{int(row.n_rules)}<br>{row.fidelity_test:.3f}</td>" for row in curve.itertuples())
    return ("<p>Fidelity on held-out users against the number of rules (bold: the rules above; "
            "<code>exp.with_rules(k)</code> picks another point):</p>"
            f"<table><tbody><tr>{cells}</tr></tbody></table>")
