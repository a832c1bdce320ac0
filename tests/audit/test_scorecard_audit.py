"""The audit tools on the scorecard (issue 26 items 5 and 6), each against a per-user loop over the band edges.

rx.compare by card (bands kept, moved, gained, lost), what-if on a band edge, the counterfactual's bands, the
per-user band table and its sum check, and one way to write a value (a share as a percent, never a fraction).
Three seeds of a small explain() run on the payments data: every property is asserted on each.
"""

import dataclasses
import html
import math
import re

import numpy as np
import pytest
from scorecard_swap import with_scorecard

import rudi_explain as rx
from rudi_explain.audit.cards import edge_literal, edge_neighbours
from rudi_explain.audit.what_if import what_if
from rudi_explain.exceptions import InputError
from rudi_explain.rules.formula import formula_literals
from rudi_explain.rules.scorecard import Scorecard
from rudi_explain.rules.scorecard_cards import Linear
from rudi_explain.rules.values import format_value, points_text

FAST = dict(n_stats=3, n_rules=8, n_simulations=30, student_params={"epochs": 25})
SEEDS = (0, 1, 2)


@pytest.fixture(scope="module")
def exps():
    demo = rx.datasets.make_payments(300, random_state=11)
    return [rx.explain(None, demo.events, scores=demo.risk, background=False, random_state=s, **FAST) for s in SEEDS]


# ------------------------------------------------------------------ references, by hand
def band_of(card, x):
    """A value's band by a loop over the card's edges: -1 undefined, else the number of edges below it."""
    if math.isnan(x):
        return -1 if card.undefined is not None else 0
    return sum(1 for e in card.edges if x > e)


def label_of(card, b):
    return card.undefined_label() if b == -1 else card.band_labels()[b]


def points_of(card, b):
    return card.undefined.points if b == -1 else card.bands[b].points


def points_at(card, x):
    """A value's points by hand: its band's, or on a linear card offset + slope x (x clipped) - lo."""
    lin = card.linear
    if lin is None:
        return points_of(card, band_of(card, x))
    if math.isnan(x):
        return card.undefined.points if card.undefined is not None else lin.offset
    return lin.offset + lin.slope * (min(max(x, lin.lo), lin.hi) - lin.lo)


def scores_by_hand(sc, V, edges=None, moved_literal=None):
    """base + each card's band points (edges per card column, default the card's own) + fired interactions.

    ``moved_literal=(i, t)``: the interaction rules read literal ``i`` at threshold ``t`` (a moved band edge
    moves every rule that reads its literal).
    """
    L = sc.literals
    thresholds = L.thresholds.copy()
    if moved_literal is not None:
        thresholds[moved_literal[0]] = moved_literal[1]
    with np.errstate(invalid="ignore"):
        Z = V[:, L.column] > thresholds  # NaN: false, as a literal reads it
    fires = np.column_stack([r.fires(Z) for r in sc.interactions]) if sc.interactions else \
        np.zeros((len(V), 0), dtype=bool)
    out = []
    for u in range(len(V)):  # the reference: a loop over users
        s = sc.base
        for card in sc.cards:
            moved = card.with_(edges=tuple(edges[card.column])) if edges and card.column in edges else card
            s += points_at(moved, float(V[u, card.column]))
        s += sum(r.weight for r, f in zip(sc.interactions, fires[u]) if f)
        out.append(s)
    return np.array(out)


def output_key(L, c):
    stat = L.statistics[int(L.output_statistic[c])]
    return stat.key, ("" if L.output_names[c] == str(stat) else L.output_names[c])


def share_fraction_texts(L, values):
    """For share outputs: the fraction texts a reader must never see (e.g. "0.0226", "0.5")."""
    out = set()
    for c, x in values:
        if L.output_kind[c] == "share" and math.isfinite(x) and 0 < x < 1:
            out.add(f"{float(f'{x:.3g}')}")
    return out


