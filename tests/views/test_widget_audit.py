"""The widget's audit requests (issue 16): model attributions, the counterfactual, what-if thresholds.

Each request goes through the widget's message handler, as the page sends it,
and the answer is checked against a computation that does not share the
widget's code: occlusion of a total-amount model against the events' own
amounts, the counterfactual's claimed rule score against the rules scored by
hand on the changed literals, the what-if figures against
``exp.with_threshold`` (a new explanation, its own report). The front end is
checked in a real browser in ``tests/browser/test_widget_audit_jupyterlab.py``.
"""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

pytest.importorskip("anywidget")

from tiny import tiny_payments  # noqa: E402

import rudi_explain as rx  # noqa: E402
from rudi_explain.rules.formula import And, Lit, formula_literals
from rudi_explain.views import payloads as ws
from rudi_explain.views.widget import ExplanationWidget

COUNTS = ("Select(amount) | Count", "Select(channel) | Sum", "Select(amount) | Mean")


def _amount_sum(s: rx.Sequences) -> np.ndarray:
    """A model: each user's total amount, so dropping an event lowers the score by exactly its amount."""
    return np.bincount(s.event_user, weights=np.nan_to_num(s.values["amount"]), minlength=s.n_users)


@pytest.fixture(scope="module")
def exp():
    return tiny_payments(300, random_state=3, statistics=COUNTS, teacher=_amount_sum)  # the model explain() queried


@pytest.fixture(scope="module")
def given():
    """An explanation of given scores: no model to ask."""
    return tiny_payments(200, random_state=4)


@pytest.fixture()
def sent(monkeypatch):
    box: list = []
    monkeypatch.setattr(ExplanationWidget, "send", lambda self, content, buffers=None: box.append(content))
    return box


def _ask(exp, sent, content):
    w = ExplanationWidget(exp)
    w._on_message(w, content)
    reply = sent[-1]
    json.dumps(reply)  # the page gets plain JSON
    return reply


def _holds(f, z):
    if isinstance(f, Lit):
        return (not z[f.index]) if f.negated else bool(z[f.index])
    parts = [_holds(c, z) for c in f.children]
    return all(parts) if isinstance(f, And) else any(parts)


def _score_by_hand(rules, z):
    return rules.intercept + sum(r.weight for r in rules if _holds(r.formula, z))


# ------------------------------------------------------------------ attributions
def test_attributions_of_a_total_amount_model_are_the_amounts(exp, sent):
    seqs = exp.sequences
    users = [u for u in seqs.users if 3 <= len(seqs.events(u)) <= 60][:12]
    assert len(users) >= 10
    for k, uid in enumerate(users):
        reply = _ask(exp, sent, {"type": "attributions", "id": str(uid), "request": k})
        assert reply["ok"] and reply["request"] == k and reply["id"] == str(uid)
        st = reply["state"]
        amounts = seqs.events(uid)["amount"].to_numpy(dtype=float)
        assert st["available"] and st["method"] == "occlusion"
        np.testing.assert_allclose(st["values"], np.nan_to_num(amounts), rtol=1e-5, atol=1e-6)
        assert st["score"] == pytest.approx(np.nansum(amounts), rel=1e-5)
        # The events a fired rule counts are among the rows the drill-down highlights for it.
        rows = {r for f in ws.user_detail(exp, uid)["feeds"] for r in f["rows"]}
        assert {r for r, f in enumerate(st["feeds"]) if f} <= rows
        # Agreement by hand: the share of |attribution| on those events.
        a = np.abs(np.nan_to_num(amounts))
        feeds = np.array(st["feeds"])
        if feeds.any() and a.sum() > 0:
            assert st["agreement"] == pytest.approx(a[feeds].sum() / a.sum(), abs=1e-4)
            assert st["event_share"] == pytest.approx(feeds.mean(), abs=1e-4)


def test_attributions_without_a_model_say_why_in_words(given, sent):
    uid = str(given.sequences.users[0])
    reply = _ask(given, sent, {"type": "attributions", "id": uid, "request": 3})
    assert reply["ok"] and reply["state"]["available"] is False
    assert "model" in reply["state"]["reason"] and "teacher=" in reply["state"]["reason"]


def test_attributions_of_an_unknown_user_or_a_failing_model(exp, sent):
    reply = _ask(exp, sent, {"type": "attributions", "id": "nobody", "request": 1})
    assert not reply["ok"] and "nobody" in reply["error"]

    def broken(s):
        raise RuntimeError("the model is down")

    other = tiny_payments(120, random_state=5, teacher=broken)
    reply = _ask(other, sent, {"type": "attributions", "id": str(other.sequences.users[0]), "request": 2})
    assert not reply["ok"] and "the model is down" in reply["error"]


