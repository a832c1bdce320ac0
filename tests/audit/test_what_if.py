"""What-if thresholds: exp.with_threshold and widget_state.what_if against a computation from scratch."""

import json

import numpy as np
import pytest

import rudi_explain as rx
from rudi_explain.rules.formula import And, Lit, Or
from rudi_explain.views import payloads as widget_state

FAST = dict(n_stats=3, n_rules=8, n_simulations=30, student_params={"epochs": 25})


@pytest.fixture(scope="module")
def exp():
    demo = rx.datasets.make_payments(300, random_state=7)
    return rx.explain(None, demo.events, scores=demo.risk, background=False, **FAST)


def holds(f, Z, read=None):
    """A formula's truth per user, by hand (not the library's evaluator); ``read`` maps a literal to the
    column it reads instead (an interaction rule's copy of a moved band edge)."""
    if isinstance(f, Lit):
        z = Z[:, (read or {}).get(f.index, f.index)]
        return ~z if f.negated else z
    parts = [holds(c, Z, read) for c in f.children]
    if isinstance(f, And):
        return np.all(parts, axis=0) if parts else np.ones(len(Z), bool)
    assert isinstance(f, Or)
    return np.any(parts, axis=0) if parts else np.zeros(len(Z), bool)


def interactions_reading(exp, i):
    """The rules that read literal i beside a literal of another output (interaction rules), by hand."""
    L = exp.literals
    return [k for k, r in enumerate(exp.rules) if i in {x.index for x in _lits(r.formula)}
            and len({int(L.column[x.index]) for x in _lits(r.formula)}) > 1]


def kept_interactions(exp, i):
    """The interaction rules that keep a copy of literal i when it moves: those reading it where it is a band edge."""
    from rudi_explain.audit.cards import edge_neighbours

    return interactions_reading(exp, i) if edge_neighbours(exp, i) is not None else []


def from_scratch(exp, i, value):
    """Statistics evaluated afresh, literal i thresholded at value, rules scored by hand.

    SEMANTICS' what-if: moving a card's band edge moves the card alone; an interaction rule that reads
    the same literal keeps it where it was (a copy, appended to the literal table)."""
    L = exp.literals
    V = L.values(exp.sequences)
    t = L.thresholds.copy()
    t[i] = value
    with np.errstate(invalid="ignore"):
        Z = V[:, L.column] > t
        kept = kept_interactions(exp, i)
        if kept:
            Z = np.column_stack([Z, V[:, L.column[i]] > L.thresholds[i]])
    s = np.full(len(Z), exp.rules.intercept)
    fires = [holds(rule.formula, Z, {i: L.n_literals} if k in kept else None) for k, rule in enumerate(exp.rules)]
    # the order RuleSet.score adds weights in, so sums agree to the bit (fidelity reads ties): card by card
    # (each card's rules summed first), then each other rule, where the set says so; else rule by rule
    groups = exp.rules.groups() if hasattr(exp.rules, "groups") else [(-1, [k]) for k in range(len(exp.rules))]
    for _, members in groups:
        if len(members) == 1:
            s[fires[members[0]]] += exp.rules[members[0]].weight
        else:
            part = np.zeros(len(Z))
            for k in members:
                part[fires[k]] += exp.rules[k].weight
            s += part
    return Z, np.array(fires).T, s


def used_literals(exp):
    return sorted({lit.index for r in exp.rules for lit in _lits(r.formula)})


def _lits(f):
    return [f] if isinstance(f, Lit) else [x for c in f.children for x in _lits(c)]


def moves(exp):
    """(literal, new value) pairs: every literal the rules use, moved to two training quantiles of its output.

    A card's band edge stays between its neighbours (a move past one is refused: test_scorecard_audit.py).
    """
    from rudi_explain.audit.cards import edge_neighbours

    L = exp.literals
    out = []
    for i in used_literals(exp):
        v = exp.result.values[~exp.is_test, L.column[i]]
        v = v[~np.isnan(v)]
        edge = edge_neighbours(exp, i)
        for q in (25, 70):
            x = float(np.percentile(v, q))
            if x != L.thresholds[i] and (edge is None or edge[1] < x < edge[2]):
                out.append((i, x))
    return out


