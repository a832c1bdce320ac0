"""Which form of scorecard explain() kept, said where the scorecard is introduced (issue 26, "What the reader sees
must be true").

The sentence is checked against figures recomputed independently: on small explain() runs each form offered is
refitted on the same fitting users and scored on the same validation users by a brute-force count of agreeing
pairs, and the form kept is the one the order-and-tie rule picks from those figures. It must survive save/load,
an older file (without it) must load and say the choice is unknown, and once the rules are replaced (another point
of the fidelity curve, a moved threshold) it must not claim a choice that no longer describes them.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from test_load import rewrite
from tiny import tiny_payments

import rudi_explain as rx
from rudi_explain.explanation import scorecard_step
from rudi_explain.explanation.scorecard_choice import FORMS, IDLE_TIE, ScorecardChoice, choice_from_meta
from rudi_explain.rules.scorecard_additive import INNER_SHARE, MIN_USERS, TIE, fit_options
from rudi_explain.rules.scorecard_budget import without_idle_units

FIGURE = re.compile(r"(\d\.\d{3})")


def _pairs_fidelity(t: np.ndarray, s: np.ndarray) -> float:
    """The share of ordered pairs i != j that the two scores order alike (ties included), by brute force."""
    t, s = np.asarray(t, dtype=float), np.asarray(s, dtype=float)
    agree = (t[:, None] > t[None, :]) == (s[:, None] > s[None, :])
    n = len(t)
    return float((agree.sum() - n) / (n * (n - 1)))  # the diagonal always agrees: left out


def _figures(text: str) -> list[float]:
    """The forms' figures, in order (a close form's note, ", at most 0.006 better", and the margin units
    were left out by, "at most 0.0005 less faithful", are not ones)."""
    text = re.sub(r", at most \d\.\d{3} better", "", text)
    return [float(x) for x in FIGURE.findall(re.sub(r"at most [\d.]+ less faithful", "", text))]


# ------------------------------------------------------------------ the sentence


def test_the_sentence_names_the_form_kept_on_how_many_users_and_each_fidelity():
    c = ScorecardChoice.weighed("additive", {"student": 0.8612, "additive": 0.87449, "additive with interactions":
                                             0.8704}, n_valid=800, n_fit=3200)
    assert c.text() == ("Chosen on 800 validation users: every statistic as a card (fidelity 0.874) over the "
                        "student's cards (0.861) and every statistic as a card with the student's interaction "
                        "rules (0.870).")
    assert str(c) == c.text() and "candidate" not in c.text()


def test_a_form_weighed_later_that_scored_higher_by_at_most_the_tie_is_marked():
    # a later form replaces the best before it only when more faithful by more than the tie (0.006)
    c = ScorecardChoice.weighed("student", {"student": 0.861, "additive": 0.8641}, n_valid=1234, n_fit=5000)
    assert c.text() == (f"Chosen on 1,234 validation users: the student's cards (fidelity 0.861) over every "
                        f"statistic as a card (0.864, at most {TIE:.3f} better).")


def test_rules_added_after_the_choice_are_said_apart_from_its_figures():
    c = ScorecardChoice.weighed("additive", {"student": 0.8612, "additive": 0.87449}, 800, 3200, n_added=2)
    assert c.text() == ("Chosen on 800 validation users: every statistic as a card (fidelity 0.874) over the "
                        "student's cards (0.861). Then 2 interaction rules were found for its cards and added (not "
                        "in these figures).")
    assert c.sentences() == [c.text().partition(". ")[0] + ".", c.text().partition(". ")[2]]
    one = ScorecardChoice.weighed("student", {}, 54, 216, n_added=1).text()
    assert one.endswith("a choice needs. Then 1 interaction rule was found for its cards and added (pairs of "
                        "statistics).")
    assert ScorecardChoice.from_dict(c.to_dict()) == c
    old = {k: v for k, v in c.to_dict().items() if k != "n_added"}  # saved before rules were added: none
    assert ScorecardChoice.from_dict(old).n_added == 0


def test_units_left_out_after_the_choice_are_named():
    c = ScorecardChoice.weighed("additive", {"student": 0.8612, "additive": 0.87449}, 800, 3200, n_added=1,
                                dropped=(("share of events with country = us", "share of <b>"), ("a AND b",)))
    assert c.text() == ("Chosen on 800 validation users: every statistic as a card (fidelity 0.874) over the "
                        "student's cards (0.861). Then 1 interaction rule was found for its cards and added (not "
                        "in these figures). Then 2 cards (share of events with country = us and share of <b>) and "
                        "1 interaction rule were left out, the validation users finding the scorecard at most "
                        "0.0005 less faithful without each.")
    one = ScorecardChoice.weighed("student", {}, 500, 2000, n_forms=1, dropped=(("x",), ()))
    assert len(c.sentences()) == 3 and " ".join(c.sentences()) == c.text()
    assert one.text().endswith("weighed. Then 1 card (x) was left out, the validation users finding the scorecard "
                               "at most 0.0005 less faithful without it.")
    assert ScorecardChoice.from_dict(c.to_dict()) == c
    old = {k: v for k, v in c.to_dict().items() if not k.startswith("dropped")}  # saved before: none left out
    assert ScorecardChoice.from_dict(old).dropped_cards == () == ScorecardChoice.from_dict(old).dropped_rules
    for damage in ({"dropped_cards": "x"}, {"dropped_rules": [1]}, {"idle_tie": "0.001"}, {"idle_tie": -1}):
        with pytest.raises(ValueError, match="dropped|idle_tie"):
            ScorecardChoice.from_dict({**c.to_dict(), **damage})


def test_too_few_users_one_form_and_unknown():
    few = ScorecardChoice.weighed("student", {}, n_valid=54, n_fit=216)
    assert few.status == "too few users"
    assert few.text() == (f"No other form of scorecard was weighed against the student's cards: 54 validation "
                          f"users, fewer than the {MIN_USERS} a choice needs.")
    assert "fitting users" in ScorecardChoice.weighed("student", {}, n_valid=500, n_fit=60).text()
    assert ScorecardChoice.weighed("student", {}, 500, 2000, n_forms=1).text() == (
        "The student's cards: no other form of scorecard was weighed.")
    assert "unknown" in ScorecardChoice.unknown().text()
    with pytest.raises(ValueError, match="no validation fidelity"):
        ScorecardChoice("chosen", "additive", {"student": 0.5})
    with pytest.raises(ValueError, match="status"):
        ScorecardChoice("guessed")


def test_a_choice_bound_to_other_rules_says_it_no_longer_describes_them():
    rules, other, third = object(), object(), object()
    c = ScorecardChoice.weighed("additive", {"student": 0.7, "additive": 0.8}, 300, 1200).bound_to(rules, 0)
    assert c.bound_to(rules, 0) is c and c.edit == ""
    point = c.bound_to(other, 0)  # another point of the fidelity curve: same moves, other rules
    assert point.edit == "another point" and "not the scorecard explain() chose" in point.text()
    assert _figures(point.text()) == []  # no figure that would describe other rules
    moved = c.bound_to(other, 1)
    assert moved.edit == "moved" and moved.text().startswith("Before a threshold was moved (what-if): chosen on 300")
    assert moved.bound_to(third, 2).edit == "moved"
    assert moved.bound_to(third, 1).edit == "another point"  # a point of the curve after a move
    assert point.bound_to(third, 5).edit == "another point"  # never back to a choice


def test_the_choice_round_trips_through_its_dict_and_refuses_damage():
    for c in (ScorecardChoice.weighed("additive with interactions", {f: 0.5 + i / 10 for i, f in enumerate(FORMS)},
                                      150, 600),
              ScorecardChoice.weighed("student", {}, 20, 80), ScorecardChoice.unknown(),
              dataclasses.replace(ScorecardChoice.unknown(), edit="moved")):
        back = ScorecardChoice.from_dict(c.to_dict())
        assert back == c and back.text() == c.text()
    good = ScorecardChoice.weighed("additive", {"student": 0.7, "additive": 0.8}, 300, 1200).to_dict()
    for damage in ({"n_valid": "300"}, {"fidelity": {"student": "x", "additive": 0.8}}, {"status": "guessed"},
                   {"chosen": "nothing"}, {"edit": "edited"}, {"fidelity": {"student": 0.7, "additive": 2.0}},
                   {"n_fit": True}, {"n_added": -1}):
        with pytest.raises(ValueError):
            ScorecardChoice.from_dict({**good, **damage})
    assert choice_from_meta({"pruning": None}) is None  # an older file, not pruned: none was weighed
    assert choice_from_meta({"pruning": {}}).status == "unknown"  # an older pruned file: not recorded
    assert choice_from_meta({"pruning": {}, "scorecard_choice": None}) is None


# ------------------------------------------------------------------ through the explanation (fast: no search)


@pytest.fixture(scope="module")
def chosen():
    """A small explanation given a choice (the one explain() records after pruning)."""
    exp = tiny_payments()
    choice = ScorecardChoice.weighed("additive", {"student": 0.861, "additive": 0.874}, 800, 3200)
    return exp.with_result(dataclasses.replace(exp.result, scorecard_choice=choice))


def test_print_shows_the_sentence_where_the_scorecard_is_introduced(chosen):
    lines = str(chosen).splitlines()
    assert lines[0] == repr(chosen) and lines[1] == ""
    assert lines[2] == chosen.result.scorecard_choice.text() and lines[3] == ""
    assert "\n".join(lines[4:]) == chosen.scorecard.text()
    bare = tiny_payments()  # built without a choice (not pruned): no sentence
    assert str(bare) == f"{repr(bare)}\n\n{bare.scorecard.text()}"


def test_save_load_keeps_the_sentence_and_an_older_file_loads_without_it(chosen, tmp_path):
    path = chosen.save(tmp_path / "c.rudi")
    back = rx.load(path)
    assert back.result.scorecard_choice == chosen.result.scorecard_choice
    assert back.result.scorecard_choice.text() in str(back)
    # written without the field (an older version): loads; this one has no pruning path, so no choice was made
    old = rewrite(path, tmp_path / "old.rudi", meta=lambda m: m.pop("scorecard_choice"))
    assert rx.load(old).result.scorecard_choice is None and "Chosen" not in str(rx.load(old))
    bad = rewrite(path, tmp_path / "bad.rudi", meta=lambda m: m["scorecard_choice"].__setitem__("n_valid", "many"))
    with pytest.raises(ValueError, match=r"bad\.rudi is damaged: field 'scorecard_choice'"):
        rx.load(bad)


def test_a_moved_threshold_qualifies_the_sentence_and_is_saved_so(chosen, tmp_path):
    k, card = next((k, c) for k, c in enumerate(chosen.scorecard.cards) if len(c.edges) >= 2)
    moved = chosen.with_threshold((k, card.edges[0]), (card.edges[0] + card.edges[1]) / 2)
    text = moved.result.scorecard_choice.text()
    assert text.startswith("Before a threshold was moved") and text in str(moved)
    assert chosen.result.scorecard_choice.edit == ""  # the original is unchanged
    back = rx.load(moved.save(tmp_path / "m.rudi"))
    assert back.result.scorecard_choice.text() == text


# ------------------------------------------------------------------ explain(), recomputed independently


def _explain_capturing(monkeypatch, scenario, seed, n):
    """explain() with the choice's inputs captured: the forms offered, the users' values, scores, validation."""
    seen = {}
    real = scorecard_step.choose_scorecard

    def spy(candidates, values, y, is_valid, **kw):
        seen.update(candidates=dict(candidates), values=values.copy(), y=y.copy(), is_valid=is_valid.copy())
        return real(candidates, values, y, is_valid, **kw)

    monkeypatch.setattr(scorecard_step, "choose_scorecard", spy)
    make = {"payments": rx.datasets.make_payments, "edits": rx.datasets.make_edits}[scenario]
    demo = make(n, random_state=seed)
    exp = rx.explain(None, demo.sequences(), scores=demo.risk, background=False, random_state=seed,
                     progress=False)
    return exp, seen


@pytest.mark.slow
@pytest.mark.parametrize("scenario, seed", [("payments", 5), ("edits", 6)])
def test_the_sentence_agrees_with_each_form_refitted_on_the_same_users(monkeypatch, tmp_path, scenario, seed):
    exp, seen = _explain_capturing(monkeypatch, scenario, seed, 900)
    choice = exp.result.scorecard_choice
    text = choice.text()
    V, y, valid = seen["values"], seen["y"], seen["is_valid"]
    assert choice.status == "chosen" and valid.sum() >= MIN_USERS
    assert text.startswith(f"Chosen on {int(valid.sum()):,} validation users: ")
    # each form refitted on the fitting users (a fixed share of them choosing its forms), scored on the others
    fit = np.flatnonzero(~valid)
    inner = np.zeros(fit.size, dtype=bool)
    inner[np.random.default_rng(0).permutation(fit.size)[:max(2, round(fit.size * INNER_SHARE))]] = True
    # (a form whose extras go on only once chosen is weighed by its ``fit`` alone, as choose_scorecard does)
    ref = {name: _pairs_fidelity(y[valid], getattr(make, "fit", make)(V[fit], y[fit], inner).predict(V[valid]))
           for name, make in seen["candidates"].items()}
    kept = next(iter(ref))  # the order-and-tie rule: a later form must gain more than TIE over the best before
    for name, f in ref.items():
        kept = name if f > ref[kept] + TIE else kept
    assert choice.chosen == kept
    np.testing.assert_allclose([choice.fidelity[k] for k in ref], list(ref.values()), atol=1e-12)
    # the sentence: the kept form and its figure first, then every other form's figure, each to 3 decimals
    order = [kept, *[k for k in ref if k != kept]]
    assert text.index(FORMS[kept]) < text.index("(fidelity")
    assert _figures(text) == [round(ref[k], 3) for k in order]
    # the scorecard shown is the kept form fitted on all the training users, with the rules it adds once chosen
    # (if any: said apart from the figures), less the units the validation users do not miss (named)
    final = seen["candidates"][kept](V, y, valid)
    own = getattr(seen["candidates"][kept], "fit", seen["candidates"][kept])(V, y, valid)
    assert choice.n_added == len(final.interactions) - len(own.interactions)
    assert (f"Then {choice.n_added} interaction rule" in text) == (choice.n_added > 0)
    assert len(exp.scorecard) + len(choice.dropped_cards) + len(choice.dropped_rules) == len(final)
    for gone in choice.dropped_cards:  # the cards named; the rules counted
        assert gone in text
    assert ("left out" in text) == bool(choice.dropped_cards or choice.dropped_rules)
    # (which units go, and that each kept one is missed, is tests/rules/test_scorecard_budget.py's)
    final, cards, rules = without_idle_units(final, V, y, valid, fit_options(True), tie=IDLE_TIE)
    assert (tuple(cards), tuple(rules)) == (choice.dropped_cards, choice.dropped_rules)
    train = ~exp.is_test
    np.testing.assert_allclose(exp.scorecard.predict(exp.result.values[train]), final.predict(V), atol=1e-9)
    # print(exp), the widget's and the report's scorecard view say it; save/load keeps it
    assert text in str(exp)
    from rudi_explain.views.scorecard_view import scorecard_state
    assert scorecard_state(exp)["choice"] == exp.result.scorecard_choice.sentences()
    assert " ".join(scorecard_state(exp)["choice"]) == text
    path = exp.save(tmp_path / "e.rudi")
    assert rx.load(path).result.scorecard_choice.text() == text
    old = rewrite(path, tmp_path / "old.rudi", meta=lambda m: m.pop("scorecard_choice"))
    assert "unknown" in str(rx.load(old)) and "Chosen on" not in str(rx.load(old))
    # another point of the curve: no figure of the choice is claimed for it
    other = exp.with_rules(max(1, len(exp.rules) - 1)).result.scorecard_choice.text()
    assert "not the scorecard explain() chose" in other and "Chosen on" not in other


def test_every_candidate_form_has_its_name_in_the_sentence():
    from rudi_explain.rules.literals import Literals
    from rudi_explain.rules.ruleset import RuleSet
    from rudi_explain.rules.scorecard_additive import scorecard_candidates

    lits = Literals.from_values(np.arange(20.0).reshape(-1, 1), n_quantiles=4)
    candidates = scorecard_candidates(RuleSet.from_formulas([], [], literals=lits), max_rules=5)
    assert len(candidates) == 4 and set(candidates) == set(FORMS)