# ------------------------------------------------------------------ counterfactual
def test_counterfactual_moves_the_rule_score_across_the_median(exp, sent):
    s_train = exp.student_scores.to_numpy()[~exp.is_test]
    median = np.percentile(s_train, 50)
    L = exp.literals
    seen = {"below": 0, "above": 0}
    for uid in exp.sequences.users[:40]:
        reply = _ask(exp, sent, {"type": "counterfactual", "id": str(uid), "request": 7})
        assert reply["ok"] and reply["request"] == 7
        cf = reply["counterfactual"]
        now = exp.student_scores[uid]
        # below for a user at or above the median, above for one already below it
        assert cf["direction"] == ("below" if now >= median else "above")
        assert cf["target_score"] == pytest.approx(median, rel=1e-5, abs=1e-6)
        if not cf["found"]:
            assert cf["message"]
            continue
        seen[cf["direction"]] += 1
        # Carry out the change on the literal row by hand: the needed value of each changed output.
        values = exp.result.values[exp.sequences.user_index(uid)].copy()
        for ch in cf["changes"]:
            values[ch["output"]] = ch["value_needed"]
        with np.errstate(invalid="ignore"):
            z = values[L.column] > L.thresholds
        new = _score_by_hand(exp.rules, z)
        assert new == pytest.approx(cf["new_score"], rel=1e-5, abs=1e-6)
        assert (new < median) if cf["direction"] == "below" else (new > median)
        flipped = {f["literal"] for f in cf["flipped"]}
        z_now = exp.result.literal_matrix[exp.sequences.user_index(uid)]
        rule_lits = {lit.index for r in exp.rules for lit in formula_literals(r.formula)}
        assert flipped == {i for i in rule_lits if z[i] != z_now[i]}
        assert cf["n_literals"] == len(flipped)
    assert seen["below"] >= 3 and seen["above"] >= 3, seen


def test_counterfactual_takes_a_percentile_and_a_budget_and_gives_the_nearest(exp, sent):
    """The page's controls: another percentile and at most k changed conditions; where none reaches the
    target, the reply holds the nearest score reachable and its change (scored by hand)."""
    s = exp.student_scores
    L = exp.literals
    near = 0
    for uid in s.sort_values(ascending=False).index[:15]:  # the top-scored users an auditor opens first
        reply = _ask(exp, sent, {"type": "counterfactual", "id": str(uid), "request": 3, "percentile": 10,
                                 "max_literals": 1})
        assert reply["ok"], reply
        cf = reply["counterfactual"]
        assert cf["target_percentile"] == 10 and cf["max_literals"] == 1 and cf["n_literals"] <= 1
        if cf["found"]:
            continue
        assert "the nearest it gets is" in cf["message"] and cf["new_score"] < s[uid]
        values = exp.result.values[exp.sequences.user_index(uid)].copy()
        for ch in cf["changes"]:
            values[ch["output"]] = ch["value_needed"]
        with np.errstate(invalid="ignore"):
            z = values[L.column] > L.thresholds
        assert _score_by_hand(exp.rules, z) == pytest.approx(cf["new_score"], rel=1e-5, abs=1e-6)
        near += 1
    assert near >= 3, near


# ------------------------------------------------------------------ what-if
def test_what_if_equals_a_moved_explanation(exp, sent):
    used = sorted({lit.index for r in exp.rules for lit in formula_literals(r.formula)})
    L = exp.literals
    checked = 0
    for i in used[:4]:
        v = exp.result.values[~exp.is_test, L.column[i]]
        for q in (20, 80):
            value = float(np.nanpercentile(v, q))
            reply = _ask(exp, sent, {"type": "what_if", "literal": i, "value": value, "request": q})
            assert reply["ok"] and reply["request"] == q and reply["literal"] == i
            st = reply["state"]
            moved = exp.with_threshold(i, value)
            assert st["fidelity_test_moved"] == pytest.approx(moved.report()["fidelity_test"], abs=2e-6)
            assert st["fidelity_test"] == pytest.approx(exp.report()["fidelity_test"], abs=2e-6)
            for r in st["rules"]:
                fires = moved.result.fires[:, r["index"]]
                assert r["coverage_train_moved"] == pytest.approx(fires[~exp.is_test].mean(), abs=1e-4)
                assert r["coverage_test_moved"] == pytest.approx(fires[exp.is_test].mean(), abs=1e-4)
            checked += 1
    assert checked >= 4


