"""Counterfactuals: each moves the rule score past the percentile as claimed, and flips the fewest literals."""

import itertools
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import rudi_explain as rx
from rudi_explain.rules.formula import And, Lit, Or
from rudi_explain.rules.ruleset import Rule, RuleSet

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tiny import tiny_payments  # noqa: E402

COUNTS = ("Select(amount) | Mean", "Select(channel) | Sum", "Select(amount) | RetainBy(country=other) | Count")


def holds(f, Z):
    """A formula's truth per row, by hand."""
    if isinstance(f, Lit):
        return ~Z[:, f.index] if f.negated else Z[:, f.index]
    parts = [holds(c, Z) for c in f.children]
    return np.all(parts, axis=0) if isinstance(f, And) else np.any(parts, axis=0)


def score_by_hand(rules, Z):
    s = np.full(len(Z), rules.intercept)
    for r in rules:
        s = s + np.where(holds(r.formula, Z), r.weight, 0.0)
    return s


def lits(f):
    return [f] if isinstance(f, Lit) else [x for c in f.children for x in lits(c)]


def check_claim(exp, uid, cf):
    """Set the changed outputs to the values claimed; the rules scored by hand must pass the target."""
    L = exp.literals
    i = exp.sequences.user_index(uid)
    V = L.values(exp.sequences)  # afresh, not the explanation's cache
    train = ~exp.is_test
    target = np.percentile(score_by_hand(exp.rules, V[train][:, L.column] > L.thresholds), cf.target_percentile)
    assert cf.target_score == pytest.approx(target, rel=1e-12, abs=1e-12)
    v = V[i].copy()
    for row in cf.changes.itertuples():
        v[row.output] = row.value_needed
    with np.errstate(invalid="ignore"):
        z_now = V[i, L.column] > L.thresholds
        z_new = v[L.column] > L.thresholds
    s_new = score_by_hand(exp.rules, z_new[None, :])[0]
    assert cf.new_score == pytest.approx(s_new, abs=1e-12)
    assert (s_new < target) if cf.direction == "below" else (s_new > target)
    used = sorted({x.index for r in exp.rules for x in lits(r.formula)})
    flipped = [j for j in used if z_now[j] != z_new[j]]
    assert sorted(cf.flipped["literal"]) == flipped and cf.n_literals == len(flipped)
    return z_now, z_new


def hand_made(seed):
    """tiny_payments with a hand-made rule set: AND, OR and negations over a few literals of three outputs."""
    exp = tiny_payments(200, random_state=seed)
    L = exp.literals
    rng = np.random.default_rng(seed)
    by_col = {c: np.flatnonzero(L.column == c) for c in np.unique(L.column)}
    cols = [c for c in by_col if len(by_col[c]) >= 2]
    cols = list(rng.choice(cols, size=min(3, len(cols)), replace=False))
    pick = [int(rng.choice(by_col[c])) for c in cols] + [int(rng.choice(by_col[cols[0]]))]
    info = L.literal_info()
    w = rng.normal(0, 1, 4)
    formulas = [And((Lit(pick[0]), Lit(pick[1], True))), Or((Lit(pick[2]), Lit(pick[1]))), Lit(pick[3]),
                And((Lit(pick[2], True), Lit(pick[0])))]
    rules = RuleSet([Rule(f, float(x), info) for f, x in zip(formulas, w)], 0.1, L)
    return exp.with_result(exp.result.with_rules(rules))


def assignments(exp, i):
    """Every achievable truth assignment of the rule literals for user ``i`` (a band per output): the score
    each gives by hand and the literals it flips, as two arrays (enumerated once per user)."""
    L = exp.literals
    used = sorted({x.index for r in exp.rules for x in lits(r.formula)})
    cols = sorted({int(L.column[j]) for j in used})
    z_now = exp.result.literal_matrix[i]
    bands = []
    for c in cols:
        t = np.unique(L.thresholds[[j for j in used if L.column[j] == c]])
        bands.append([t[0] - 1] + list(t + 1e-9))  # a value in every band: below all, then just above each
    scores, flips = [], []
    for values in itertools.product(*bands):
        z = z_now.copy()
        for c, v in zip(cols, values):
            on = [j for j in used if L.column[j] == c]
            z[on] = v > L.thresholds[on]
        scores.append(score_by_hand(exp.rules, z[None, :])[0])
        flips.append(int((z[used] != z_now[used]).sum()))
    return np.array(scores), np.array(flips)


