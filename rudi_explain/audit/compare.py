"""Compare two explanations: model v1 against v2, or two seeds of one job.

``rx.compare(exp_a, exp_b)`` matches what the two explanations say:

* **statistics** by their equivalence key (``Statistic.key``: two spellings
  of one statistic are the same statistic): kept, gained (only in B) or
  lost (only in A);
* **rules** by their formulas over statistic outputs: *kept* (the same
  literals, thresholds and weight), *weight changed* (the same literals and
  thresholds), *threshold moved* (the same formula over the same outputs,
  some threshold moved; the weight may have changed too), *gained* or
  *lost*. A literal is identified by its statistic's key, its output and
  its threshold, so literal indices and rule order do not matter;
* **users** scored by both (by user id) whose set of fired rules changed,
  with matched rules counted as one rule (a rule whose threshold moved and
  that fires for the user in both has not changed for them);
* the held-out **fidelity** of each.
"""

from __future__ import annotations

import html
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from rudi_explain.rules.formula import Const, Lit
from rudi_explain.rules.ruleset import LinearTerm
from rudi_explain.rules.values import format_value

if TYPE_CHECKING:
    from rudi_explain.explanation import Explanation

__all__ = ["compare", "Comparison", "RULE_STATUSES"]

#: How a rule of A relates to B, in the order the summary lists them.
RULE_STATUSES = ("threshold moved", "weight changed", "gained", "lost", "kept")
#: Weights this close (relative) are the same weight.
WEIGHT_TOLERANCE = 1e-9
#: Rows of each table in the HTML view.
HTML_ROWS = 20