# ------------------------------------------------------------------ compare
@pytest.mark.parametrize("pair", [(0, 1), (1, 2), (0, 2)])
def test_compare_by_card_against_a_reference(exps, pair):
    a, b = (exps[k] for k in pair)
    cmp = rx.compare(a, b, names=(f"seed {pair[0]}", f"seed {pair[1]}"))
    sa, sb = a.scorecard, b.scorecard
    ka = {output_key(sa.literals, c.column): c for c in sa.cards}
    kb = {output_key(sb.literals, c.column): c for c in sb.cards}
    st = cmp.cards["status"].value_counts()
    assert st.get("gained", 0) == len(kb.keys() - ka.keys()) and st.get("lost", 0) == len(ka.keys() - kb.keys())
    assert st.get("kept", 0) + st.get("changed", 0) == len(ka.keys() & kb.keys())
    for key in ka.keys() & kb.keys():
        ca, cb = ka[key], kb[key]
        rows = cmp.bands[cmp.bands["card"] == cb.name]
        labels_a = [label_of(ca, b) for b in ([-1] if ca.undefined else []) + list(range(ca.n_bands))]
        labels_b = [label_of(cb, b) for b in ([-1] if cb.undefined else []) + list(range(cb.n_bands))]
        # every band of each side once
        assert sorted(rows["band_a"].dropna()) == sorted(labels_a)
        assert sorted(rows["band_b"].dropna()) == sorted(labels_b)
        # a band in both (the same interval, so the same words) is never gained or lost; kept only within tolerance
        same = set(labels_a) & set(labels_b)
        for r in rows.itertuples():
            if r.band_a in same and r.band_a == r.band_b:
                assert r.status in ("kept", "points changed")
                assert (r.status == "kept") == (abs(r.points_a - r.points_b) <= cmp.points_tolerance)
            assert r.status not in ("gained", "lost") or (r.band_a or r.band_b) not in same
        # a moved edge goes from an edge only A has to one only B has, both written as the card writes them
        only_a = {format_value(e, ca.kind, ca.unit, exact=True) for e in ca.edges if e not in cb.edges}
        only_b = {format_value(e, cb.kind, cb.unit, exact=True) for e in cb.edges if e not in ca.edges}
        for text in rows.loc[rows["status"] == "moved", "moved"]:
            for x, y in re.findall(r"edge moved from (.+?) to (.+?)(?:;|$)", text):
                assert x in only_a and y in only_b
        # as many edges moved as the fewer side has unshared edges, when none is shared; each band's move is one
        card_row = cmp.cards[cmp.cards["card"] == cb.name].iloc[0]
        edges_moved = [m for m in card_row["edges_moved"].split("; ") if m]
        if not set(ca.edges) & set(cb.edges) and ca.edges and cb.edges:
            assert len(edges_moved) == min(len(ca.edges), len(cb.edges))
        assert {m for t in rows["moved"] if t for m in t.split("; ")} <= set(edges_moved)
    text = cmp.summary()
    assert "cards: " in text and "interaction rules: " in text
    page = cmp._repr_html_()
    for name in cmp.cards["card"]:
        assert html.escape(name) in page
    assert not cmp.unchanged


def test_compare_itself_is_unchanged(exps):
    for a in exps:
        cmp = rx.compare(a, a)
        assert cmp.unchanged and (cmp.cards["status"] == "kept").all() and (cmp.bands["status"] == "kept").all()
        assert len(cmp.cards) == len(a.scorecard.cards)
        assert "cards: 0 changed, 0 gained, 0 lost" in cmp.summary()