def fewest_flips(exp, i, target, direction, max_literals, enumerated=None):
    """Brute force: of every achievable truth assignment (``assignments``, or ``enumerated`` from it),
    the fewest flips that reach the target."""
    scores, flips = assignments(exp, i) if enumerated is None else enumerated
    reach = scores < target if direction == "below" else scores > target
    best = int(flips[reach].min()) if reach.any() else None
    return best if best is not None and best <= max_literals else None


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fewest_literals_against_brute_force(seed):
    exp = hand_made(seed)
    s = exp.student_scores.to_numpy()
    train = ~exp.is_test
    found = checked = 0
    for i in range(0, exp.sequences.n_users, 7):
        uid = exp.sequences.users[i]
        view = exp.user(uid)  # one user's view answers each target and budget
        enumerated = assignments(exp, i)
        for p, direction in ((20, "below"), (50, "below"), (50, "above"), (85, "above")):
            for k in (1, 3):
                cf = view.counterfactual(p, direction, max_literals=k)
                target = np.percentile(s[train], p)
                already = (s[i] < target) if direction == "below" else (s[i] > target)
                ref = 0 if already else fewest_flips(exp, i, target, direction, k, enumerated)
                assert cf.found == (ref is not None), (uid, p, direction, k)
                if ref:
                    assert cf.n_literals == ref, (uid, p, direction, k)
                    check_claim(exp, uid, cf)
                    found += 1
                checked += 1
    assert found >= checked // 5  # the cases are real searches, not all "already there"


def test_claims_hold_on_a_fitted_student():
    exp = tiny_payments(300, random_state=5)
    n_found = 0
    for uid in exp.sequences.users[::9]:
        for p, direction in ((30, "below"), (70, "above")):
            cf = exp.user(uid).counterfactual(p, direction)
            json.dumps(cf.to_dict(), allow_nan=False)
            assert cf.summary().startswith(f"user {uid!r}")
            if cf.found and len(cf.changes):
                check_claim(exp, uid, cf)
                n_found += 1
                # the literals' own sentences: what holds now and what must hold after
                info = exp.rules.info
                for r in cf.flipped.itertuples():
                    assert {r.now, r.after} == {info.render_literal(Lit(r.literal)),
                                                info.render_literal(Lit(r.literal, True))}
                assert (cf.changes["quantile_needed"] >= 0).all() and (cf.changes["quantile_needed"] <= 1).all()
    assert n_found >= 10


def test_fewer_events_are_dropped_and_checked():
    exp = tiny_payments(300, random_state=3, statistics=COUNTS,
                        teacher=lambda seqs: seqs.lengths.astype(float))  # a model: the event count
    seqs = exp.sequences
    edits = 0
    for uid in seqs.users[:80]:
        cf = exp.user(uid).counterfactual(30, "below")
        if cf.edit is None:
            assert not (cf.found and len(cf.changes) and all(pd.notna(x) and x < 0 for x in cf.changes["event_change"]))
            continue
        edits += 1
        e = cf.edit
        events = seqs.events(uid)
        # by hand: the most recent events each changed count counts, as the statistic's filters say
        dropped = set()
        for row in cf.changes.itertuples():
            assert row.events.startswith(f"{-row.event_change} fewer event")
            stat = rx.Statistic.parse(row.statistic.split(" [")[0])
            if "channel=" in row.statistic:
                match = events["channel"] == row.statistic.split("channel=")[1].rstrip("]")
            else:
                match = events["country"] == "other" if "country=other" in str(stat) else np.ones(len(events), bool)
            rows = np.flatnonzero(np.asarray(match))
            dropped |= set(rows[len(rows) + row.event_change:].tolist())
        assert e.n_dropped == len(dropped)
        pd.testing.assert_frame_equal(e.dropped, events.iloc[sorted(dropped)].reset_index(drop=True))
        # the statistics and the rule score of what is left, evaluated afresh from a table
        left = events.drop(index=sorted(dropped))
        new = rx.Sequences(left, user="user_id", time="ts", categorical=seqs.categorical, numerical=seqs.numerical,
                           vocabularies=seqs.vocabularies)
        V = exp.literals.values(new)
        np.testing.assert_allclose(e.values["value_after"], V[0, cf.changes["output"]])
        Z = V[:, exp.literals.column] > exp.literals.thresholds
        assert e.score == pytest.approx(score_by_hand(exp.rules, Z)[0])
        s_train = exp.student_scores.to_numpy()[~exp.is_test]
        assert e.reaches_target == (e.score < np.percentile(s_train, 30))
        # the model scored the edited events: here it counts them
        assert e.teacher_score_before == len(events) and e.teacher_score == len(events) - len(dropped)
        assert "model" in cf.summary()
    assert edits >= 5


