"""rx.compare: two seeds of a small explain() run, an explanation against itself, and known edits."""

import dataclasses
import html

import numpy as np
import pytest

import rudi_explain as rx
from rudi_explain.audit.cards import edge_neighbours
from rudi_explain.rules.formula import Lit
from rudi_explain.rules.ruleset import LinearTerm, Rule, RuleSet
from rudi_explain.rules.values import format_value

FAST = dict(n_stats=3, n_rules=8, n_simulations=30, student_params={"epochs": 25})


@pytest.fixture(scope="module")
def demo():
    return rx.datasets.make_payments(300, random_state=11)


@pytest.fixture(scope="module")
def seeds(demo):
    return [rx.explain(None, demo.events, scores=demo.risk, background=False, random_state=seed, **FAST)
            for seed in (0, 1)]


def lits(f):
    return [f] if isinstance(f, Lit) else [x for c in f.children for x in lits(c)]


def leaves(f, path=()):
    """(connectives above, literal) for every literal of a formula."""
    if isinstance(f, Lit):
        return [(path, f)]
    return [x for c in f.children for x in leaves(c, path + (type(f).__name__,))]


def literal_set(exp, k):
    """A rule by hand: its literals as (connectives above, statistic key, output, negated, threshold), sorted."""
    L = exp.literals
    rule = exp.rules[k]
    if isinstance(rule, LinearTerm):  # a linear card's term: its output alone, no threshold
        stat = L.statistics[L.output_statistic[rule.column]]
        name = L.output_names[rule.column]
        return [(("linear",), repr(stat.key), name if name != str(stat) else "", False, 0.0)]
    out = []
    for path, x in leaves(rule.formula):
        c = L.column[x.index]
        stat = L.statistics[L.output_statistic[c]]
        out.append((path, repr(stat.key), L.output_names[c] if L.output_names[c] != str(stat) else "", x.negated,
                    float(L.thresholds[x.index])))
    return sorted(out)


def fired_sets_by_hand(a, b, cmp):
    """Per common user: the matched rules (rows of cmp.rules) each explanation fires, by a loop over users."""
    row_of_a = {int(r.rule_a): n for n, r in enumerate(cmp.rules.itertuples()) if r.rule_a >= 0}
    row_of_b = {int(r.rule_b): n for n, r in enumerate(cmp.rules.itertuples()) if r.rule_b >= 0}
    changed = {}
    for uid in sorted(set(a.sequences.users.tolist()) & set(b.sequences.users.tolist())):
        ua, ub = a.user(uid), b.user(uid)
        fa = {row_of_a[k] for k in ua.fired}
        fb = {row_of_b[k] for k in ub.fired}
        if fa != fb:
            changed[uid] = (fb - fa, fa - fb)
    return changed


def test_two_seeds_against_a_reference(seeds):
    a, b = seeds
    cmp = rx.compare(a, b, names=("seed 0", "seed 1"))
    # statistics by equivalence key
    ka, kb = {s.key for s in a.statistics}, {s.key for s in b.statistics}
    st = cmp.statistics["status"].value_counts()
    assert st.get("kept", 0) == len(ka & kb) and st.get("lost", 0) == len(ka - kb) and \
        st.get("gained", 0) == len(kb - ka)
    # every rule of each side appears once
    assert sorted(cmp.rules.loc[cmp.rules.rule_a >= 0, "rule_a"]) == list(range(len(a.rules)))
    assert sorted(cmp.rules.loc[cmp.rules.rule_b >= 0, "rule_b"]) == list(range(len(b.rules)))
    for r in cmp.rules.itertuples():
        if r.status in ("kept", "weight changed"):
            assert literal_set(a, r.rule_a) == literal_set(b, r.rule_b)
            assert (r.weight_a == pytest.approx(r.weight_b, rel=1e-9)) == (r.status == "kept")
        elif r.status == "threshold moved":
            sa, sb = literal_set(a, r.rule_a), literal_set(b, r.rule_b)
            assert sorted(x[:4] for x in sa) == sorted(x[:4] for x in sb) and sa != sb and r.moved
    # no unmatched pair that a reference would have matched exactly
    lost = [literal_set(a, r.rule_a) for r in cmp.rules.itertuples() if r.status == "lost"]
    gained = [literal_set(b, r.rule_b) for r in cmp.rules.itertuples() if r.status == "gained"]
    assert not any(x == y for x in lost for y in gained)
    assert not any(sorted(p[:4] for p in x) == sorted(p[:4] for p in y) for x in lost for y in gained)
    # users whose fired rules changed: a loop over users, by hand
    ref = fired_sets_by_hand(a, b, cmp)
    assert sorted(cmp.users["user"]) == sorted(ref)
    for row in cmp.users.itertuples():
        now, no_longer = ref[row.user]
        assert (row.n_now_fire, row.n_no_longer_fire) == (len(now), len(no_longer))
    assert len(cmp.firing) == sum(len(x) + len(y) for x, y in ref.values())
    assert cmp.fidelity == {"a": a.report()["fidelity_test"], "b": b.report()["fidelity_test"]}
    assert cmp.n_common == a.sequences.n_users
    text = cmp.summary()
    assert "seed 0 -> seed 1" in text and "held-out fidelity" in text
    assert not cmp.unchanged  # two seeds of the search: something differs