@dataclass
class Comparison:
    """What changed from explanation A to explanation B (:func:`compare`).

    Attributes
    ----------
    names : tuple of str
        What to call A and B.
    statistics : DataFrame
        One row per statistic of either: ``status`` (kept, gained, lost),
        ``statistic_a``, ``statistic_b`` (its text in each; None where
        absent), ``words``.
    rules : DataFrame
        One row per rule of either: ``status`` (see :data:`RULE_STATUSES`),
        ``rule_a``, ``rule_b`` (indices into each explanation's rules, or -1),
        ``text_a``, ``text_b``, ``weight_a``, ``weight_b``, ``moved`` (the
        thresholds that moved: "words: 14 -> 12"), ``coverage_a``,
        ``coverage_b`` (share of each explanation's users it fires for).
    users : DataFrame
        The users scored by both whose set of fired rules changed:
        ``user``, ``n_fired_a``, ``n_fired_b``, ``n_now_fire``,
        ``n_no_longer_fire``, ``score_a``, ``score_b`` (rule scores).
    firing : DataFrame
        The same changes, one row per user and rule: ``user``, ``rule``
        (its text, B's where it has one), ``rule_a``, ``rule_b``, ``change``
        ("now fires" or "no longer fires").
    fidelity : dict
        ``{"a": ..., "b": ...}``: each explanation's held-out fidelity.
    n_common : int
        Users scored by both.
    n_users : tuple of int
        Users of A and of B.
    """

    names: tuple
    statistics: pd.DataFrame
    rules: pd.DataFrame
    users: pd.DataFrame
    firing: pd.DataFrame
    fidelity: dict
    n_common: int
    n_users: tuple

    @property
    def unchanged(self) -> bool:
        """Whether B says exactly what A says: same statistics and rules, and no user's firing changed."""
        return bool((self.statistics["status"] == "kept").all() and (self.rules["status"] == "kept").all()
                    and self.users.empty)

    def counts(self) -> dict:
        """Statistics and rules by status, and the users whose firing changed."""
        st = self.statistics["status"].value_counts()
        ru = self.rules["status"].value_counts()
        return {"statistics": {k: int(st.get(k, 0)) for k in ("kept", "gained", "lost")},
                "rules": {k: int(ru.get(k, 0)) for k in RULE_STATUSES},
                "users_changed": int(len(self.users)), "users_common": int(self.n_common)}

    def summary(self) -> str:
        """What changed, in a few lines of text."""
        a, b = self.names
        c = self.counts()
        lines = [f"{a} -> {b}: {self.n_users[0]:,} and {self.n_users[1]:,} users, {self.n_common:,} in both"]
        st = c["statistics"]
        lines.append(f"statistics: {st['kept']} kept, {st['gained']} gained, {st['lost']} lost")
        for status, sign, col in (("gained", "+", "statistic_b"), ("lost", "-", "statistic_a")):
            for text in self.statistics.loc[self.statistics["status"] == status, col]:
                lines.append(f"  {sign} {text}")
        ru = c["rules"]
        lines.append("rules: " + ", ".join(f"{ru[k]} {k}" for k in RULE_STATUSES))
        for r in self.rules.itertuples():
            if r.status == "threshold moved":
                weight = "" if _same_weight(r.weight_a, r.weight_b) else \
                    f"; weight {_w(r.weight_a)} -> {_w(r.weight_b)}"
                lines.append(f"  ~ {r.text_b} ({r.moved}{weight})")
            elif r.status == "weight changed":
                lines.append(f"  ~ {r.text_b} (weight {_w(r.weight_a)} -> {_w(r.weight_b)})")
            elif r.status == "gained":
                lines.append(f"  + {_w(r.weight_b)}  {r.text_b}")
            elif r.status == "lost":
                lines.append(f"  - {_w(r.weight_a)}  {r.text_a}")
        share = f" ({len(self.users) / self.n_common:.0%})" if self.n_common else ""
        lines.append(f"users whose fired rules changed: {len(self.users):,} of {self.n_common:,}{share}")
        fa, fb = self.fidelity["a"], self.fidelity["b"]
        lines.append(f"held-out fidelity: {a} {fa:.3f}, {b} {fb:.3f} ({fb - fa:+.3f})")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.summary()

    def _repr_html_(self) -> str:
        """The comparison as a notebook view: the summary, then the rules, statistics and users that changed.

        Every string is escaped. Colours: the text, borders and header fill
        follow JupyterLab's theme variables, with fallbacks that read on a
        light or dark page (``inherit``, translucent greys); the status pills
        set their text and fill together, with dark-theme values, at 4.5:1 or
        more. Each table sits in a box that scrolls sideways, so a narrow
        notebook (640 px) shows the page's width and scrolls only the table.
        """
        a, b = (html.escape(n) for n in self.names)
        c = self.counts()
        order = {k: i for i, k in enumerate(RULE_STATUSES)}
        rules = self.rules.sort_values("status", key=lambda s: s.map(order), kind="stable")
        # One text per rule (B's where it has one): A's differs only in the thresholds "moved" lists.
        rules = rules.assign(text=rules["text_b"].where(rules["text_b"].notna(), rules["text_a"]))
        stats = self.statistics.assign(
            notation=self.statistics["statistic_b"].where(self.statistics["statistic_b"].notna(),
                                                          self.statistics["statistic_a"]))
        fa, fb = self.fidelity["a"], self.fidelity["b"]
        head = (f'<div class="rudi-compare-head"><strong>{a}</strong> &rarr; <strong>{b}</strong>: '
                f'held-out fidelity {fa:.3f} &rarr; {fb:.3f} ({fb - fa:+.3f}); rules: '
                + ", ".join(f'{c["rules"][k]} {_pill(k)}' for k in RULE_STATUSES if c["rules"][k]) + "; statistics: "
                + ", ".join(f'{c["statistics"][k]} {_pill(k)}' for k in ("gained", "lost", "kept")
                            if c["statistics"][k])
                + f'; users whose fired rules changed: {c["users_changed"]:,} of {c["users_common"]:,}</div>')
        parts = [f"<style>{_CSS}</style>", head,
                 f'<details class="rudi-compare-details"><summary>summary as text</summary>'
                 f'<pre class="rudi-compare-summary">{html.escape(self.summary())}</pre></details>']
        tables = (
            # the figures before the moves: at 640 px the weights show without scrolling
            ("rules", rules, [("status", "status", "pill"), ("text", "rule", "text"),
                              ("weight_a", f"weight {self.names[0]}", "w"),
                              ("weight_b", f"weight {self.names[1]}", "w"),
                              ("coverage_a", f"coverage {self.names[0]}", "pct"),
                              ("coverage_b", f"coverage {self.names[1]}", "pct")]
             + ([("moved", f"thresholds moved ({self.names[0]} -> {self.names[1]})", "text")]
                if (rules["moved"].fillna("") != "").any() else [])),
            ("statistics", stats, [("status", "status", "pill"), ("words", "statistic", "text")]
             + ([("notation", "notation", "code")] if (stats["notation"] != stats["words"]).any() else [])),
            ("users whose fired rules changed", self.users,
             [("user", "user", "text"), ("n_fired_a", f"rules fired {self.names[0]}", "int"),
              ("n_fired_b", f"rules fired {self.names[1]}", "int"), ("n_now_fire", "now fire", "int"),
              ("n_no_longer_fire", "no longer fire", "int"), ("score_a", f"rule score {self.names[0]}", "num"),
              ("score_b", f"rule score {self.names[1]}", "num")]),
        )
        for title, frame, columns in tables:
            shown = frame.head(HTML_ROWS)
            more = f" (first {HTML_ROWS} of {len(frame):,})" if len(frame) > HTML_ROWS else f" ({len(frame):,})"
            parts.append(f'<h4 class="rudi-compare-title">{html.escape(title)}{more}</h4>')
            parts.append(f'<div class="rudi-compare-scroll">{_html_table(shown, columns)}</div>')
        return '<div class="rudi-compare">' + "\n".join(parts) + "</div>"