def test_no_model_says_why():
    exp = tiny_payments(300, random_state=3, statistics=COUNTS)
    for uid in exp.sequences.users[:60]:
        cf = exp.user(uid).counterfactual(30, "below")
        if cf.edit is not None:
            assert cf.edit.teacher_score is None and "pass teacher=model" in cf.edit.note
            assert cf.edit.teacher_score_before == exp.teacher_scores[uid]
            return
    pytest.fail("no user had an event edit")


def test_already_past_not_found_and_bad_arguments():
    exp = tiny_payments(200, random_state=1)
    s = exp.student_scores
    top, bottom = s.idxmax(), s.idxmin()
    cf = exp.user(bottom).counterfactual(50, "below")
    assert cf.found and cf.n_literals == 0 and cf.changes.empty and "already" in cf.message
    # nothing gets the score above the highest training score: the nearest score reachable instead
    cf = exp.user(bottom).counterfactual(100, "above", max_literals=2)
    assert not cf.found and "no counterfactual" in cf.message and "the nearest it gets is" in cf.message
    assert cf.score < cf.new_score <= cf.target_score and cf.new_percentile > cf.percentile
    assert 1 <= cf.n_literals <= 2 and len(cf.flipped) == cf.n_literals and cf.edit is None
    # the nearest change, applied to the user's literals, scores as claimed (the rules by hand)
    i = exp.sequences.user_index(bottom)
    Z = exp.result.literal_matrix[[i]].copy()
    Z[0, cf.flipped["literal"].to_numpy(dtype=int)] ^= True
    assert score_by_hand(exp.rules, Z)[0] == pytest.approx(cf.new_score, abs=1e-9)
    with pytest.raises(ValueError, match="direction"):
        exp.user(top).counterfactual(50, "down")
    with pytest.raises(ValueError, match="target_percentile"):
        exp.user(top).counterfactual(150)
    with pytest.raises(ValueError, match="max_literals"):
        exp.user(top).counterfactual(50, max_literals=0)


SHARES = ("Select(channel) | Mean", "Select(amount) | Mean")


def _share(exp, uid, value: str) -> tuple[int, int]:
    ev = exp.sequences.events(uid)["channel"].astype(str)
    return int((ev == value).sum()), len(ev)


def test_a_share_is_also_said_in_events():
    """A change of a share of events says how many events of that kind to drop (or add), and dropping that
    many of the user's matching events (a pandas count per user) gives a share the literal accepts."""
    seen = 0
    for seed in (1, 2, 3):
        exp = tiny_payments(300, random_state=seed, statistics=SHARES)
        L = exp.literals
        for uid in exp.sequences.users[:80]:
            cf = exp.user(uid).counterfactual(50, "below")
            if not cf.found:
                continue
            for _, row in cf.changes.iterrows():
                if L.output_kind[row.output] != "share" or row.event_change is pd.NA:
                    continue
                value = L.output_names[row.output].split("=", 1)[1].rstrip("]")
                m, n = _share(exp, uid, value)
                assert row.value_now == pytest.approx(m / n)
                k = int(row.event_change)
                assert f"{abs(k)} {'fewer' if k < 0 else 'more'}" in row.events and f"(now {m} of {n})" in row.events
                new = (m + k) / (n + k)
                if k < 0:  # just enough dropped: one fewer would not do
                    assert new <= row.value_needed + 1e-12 and (m + k + 1) / (n + k + 1) > row.value_needed
                else:
                    assert new >= row.value_needed - 1e-12 and (m + k - 1) / (n + k - 1) < row.value_needed
                seen += 1
    assert seen >= 5, seen