@pytest.mark.parametrize("value", ["", "abc", float("nan"), None])
def test_what_if_with_no_number_says_so(exp, sent, value):
    used = sorted({lit.index for r in exp.rules for lit in formula_literals(r.formula)})
    reply = _ask(exp, sent, {"type": "what_if", "literal": used[0], "value": value, "request": 1})
    assert not reply["ok"] and "number" in reply["error"]


def test_what_if_unknown_literal(exp, sent):
    reply = _ask(exp, sent, {"type": "what_if", "literal": 10_000, "value": 1.0, "request": 1})
    assert not reply["ok"] and "does not exist" in reply["error"]


def test_audit_requests_before_the_job_ends():
    import threading

    gate = threading.Event()

    def slow(s):  # a model that answers only when the test lets it
        gate.wait(30)
        return np.zeros(s.n_users)

    demo = rx.datasets.make_payments(60, random_state=0)
    pending = rx.explain(slow, demo.events, background="thread", n_stats=2, n_rules=4, n_simulations=5,
                         progress=lambda e: None)
    try:
        w = ExplanationWidget(pending)
        assert not pending.done
        for reply in (w.answer_attributions("u1", 5), w.answer_counterfactual("u1", 5), w.answer_what_if(0, 1.0, 5),
                      w.answer_agreement(5)):
            assert reply["ok"] is False and "not finished" in reply["error"] and reply["request"] == 5
    finally:
        pending.cancel()
        gate.set()
        deadline = time.monotonic() + 60
        while not pending.done and time.monotonic() < deadline:
            time.sleep(0.05)


# ------------------------------------------------------------------ agreement over held-out users
def test_agreement_distribution_equals_a_per_user_loop(exp, sent):
    reply = _ask(exp, sent, {"type": "agreement", "request": 9, "n_users": 40})
    assert reply["type"] == "agreement" and reply["request"] == 9 and reply["ok"], reply
    st = reply["state"]
    assert st["available"] and st["n_users"] == st["n_sampled"] == 40 and st["n_pool"] == int(exp.is_test.sum())
    # progress: one message per batch before the answer, ending at all 40
    steps = [m for m in sent if m.get("type") == "agreement_progress" and m.get("request") == 9]
    assert steps and steps[-1]["done"] == steps[-1]["of"] == 40
    assert [m["done"] for m in steps] == sorted(m["done"] for m in steps)

    # The users sampled (the same seed), each explained on its own through exp.user(uid).
    users = exp.agreement(40).per_user.index
    assert len(set(users)) == 40 and exp.is_test[[exp.sequences.user_index(u) for u in users]].all()
    ref, shares, no_rule = [], [], 0
    for uid in users:
        u = exp.user(uid)
        if not u.fired:
            no_rule += 1
        a = u.attributions
        # the model's attribution of an event is its amount (the model is the total amount)
        amounts = np.nan_to_num(u.events["amount"].to_numpy(dtype=float))
        got = a.events["attribution"].to_numpy()
        ok = np.isfinite(got)
        assert np.allclose(got[ok], amounts[ok])
        ref.append(a.agreement)
        shares.append(a.event_share)
    ref, shares = np.array(ref, dtype=float), np.array(shares, dtype=float)
    assert st["n_no_rule"] == no_rule and st["n_defined"] == int(np.isfinite(ref).sum())
    assert st["n_zero"] == 40 - no_rule - st["n_defined"]
    # the distribution is over the users whose fired rules read fewer than 95% of their events
    defined = ref[np.isfinite(ref) & (shares < 0.95)]
    assert st["n_informative"] == len(defined) and st["n_uninformative"] == st["n_defined"] - len(defined)
    assert len(defined) >= 10 and no_rule >= 0
    assert st["agreement_mean"] == pytest.approx(defined.mean(), abs=1e-4)
    assert st["deciles"] == pytest.approx(np.quantile(defined, np.arange(1, 10) / 10), abs=1e-4)
    # histogram: ten bins of 0.1 over [0, 1], a value on an inner edge in the upper bin, 1.0 in the last
    counts = np.zeros(10, dtype=int)
    for v in defined:
        counts[min(int(np.floor(v * 10 + 1e-12)), 9)] += 1
    assert st["counts"] == counts.tolist() and st["edges"] == pytest.approx(np.linspace(0, 1, 11))
    assert st["method"] == "occlusion"