#: The view's style, scoped to .rudi-compare. Base colours inherit the page's (any theme, any front end);
#: JupyterLab's variables where it has them; the pills' pairs are our own (light, then dark theme).
_CSS = """
.rudi-compare { color: inherit; max-width: 100%; font-size: var(--jp-content-font-size1, 13px); line-height: 1.45; }
.rudi-compare-head { margin: 2px 0 6px; overflow-wrap: anywhere; }
.rudi-compare-details > summary { cursor: pointer; color: inherit; opacity: 0.85; }
.rudi-compare-summary { white-space: pre-wrap; overflow-wrap: anywhere; margin: 4px 0; padding: 6px 8px;
  background: var(--jp-layout-color2, rgba(127, 127, 127, 0.12)); color: inherit; border-radius: 3px; }
.rudi-compare-title { margin: 12px 0 4px; font-size: 1em; }
.rudi-compare-scroll { overflow-x: auto; max-width: 100%; }
.rudi-compare table.rudi-compare-table { border-collapse: collapse; margin: 0; font-size: 12px; color: inherit;
  table-layout: auto; width: auto; }
.rudi-compare table.rudi-compare-table th, .rudi-compare table.rudi-compare-table td {
  border: 1px solid var(--jp-border-color2, rgba(127, 127, 127, 0.35)); padding: 3px 6px; vertical-align: top;
  text-align: left; color: inherit; background: transparent; }
.rudi-compare table.rudi-compare-table th { background: var(--jp-layout-color2, rgba(127, 127, 127, 0.12));
  font-weight: 600; white-space: nowrap; }
.rudi-compare table.rudi-compare-table td.rc-text { min-width: 14em; max-width: 32em; white-space: normal; }
.rudi-compare table.rudi-compare-table td.rc-code { font-family: var(--jp-code-font-family, monospace);
  min-width: 12em; max-width: 28em; white-space: normal; overflow-wrap: anywhere; }
.rudi-compare table.rudi-compare-table td.rc-num { text-align: right; font-variant-numeric: tabular-nums;
  white-space: nowrap; }
.rudi-compare .rc-pill { display: inline-block; padding: 0 6px; border-radius: 8px; border: 1px solid;
  white-space: nowrap; font-size: 11px; line-height: 1.5; }
.rudi-compare .rc-gained { color: #1e5f2b; background: #ebfbee; border-color: #8ce99a; }
.rudi-compare .rc-lost { color: #a51d1d; background: #fff5f5; border-color: #ffa8a8; }
.rudi-compare .rc-moved { color: #6b4a00; background: #fff8c5; border-color: #d4a72c; }
.rudi-compare .rc-changed { color: #174f86; background: #e7f5ff; border-color: #74c0fc; }
.rudi-compare .rc-kept { color: #3d444d; background: #f1f3f5; border-color: #ced4da; }
body[data-jp-theme-light="false"] .rudi-compare .rc-gained { color: #b2f2bb; background: #1b3a24; border-color: #2b8a3e; }
body[data-jp-theme-light="false"] .rudi-compare .rc-lost { color: #ffc9c9; background: #4a1f1f; border-color: #c92a2a; }
body[data-jp-theme-light="false"] .rudi-compare .rc-moved { color: #ffec99; background: #3d3417; border-color: #bf8700; }
body[data-jp-theme-light="false"] .rudi-compare .rc-changed { color: #a5d8ff; background: #16324f; border-color: #1971c2; }
body[data-jp-theme-light="false"] .rudi-compare .rc-kept { color: #dee2e6; background: #2b3035; border-color: #495057; }
"""  # noqa: E501  (one CSS rule a line, as the test of its colours reads them)