def test_itself_nothing_changes(seeds):
    a = seeds[0]
    cmp = rx.compare(a, a)
    assert cmp.unchanged
    assert (cmp.statistics["status"] == "kept").all() and len(cmp.statistics) == len(a.statistics)
    assert (cmp.rules["status"] == "kept").all() and len(cmp.rules) == len(a.rules)
    assert (cmp.rules["rule_a"] == cmp.rules["rule_b"]).all()
    assert cmp.users.empty and cmp.firing.empty
    assert cmp.fidelity["a"] == cmp.fidelity["b"]
    assert "0 gained" in cmp.summary() and "changed: 0 of" in cmp.summary()


def test_a_moved_threshold_and_a_new_weight(seeds):
    a = seeds[0]
    L = a.literals
    # the rules with a formula (a linear card's term reads a value, not a literal)
    formula_at = [k for k, r in enumerate(a.rules) if isinstance(r, Rule)]
    assert len(formula_at) >= 2
    i = lits(a.rules[formula_at[0]].formula)[0].index
    v = L.thresholds[i]
    values = a.result.values[:, L.column[i]]
    new = float(np.nanpercentile(values[values > v], 50)) if (values > v).any() else v - 1
    edge = edge_neighbours(a, i)
    if edge is not None and not edge[1] < new < edge[2]:  # a card's band edge stays between its neighbours
        new = (v + edge[2]) / 2 if np.isfinite(edge[2]) else v + 1
    b = a.with_threshold(i, new)
    cmp = rx.compare(a, b)
    using = {k for k in formula_at if i in [x.index for x in lits(a.rules[k].formula)]}
    assert set(cmp.rules.loc[cmp.rules.status == "threshold moved", "rule_a"]) == using
    assert (cmp.rules.loc[~cmp.rules.rule_a.isin(using), "status"] == "kept").all()
    moved = cmp.rules.loc[cmp.rules.status == "threshold moved", "moved"].iloc[0]
    c = L.column[i]
    was, now = (format_value(t, L.output_kind[c], L.output_unit[c], exact=True)
                for t in (L.thresholds[i], b.literals.thresholds[i]))
    assert f"{was} -> {now}" in moved  # written the one way (a share as a percent)
    changed = np.flatnonzero((a.result.fires != b.result.fires).any(axis=1))
    assert sorted(cmp.users["user"]) == sorted(a.sequences.users[changed].tolist())
    assert len(changed)
    # a weight changed, nothing else: no user's firing changes
    w = formula_at[1]
    rules = [dataclasses.replace(r, weight=r.weight * 2) if k == w else r for k, r in enumerate(a.rules)]
    c = a.with_result(a.result.with_rules(RuleSet(rules, a.rules.intercept, a.literals)))
    cmp = rx.compare(a, c)
    assert cmp.rules.set_index("rule_a").loc[w, "status"] == "weight changed"
    assert (cmp.rules.loc[cmp.rules.rule_a != w, "status"] == "kept").all() and cmp.users.empty


def test_html_is_escaped(seeds):
    a = seeds[0]
    cmp = rx.compare(a, a, names=("<b>v1</b>", "v2 & co"))
    page = cmp._repr_html_()
    assert "<b>v1</b>" not in page and html.escape("<b>v1</b>") in page and "v2 &amp; co" in page
    assert "<table" in page
    # a scorecard: its cards by name, and the interaction rules (the rules over one output are the cards' bands)
    for card in a.scorecard.cards:
        assert html.escape(card.name) in page
    for r in cmp.rules[cmp.rules["part"] == "interaction"].itertuples():
        assert html.escape(r.text_a) in page