def test_agreement_over_rules_that_read_every_event_says_it_is_not_informative():
    """Rules on an average over all events read every event: 100% agreement for every user says nothing."""
    whole = tiny_payments(300, random_state=3, statistics=("Select(amount) | Mean",), teacher=_amount_sum)
    summary = whole.agreement(40)
    pu = summary.per_user
    fired = pu["rule_fired"].astype(bool)
    assert fired.sum() >= 10 and (pu.loc[fired, "agreement"] > 0.999).all()  # what used to be shown as a pass
    d = summary.to_dict()
    assert d["n_informative"] == 0 and d["n_uninformative"] == d["n_defined"] >= 10
    assert d["agreement_mean"] is None and d["deciles"] is None and sum(d["counts"]) == 0
    assert "not shown" in d["uninformative"] and "whatever the model attends to" in d["uninformative"]
    assert "not informative" in repr(summary)
    one = whole.user(pu.index[np.flatnonzero(fired.to_numpy())[0]]).attributions
    assert one.agreement > 0.999 and not one.informative


def test_agreement_time_budget_keeps_a_random_part_of_the_sample(exp):
    full = exp.agreement(60, time_budget=None, chunk_users=10)
    cut = exp.agreement(60, time_budget=0.0, chunk_users=10)  # spent at once: only the first batch runs
    assert len(full.per_user) == 60 and full.n_sampled == 60 and "time budget" not in full.note
    assert len(cut.per_user) == 10 and cut.n_sampled == 60 and "time budget of 0 s spent after 10 of 60" in cut.note
    assert set(cut.per_user.index) <= set(full.per_user.index)
    # the same users give the same figures, however they were batched
    both = full.per_user.loc[cut.per_user.index, "agreement"].to_numpy()
    assert np.allclose(both, cut.per_user["agreement"].to_numpy(), equal_nan=True)
    # random batches, not the first users in order: over seeds the kept users are not always the lowest positions
    firsts = set()
    for seed in range(5):
        part = exp.agreement(60, time_budget=0.0, chunk_users=10, random_state=seed).per_user.index
        whole = exp.agreement(60, time_budget=None, chunk_users=60, random_state=seed).per_user.index
        firsts.add(tuple(part) == tuple(whole[:10]))
    assert firsts != {True}


def test_agreement_without_a_model_says_why(given, sent):
    reply = _ask(given, sent, {"type": "agreement", "request": 4})
    assert reply["ok"] and reply["state"]["available"] is False and "holds no model" in reply["state"]["reason"]


def test_agreement_bad_sample_size(exp, sent):
    reply = _ask(exp, sent, {"type": "agreement", "request": 5, "n_users": 0})
    assert not reply["ok"] and "at least 1" in reply["error"]


# ------------------------------------------------------------------ another point of the fidelity curve
@pytest.mark.slow
def test_with_rules_shows_the_larger_set_and_back(sent):
    import rudi_explain as rx

    demo = rx.datasets.make_payments(600, random_state=0)
    pruned = rx.explain(None, demo.events, scores=demo.risk, background=False, n_stats=3, n_simulations=20,
                        student_params={"epochs": 20}, progress=False)
    n, m = len(pruned.rules), pruned.report().get("n_rules_unpruned")
    assert m is not None and m > len(pruned.pruning.default_rules), (n, m)  # pruned: a larger set exists
    w = ExplanationWidget(pruned)
    w._on_message(w, {"type": "with_rules", "k": m, "request": 4})
    reply = sent[-1]
    assert reply == {"type": "with_rules", "request": 4, "k": m, "ok": True, "n_rules": len(pruned.with_rules(m).rules)}
    assert len(w.results["rules"]) == reply["n_rules"]
    assert w.results["view"] == {"with_rules": m, "base_rules": n}
    assert w.results["summary"]["fidelity_test"] == pytest.approx(pruned.with_rules(m).report()["fidelity_test"],
                                                                   abs=1e-4)
    # the other views read that set too: a user's fired rules are among its rules
    uid = str(pruned.sequences.users[0])
    detail = w.answer_user(uid, 1)["detail"]
    assert all(k < reply["n_rules"] for k in detail["fired"])
    assert len(pruned.rules) == n  # the Python object is unchanged
    w._on_message(w, {"type": "with_rules", "k": None, "request": 5})
    assert sent[-1]["ok"] and len(w.results["rules"]) == n and "view" not in w.results
    w._on_message(w, {"type": "with_rules", "k": "many", "request": 6})
    assert sent[-1]["ok"] is False and "k must be a whole number" in sent[-1]["error"]