_PILL_CLASS = {"gained": "rc-gained", "lost": "rc-lost", "threshold moved": "rc-moved", "weight changed": "rc-changed",
               "kept": "rc-kept"}


def _pill(status: str) -> str:
    return f'<span class="rc-pill {_PILL_CLASS.get(status, "rc-kept")}">{html.escape(str(status))}</span>'


def _cell(value: Any, kind: str) -> str:
    """One escaped table cell; missing values empty."""
    missing = value is None or value is pd.NA or (isinstance(value, float) and not np.isfinite(value))
    if kind == "pill":
        return f"<td>{_pill(str(value))}</td>"
    if kind in ("text", "code"):
        return f'<td class="rc-{kind}">{"" if missing else html.escape(str(value))}</td>'
    if missing:
        return '<td class="rc-num"></td>'
    text = {"w": lambda x: f"{x:+.4g}", "pct": lambda x: f"{100 * x:.1f}%", "int": lambda x: f"{int(x):,}",
            "num": lambda x: f"{x:.4g}"}[kind](value)
    return f'<td class="rc-num">{html.escape(text)}</td>'


def _html_table(frame: pd.DataFrame, columns: list[tuple[str, str, str]]) -> str:
    """An HTML table of ``frame``'s ``columns`` ((column, header, kind)): headers and cells escaped."""
    head = "".join(f'<th scope="col">{html.escape(h)}</th>' for _, h, _ in columns)
    if frame.empty:
        body = f'<tr><td colspan="{len(columns)}">none</td></tr>'
    else:
        body = "".join("<tr>" + "".join(_cell(v, kind) for v, (_, _, kind) in zip(row, columns)) + "</tr>"
                       for row in frame[[c for c, _, _ in columns]].itertuples(index=False, name=None))
    return f'<table class="rudi-compare-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _w(x: float) -> str:
    return f"{x:+.4g}"


# ------------------------------------------------------------------ keys
def _output_keys(literals: Any) -> list:
    """A key per statistic output that is the same in any explanation: statistic key and output name."""
    L = literals
    if L.statistics is None:
        return [("output", name) for name in L.output_names]
    out = []
    for c in range(L.n_outputs):
        stat = L.statistics[int(L.output_statistic[c])]
        name = L.output_names[c]
        out.append((stat.key, "" if name == str(stat) else name))
    return out


def _canon(f: Any, L: Any, outputs: list) -> tuple[tuple, list]:
    """A formula in canonical form: (skeleton without thresholds, thresholds in skeleton order).

    Children of AND/OR are sorted by their skeleton, so the order the
    student wrote them in does not matter.
    """
    if isinstance(f, Lit):
        c = int(L.column[f.index])
        return ("lit", outputs[c], bool(f.negated)), [(float(L.thresholds[f.index]), c)]
    if isinstance(f, Const):
        return ("const", bool(f.value)), []
    kids = sorted((_canon(x, L, outputs) for x in f.children), key=lambda k: (repr(k[0]), [t for t, _ in k[1]]))
    return (type(f).__name__, tuple(k[0] for k in kids)), [t for k in kids for t in k[1]]


def _rule_keys(exp: Explanation) -> list[tuple]:
    """Per rule: (skeleton, thresholds with their outputs)."""
    L = exp.literals
    outputs = _output_keys(L)
    keys: list[tuple] = []
    for rule in exp.rules:
        if isinstance(rule, LinearTerm):
            keys.append((("linear", outputs[rule.column]), []))
        else:
            keys.append(_canon(rule.formula, L, outputs))
    return keys