def test_compare_after_a_moved_band_edge_names_the_two_bands_and_the_users(exps):
    n = 0
    for a in exps:
        sc = a.scorecard
        for k, card in enumerate(sc.cards):
            if not card.edges:
                continue
            j = len(card.edges) - 1
            lo = card.edges[j - 1] if j else card.edges[j] - 1.0
            new = (lo + card.edges[j]) / 2
            b = a.with_threshold((k, card.edges[j]), new)
            cmp = rx.compare(a, b)
            rows = cmp.bands[cmp.bands["card"] == card.name]
            moved = rows[rows["status"] == "moved"]
            assert len(moved) == 2  # the bands on either side of the edge
            want = (f"edge moved from {format_value(card.edges[j], card.kind, card.unit, exact=True)} to "
                    f"{format_value(new, card.kind, card.unit, exact=True)}")
            assert (moved["moved"] == want).all()
            assert (rows.loc[rows["status"] != "moved", "status"].isin(["kept", "points changed"])).all()
            assert (cmp.cards.loc[cmp.cards["card"] != card.name, "status"] == "kept").all()
            # the users whose band changed, by a loop
            V = a.result.values
            changed = [u for u in range(len(V)) if band_of(card, V[u, card.column]) !=
                       band_of(card.with_(edges=tuple(sorted({*card.edges} - {card.edges[j]} | {new}))),
                               V[u, card.column])]
            assert sorted(cmp.users["user"]) == sorted(a.sequences.users[changed].tolist())
            n += 1
    assert n >= len(exps)


def test_compare_without_scorecards_stays_rule_by_rule(exps):
    def rules_only(e):  # an explanation whose rules are no scorecard (as a rule list's)
        return e.with_result(dataclasses.replace(e.result, scorecard=None))

    a, b = rules_only(exps[0]), rules_only(exps[1])
    cmp = rx.compare(a, b)
    assert not cmp.by_card and cmp.cards.empty and cmp.bands.empty and (cmp.rules["part"] == "rule").all()
    assert sorted(cmp.rules.loc[cmp.rules.rule_a >= 0, "rule_a"]) == list(range(len(a.rules)))
    assert sorted(cmp.rules.loc[cmp.rules.rule_b >= 0, "rule_b"]) == list(range(len(b.rules)))
    text = cmp.summary()
    assert "cards:" not in text and "\nrules: " in text
    changed = cmp.rules[cmp.rules["status"] != "kept"]
    assert len([ln for ln in text.splitlines() if ln.startswith(("  + ", "  - ", "  ~ "))]) == \
        len(changed) + int((cmp.statistics["status"] != "kept").sum())
    assert rx.compare(a, a).unchanged


# ------------------------------------------------------------------ what-if on a band edge
def test_what_if_on_a_band_edge_equals_a_per_user_loop(exps):
    """A moved band edge moves the card's bands only: interaction rules that read the same literal keep it."""
    n = 0
    for a in exps:
        sc = a.scorecard
        V = a.result.values
        for k, card in enumerate(sc.cards):
            for j, e in enumerate(card.edges):
                lo = card.edges[j - 1] if j else e - 2 * (abs(e) + 1)
                hi = card.edges[j + 1] if j + 1 < len(card.edges) else e + 2 * (abs(e) + 1)
                i = edge_literal(a, k, e)
                for new in ((lo + e) / 2, (e + hi) / 2):
                    moved = a.with_threshold((k, e), new)
                    edges = {card.column: sorted(new if x == e else x for x in card.edges)}
                    ref = scores_by_hand(sc, V, edges)  # only the card moves: the interaction rules stay
                    # the edge is that literal: naming it by index moves the same edge
                    np.testing.assert_array_equal(a.with_threshold(i, new).student_scores, moved.student_scores)
                    np.testing.assert_allclose(moved.student_scores.to_numpy(), ref, rtol=1e-12, atol=1e-9)
                    # the new scorecard has the moved edge, and gives the same scores itself
                    mc = next(c for c in moved.scorecard.cards if c.column == card.column)
                    assert list(mc.edges) == edges[card.column]
                    np.testing.assert_allclose(moved.scorecard.predict(V), ref, rtol=1e-12, atol=1e-9)
                    # the live what-if agrees, and names the bands before and after
                    w = what_if(a, (k, e), new)
                    assert w["n_changed"] == int((~np.isclose(ref, a.student_scores.to_numpy(), rtol=0,
                                                             atol=1e-12)).sum())
                    assert w["band_edge"]["bands_moved"] == mc.band_labels()
                    # every interaction rule fires for the same users as before (a loop over users)
                    before, after = sc.fires(V), moved.scorecard.fires(V)
                    assert [r.text for r in moved.scorecard.interactions] == [r.text for r in sc.interactions]
                    for u in range(len(V)):
                        assert list(after[u]) == list(before[u]), (card.name, e, new, u)
                    reading = [r.text for r in sc.interactions if i in {x.index for x in formula_literals(r.formula)}]
                    assert w["band_edge"]["interactions_kept"] == reading
                    assert all(r["index"] < len(a.rules) and a.rules[r["index"]].text not in reading
                               for r in w["rules"])  # the reply lists the card's band rules only
                    n += 1
    assert n >= 2 * len(exps)


