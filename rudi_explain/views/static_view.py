"""The explanation as static HTML: what a notebook shows where no kernel runs.

A saved notebook opened without its kernel (nbconvert, GitHub, nbviewer, or
JupyterLab before the cell is re-run) cannot draw the widget: it shows the
``text/html`` the display carried instead. :func:`static_html` writes that
fallback: the summary, what fidelity means, the rules in words and the
fidelity-against-rules curve; every text from the data is escaped, and long
ones shortened (:func:`rudi_explain.views.text.shorten_words`: a long category
value is cut with ``…`` in the middle).
:meth:`Explanation._ipython_display_` sends it beside the widget and replaces
it when a background job ends, so the saved notebook holds the final one.
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

from rudi_explain.rules.formula import format_weight
from rudi_explain.views.text import shorten_words

if TYPE_CHECKING:
    from rudi_explain.explanation import Explanation

__all__ = ["static_html"]

#: rules listed in the fallback (the default explanation keeps at most 10)
MAX_RULES_SHOWN = 30

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
        error = exp.error
        why = f"{type(error).__name__}: {error}" if error is not None else status
        return _box(f"<p><b>rudi-explain: {escape(status)}</b>: {escape(shorten_words(why))}. No rules to show: "
                    "re-run the cell.</p>")
    r = exp.report()
    low, high = r["fidelity_test_ci"]
    parts = [
        f"<p><b>rudi-explain</b>: {r['n_rules']} rules over {r['n_statistics']} statistics explain the "
        f"{escape(shorten_words(str(r['teacher'])))} teacher on {r['n_users']:,} users; "
        f"fidelity <b>{r['fidelity_test']:.3f}</b> "
        f"on {r['n_test']:,} held-out users (95% interval {low:.3f} to {high:.3f}).</p>",
        f"<p style=\"opacity: 0.8\">{escape(r['fidelity_meaning'].rstrip('.'))}. Score unit: "
        f"{escape(str(r['score_unit']))}.</p>",
        _rules_table(exp),
    ]
    curve = _curve_table(exp)
    if curve:
        parts.append(curve)
    parts.append("<p style=\"opacity: 0.8\">A static copy: the rule cards, thresholds and the drill-down into "
                 "one user need the running kernel (re-run the cell).</p>")
    return _box("".join(parts))


def _box(inner: str) -> str:
    return f'<div class="rudi-explain-static" style="{_STYLE}">{inner}</div>'


def _rules_table(exp: Explanation) -> str:
    state = exp.result
    rules = state.rules
    fires = state.fires
    rows = []
    for k, rule in enumerate(rules.rules[:MAX_RULES_SHOWN]):
        coverage = f"{100 * fires[:, k].mean():.0f}%" if fires is not None and fires.shape[1] > k else ""
        rows.append(f"<tr><td style=\"text-align: right; white-space: nowrap\">{escape(format_weight(rule.weight))}"
                    f"</td><td style=\"text-align: left\">{escape(shorten_words(rule.text))}</td>"
                    f"<td style=\"text-align: right\">{coverage}</td></tr>")
    more = len(rules.rules) - MAX_RULES_SHOWN
    if more > 0:
        rows.append(f"<tr><td></td><td style=\"text-align: left\">… and {more} more rules</td><td></td></tr>")
    rows.append(f"<tr><td style=\"text-align: right\">{escape(format_weight(rules.intercept))}</td>"
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