def test_with_threshold_equals_a_fresh_computation(exp):
    y = exp.teacher_scores.to_numpy()
    test, train = exp.is_test, ~exp.is_test
    cases = moves(exp)
    assert len(cases) >= 3
    changed = 0
    for i, value in cases:
        moved = exp.with_threshold(i, value)
        Z, F, s = from_scratch(exp, i, value)
        np.testing.assert_array_equal(moved.result.literal_matrix, Z)
        np.testing.assert_array_equal(moved.result.fires, F)
        np.testing.assert_array_equal(moved.student_scores.to_numpy(), s)
        fid = rx.metrics.fidelity(y[test], s[test])
        assert moved.report()["fidelity_test"] == fid
        assert moved.report()["fidelity_train"] == rx.metrics.fidelity(y[train], s[train])
        # the fidelity curve's current point is its default rule set's held-out fidelity (the pruning's,
        # which the scorecard was refitted from), with the threshold moved
        curve = moved.fidelity_curve
        default = moved.pruning.default_rules.score(Z[test])
        assert curve.loc[curve["default"], "fidelity_test"].item() == rx.metrics.fidelity(y[test], default)
        assert curve["fidelity_valid"].isna().all()  # validation users are not kept: not pretended
        assert moved.literals.thresholds[i] == value and moved.literals.threshold_text[i] == \
            rx.rules.format_threshold(value)
        # the live feedback gives the same figures, rounded for JSON
        w = widget_state.what_if(exp, i, value)
        json.dumps(w, allow_nan=False)
        assert w["fidelity_test_moved"] == pytest.approx(fid, abs=1e-6)
        assert w["fidelity_test"] == pytest.approx(exp.report()["fidelity_test"], abs=1e-6)
        assert w["fidelity_train_moved"] == pytest.approx(rx.metrics.fidelity(y[train], s[train]), abs=1e-6)
        assert w["fidelity_train"] == pytest.approx(exp.report()["fidelity_train"], abs=1e-6)
        assert w["n_changed"] == int((s != exp.student_scores.to_numpy()).sum())
        using = [k for k, r in enumerate(exp.rules) if i in [x.index for x in _lits(r.formula)]
                 and k not in kept_interactions(exp, i)]  # a moved band edge leaves its interaction rules
        assert [r["index"] for r in w["rules"]] == using
        for r in w["rules"]:
            k = r["index"]
            assert r["coverage_train_moved"] == pytest.approx(F[train, k].mean(), abs=1e-4)
            assert r["coverage_test_moved"] == pytest.approx(F[test, k].mean(), abs=1e-4)
            assert r["coverage_test"] == pytest.approx(exp.result.fires[test, k].mean(), abs=1e-4)
            assert r["text_moved"] == str(moved.rules[k].text)
        changed += w["n_changed"] > 0
    assert changed >= 2  # the moves are real ones


def test_original_untouched_and_reset_gives_it_back(exp):
    before = (exp.literals.thresholds.copy(), exp.result.literal_matrix.copy(), exp.student_scores.copy(),
              [str(r) for r in exp.rules], exp.report()["fidelity_test"], exp.fidelity_curve.copy(),
              dict(exp.params))
    for i, value in moves(exp)[:6]:
        old = float(exp.literals.thresholds[i])
        moved = exp.with_threshold(i, value)
        assert moved.literals.thresholds[i] == value
        back = moved.with_threshold(i, old)
        np.testing.assert_array_equal(back.literals.thresholds, before[0])
        np.testing.assert_array_equal(back.result.literal_matrix, before[1])
        np.testing.assert_array_equal(back.student_scores.to_numpy(), before[2].to_numpy())
        assert [str(r) for r in back.rules] == before[3]
        assert back.report()["fidelity_test"] == before[4]
        np.testing.assert_array_equal(back.fidelity_curve["fidelity_test"], before[5]["fidelity_test"])
        assert back.params["moved_thresholds"] == [{"literal": i, "from": old, "to": value},
                                                   {"literal": i, "from": value, "to": old}]
    np.testing.assert_array_equal(exp.literals.thresholds, before[0])
    np.testing.assert_array_equal(exp.result.literal_matrix, before[1])
    np.testing.assert_array_equal(exp.student_scores.to_numpy(), before[2].to_numpy())
    assert [str(r) for r in exp.rules] == before[3]
    assert exp.report()["fidelity_test"] == before[4]
    assert exp.params == before[6] and "moved_thresholds" not in exp.params
    np.testing.assert_array_equal(exp.fidelity_curve["fidelity_valid"], before[5]["fidelity_valid"])


def test_literal_by_name_or_statistic_output(exp, tmp_path):
    L = exp.literals
    i, value = moves(exp)[0]
    by_index = exp.with_threshold(i, value)
    by_name = exp.with_threshold(L.names[i], value)
    np.testing.assert_array_equal(by_name.student_scores, by_index.student_scores)
    c = int(L.column[i])
    used = [j for j in used_literals(exp) if L.column[j] == c]
    if len(used) == 1:  # the output names the literal the rules use on it
        assert np.array_equal(exp.with_threshold(L.output_descriptions[c], value).literals.thresholds,
                              by_index.literals.thresholds)
    else:
        # a card's output names its band edges instead; either way the message says how to name one
        with pytest.raises(ValueError, match="by index or name"):
            exp.with_threshold(L.output_descriptions[c], value)
    # a moved explanation saves and loads with its figures
    back = rx.load(by_index.save(tmp_path / "moved.rudi"))
    assert back.report()["fidelity_test"] == by_index.report()["fidelity_test"]
    assert back.literals.thresholds[i] == value


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -np.inf, "lots", None])
def test_bad_values_name_the_literal(exp, bad):
    i = used_literals(exp)[0]
    with pytest.raises(ValueError, match=rf"literal {i} \(") as err:
        exp.with_threshold(i, bad)
    assert repr(bad) in str(err.value) and exp.literals.names[i] in str(err.value)
    with pytest.raises(ValueError, match="literal"):
        widget_state.what_if(exp, i, bad)


def test_unknown_literals(exp):
    with pytest.raises(ValueError, match="does not exist"):
        exp.with_threshold(exp.literals.n_literals, 1.0)
    with pytest.raises(ValueError, match="no literal or statistic output"):
        exp.with_threshold("no such statistic > 3", 1.0)
    with pytest.raises(TypeError):
        exp.with_threshold(True, 1.0)