def with_an_interaction_on_an_edge(a):
    """``a`` with one more interaction rule that reads a band edge's own literal (AND a literal of another
    card), as explain() may leave one: (the explanation, its scorecard, the card index, the edge)."""
    from rudi_explain.explanation.result import read_scorecard, score_series
    from rudi_explain.rules.formula import And, Lit
    from rudi_explain.rules.ruleset import Rule

    sc = a.scorecard
    banded = [k for k, c in enumerate(sc.cards) if c.edges]
    other = [k for k, c in enumerate(sc.cards) if c.edges and k != banded[0]] if banded else []
    if not other:
        return None
    k, e = banded[0], sc.cards[banded[0]].edges[0]
    i = edge_literal(a, k, e)
    m = edge_literal(a, other[0], sc.cards[other[0]].edges[-1])
    L = a.literals
    rule = Rule(And((Lit(i), Lit(m, True))), 0.4, info=L.literal_info())
    sc2 = Scorecard(sc.cards, (*sc.interactions, rule), sc.base, L)
    rules = sc2.to_rules()
    V = a.result.values
    y = a.teacher_scores
    Z = L.transform_values(V)
    state = dataclasses.replace(
        a.result, rules=rules, literal_matrix=Z, fires=rules.fires(rules.matrix(V) if rules.reads_values else Z),
        student_scores=score_series(rules.score(rules.matrix(V) if rules.reads_values else Z), y.index, "student"),
        pruning=None, unpruned_rules=None, scorecard=read_scorecard(rules, V, y.to_numpy(), a.is_test))
    return a.with_result(state), k, e


def test_a_moved_band_edge_keeps_the_interaction_rules_that_read_it(exps):
    """The card's bands move; an interaction rule reading the same literal fires for the very same users
    (a loop over users), its text unchanged; the scores are the moved card's plus the fixed interactions'."""
    n = 0
    for a in exps:
        made = with_an_interaction_on_an_edge(a)
        if made is None:
            continue
        b, k, e = made
        sc, V = b.scorecard, b.result.values
        card = sc.cards[k]
        i = edge_literal(b, k, e)
        reading = [r.text for r in sc.interactions if i in {x.index for x in formula_literals(r.formula)}]
        assert reading  # the split is exercised
        hi = card.edges[1] if len(card.edges) > 1 else e + 2 * (abs(e) + 1)
        v = V[:, card.column]
        inside = np.sort(v[(v > e) & (v <= hi)])
        up = (inside[0] + inside[-1]) / 2 if inside.size > 1 and inside[0] < inside[-1] else (e + hi) / 2
        for new in (e - (abs(e) + 1), up):
            moved = b.with_threshold((k, e), new)
            before, after = sc.fires(V), moved.scorecard.fires(V)
            assert [r.text for r in moved.scorecard.interactions] == [r.text for r in sc.interactions]
            for u in range(len(V)):  # the reference: each user's firings, one by one
                assert list(after[u]) == list(before[u]), (u, new)
            k2, mc = next((j, c) for j, c in enumerate(moved.scorecard.cards) if c.column == card.column)
            assert list(mc.edges) == sorted(new if x == e else x for x in card.edges)
            assert (mc.band_index(V[:, card.column]) != card.band_index(V[:, card.column])).any()
            ref = scores_by_hand(sc, V, {card.column: list(mc.edges)})
            np.testing.assert_allclose(moved.student_scores.to_numpy(), ref, rtol=1e-12, atol=1e-9)
            w = what_if(b, (k, e), new)
            assert w["band_edge"]["interactions_kept"] == reading and w["band_edge"]["interactions_moved"] == []
            assert w["n_changed"] == int((~np.isclose(ref, b.student_scores.to_numpy(), rtol=0, atol=1e-12)).sum())
            assert w["fidelity_test_moved"] == pytest.approx(moved.report()["fidelity_test"], abs=2e-6)
            # and back: the original scores exactly
            back = moved.with_threshold((k2, new), e)
            np.testing.assert_array_equal(back.student_scores.to_numpy(), b.student_scores.to_numpy())
            n += 1
    assert n >= 2


