"""The Scorecard view's data (issue 26, item 6) and one way to write a value in the views (item 5).

Checked against independent references: each card's rows against :meth:`Card.rows` and the text form
(``print(exp.scorecard)``), each user's band on each card against a per-user loop over the band edges,
each user's sum (base + card points + fired interaction weights) against the rules' own score, and
every value the views write against :func:`format_value` with the output's kind and unit. Explanations
are built over seeds with interaction rules and a card whose statistic can be undefined; a set that
holds rules and linear terms together is built too.
"""

from __future__ import annotations

import dataclasses
import html
import json
import math
import re
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from tiny import tiny_explanation, tiny_payments

import rudi_explain as rx
from rudi_explain.explanation import Explanation, FittedState, JobProgress
from rudi_explain.explanation.result import read_scorecard
from rudi_explain.rules.formula import And, Lit, formula_literals
from rudi_explain.rules.literals import Literals
from rudi_explain.rules.ruleset import LinearTerm, RuleSet
from rudi_explain.rules.scorecard import Scorecard
from rudi_explain.rules.scorecard_cards import Card, Linear
from rudi_explain.rules.values import format_value, points_text
from rudi_explain.views import payloads as ws
from rudi_explain.views import scorecard_view as sv
from rudi_explain.views.report import report_html
from rudi_explain.views.static_view import static_html

#: one output that can be undefined (no ATM events), a share, a count
STATS = ("Select(amount) | RetainBy(channel=atm) | Max", "Select(channel) | Mean", "Select(amount) | Count")


def _with_rules(exp: Explanation, pick) -> Explanation:
    """``exp`` with other rules: ``pick(literals, values, y)`` gives (formulas, weights, intercept)."""
    st = exp.result
    L = st.literals
    formulas, weights, intercept = pick(L, st.values, st.teacher_scores.to_numpy())
    rules = RuleSet.from_formulas(formulas, weights, intercept, literals=L)
    state = FittedState.from_values(exp.sequences, st.statistics, L, rules, st.values,
                                    st.teacher_scores.to_numpy(), st.is_test, teacher_kind="given scores",
                                    seconds={"total": 0.0})
    return Explanation(exp.sequences, exp.params, result=state, history=[JobProgress("done", 1, 1, "built here")])