def _same_weight(a: float, b: float) -> bool:
    return bool(np.isclose(a, b, rtol=WEIGHT_TOLERANCE, atol=0.0))


def _match_rules(exp_a: Explanation, exp_b: Explanation) -> list[tuple[int, int, str]]:
    """(rule of A or -1, rule of B or -1, status) for every rule of either."""
    ka, kb = _rule_keys(exp_a), _rule_keys(exp_b)
    wa = [r.weight for r in exp_a.rules]
    wb = [r.weight for r in exp_b.rules]
    left_a, left_b = list(range(len(ka))), list(range(len(kb)))
    out = []
    for exact in (True, False):  # first the same thresholds, then the same formula with thresholds moved
        pool: dict = defaultdict(list)
        for j in left_b:
            pool[(kb[j][0], tuple(t for t, _ in kb[j][1])) if exact else kb[j][0]].append(j)
        still = []
        for i in left_a:
            key = (ka[i][0], tuple(t for t, _ in ka[i][1])) if exact else ka[i][0]
            if pool.get(key):
                # of several candidates, the one whose weight is nearest
                j = min(pool[key], key=lambda j: abs(wb[j] - wa[i]))
                pool[key].remove(j)
                left_b.remove(j)
                status = ("kept" if _same_weight(wa[i], wb[j]) else "weight changed") if exact else "threshold moved"
                out.append((i, j, status))
            else:
                still.append(i)
        left_a = still
    out += [(i, -1, "lost") for i in left_a] + [(-1, j, "gained") for j in left_b]
    return out


def _moved_text(exp_a: Explanation, exp_b: Explanation, i: int, j: int) -> str:
    """The thresholds that moved between matched rules: "words: 14 -> 12"."""
    ta = _rule_keys_one(exp_a, i)
    tb = _rule_keys_one(exp_b, j)
    L = exp_a.literals
    parts = []
    for (x, c), (y, _) in zip(ta, tb):  # aligned: the two formulas have one skeleton
        if x != y:
            a, b = (format_value(v, L.output_kind[c], L.output_unit[c], exact=True) for v in (x, y))
            parts.append(f"{L.output_descriptions[c]}: {a} -> {b}")
    return "; ".join(parts)


def _rule_keys_one(exp: Explanation, k: int) -> list:
    rule = exp.rules[k]
    if isinstance(rule, LinearTerm):
        return []
    return _canon(rule.formula, exp.literals, _output_keys(exp.literals))[1]