def test_a_band_edge_moved_onto_or_past_its_neighbour_is_refused(exps):
    n = 0
    for a in exps:
        for k, card in enumerate(a.scorecard.cards):
            for j in range(1, len(card.edges)):
                e, nb = card.edges[j], card.edges[j - 1]
                for bad in (nb, nb - 1.0):
                    with pytest.raises(InputError) as err:
                        a.with_threshold((k, e), bad)
                    msg = str(err.value)
                    assert format_value(e, card.kind, card.unit, exact=True) in msg
                    assert format_value(nb, card.kind, card.unit, exact=True) in msg and "neighbour" in msg
                    with pytest.raises(InputError):
                        what_if(a, (k, e), bad)
                n += 1
    assert n >= 1  # at least one card over the seeds has two edges


def test_a_linear_card_has_no_edge_to_move(exps):
    a = exps[0]
    sc = a.scorecard
    card = next(c for c in sc.cards if c.edges)
    lin = card.with_(edges=(), bands=(), linear=Linear(0.1, card.edges[0] - 1, card.edges[0] + 1))
    sc2 = Scorecard([lin if c is card else c for c in sc.cards], sc.interactions, sc.base, sc.literals)
    b = a.with_result(dataclasses.replace(a.result, scorecard=sc2))
    with pytest.raises(InputError, match="linear"):
        b.with_threshold((card.name, card.edges[0]), card.edges[0] + 0.5)
    with pytest.raises(InputError, match="no band edge at"):
        a.with_threshold((card.name, card.edges[0] + 1e-3), card.edges[0])


# ------------------------------------------------------------------ the counterfactual's bands
def test_counterfactual_names_the_band_to_reach(exps):
    n = moves = 0
    for a in exps:
        sc = a.scorecard
        for uid in a.sequences.users[:25]:
            cf = a.user(uid).counterfactual(50, "above", edit_events=False)
            text = cf.summary()
            for r in cf.changes.itertuples():
                card = next((c for c in sc.cards if c.column == r.output), None)
                if card is None:
                    assert not isinstance(r.band_now, str)  # None (NaN in a column of several rows)
                    continue
                now, need = label_of(card, band_of(card, r.value_now)), label_of(card, band_of(card, r.value_needed))
                if card.linear is not None and not math.isnan(r.value_now):
                    # a linear card's one band: the move is named by the card's points at each value
                    now, need = (f"{points_text(points_at(card, x))} points" for x in (r.value_now, r.value_needed))
                    assert (r.band_now, r.band_needed) == (now, need)
                    assert f"on its linear card, from {now} to {need}" in text
                    n += 1
                    continue
                assert (r.band_now, r.band_needed) == (now, need)
                # an interaction rule's literal may move the value within its card's band
                assert (f'from band "{now}" to "{need}"' if now != need else f'still in band "{now}"') in text
                moves += now != need
                assert r.value_now_text == format_value(r.value_now, card.kind, card.unit)
                for frac in share_fraction_texts(a.literals, [(r.output, r.value_now), (r.output, r.value_needed)]):
                    assert not re.search(rf"(?<![\d.]){re.escape(frac)}(?![\d%])", text), (frac, text)
                n += 1
    assert n >= len(exps) and moves >= 1


