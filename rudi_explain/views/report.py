"""The standalone HTML report: the widget's front end in one self-contained file.

The page inlines the same ES module and CSS as the notebook widget, the
result payloads as JSON and the drill-down of a sample of users, plus a
dozen-line stand-in for the anywidget model. It needs no kernel, no server
and no network: it works opened from disk (``file://``).

Embedding user data in HTML is where injection happens, so: the JSON goes
into ``<script type="application/json">`` with every ``<``, ``>`` and ``&``
written as a ``\\u003c``-style JSON escape (still the same JSON), the
module into a ``text/plain`` script with ``</script`` broken up, and the
module builds its DOM with ``textContent`` only.

Long texts from the data are shortened in the payloads
(:mod:`rudi_explain.views.text`), and the page's size is bounded by
:data:`MAX_REPORT_CHARS` (see :func:`report_html`).
"""

from __future__ import annotations

import html
import json
import sys
import sysconfig
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rudi_explain.exceptions import InputError, MissingFileError
from rudi_explain.views import payloads as ws
from rudi_explain.views.statistics_given import statistics_list
from rudi_explain.views.text import FULL_VALUES_KEY, shorten, shorten_words

if TYPE_CHECKING:
    from rudi_explain.explanation import Explanation

__all__ = ["write_html", "report_html", "audit_header", "sample_users", "front_end", "front_end_dir",
           "MAX_REPORT_CHARS"]

#: The largest report :func:`report_html` writes, in characters (about 2 MB is usual): past it the
#: report embeds fewer users and events (and says so), or raises :class:`~rudi_explain.exceptions.InputError`.
MAX_REPORT_CHARS = 20_000_000

def front_end_dir() -> Path:
    """The folder holding ``explanation.js`` and ``explanation.css``."""
    candidates = [
        Path(__file__).resolve().parents[2] / "widgets",
        Path(sys.prefix) / "share" / "rudi-explain" / "widgets",
        Path(sysconfig.get_path("data")) / "share" / "rudi-explain" / "widgets",
    ]
    for folder in candidates:
        if (folder / "explanation.js").is_file() and (folder / "explanation.css").is_file():
            return folder
    raise MissingFileError("the widget's front end (explanation.js, explanation.css) is missing; looked in "
                            + ", ".join(str(c) for c in candidates))


def front_end() -> tuple[str, str]:
    """The ES module and the CSS, as text."""
    folder = front_end_dir()
    return (folder / "explanation.js").read_text(encoding="utf-8"), \
        (folder / "explanation.css").read_text(encoding="utf-8")


# The model stand-in: get/on/off/send as anywidget's model offers them. A
# drill-down request is answered from the embedded users, asynchronously as
# a kernel would.
_SHIM = """
const state = JSON.parse(document.getElementById("rx-state").textContent);
const users = JSON.parse(document.getElementById("rx-users").textContent);
const listeners = {};
const emit = (name, ...args) => (listeners[name] || []).forEach((f) => f(...args));
const model = {
  get: (key) => state[key],
  set: (key, value) => { state[key] = value; emit("change:" + key); },
  on: (name, f) => { (listeners[name] ||= []).push(f); },
  off: (name, f) => { listeners[name] = (listeners[name] || []).filter((g) => g !== f); },
  save_changes() {},
  send(msg) {
    if (msg && msg.type === "report") {  // the report is this page: a copy of it, before the module drew into it
      const page = document.documentElement.cloneNode(true);
      const app = page.querySelector("#rx-app");
      app.replaceChildren();
      app.removeAttribute("data-ready");
      const html = "<!DOCTYPE html>\\n" + page.outerHTML;
      setTimeout(() => emit("msg:custom", { type: "report", request: msg.request, ok: true, html }, []), 0);
      return;
    }
    if (msg && msg.request !== undefined && msg.type !== "user") {  // the audit views need a kernel: say so
      const reply = { type: msg.type, request: msg.request, id: msg.id, literal: msg.literal, ok: false,
                      error: "this report has no kernel: open the explanation in a notebook for this view" };
      setTimeout(() => emit("msg:custom", reply, []), 0);
      return;
    }
    if (!msg || msg.type !== "user") return;
    const detail = Object.prototype.hasOwnProperty.call(users, msg.id) ? users[msg.id] : null;
    const reply = detail ? { type: "user", request: msg.request, id: msg.id, ok: true, detail }
      : { type: "user", request: msg.request, id: msg.id, ok: false,
          error: "user " + JSON.stringify(msg.id) + " is not in this report; it embeds the drill-down of " +
                 Object.keys(users).length + " users (the top- and lowest-scored, the rule cards' examples, " +
                 "every tenth percentile and a random sample)" };
    setTimeout(() => emit("msg:custom", reply, []), 0);
  },
};
const source = document.getElementById("rx-esm").textContent;
const url = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
const mod = (await import(url)).default;
const widget = typeof mod === "function" ? await mod() : mod;
await widget.initialize?.({ model });
await widget.render({ model, el: document.getElementById("rx-app") });
document.getElementById("rx-app").dataset.ready = "1";
"""