# ------------------------------------------------------------------ compare
def compare(exp_a: Explanation, exp_b: Explanation, names: tuple[str, str] = ("A", "B")) -> Comparison:
    """What changed from explanation ``exp_a`` to ``exp_b``.

    Parameters
    ----------
    exp_a, exp_b : Explanation
        E.g. the same job on two model versions, or with two seeds.
    names : tuple of str, default=("A", "B")
        What to call them in the summary.

    Returns
    -------
    Comparison
        ``summary()``, DataFrames ``statistics``, ``rules``, ``users``,
        ``firing``, the ``fidelity`` of each; shown as HTML in a notebook.
    """
    fires_a = exp_a.ready_result("rx.compare()").fires
    fires_b = exp_b.ready_result("rx.compare()").fires
    # statistics, by equivalence key
    keys_a = {s.key: s for s in exp_a.statistics}
    keys_b = {s.key: s for s in exp_b.statistics}
    seqs = exp_a.sequences
    rows: list[tuple[str, str | None, str | None, str]] = []
    for key, s in keys_a.items():
        other = keys_b.get(key)
        rows.append(("kept" if other is not None else "lost", str(s), None if other is None else str(other),
                     s.describe(data=seqs) if s.n_outputs(seqs) == 1 else str(s)))
    for key, s in keys_b.items():
        if key not in keys_a:
            rows.append(("gained", None, str(s), s.describe(data=exp_b.sequences) if
                         s.n_outputs(exp_b.sequences) == 1 else str(s)))
    statistics = pd.DataFrame(rows, columns=["status", "statistic_a", "statistic_b", "words"])

    # rules
    pairs = _match_rules(exp_a, exp_b)
    cov_a = fires_a.mean(axis=0) if len(fires_a) else np.zeros(len(exp_a.rules))
    cov_b = fires_b.mean(axis=0) if len(fires_b) else np.zeros(len(exp_b.rules))
    rrows = []
    for i, j, status in pairs:
        ra = exp_a.rules[i] if i >= 0 else None
        rb = exp_b.rules[j] if j >= 0 else None
        rrows.append({
            "status": status, "rule_a": i, "rule_b": j,
            "text_a": str(ra.text) if ra is not None else None, "text_b": str(rb.text) if rb is not None else None,
            "weight_a": float(ra.weight) if ra is not None else np.nan,
            "weight_b": float(rb.weight) if rb is not None else np.nan,
            "moved": _moved_text(exp_a, exp_b, i, j) if status == "threshold moved" else "",
            "coverage_a": float(cov_a[i]) if i >= 0 else np.nan, "coverage_b": float(cov_b[j]) if j >= 0 else np.nan,
        })
    rules = pd.DataFrame(rrows, columns=["status", "rule_a", "rule_b", "text_a", "text_b", "weight_a", "weight_b",
                                         "moved", "coverage_a", "coverage_b"])

    # users scored by both, by id: their fired rules as sets of matched rules
    users_a = pd.Index(exp_a.sequences.users)
    users_b = pd.Index(exp_b.sequences.users)
    common = users_a.intersection(users_b, sort=False)
    common = common.sort_values() if len(common) else common
    ia, ib = users_a.get_indexer(common), users_b.get_indexer(common)
    n_ids = len(pairs)
    col_a = np.array([p for p, (i, _, _) in enumerate(pairs) if i >= 0], dtype=np.int64)
    col_b = np.array([p for p, (_, j, _) in enumerate(pairs) if j >= 0], dtype=np.int64)
    rule_a = np.array([i for i, _, _ in pairs if i >= 0], dtype=np.int64)
    rule_b = np.array([j for _, j, _ in pairs if j >= 0], dtype=np.int64)
    Fa = np.zeros((len(common), n_ids), dtype=bool)
    Fb = np.zeros((len(common), n_ids), dtype=bool)
    if len(rule_a):
        Fa[:, col_a] = fires_a[ia][:, rule_a]
    if len(rule_b):
        Fb[:, col_b] = fires_b[ib][:, rule_b]
    diff = Fa != Fb
    changed = np.flatnonzero(diff.any(axis=1))
    sa = exp_a.student_scores.to_numpy(dtype=np.float64)
    sb = exp_b.student_scores.to_numpy(dtype=np.float64)
    ids = np.asarray(common, dtype=object)
    users = pd.DataFrame({
        "user": ids[changed],
        "n_fired_a": Fa[changed].sum(axis=1), "n_fired_b": Fb[changed].sum(axis=1),
        "n_now_fire": (Fb & ~Fa)[changed].sum(axis=1), "n_no_longer_fire": (Fa & ~Fb)[changed].sum(axis=1),
        "score_a": sa[ia[changed]], "score_b": sb[ib[changed]],
    })
    r, p = np.nonzero(diff)
    label = np.array([rr["text_b"] if rr["text_b"] is not None else rr["text_a"] for rr in rrows] or [""],
                     dtype=object)
    firing = pd.DataFrame({
        "user": ids[r], "rule": label[p] if len(p) else np.zeros(0, dtype=object),
        "rule_a": np.array([pairs[k][0] for k in p], dtype=np.int64),
        "rule_b": np.array([pairs[k][1] for k in p], dtype=np.int64),
        "change": np.where(Fb[r, p], "now fires", "no longer fires"),
    })
    fidelity = {"a": float(exp_a.report()["fidelity_test"]), "b": float(exp_b.report()["fidelity_test"])}
    return Comparison(names=tuple(str(n) for n in names), statistics=statistics, rules=rules, users=users,
                      firing=firing, fidelity=fidelity, n_common=int(len(common)),
                      n_users=(int(exp_a.sequences.n_users), int(exp_b.sequences.n_users)))