# ------------------------------------------------------------------ the per-user view
def test_user_bands_against_a_loop_over_the_band_edges(exps):
    for a in exps:
        sc = a.scorecard
        V = a.result.values
        train = np.flatnonzero(~a.is_test)
        for uid in a.sequences.users[::15]:
            u = a.user(uid)
            x = V[u.index]
            assert list(u.bands["card"]) == [c.name for c in sc.cards]
            for r, card in zip(u.bands.itertuples(), sc.cards):
                b = band_of(card, x[card.column])
                assert (r.band_index, r.band) == (b, label_of(card, b))
                assert r.points == pytest.approx(points_at(card, float(x[card.column])), rel=1e-12, abs=1e-12)
                assert r.value == format_value(x[card.column], card.kind, card.unit)
                in_band = sum(1 for t in train if band_of(card, V[t, card.column]) == b) / len(train)
                assert r.share == pytest.approx(in_band, abs=1e-12)
                assert r.users == format_value(in_band, "share")
            shares = 0
            for j, r in enumerate(u.literals.itertuples()):  # every literal's value and threshold for people
                c = int(a.literals.column[j])
                if a.literals.output_kind[c] == "share" and math.isfinite(r.value):
                    assert r.value_text.endswith("%") and r.threshold_text.endswith("%"), r
                    assert r.value_text == format_value(r.value, "share")
                    shares += 1
            assert shares or "share" not in a.literals.output_kind
            fired = sum(w for w in u.interactions)
            assert u.base + u.bands["points"].sum() + fired == pytest.approx(u.student_score, abs=1e-9)
            assert u.score_check["holds"]
            text, page = repr(u), u._repr_html_()
            for card in sc.cards:
                assert card.name in text and html.escape(card.name) in page
            fracs = share_fraction_texts(a.literals, [(c.column, x[c.column]) for c in sc.cards])
            for frac in fracs:
                assert not re.search(rf"(?<![\d.]){re.escape(frac)}(?![\d%])", text), (frac, text)


# ------------------------------------------------------------------ one way to write a value
def test_what_if_texts_write_a_share_as_a_percent(exps):
    n = 0
    for a in exps:
        L = a.literals
        used = {x.index for r in a.rules if hasattr(r, "formula") for x in formula_literals(r.formula)}
        for i in sorted(used):
            c = int(L.column[i])
            t = float(L.thresholds[i])
            if L.output_kind[c] != "share" or not 0 < t < 1:
                continue
            card = next((cd for cd in a.scorecard.cards if cd.column == c and t in cd.edges), None)
            lower = [x for x in (card.edges if card is not None else ()) if x < t]
            new = (max(lower, default=0.0) + t) / 2
            w = what_if(a, i, new)
            assert w["threshold_words"] == format_value(t, "share", exact=True) and w["threshold_words"].endswith("%")
            assert w["value_words"] == format_value(new, "share", exact=True) and w["value_words"].endswith("%")
            if w["band_edge"] is not None:
                assert w["band_edge"]["to"].endswith("%")
                for label in w["band_edge"]["bands"] + w["band_edge"]["bands_moved"]:
                    assert re.search(r"\d%", label) and not re.search(r"(?<![\d.])0\.\d", label)
            n += 1
    assert n >= 1  # the payments data's country shares
    # a band edge that is not there: the card's edges listed as the card writes them
    card = next(c for a in exps for c in a.scorecard.cards if c.edges)
    a = next(a for a in exps if card in a.scorecard.cards)
    with pytest.raises(InputError) as err:
        a.with_threshold((card.name, card.edges[0] + 1e-3), card.edges[0])
    assert format_value(card.edges[0], card.kind, card.unit, exact=True) in str(err.value)


# ------------------------------------------------------------------ a scorecard with a linear card
def with_a_linear_card(a):
    """``a`` with its first banded card made linear, as explain() writes such a scorecard: its rule form holds
    rules and a linear term (a mixed RuleSet). None where rule sets cannot hold both yet."""
    from rudi_explain.exceptions import StateError

    sc = a.scorecard
    k, card = next(((k, c) for k, c in enumerate(sc.cards) if c.edges), (None, None))
    if card is None:  # every card of this seed is linear already
        return None
    V = a.result.values
    v = V[~a.is_test, card.column]
    lo, hi = (float(x) for x in np.nanpercentile(v, [10, 90]))
    lin = card.with_(edges=(), bands=(), linear=Linear(0.5 / max(hi - lo, 1e-9), lo, max(hi, lo + 1.0), -0.1))
    sc2 = Scorecard([lin if c is card else c for c in sc.cards], sc.interactions, sc.base, sc.literals)
    try:
        return with_scorecard(a, sc2), sc2, k
    except StateError:  # the scorecard has no rule form
        return None