def _interacting(L: Literals, values, y):
    """Band rules on every output and, across two outputs, two interaction rules (AND of both)."""
    rng = np.random.default_rng(0)
    by_col: dict[int, list[int]] = {}
    for i, c in enumerate(L.column.tolist()):
        by_col.setdefault(int(c), []).append(i)
    formulas, weights = [], []
    for lits in by_col.values():
        for i in lits[1::3][:2]:
            formulas.append(Lit(i, bool(rng.integers(2))))
            weights.append(float(rng.normal()))
    cols = sorted(by_col)
    a, b = by_col[cols[0]][len(by_col[cols[0]]) // 2], by_col[cols[-1]][len(by_col[cols[-1]]) // 2]
    formulas += [And((Lit(a), Lit(b))), And((Lit(a, True), Lit(b)))]
    weights += [0.7, -0.45]
    return formulas, weights, 0.25


def interacting_explanation(seed: int, n_users: int = 180) -> Explanation:
    """A small explanation whose scorecard has interaction rules and a card with an undefined band."""
    demo = rx.datasets.make_payments(n_users, random_state=seed)
    base = tiny_explanation(demo.sequences(), demo.risk, statistics=STATS, random_state=seed)
    return _with_rules(base, _interacting)


@pytest.fixture(scope="module", params=[0, 1, 2])
def exp(request):
    return interacting_explanation(request.param)


def _text_lines(text: str) -> list[str]:
    return [re.sub(r"\s+", " ", line).strip() for line in text.splitlines()]


def rows_written(card):
    """Card.rows() with the points as every view writes them (points_text), worked out here by hand:
    a band's points, a linear card's range "lo to hi" from its line."""
    raw = ([card.undefined.points] if card.undefined is not None else []) + [b.points for b in card.bands]
    out = []
    for k, (label, _, users, teacher, note) in enumerate(card.rows()):
        if card.linear is not None and k == len(card.rows()) - 1:
            lin = card.linear
            pts = f"{points_text(lin.offset)} to {points_text(lin.offset + lin.slope * (lin.hi - lin.lo))}"
        else:
            pts = points_text(raw[k])
        out.append((label, pts, users, teacher, note))
    return out


def test_cards_are_the_card_rows_and_the_text_form(exp):
    sc = exp.scorecard
    state = sv.scorecard_state(exp)
    assert sc.interactions and any(c.undefined is not None for c in sc.cards), "the fixture lacks what it tests"
    text = str(sc)
    lines = _text_lines(text)
    assert state["headline"] == text.splitlines()[0]
    assert [c["name"] for c in state["cards"]] == [c.name for c in sc.cards]
    for card, got in zip(sc.cards, state["cards"]):
        rows = rows_written(card)
        assert [(r["label"], r["points"], r["users"], r["teacher"], r["note"]) for r in got["rows"]] == rows
        # the bands: undefined first, then ascending; each row's raw points are its band's
        want_bands = ([-1] if card.undefined is not None else []) + list(range(card.n_bands))
        assert [r["band"] for r in got["rows"]] == want_bands
        for r in got["rows"]:
            band = card.undefined if r["band"] == -1 else card.bands[r["band"]]
            assert r["value"] == pytest.approx(band.points, abs=1e-5)
            # the row, as print(exp.scorecard) lays it out (points written the one way: points_text)
            assert f"{r['label']} {points_text(r['value'])} {r['users']} {r['teacher']}" in lines, r
        assert got["edges_text"] == [format_value(e, card.kind, card.unit, exact=True) for e in card.edges]
    for r, got in zip(sc.interactions, state["interactions"]):
        assert got["text"] == r.text and f"{got['weight_text']} {got['text']}" in lines


def _band_reference(card, v: float) -> int:
    """Which band value ``v`` is in, by a loop over the card's edges (SEMANTICS.md)."""
    if math.isnan(v):
        return -1 if card.undefined is not None else 0
    if card.linear is not None:
        return 0
    band = 0
    for e in card.edges:
        if v > e:
            band += 1
    return band


def test_each_users_band_points_and_sum_against_a_per_user_loop(exp):
    sc = exp.scorecard
    V = exp.result.values
    score = exp.student_scores.to_numpy()
    n_interacting = 0
    for i in range(exp.sequences.n_users):
        u = sv.user_scorecard(exp, i)
        total = sc.base
        for card, got in zip(sc.cards, u["cards"]):
            v = float(V[i, card.column])
            band = _band_reference(card, v)
            assert got["band"] == band, (i, card.name, v)
            points = card.undefined.points if band == -1 else card.bands[band].points
            row = dict(zip([r for r in ([-1] if card.undefined is not None else []) + list(range(card.n_bands))],
                           rows_written(card)))[band]
            assert got["label"] == row[0] and got["points_text"] == row[1]
            assert got["value_text"] == format_value(v, card.kind, card.unit)
            total += points
        Z = exp.literals.transform_values(V[i:i + 1])
        fired = [r for r in sc.interactions if r.fires(Z)[0]]
        assert [x["text"] for x in u["interactions"]] == [r.text for r in fired]
        total += sum(r.weight for r in fired)
        n_interacting += bool(fired)
        assert u["total"] == pytest.approx(total, abs=1e-5) and u["adds_up"]
        assert total == pytest.approx(score[i], rel=1e-9, abs=1e-9)
    assert n_interacting > 0, "no user fires an interaction rule: the sum check of weights goes untested"


def test_user_detail_and_results_carry_the_scorecard(exp):
    uid = exp.sequences.users[5]
    d = ws.user_detail(exp, uid)
    assert d["scorecard"] == sv.user_scorecard(exp, 5)
    state = ws.results_state(exp)
    assert state["scorecard"]["headline"] == sv.scorecard_state(exp)["headline"]
    assert len(state["scorecard"]["cards"]) == len(exp.scorecard.cards)


def test_every_value_is_written_the_one_way(exp):
    """Thresholds table and axes, effects, a user's values and feeds: format_value with kind and unit."""
    L = exp.literals
    for t in ws.thresholds(exp):
        c, kind, unit = t["column"], L.output_kind[t["column"]], L.output_unit[t["column"]]
        assert t["kind"] == kind
        for th in t["thresholds"]:
            assert th["value_text"] == format_value(L.thresholds[th["literal"]], kind, unit, exact=True)
            if kind == "share":
                assert th["value_text"].endswith("%")
        v = exp.result.values[:, c][~np.isnan(exp.result.values[:, c])]
        if t["edges"]:
            edges, _ = ws._bins(v)  # the unrounded edges (the payload's numbers are rounded for size)
            assert t["edges_text"] == [format_value(e, kind, unit) for e in edges]
            assert t["min_text"] == format_value(v.min(), kind, unit)
            assert t["max_text"] == format_value(v.max(), kind, unit)
    for e in ws.net_effects(exp):
        kind, unit = L.output_kind[e["column"]], L.output_unit[e["column"]]
        assert e["threshold_text"] == [format_value(x, kind, unit, exact=True) for x in e["thresholds"]]
    d = ws.user_detail(exp, exp.sequences.users[0])
    for lit in d["literals"]:
        c = int(L.column[lit["literal"]])
        assert lit["value_text"] == format_value(np.nan if lit["value"] is None else lit["value"],
                                                 L.output_kind[c], L.output_unit[c])
    for f in d["feeds"]:
        assert f["value_text"] == format_value(exp.result.values[0, f["column"]], L.output_kind[f["column"]],
                                               L.output_unit[f["column"]])
    # a share is never written as a fraction to a reader
    shares = [t for t in ws.thresholds(exp) if t["kind"] == "share"]
    assert shares and all(x.endswith("%") for t in shares for x in t["edges_text"])


def test_a_rule_list_has_no_scorecard_view():
    class NoCard:
        scorecard = None
    assert sv.scorecard_state(NoCard()) is None and sv.user_scorecard(NoCard(), 0) is None


PROBE = "<img src=x onerror=alert(1)>"


def test_user_data_is_escaped_in_the_static_copy_and_the_report():
    """A category value holding HTML reaches the card names and labels: escaped in the static copy, JSON-escaped
    in the report (the front end writes every string as text)."""
    demo = rx.datasets.make_payments(150, random_state=4)
    events = demo.events.copy()
    events["channel"] = PROBE + events["channel"].astype(str)  # every channel: whichever a card reads holds it
    seqs = rx.Sequences(events, user="user_id", time="ts", categorical=demo.categorical, numerical=demo.numerical,
                        units=demo.units)
    exp = tiny_explanation(seqs, demo.risk, statistics=("Select(channel) | Mean",) + STATS[2:], random_state=4)
    state = sv.scorecard_state(exp)
    assert any(PROBE in c["name"] for c in state["cards"]), [c["name"] for c in state["cards"]]
    page = static_html(exp)
    assert PROBE not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    report = report_html(exp, n_users=2)
    assert PROBE not in report and "<img" not in report
    blob = re.search(r'<script type="application/json" id="rx-state">(.*?)</script>', report, re.S)
    assert blob and PROBE in json.dumps(json.loads(blob.group(1)))


def _stand_in(exp: Explanation, rules: RuleSet) -> SimpleNamespace:
    """What the payloads read of an explanation, with other rules (no refit, no scorecard read off)."""
    st = exp.result
    return SimpleNamespace(rules=rules, literals=st.literals, teacher_scores=st.teacher_scores,
                           result=SimpleNamespace(literal_matrix=st.literal_matrix, values=st.values))


def test_a_set_of_rules_and_linear_terms_together():
    """A mixed set (rules and linear terms together): the net effects step over its rules (a linear term is a
    line, on its own card), the importance and the Thresholds view read its rules; the linear term changes none."""
    exp = tiny_payments(150, random_state=5)
    st = exp.result
    L = st.literals
    share = next(c for c in range(L.n_outputs) if L.output_kind[c] == "share")
    rules = list(st.rules.rules)
    linear = LinearTerm(share, 0.8, 0.0, L.output_descriptions[share], False)
    try:
        mixed = RuleSet(rules + [linear], st.rules.intercept, literals=L)
    except Exception as err:  # a RuleSet that holds rules or linear terms, not both (before mixed sets land)
        pytest.skip(f"this RuleSet takes no mixed sets yet: {err}")
    alone = RuleSet(rules, st.rules.intercept, literals=L)
    got, want = ws.net_effects(_stand_in(exp, mixed)), ws.net_effects(_stand_in(exp, alone))
    assert want and json.dumps(got) == json.dumps(want)
    assert ws.importance(_stand_in(exp, mixed)) == ws.importance(_stand_in(exp, alone))
    # only linear terms: no step at all
    assert ws.net_effects(_stand_in(exp, RuleSet([linear], 0.0, literals=L))) == []


def test_net_effects_of_the_rules_alone_match_the_old_scoring():
    """Without linear terms, the steps (now summed over the rules' own firings) are rules.score's differences."""
    exp = tiny_payments(150, random_state=6)
    rules, L = exp.rules, exp.literals
    Z = exp.result.literal_matrix
    mode = Z.mean(axis=0) >= 0.5
    for e in ws.net_effects(exp):
        idx = [i for i in range(L.n_literals) if int(L.column[i]) == e["column"]
               and any(i == lit.index for r in rules for lit in formula_literals(r.formula))]
        idx.sort(key=lambda i: L.thresholds[i])
        B = np.repeat(mode[None, :], len(idx) + 1, axis=0)
        for b in range(len(idx) + 1):
            B[b, idx] = np.arange(len(idx)) < b
        s = rules.score(B)
        assert e["effect"] == pytest.approx(list(s - s[e["base_band"]]), abs=1e-5)



def linear_stand_in(seed: int = 7) -> SimpleNamespace:
    """What the Scorecard view reads of an explanation whose scorecard has a linear card (built by hand: the
    refit picks one only where users it was not chosen on agree) beside a banded one."""
    exp = interacting_explanation(seed, n_users=150)
    sc = exp.scorecard
    L = exp.literals
    V = exp.result.values
    count = next(c for c in range(L.n_outputs) if L.output_kind[c] == "count")
    v = V[:, count]
    lo, hi = float(np.quantile(v, 0.1)), float(np.quantile(v, 0.9))
    linear = Card(count, L.output_descriptions[count], "count", L.output_unit[count], (), (),
                  linear=Linear(0.02, lo, hi, -0.3, share=1.0, teacher=0.1))
    card = Scorecard([linear] + [c for c in sc.cards if c.column != count][:1], sc.interactions, sc.base, sc.literals)
    return SimpleNamespace(scorecard=card, literals=L, result=SimpleNamespace(values=V),
                           student_scores=pd.Series(card.predict(V)))


def test_a_linear_card():
    exp = linear_stand_in()
    sc = exp.scorecard
    card = sc.cards[0]
    got = sv.scorecard_state(exp)["cards"][0]
    assert got["linear"] and [(r["label"], r["points"], r["users"], r["teacher"], r["note"]) for r in got["rows"]] \
        == rows_written(card)
    assert got["line"]["text"] == card.linear_text() and got["rows"][-1]["label"] == card.linear_text()
    assert got["line"]["lo_text"] == format_value(card.linear.lo, "count", card.unit, exact=True)
    assert got["line"]["points_hi"] == pytest.approx(-0.3 + 0.02 * (card.linear.hi - card.linear.lo), abs=1e-6)
    # a user on it: an explanation whose rules are that scorecard's (points centred again when read back)
    base = interacting_explanation(7, n_users=150)
    rules = sc.to_rules()
    V = base.result.values
    y = base.teacher_scores
    L2 = rules.literal_table()
    b = base.with_result(dataclasses.replace(
        base.result, rules=rules, literals=L2, literal_matrix=L2.transform_values(V), fires=rules.fires(V),
        student_scores=pd.Series(rules.score(V), index=y.index, name="student"), pruning=None, unpruned_rules=None,
        scorecard=read_scorecard(rules, V, y.to_numpy(), base.is_test)))
    k, lin = next((k, c) for k, c in enumerate(b.scorecard.cards) if c.linear is not None)
    for i in range(0, len(V), 7):
        u = sv.user_scorecard(b, i)
        v = float(V[i, lin.column])
        # the reference: the line by hand, centred as read back (its offset), the value clipped
        want = lin.linear.offset + lin.linear.slope * (min(max(v, lin.linear.lo), lin.linear.hi) - lin.linear.lo)
        assert u["cards"][k]["band"] == 0 and u["cards"][k]["points"] == pytest.approx(want, abs=1e-5)
        assert u["cards"][k]["points_text"] == points_text(want) and u["adds_up"]


def test_the_static_copy_shows_the_scorecard_first(exp):
    """The static copy: the scorecard before the rules table, each card's rows (the text form's strings) and chart."""
    page = static_html(exp)
    sc = exp.scorecard
    assert page.index("rudi-explain-scorecard") < page.index("<th>weight</th>")
    assert page.count("<svg ") == len(sc.cards) and page.count("rudi-explain-card") == len(sc.cards)
    for card in sc.cards:
        for label, points, users, teacher, _ in rows_written(card):
            cells = "".join(f'<td style="text-align: {side}; white-space: nowrap">{html.escape(x)}</td>'
                            for side, x in zip(("left", "right", "right", "right"), (label, points, users, teacher)))
            assert f"<tr>{cells}</tr>" in page, (card.name, label)
    for r in sc.interactions:
        assert html.escape(r.text) in page


def test_the_what_if_reply_writes_the_moved_threshold_the_one_way():
    """The what-if box's reply names the moved threshold as a reader reads it (a share as a percent)."""
    from rudi_explain.views.widget import ExplanationWidget

    exp = tiny_payments(200)
    share = next(t for t in ws.thresholds(exp) if t["kind"] == "share" and any(x["in_rules"] for x in t["thresholds"]))
    lit = next(x for x in share["thresholds"] if x["in_rules"])
    reply = ExplanationWidget(exp).answer_what_if(lit["literal"], lit["threshold"])
    assert reply["ok"], reply
    assert reply["state"]["value_shown"] == format_value(lit["threshold"], "share", exact=True)
    assert reply["state"]["value_shown"].endswith("%")


def test_the_what_if_box_takes_a_share_in_percent_the_way_the_card_writes_it():
    """The box shows a share's threshold in percent and reads "25" or "25%" as 25% (issue 26 left-out 1): the
    reply to the typed text equals the reply to the raw value (what exp.with_threshold takes), and the text the
    box shows reads back as the very threshold."""
    from rudi_explain.views.widget import ExplanationWidget

    exp = tiny_payments(200)
    w = ExplanationWidget(exp)
    checked = 0
    for t in ws.thresholds(exp):
        for x in (x for x in t["thresholds"] if x["in_rules"]):
            share = t["kind"] == "share"
            assert t["input_scale"] == (100 if share else 1)
            # the reference: the raw threshold times 100 (a share), as a plain float
            assert float(x["input_text"]) == pytest.approx(x["threshold"] * t["input_scale"], rel=1e-12)
            same = w.answer_what_if(x["literal"], None, 1, x["input_text"])
            assert same["ok"] and same["state"]["value"] == x["threshold"], same
            raw = float(np.round(x["threshold"] * 0.9, 6)) if x["threshold"] else -1.0
            typed = [f"{raw * 100:.4f}", f"{raw * 100:.4f}%", f" {raw * 100:.4f} % "] if share else [repr(raw)]
            want = w.answer_what_if(x["literal"], raw, 1)
            for text in typed:
                got = w.answer_what_if(x["literal"], None, 1, text)
                if not want["ok"]:  # a band edge moved past its neighbour: the same refusal
                    assert not got["ok"] and got["error"] == want["error"]
                    continue
                assert got["ok"], got
                assert got["state"]["value"] == pytest.approx(raw, rel=1e-12)
                assert got["state"]["fidelity_test_moved"] == pytest.approx(want["state"]["fidelity_test_moved"])
                assert got["state"]["value_shown"] == want["state"]["value_shown"]
            checked += share
    assert checked >= 1, "no share threshold in the rules"
    bad = next(x for t in ws.thresholds(exp) for x in t["thresholds"] if t["kind"] == "share")
    reply = w.answer_what_if(bad["literal"], None, 1, "a quarter")
    assert not reply["ok"] and "percent" in reply["error"]


def test_a_users_waterfall_adds_a_linear_terms_weight_times_the_value():
    """On a set holding rules and a linear term, each fired rule's step in the user's drill-down is what it adds
    (a linear term: weight x value), so intercept + steps = the rule score (the weight alone did not add up)."""
    exp = tiny_payments(150, random_state=5)
    st = exp.result
    L = st.literals
    c = next(c for c in range(L.n_outputs) if L.output_kind[c] == "count")
    try:
        mixed = RuleSet(list(st.rules.rules) + [LinearTerm(c, 0.01, 0.0, L.output_descriptions[c], False)],
                        st.rules.intercept, literals=L)
        exp = _swap(exp, mixed)
    except Exception as err:  # before sets of rules and linear terms land
        pytest.skip(f"no mixed rule sets here: {err}")
    for uid in exp.sequences.users[:25]:
        d = ws.user_detail(exp, uid)
        assert d["intercept"] + sum(x["weight"] for x in d["contributions"]) == pytest.approx(d["student"], abs=1e-4)


def _swap(exp: Explanation, rules: RuleSet) -> Explanation:
    st = exp.result
    state = FittedState.from_values(exp.sequences, st.statistics, st.literals, rules, st.values,
                                    st.teacher_scores.to_numpy(), st.is_test, teacher_kind="given scores",
                                    seconds={"total": 0.0})
    return Explanation(exp.sequences, exp.params, result=state, history=[JobProgress("done", 1, 1, "built here")])


@pytest.mark.parametrize("weight", [1e-4, 0.003, 0.05, -0.02])
def test_rule_cards_place_a_linear_term_by_its_spread_of_points(weight):
    """The Rules tab orders cards by how far each moves scores over the training users: a rule by |weight|,
    a linear card's term by |weight| x the range of its clipped values (not by its weight per unit, which
    compares with nothing). The reference: what each adds, user by user, max minus min."""
    exp = tiny_payments(150, random_state=5)
    st = exp.result
    L = st.literals
    c = next(c for c in range(L.n_outputs) if L.output_kind[c] == "count")
    v = st.values[~st.is_test, c]
    lo, hi = float(np.nanquantile(v, 0.1)), float(np.nanquantile(v, 0.9))
    term = LinearTerm(c, weight, 0.0, L.output_descriptions[c], False, lo=lo, hi=hi)
    exp = _swap(exp, RuleSet(list(st.rules.rules) + [term], st.rules.intercept, literals=L))
    train = np.flatnonzero(~exp.is_test)
    spread = {}
    for k, rule in enumerate(exp.rules):
        if not isinstance(rule, LinearTerm):  # a rule adds its weight where it fires, else nothing
            spread[k] = abs(rule.weight)
            continue
        added = []
        for u in train:  # the reference: a loop over the training users
            x = exp.result.values[u, rule.column]
            added.append(rule.weight * (rule.fill if math.isnan(x) else min(max(x, rule.lo), rule.hi)))
        spread[k] = max(added) - min(added)
    cards = ws.rule_cards(exp)
    assert [x["index"] for x in cards] == sorted(spread, key=lambda k: (-spread[k], k))
    got = next(x for x in cards if x["linear"])
    assert got["spread"] == pytest.approx(spread[got["index"]], rel=1e-9)


def test_the_choice_of_scorecard_is_said_and_escaped_in_the_static_copy_and_the_report():
    """The sentence saying which form of scorecard explain() kept sits under the scorecard's headline; a form name
    from a damaged or hostile file is escaped in the static copy and JSON-escaped in the report."""
    from rudi_explain.explanation.scorecard_choice import ScorecardChoice

    exp = tiny_payments()
    choice = ScorecardChoice.weighed(PROBE, {"student": 0.8123, PROBE: 0.9}, n_valid=300, n_fit=1200)
    shown = exp.with_result(dataclasses.replace(exp.result, scorecard_choice=choice))
    text = choice.text()
    assert PROBE in text and "0.812" in text and "(fidelity 0.900)" in text
    state = sv.scorecard_state(shown)
    assert state["choice"] == choice.sentences() and " ".join(state["choice"]) == text
    assert sv.scorecard_state(exp)["choice"] == []
    page = static_html(shown)
    assert PROBE not in page and html.escape(text) in page
    assert page.index(html.escape(text)) > page.index("<b>Scorecard</b>")  # where the scorecard is introduced
    report = report_html(shown, n_users=2)
    assert PROBE not in report and "<img" not in report
    blob = re.search(r'<script type="application/json" id="rx-state">(.*?)</script>', report, re.S)
    assert blob and json.loads(blob.group(1))["results"]["scorecard"]["choice"] == [text]