#: The page's Content-Security-Policy: nothing from the network, its own inline script and style only.
_CSP = "default-src 'none'; script-src 'unsafe-inline' blob:; style-src 'unsafe-inline'; img-src data:"

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<title>{title}</title>
<style>
body {{ margin: 16px auto; max-width: 1000px; padding: 0 12px; background: #fff; }}
.rx-report-head {{ font-family: system-ui, sans-serif; color: #59636e; font-size: 12px; margin-bottom: 8px; }}
.rx-audit-head {{ border-collapse: collapse; margin: 6px 0; color: #1f2328; }}
.rx-audit-head th, .rx-audit-head td {{ text-align: left; padding: 1px 8px 1px 0; vertical-align: top; }}
.rx-audit-head code {{ white-space: pre-wrap; word-break: break-word; }}
@media print {{
  body {{ max-width: none; margin: 0; }}
  .rx-report-users {{ display: none; }}
}}
{css}
</style>
</head>
<body>
<div class="rx-report-head">{subtitle}
{audit}
<details class="rx-report-users"><summary>Users in this report</summary><p>{listing}</p></details></div>
<div id="rx-app"></div>
<script type="application/json" id="rx-state">{state}</script>
<script type="application/json" id="rx-users">{users}</script>
<script type="text/plain" id="rx-esm">{esm}</script>
<script type="module">{shim}</script>
<noscript>This report needs JavaScript (no network access is made).</noscript>
</body>
</html>
"""


def _script_json(value: Any) -> str:
    """JSON safe inside a <script> element, and still valid JSON.

    ``<``, ``>`` and ``&`` are written as the JSON escapes ``\\u003c``,
    ``\\u003e`` and ``\\u0026``: the text then holds no ``</script``, no
    ``<!--`` (which would switch the HTML parser into its escaped state) and
    no character reference, while ``JSON.parse`` gives back exactly the same
    strings. U+2028 and U+2029 are escaped as well, for old parsers.
    """
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def sample_users(exp: Explanation, n_users: int = 40, random_state: int = 0) -> list[Any]:
    """Users whose drill-down a report embeds: top-scored, rule-card examples, random.

    About half the budget goes to the highest teacher scores, then the first
    examples of each rule card (so clicks on cards lead somewhere), then a
    random sample. The order is reproducible for a given ``random_state``.
    """
    ids = exp.sequences.users
    chosen: dict[str, Any] = {}

    def add(i: int) -> None:
        if len(chosen) < n_users:
            chosen.setdefault(ws.user_key(ids[i]), ids[i])

    for item in ws.top_users(exp, n=max(1, n_users // 2)):
        add(exp.sequences.user_index(ws.resolve_user(exp, item["id"])))
    for card in ws.rule_cards(exp, n_examples=3):
        for example in card["examples"]:
            add(exp.sequences.user_index(ws.resolve_user(exp, example["id"])))
    rng = np.random.default_rng(random_state)
    for i in rng.permutation(len(ids))[: n_users]:
        add(int(i))
    return list(chosen.values())


def linked_users(results: dict) -> list[str]:
    """User keys the report's views link to: top users, worst explained users, rule-card examples.

    Also the User tab's picks (:func:`~rudi_explain.views.payloads.user_picks`): the lowest-scored,
    the random users and the users at every tenth percentile (a percentile in between may lead to
    a user the report does not hold; the page says so).

    The report embeds the drill-down of each of them, so no link in it leads
    nowhere.
    """
    keys = [u["id"] for u in results.get("top_users", [])]
    keys += [u["id"] for u in results.get("faithful", {}).get("worst", [])]
    picks = results.get("user_picks", {})
    keys += [u["id"] for u in picks.get("bottom", []) + picks.get("random", [])]
    keys += [u["id"] for u in picks.get("by_percentile", [])[::10]]  # every tenth percentile; the rest may be absent
    for card in results.get("rules", []):
        keys += [e["id"] for e in card.get("examples", [])]
    return list(dict.fromkeys(keys))


def audit_header(audit: dict) -> str:
    """The report's audit header: a table of :func:`rudi_explain.views.payloads.audit`, every value escaped."""
    cols = audit["columns"]
    rows = [
        ("Date", audit["date"]),
        ("rudi-explain", audit["version"]),
        ("Data", f"{audit['n_users']:,} users, {audit['n_events']:,} events; columns: "
                 f"{', '.join(cols['categorical']) or 'none'} (categorical), "
                 f"{', '.join(cols['numerical']) or 'none'} (numerical)"),
        ("Model (teacher)", f"{audit['teacher']} (scores: {audit['score_unit']})"),
        ("Rules (student)", audit["student"]),
        ("Seed", str(audit["random_state"])),
        ("Parameters", json.dumps(audit["params"], sort_keys=True, default=str)),
    ]
    body = "".join(f'<tr><th scope="row">{html.escape(k)}</th><td>'
                   + (f"<code>{html.escape(shorten_words(v))}</code>" if k == "Parameters"
                      else html.escape(shorten_words(v))) + "</td></tr>"
                   for k, v in rows)
    if audit.get("statistics"):  # older payloads have none
        body += f'<tr><th scope="row">Statistics</th><td>{statistics_list(audit["statistics"])}</td></tr>'
    return f'<table class="rx-audit-head" aria-label="audit header">{body}</table>'


def _hoist_full_values(results: dict, users: dict[str, dict]) -> tuple[dict[str, dict], dict]:
    """The users' details without their whole values, and the results holding all of them once.

    A long value sits in many users' events: the page carries it once, in the
    results' ``full_values``, which the front end reads for every view.
    """
    merged: dict[str, str | None] = dict(results.get(FULL_VALUES_KEY) or {})
    stripped = {}
    for key, detail in users.items():
        for short, whole in (detail.get(FULL_VALUES_KEY) or {}).items():
            if short in merged and merged[short] != whole:
                merged[short] = None  # two values shorten alike
            else:
                merged[short] = whole
        stripped[key] = {k: v for k, v in detail.items() if k != FULL_VALUES_KEY}
    return stripped, {**results, FULL_VALUES_KEY: merged}


def report_html(exp: Explanation, n_users: int = 40, max_events: int = 100, title: str | None = None,
                max_chars: int = MAX_REPORT_CHARS) -> str:
    """The report as one HTML string; see :func:`write_html`.

    Long texts are shortened in every view (:mod:`rudi_explain.views.text`).
    If the page still holds more than ``max_chars`` characters
    (:data:`MAX_REPORT_CHARS`, 20 million, by default), it is built again with
    half the events per user and half the sampled users, until it fits; its
    header then says how many it holds and why. If it does not fit with only
    the linked users (:func:`linked_users`) and 10 events each, raises
    :class:`~rudi_explain.exceptions.InputError`.
    """
    exp.ready_result("the report")
    esm, css = front_end()
    results = ws.results_state(exp)
    # the User tab's picks beyond the top 15 (kept if results_state carries them already)
    results.setdefault("user_picks", ws.user_picks(exp))
    state = {
        "status": "done",
        "standalone": True,  # the front end leaves out the views that only ask the model
        "progress": ws.progress_state(exp.progress, "done"),
        "chart": ws.thin([p for p in map(ws.chart_point, exp.history) if p is not None]),
        "results": results,
        "error": "",
    }
    linked = linked_users(results)
    asked = (n_users, max_events)
    details: dict[tuple[str, int], dict] = {}

    def detail(key: str, uid: Any, events: int) -> dict:
        if (key, events) not in details:
            details[(key, events)] = ws.user_detail(exp, uid, max_events=events)
        return details[(key, events)]

    while True:
        users = {key: detail(key, ws.resolve_user(exp, key), max_events) for key in linked}
        for uid in sample_users(exp, n_users):
            key = ws.user_key(uid)
            if key not in users:
                users[key] = detail(key, uid, max_events)
        users, whole = _hoist_full_values(results, users)
        sm = results["summary"]
        title = title or f"rudi-explain: {sm['n_rules']} rules for {sm['n_users']:,} users"
        subtitle = ("Standalone report: summary, scorecard, rule cards, thresholds and the drill-down of "
                    f"{len(users)} users: "
                    f"the {len(linked)} the views link to (top- and lowest-scored, rule-card examples, random "
                    "picks, every tenth percentile) and "
                    f"{len(users) - len(linked)} more (type an id or click one). Works offline. The views that ask "
                    "the model (attributions, agreement, counterfactual, what-if) are in the notebook's widget.")
        if (n_users, max_events) != asked:
            subtitle += (f" Reduced to keep the report under {max_chars:,} characters: {n_users} sampled users "
                         f"(of {asked[0]} asked) and {max_events} events per user (of {asked[1]}).")
        listing = ", ".join(shorten(k) for k in users)
        # .format() is safe here: the inserted texts are never formatted again.
        page = _PAGE.format(
            csp=_CSP,
            title=html.escape(shorten_words(title)),
            subtitle=html.escape(subtitle),
            listing=html.escape(listing),
            audit=audit_header(results["audit"]),
            css=css.replace("</", "<\\/"),  # CSS has no data, but keep the style element closed only by us
            state=_script_json({**state, "results": whole}),
            users=_script_json(users),
            esm=esm.replace("</script", "<\\/script").replace("</SCRIPT", "<\\/SCRIPT"),
            shim=_SHIM,
        )
        if len(page) <= max_chars:
            return page
        if n_users == 0 and max_events <= 10:
            raise InputError(f"the report would hold {len(page):,} characters, more than {max_chars:,}, even with "
                             "no sampled users and 10 events per user; call write_html with a larger max_chars")
        n_users, max_events = n_users // 2, max(10, max_events // 2)


def write_html(exp: Explanation, path: str | Path, n_users: int = 40, max_events: int = 100,
               max_chars: int = MAX_REPORT_CHARS) -> Path:
    """Write the standalone report of an explanation.

    Parameters
    ----------
    exp : Explanation
        A finished explanation.
    path : str or Path
        The HTML file to write.
    n_users : int, default=40
        Besides every user a view links to (top users, rule-card examples:
        :func:`linked_users`), whose drill-down is always embedded, up to this
        many more (see :func:`sample_users`); the page lists them all.
    max_events : int, default=100
        Events shown per embedded user.
    max_chars : int, default=MAX_REPORT_CHARS
        The bound on the page's size (20 million characters): past it fewer
        users and events are embedded, and the page says so; see
        :func:`report_html`. Long texts from the data are shown shortened.

    Returns
    -------
    Path
    """
    path = Path(path)
    text = report_html(exp, n_users=n_users, max_events=max_events, max_chars=max_chars)
    tmp = path.with_name(path.name + ".partial")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a failed write leaves nothing behind
        raise
    return path