def test_what_if_on_a_scorecard_with_a_linear_card_against_a_per_user_loop(exps):
    n = 0
    for a in exps:
        made = with_a_linear_card(a)
        if made is None:
            continue
        b, sc2, k = made
        V = b.result.values
        np.testing.assert_allclose(b.student_scores.to_numpy(), scores_by_hand_linear(sc2, V), rtol=1e-12, atol=1e-9)
        lin = sc2.cards[k]
        kb = next(j for j, c in enumerate(b.scorecard.cards) if c.column == lin.column)
        with pytest.raises(InputError, match="linear"):  # a linear card has no edge to move
            b.with_threshold((kb, lin.linear.lo), lin.linear.lo + 1)
        L = b.literals
        for r in sc2.interactions:  # move each interaction rule's first literal to its output's median
            i = formula_literals(r.formula)[0].index
            c = int(L.column[i])
            x = V[~b.is_test, c]
            new = float(np.nanmedian(x))
            edge = edge_neighbours(b, i)
            if new == L.thresholds[i] or (edge is not None and not edge[1] < new < edge[2]):
                continue
            moved = b.with_threshold(i, new)
            ref = scores_by_hand_linear(sc2, V, (i, new))
            np.testing.assert_allclose(moved.student_scores.to_numpy(), ref, rtol=1e-12, atol=1e-9)
            w = what_if(b, i, new)
            assert w["n_changed"] == int((~np.isclose(ref, b.student_scores.to_numpy(), rtol=0, atol=1e-12)).sum())
            n += 1
        for uid in b.sequences.users[::30]:  # the user view: the linear card's points, and the sum check
            u = b.user(uid)
            assert u.score_check["holds"]
            row = u.bands[u.bands["card"] == lin.name].iloc[0]
            assert row["points"] == pytest.approx(float(lin.points(np.array([V[u.index, lin.column]]))[0]
                                                        - lin.points(V[~b.is_test, lin.column]).mean()), abs=1e-9)
    assert n >= 1


def scores_by_hand_linear(sc, V, moved_literal=None):
    """As scores_by_hand, a linear card's points by hand: offset + slope x (value clipped to [lo, hi] - lo)."""
    L = sc.literals
    thresholds = L.thresholds.copy()
    if moved_literal is not None:
        thresholds[moved_literal[0]] = moved_literal[1]
    with np.errstate(invalid="ignore"):
        Z = V[:, L.column] > thresholds
    fires = [r.fires(Z) for r in sc.interactions]
    out = []
    for u in range(len(V)):  # the reference: a loop over users
        s = sc.base
        for card in sc.cards:
            x = float(V[u, card.column])
            if card.linear is not None:
                lin = card.linear
                if math.isnan(x):
                    s += card.undefined.points if card.undefined is not None else lin.offset
                else:
                    s += lin.offset + lin.slope * (min(max(x, lin.lo), lin.hi) - lin.lo)
            else:
                s += points_of(card, band_of(card, x))
        s += sum(r.weight for r, f in zip(sc.interactions, fires) if f[u])
        out.append(s)
    return np.array(out)


def test_an_integer_user_id_reads_as_a_plain_number():
    """exp.user(17000) says 'UserView(17000: ...', not 'np.int64(17000)', and its id is a Python int."""
    demo = rx.datasets.make_payments(300, random_state=1)
    events = demo.events.copy()
    codes = {u: i + 17000 for i, u in enumerate(events["user_id"].unique())}
    events["user_id"] = events["user_id"].map(codes).astype("int64")
    exp = rx.explain(None, events, scores=demo.risk.rename(index=codes), background=False, progress=False,
                     n_stats=2, n_simulations=20)
    u = exp.user(17000)
    assert type(u.user_id) is int and repr(u).startswith("UserView(17000: ")