def _pill_html(status):
    cls = {"gained": "rc-gained", "lost": "rc-lost", "threshold moved": "rc-moved", "weight changed": "rc-changed",
           "kept": "rc-kept"}[status]
    return f'<span class="rc-pill {cls}">{status}</span>'


def _luminance(hex_colour):
    rgb = [int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def test_html_view_tables_scroll_and_colours_follow_the_theme(seeds):
    import re
    from html.parser import HTMLParser

    a, b = seeds
    cmp = rx.compare(a, b, names=("seed 0", "seed 1"))
    page = cmp._repr_html_()

    class Cells(HTMLParser):  # every table inside a sideways-scrolling box; the rules' cells hold their texts
        def __init__(self):
            super().__init__()
            self.stack, self.tables, self.text = [], [], []

        def handle_starttag(self, tag, attrs):
            cls = dict(attrs).get("class") or ""
            if tag == "table":
                self.tables.append(any("rudi-compare-scroll" in c for c in self.stack))
            self.stack.append(cls)

        def handle_endtag(self, tag):
            self.stack.pop()

        def handle_data(self, data):
            self.text.append(data)

    p = Cells()
    p.feed(page)
    # scorecards: cards, bands, interaction rules, statistics, users; all in scroll boxes; tags balanced
    assert cmp.by_card and p.tables == [True] * 5 and not p.stack
    text = "".join(p.text)
    interactions = cmp.rules[cmp.rules["part"] == "interaction"]
    assert len(interactions) <= 20  # all shown
    for r in interactions.itertuples():  # every interaction rule of either, in words
        assert (r.text_b if isinstance(r.text_b, str) else r.text_a) in text
    head = page.split("</div>")[0]
    for k, n in cmp.counts()["interactions"].items():  # the head line: each status that occurs, with its count
        assert (f"{n} {_pill_html(k)}" in head) == (n > 0)
    css = re.search(r"<style>(.*?)</style>", page, re.S).group(1)
    # Every theme variable has a fallback; no colour is fixed for the base text or background.
    assert re.findall(r"var\(--jp-[\w-]+\)", css) == []
    assert "color: inherit" in css and ".rudi-compare-scroll { overflow-x: auto" in css
    # Each pill's text on its fill at 4.5:1 or more, in the light and the dark theme.
    pairs = re.findall(r"(body\[data-jp-theme-light=\"false\"\] )?\.rudi-compare \.(rc-\w+) \{ color: (#\w{6}); "
                       r"background: (#\w{6});", css)
    assert len(pairs) == 10
    for dark, name, fg, bg in pairs:
        hi, lo = sorted((_luminance(fg), _luminance(bg)), reverse=True)
        assert (hi + 0.05) / (lo + 0.05) >= 4.5, (dark, name, fg, bg)


def test_html_view_of_a_moved_threshold_lists_the_move(seeds):
    from rudi_explain.audit.cards import edge_neighbours
    from rudi_explain.rules.formula import formula_literals

    a = seeds[0]
    parts = rx.compare(a, a).rules["part"]
    # an interaction rule's literal (the summary lists interaction rules; a card's moves are its bands')
    k = next(k for k, r in enumerate(a.rules) if hasattr(r, "formula") and parts[k] == "interaction")
    lit = formula_literals(a.rules[k].formula)[0].index
    v = a.result.values[:, a.literals.column[lit]]
    value = float(np.nanpercentile(v[np.isfinite(v)], 80))
    edge = edge_neighbours(a, lit)
    if edge is not None and not edge[1] < value < edge[2]:  # also a card's band edge: between its neighbours
        value = (float(a.literals.thresholds[lit]) + (edge[2] if np.isfinite(edge[2]) else edge[1])) / 2
    cmp = rx.compare(a, a.with_threshold(lit, value))
    moved = cmp.rules.loc[cmp.rules["status"] == "threshold moved", "moved"]
    page = cmp._repr_html_()
    assert len(moved) >= 1 and "thresholds moved (A -&gt; B)" in page
    for m in moved:
        assert html.escape(m) in page
    assert "statistics: " in page and "gained</span>" not in page.split("</div>")[0]  # no statistic gained
