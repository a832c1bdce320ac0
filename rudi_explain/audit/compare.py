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
* the held-out **fidelity** of each;
* where both are scorecards, **cards** by their statistic output (the same
  equivalence key and output): kept, changed, gained or lost; and of a
  matched card its **bands**: kept, moved (an edge moved from x to y, the
  edges paired in order, equal ones first), points changed (by more than
  ``points_tolerance``), gained (a band split off) or lost (bands merged).
  The rules over one output are the cards' bands; the summary lists the
  rules over two or more, the interaction rules, matched as above.
"""

from __future__ import annotations

import html
import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from rudi_explain.rules.formula import Const, Lit, formula_literals
from rudi_explain.rules.ruleset import LinearTerm
from rudi_explain.rules.values import format_value, points_text

if TYPE_CHECKING:
    from rudi_explain.explanation import Explanation

__all__ = ["compare", "Comparison", "RULE_STATUSES", "CARD_STATUSES", "BAND_STATUSES", "align_edges"]

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
    cards : DataFrame
        Where both explanations are scorecards (else empty), one row per card of
        either, matched by statistic output: ``status`` (see
        :data:`CARD_STATUSES`), ``card`` (its output in words), ``card_a``,
        ``card_b`` (indices into each scorecard's cards, or -1), ``form_a``,
        ``form_b`` ("bands" or "linear"), ``n_bands_a``, ``n_bands_b``,
        ``bands_gained``, ``bands_lost``, ``bands_moved``, ``points_changed``
        (counts of bands) and ``edges_moved`` ("edge moved from 60 EUR to 50 EUR").
    bands : DataFrame
        One row per band of those cards: ``card``, ``status`` (see
        :data:`BAND_STATUSES`), ``band_a``, ``band_b`` (in words), ``moved``,
        ``points_a``, ``points_b``, ``points_changed``, ``share_a``, ``share_b``
        (the training users' share, a fraction) and ``users_a``, ``users_b``
        (the same as percents), ``card_a``, ``card_b``, ``index_a``,
        ``index_b`` (band indices: -1 undefined, -2 absent).
    points_tolerance : float
        Points closer than this are the same points.
    """

    names: tuple
    statistics: pd.DataFrame
    rules: pd.DataFrame
    users: pd.DataFrame
    firing: pd.DataFrame
    fidelity: dict
    n_common: int
    n_users: tuple
    cards: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=_CARD_COLUMNS))
    bands: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=_BAND_COLUMNS))
    points_tolerance: float = 0.0

    @property
    def by_card(self) -> bool:
        """Whether both explanations are scorecards, compared card by card."""
        return "part" in self.rules and bool((self.rules["part"] != "rule").any() or len(self.cards))

    @property
    def unchanged(self) -> bool:
        """Whether B says exactly what A says: same statistics and rules, and no user's firing changed."""
        return bool((self.statistics["status"] == "kept").all() and (self.rules["status"] == "kept").all()
                    and self.users.empty and (self.cards["status"] == "kept").all()
                    and (self.bands["status"] == "kept").all())

    def counts(self) -> dict:
        """Statistics, rules, interaction rules, cards and bands by status, and the users whose firing changed."""
        st = self.statistics["status"].value_counts()
        ru = self.rules["status"].value_counts()
        inter = self.rules.loc[self.rules["part"] == "interaction", "status"].value_counts() \
            if "part" in self.rules else ru.iloc[:0]
        ca, ba = self.cards["status"].value_counts(), self.bands["status"].value_counts()
        return {"statistics": {k: int(st.get(k, 0)) for k in ("kept", "gained", "lost")},
                "rules": {k: int(ru.get(k, 0)) for k in RULE_STATUSES},
                "interactions": {k: int(inter.get(k, 0)) for k in RULE_STATUSES},
                "cards": {k: int(ca.get(k, 0)) for k in CARD_STATUSES},
                "bands": {k: int(ba.get(k, 0)) for k in BAND_STATUSES},
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
        by_card = self.by_card
        if by_card:
            ca = c["cards"]
            lines.append("cards: " + ", ".join(f"{ca[k]} {k}" for k in CARD_STATUSES))
            lines.extend(self._card_lines())
        ru = c["interactions"] if by_card else c["rules"]
        lines.append(("interaction rules: " if by_card else "rules: ")
                     + ", ".join(f"{ru[k]} {k}" for k in RULE_STATUSES))
        for r in self.rules.itertuples():
            if by_card and r.part != "interaction":
                continue
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
        share = f" ({format_value(len(self.users) / self.n_common, 'share')})" if self.n_common else ""
        lines.append(f"users whose fired rules changed: {len(self.users):,} of {self.n_common:,}{share}")
        fa, fb = self.fidelity["a"], self.fidelity["b"]
        lines.append(f"held-out fidelity: {a} {fa:.3f}, {b} {fb:.3f} ({fb - fa:+.3f})")
        return "\n".join(lines)

    def _card_lines(self) -> list[str]:
        """A line per card gained, lost or changed, and per band that changed."""
        lines = []
        for r in self.cards.itertuples():
            if r.status == "gained":
                lines.append(f"  + card: {r.card}")
            elif r.status == "lost":
                lines.append(f"  - card: {r.card}")
            elif r.status == "changed":
                form = f" ({r.form_a} -> {r.form_b})" if r.form_a != r.form_b else ""
                lines.append(f"  ~ card: {r.card}{form}")
                bands = self.bands[(self.bands["card_a"] == r.card_a) & (self.bands["card_b"] == r.card_b)]
                for b in bands.itertuples():
                    if b.status == "gained":
                        lines.append(f"      + band {b.band_b} ({points_text(b.points_b)} points, {b.users_b} of "
                                     "users)")
                    elif b.status == "lost":
                        lines.append(f"      - band {b.band_a} ({points_text(b.points_a)} points, {b.users_a} of "
                                     "users)")
                    elif b.status in ("moved", "points changed"):
                        what = [b.moved] if b.moved else []
                        if b.points_changed:
                            what.append(f"points {points_text(b.points_a)} -> {points_text(b.points_b)}")
                        lines.append(f"      ~ band {b.band_a}" + (f" -> {b.band_b}" if b.band_b != b.band_a else "")
                                     + f": {'; '.join(what)}")
        return lines

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
        by_card = self.by_card
        if by_card:  # the cards, then the interaction rules; the rules over one output are the cards' bands
            rules = rules[rules["part"] == "interaction"]
        ru = c["interactions"] if by_card else c["rules"]
        cards_head = ("cards: " + (", ".join(f'{c["cards"][k]} {_pill(k)}' for k in CARD_STATUSES if c["cards"][k])
                                   or "none") + "; ") if by_card else ""
        head = (f'<div class="rudi-compare-head"><strong>{a}</strong> &rarr; <strong>{b}</strong>: '
                f'held-out fidelity {fa:.3f} &rarr; {fb:.3f} ({fb - fa:+.3f}); {cards_head}'
                + ("interaction rules: " if by_card else "rules: ")
                + (", ".join(f'{ru[k]} {_pill(k)}' for k in RULE_STATUSES if ru[k]) or "none") + "; statistics: "
                + ", ".join(f'{c["statistics"][k]} {_pill(k)}' for k in ("gained", "lost", "kept")
                            if c["statistics"][k])
                + f'; users whose fired rules changed: {c["users_changed"]:,} of {c["users_common"]:,}</div>')
        parts = [f"<style>{_CSS}</style>", head,
                 f'<details class="rudi-compare-details"><summary>summary as text</summary>'
                 f'<pre class="rudi-compare-summary">{html.escape(self.summary())}</pre></details>']
        border = {k: i for i, k in enumerate(BAND_STATUSES)}
        bands = self.bands.sort_values("status", key=lambda s: s.map(border), kind="stable")
        bands = bands.assign(band=bands["band_b"].where(bands["band_b"].notna(), bands["band_a"]))
        corder = {k: i for i, k in enumerate(CARD_STATUSES)}
        cards = self.cards.sort_values("status", key=lambda s: s.map(corder), kind="stable")
        card_tables = (
            ("cards", cards, [("status", "status", "pill"), ("card", "card", "text"),
                              ("bands_gained", "bands gained", "int"), ("bands_lost", "bands lost", "int"),
                              ("bands_moved", "bands moved", "int"), ("points_changed", "points changed", "int"),
                              ("edges_moved", f"edges moved ({self.names[0]} -> {self.names[1]})", "text")]),
            ("bands", bands, [("status", "status", "pill"), ("card", "card", "text"), ("band", "band", "text"),
                              ("points_a", f"points {self.names[0]}", "pts"),
                              ("points_b", f"points {self.names[1]}", "pts"),
                              ("users_a", f"users {self.names[0]}", "text"),
                              ("users_b", f"users {self.names[1]}", "text"), ("moved", "moved", "text")]),
        ) if by_card else ()
        tables = card_tables + (
            # the figures before the moves: at 640 px the weights show without scrolling
            ("interaction rules" if by_card else "rules", rules,
             [("status", "status", "pill"), ("text", "rule", "text"),
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
               "kept": "rc-kept", "moved": "rc-moved", "points changed": "rc-changed", "changed": "rc-changed"}


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
    text = {"w": points_text, "pts": points_text, "pct": lambda x: format_value(x, "share"),
            "int": lambda x: f"{int(x):,}", "num": lambda x: points_text(x, sign=False)}[kind](value)
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
    return points_text(x)


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


# ------------------------------------------------------------------ cards
#: How a card of A relates to B, in the order the summary lists them.
CARD_STATUSES = ("changed", "gained", "lost", "kept")
#: How a band of a matched card relates to B: "moved" (an edge moved; its points may have changed too).
BAND_STATUSES = ("moved", "points changed", "gained", "lost", "kept")
#: Points closer than this share of the teacher scores' standard deviation are the same points.
POINTS_TOLERANCE = 0.01
#: Edges this close (relative) are the same edge.
EDGE_TOLERANCE = 1e-9

_CARD_COLUMNS: list[str] = ["status", "card", "card_a", "card_b", "form_a", "form_b", "n_bands_a", "n_bands_b",
                             "bands_gained", "bands_lost", "bands_moved", "points_changed", "edges_moved"]
_BAND_COLUMNS: list[str] = ["card", "status", "band_a", "band_b", "moved", "points_a", "points_b", "points_changed",
                             "share_a", "share_b", "users_a", "users_b", "card_a", "card_b", "index_a", "index_b"]


def _same_edge(x: float, y: float) -> bool:
    return bool(np.isclose(x, y, rtol=EDGE_TOLERANCE, atol=0.0))


def align_edges(ea: Any, eb: Any) -> list[tuple[int, int]]:
    """Pairs ``(i, j)`` of edges of A and B that are one edge: the same value, or one moved (order kept).

    Equal edges pair first; between two consecutive equal pairs, the remaining edges pair in order, as many
    as the fewer side has, nearest first (a small dynamic programme: a card has at most a handful of edges).
    An edge of A left unpaired was lost (two bands merged), one of B gained (a band split).
    """
    ea, eb = [float(x) for x in ea], [float(y) for y in eb]
    same: list[tuple[int, int]] = []
    j = 0
    for i, x in enumerate(ea):  # both sorted: a merge
        while j < len(eb) and eb[j] < x and not _same_edge(eb[j], x):
            j += 1
        if j < len(eb) and _same_edge(eb[j], x):
            same.append((i, j))
            j += 1
    pairs = list(same)
    bounds = [(-1, -1), *same, (len(ea), len(eb))]
    for (i0, j0), (i1, j1) in zip(bounds, bounds[1:]):
        xs, ys = list(range(i0 + 1, i1)), list(range(j0 + 1, j1))
        pairs.extend(_pair_in_order(xs, ys, ea, eb))
    return sorted(pairs)


def _pair_in_order(xs: list[int], ys: list[int], ea: list[float], eb: list[float]) -> list[tuple[int, int]]:
    """min(len(xs), len(ys)) order-keeping pairs of smallest total distance."""
    n, m = len(xs), len(ys)
    if not n or not m:
        return []
    k = min(n, m)
    # best[a][b][c]: least distance pairing c edges among xs[:a] and ys[:b]
    inf = math.inf
    best = [[[inf] * (k + 1) for _ in range(m + 1)] for _ in range(n + 1)]
    for a in range(n + 1):
        for b in range(m + 1):
            best[a][b][0] = 0.0
    for a in range(1, n + 1):
        for b in range(1, m + 1):
            for c in range(1, k + 1):
                best[a][b][c] = min(best[a - 1][b][c], best[a][b - 1][c],
                                    best[a - 1][b - 1][c - 1] + abs(ea[xs[a - 1]] - eb[ys[b - 1]]))
    out = []
    a, b, c = n, m, k
    while c > 0:
        if best[a][b][c] == best[a - 1][b][c]:
            a -= 1
        elif best[a][b][c] == best[a][b - 1][c]:
            b -= 1
        else:
            out.append((xs[a - 1], ys[b - 1]))
            a, b, c = a - 1, b - 1, c - 1
    return out[::-1]


def _points_tolerance(exp: Explanation, tolerance: float | None) -> float:
    if tolerance is not None:
        return float(tolerance)
    y = exp.teacher_scores.to_numpy(dtype=np.float64)
    sd = float(np.std(y)) if len(y) else 0.0
    return POINTS_TOLERANCE * sd if sd > 0 else 1e-12


def _card_keys(sc: Any) -> list:
    keys = _output_keys(sc.literals)
    return [keys[c.column] for c in sc.cards]


def _band_parts(card: Any) -> list[tuple[int, str, Any]]:
    """(band index, label, Band or Linear) for every band, the undefined one first (index -1)."""
    out: list[tuple[int, str, Any]] = []
    if card.undefined is not None:
        out.append((-1, card.undefined_label(), card.undefined))
    if card.linear is not None:
        out.append((0, card.linear_text(), card.linear))
    else:
        out.extend((k, label, b) for k, (label, b) in enumerate(zip(card.band_labels(), card.bands)))
    return out


def _part_points(part: Any) -> tuple[float, ...]:
    """A band's points; a linear card's points at both ends of its range."""
    if hasattr(part, "slope"):
        return (part.offset, part.offset + part.slope * (part.hi - part.lo))
    return (part.points,)


def _compare_card(ca: Any, cb: Any, tol: float) -> tuple[list[dict], list[str]]:
    """One row per band of two matched cards (kept, moved, points changed, gained or lost), and the edges moved."""
    def text(card: Any, x: float) -> str:
        return format_value(x, card.kind, card.unit, exact=True)

    pa, pb = _band_parts(ca), _band_parts(cb)
    matched: list[tuple[int, int, str]] = []  # (position in pa, position in pb, moved text)
    edges_moved: list[str] = []
    if ca.linear is None and cb.linear is None:
        pairs = align_edges(ca.edges, cb.edges)
        edges_moved = [f"edge moved from {text(ca, ca.edges[i])} to {text(cb, cb.edges[j])}" for i, j in pairs
                       if not _same_edge(ca.edges[i], cb.edges[j])]
        to_b = {i: j for i, j in pairs}
        first_a = 1 if ca.undefined is not None else 0
        first_b = 1 if cb.undefined is not None else 0
        n_a = len(ca.edges)
        for k in range(n_a + 1):  # band k of A runs from edge k-1 to edge k (the ends: +-inf)
            lo = -1 if k == 0 else to_b.get(k - 1)
            hi = len(cb.edges) if k == n_a else to_b.get(k)
            if lo is None or hi is None or hi != lo + 1:
                continue
            ends = []
            if k > 0 and not _same_edge(ca.edges[k - 1], cb.edges[lo]):
                ends.append(f"edge moved from {text(ca, ca.edges[k - 1])} to {text(cb, cb.edges[lo])}")
            if k < n_a and not _same_edge(ca.edges[k], cb.edges[hi]):
                ends.append(f"edge moved from {text(ca, ca.edges[k])} to {text(cb, cb.edges[hi])}")
            matched.append((first_a + k, first_b + hi, "; ".join(ends)))
    elif ca.linear is not None and cb.linear is not None:
        la, lb = ca.linear, cb.linear
        moved = "" if _same_edge(la.lo, lb.lo) and _same_edge(la.hi, lb.hi) else (
            f"range moved from {text(ca, la.lo)}-{text(ca, la.hi)} to {text(cb, lb.lo)}-{text(cb, lb.hi)}")
        matched.append((len(pa) - 1, len(pb) - 1, moved))
        edges_moved = [moved] if moved else []
    if ca.undefined is not None and cb.undefined is not None:
        matched.append((0, 0, ""))
    rows = []
    seen_a, seen_b = set(), set()
    for x, y, moved in sorted(matched):
        seen_a.add(x)
        seen_b.add(y)
        (ia, label_a, ba), (ib, label_b, bb) = pa[x], pb[y]
        changed = any(abs(u - v) > tol for u, v in zip(_part_points(ba), _part_points(bb)))
        status = "moved" if moved else "points changed" if changed else "kept"
        rows.append(_band_row(cb.name, status, (ia, label_a, ba), (ib, label_b, bb), moved, changed))
    rows += [_band_row(ca.name, "lost", p, None, "", False) for x, p in enumerate(pa) if x not in seen_a]
    rows += [_band_row(cb.name, "gained", None, p, "", False) for y, p in enumerate(pb) if y not in seen_b]
    return rows, edges_moved


def _band_row(card: str, status: str, a: Any, b: Any, moved: str, changed: bool) -> dict:
    def side(p: Any, k: int) -> Any:
        if p is None:
            return (None, np.nan, np.nan, None, -2)[k]
        index, label, part = p
        points = _part_points(part)[0]
        return (label, float(points), float(part.share), format_value(part.share, "share"), int(index))[k]

    return {"card": card, "status": status, "band_a": side(a, 0), "band_b": side(b, 0), "moved": moved,
            "points_a": side(a, 1), "points_b": side(b, 1), "points_changed": bool(changed),
            "share_a": side(a, 2), "share_b": side(b, 2), "users_a": side(a, 3), "users_b": side(b, 3),
            "index_a": side(a, 4), "index_b": side(b, 4)}


def _compare_cards(exp_a: Explanation, exp_b: Explanation, tol: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Cards matched by statistic output (equivalence key and output), and their bands."""
    sa, sb = exp_a.scorecard, exp_b.scorecard
    assert sa is not None and sb is not None  # compare() asks only then
    ka, kb = _card_keys(sa), _card_keys(sb)
    where_b = {k: j for j, k in enumerate(kb)}
    card_rows, band_rows = [], []

    def form(card: Any) -> str:
        return "linear" if card.linear is not None else "bands"

    for i, key in enumerate(ka):
        ca = sa.cards[i]
        j = where_b.get(key)
        if j is None:
            card_rows.append({"status": "lost", "card": ca.name, "card_a": i, "card_b": -1, "form_a": form(ca),
                              "form_b": None, "n_bands_a": len(_band_parts(ca)), "n_bands_b": 0})
            band_rows += [dict(_band_row(ca.name, "lost", p, None, "", False), card_a=i, card_b=-1)
                          for p in _band_parts(ca)]
            continue
        cb = sb.cards[j]
        compared, moved = _compare_card(ca, cb, tol)
        rows = [dict(r, card_a=i, card_b=j) for r in compared]
        band_rows += rows
        st = [r["status"] for r in rows]
        n = {s: st.count(s) for s in BAND_STATUSES}
        card_rows.append({
            "status": "kept" if n["kept"] == len(st) and form(ca) == form(cb) and not moved else "changed",
            "card": cb.name,
            "card_a": i, "card_b": j, "form_a": form(ca), "form_b": form(cb), "n_bands_a": len(_band_parts(ca)),
            "n_bands_b": len(_band_parts(cb)), "bands_gained": n["gained"], "bands_lost": n["lost"],
            "bands_moved": n["moved"], "points_changed": sum(bool(r["points_changed"]) for r in rows),
            "edges_moved": "; ".join(moved)})
    for j, key in enumerate(kb):
        if key not in set(ka):
            cb = sb.cards[j]
            card_rows.append({"status": "gained", "card": cb.name, "card_a": -1, "card_b": j, "form_a": None,
                              "form_b": form(cb), "n_bands_a": 0, "n_bands_b": len(_band_parts(cb))})
            band_rows += [dict(_band_row(cb.name, "gained", None, p, "", False), card_a=-1, card_b=j)
                          for p in _band_parts(cb)]
    cards = pd.DataFrame(card_rows, columns=_CARD_COLUMNS)
    for col in ("bands_gained", "bands_lost", "bands_moved", "points_changed"):
        cards[col] = cards[col].fillna(0).astype(np.int64)
    cards["edges_moved"] = cards["edges_moved"].fillna("")
    return cards, pd.DataFrame(band_rows, columns=_BAND_COLUMNS)


def _rule_parts(exp: Explanation) -> list[str]:
    """Per rule: "card" (it reads one output: a band of a card), "interaction", or "rule" (no scorecard)."""
    if exp.scorecard is None:
        return ["rule"] * len(exp.rules)
    L = exp.literals
    out = []
    for rule in exp.rules:
        if isinstance(rule, LinearTerm):
            out.append("card")
            continue
        cols = {int(L.column[x.index]) for x in formula_literals(rule.formula)}
        out.append("interaction" if len(cols) > 1 else "card")
    return out


# ------------------------------------------------------------------ compare
def compare(exp_a: Explanation, exp_b: Explanation, names: tuple[str, str] = ("A", "B"), *,
            points_tolerance: float | None = None) -> Comparison:
    """What changed from explanation ``exp_a`` to ``exp_b``.

    Parameters
    ----------
    exp_a, exp_b : Explanation
        E.g. the same job on two model versions, or with two seeds.
    names : tuple of str, default=("A", "B")
        What to call them in the summary.
    points_tolerance : float, optional
        A band's points changed when they differ by more than this; by default
        :data:`POINTS_TOLERANCE` (1%) of the standard deviation of A's teacher scores.

    Returns
    -------
    Comparison
        ``summary()``, DataFrames ``statistics``, ``rules``, ``users``,
        ``firing``, ``cards`` and ``bands`` (where both are scorecards), the
        ``fidelity`` of each; shown as HTML in a notebook.
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

    # rules; where both are scorecards, the rules over one output are the cards' bands
    by_card = exp_a.scorecard is not None and exp_b.scorecard is not None
    part_a = _rule_parts(exp_a) if by_card else ["rule"] * len(exp_a.rules)
    part_b = _rule_parts(exp_b) if by_card else ["rule"] * len(exp_b.rules)
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
            "part": part_b[j] if j >= 0 else part_a[i],
        })
    rules = pd.DataFrame(rrows, columns=["status", "rule_a", "rule_b", "text_a", "text_b", "weight_a", "weight_b",
                                         "moved", "coverage_a", "coverage_b", "part"])
    tol = _points_tolerance(exp_a, points_tolerance)
    if by_card:
        cards, bands = _compare_cards(exp_a, exp_b, tol)
    else:
        cards, bands = pd.DataFrame(columns=_CARD_COLUMNS), pd.DataFrame(columns=_BAND_COLUMNS)

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
                      n_users=(int(exp_a.sequences.n_users), int(exp_b.sequences.n_users)), cards=cards, bands=bands,
                      points_tolerance=tol)
