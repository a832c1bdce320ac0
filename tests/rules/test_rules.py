import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rudi_explain.rules.formula import (
    FALSE,
    TRUE,
    And,
    Lit,
    LiteralInfo,
    Or,
    evaluate_formula,
    formula_literals,
    simplify,
)
from rudi_explain.rules.literals import Literals
from rudi_explain.rules.ruleset import LinearTerm, RuleSet
from rudi_explain.rules.values import grouped


def threshold_info():
    """Literals 0-2: x > 1, x > 3, x > 7 (column 0); 3-4: y > 0, y > 5 (column 1); 5: a plain name."""
    return LiteralInfo(
        names=["x > 1", "x > 3", "x > 7", "y > 0", "y > 5", "z"],
        column=np.array([0, 0, 0, 1, 1, -1]),
        thresholds=np.array([1.0, 3.0, 7.0, 0.0, 5.0, np.nan]),
        base=["x", "x", "x", "y", "y", "z"],
        undefined=np.array([True, True, True, False, False, False]),
    )


X1, X3, X7, Y0, Y5, Z = (Lit(i) for i in range(6))
INFO = threshold_info()


@pytest.mark.parametrize(
    "formula, expected",
    [
        (And((X3, TRUE)), X3),  # A and true = A
        (Or((X3, FALSE)), X3),  # A or false = A
        (And((X3, FALSE)), FALSE),
        (Or((X3, TRUE)), TRUE),
        (And((Z, Z)), Z),  # duplicates
        (Or((Z, ~Z)), TRUE),  # A or not A
        (And((Z, ~Z)), FALSE),  # contradiction
        (And((X3, X7)), X7),  # x > 3 and x > 7 = x > 7
        (Or((X3, X7)), X3),  # x > 3 or x > 7 = x > 3
        (And((~X3, ~X7)), ~X3),  # x <= 3 and x <= 7 = x <= 3
        (Or((~X3, ~X7)), ~X7),
        (And((X7, ~X3)), FALSE),  # x > 7 and x <= 3
        (And((X7, ~X7)), FALSE),
        (Or((X3, ~X7)), TRUE),  # x > 3 or x <= 7 covers every value, NaN too
        (And((X3, ~X7)), And((X3, ~X7))),  # an interval stays
        (And((X1, X3, And((X7, Y0)))), And((X7, Y0))),  # flattened, then merged
        (And((X7, Or((X3, Z)))), X7),  # x > 7 implies x > 3: the OR is true
        (Or((X3, And((X7, Z)))), X3),  # x > 7 and z implies x > 3
        (And((Z, Or((Z, Y5)))), Z),  # absorption
        (And((Or((Z, Y5)), Or((Y5, Z)))), Or((Y5, Z))),  # equal up to order
        (And((TRUE, TRUE)), TRUE),
        (Or(()), FALSE),
    ],
)
def test_simplify_cases(formula, expected):
    assert simplify(formula, INFO) == simplify(expected, INFO)


def test_no_merge_without_thresholds():
    info = LiteralInfo.from_names(["a", "b"])
    f = And((Lit(0), Lit(1)))
    assert simplify(f, info) == f
    assert simplify(Or((Lit(1), Lit(0))), info) == Or((Lit(0), Lit(1)))


def random_formula(draw, n_lits, depth):
    if depth == 0 or draw(st.booleans()):
        k = draw(st.integers(0, n_lits + 1))
        if k == n_lits:
            return draw(st.sampled_from([TRUE, FALSE]))
        return Lit(min(k, n_lits - 1), draw(st.booleans()))
    op = draw(st.sampled_from([And, Or]))
    kids = tuple(random_formula(draw, n_lits, depth - 1) for _ in range(draw(st.integers(1, 3))))
    return op(kids)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_simplify_preserves_truth_on_literal_matrices(data):
    # literals from real thresholds on values with NaN: the merges must hold there
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    V = rng.integers(0, 6, size=(300, 2)).astype(float)
    V[rng.random(V.shape) < 0.1] = np.nan
    lits = Literals.from_values(V)
    Z = lits.transform_values(V)
    info = lits.literal_info()
    f = random_formula(data.draw, lits.n_literals, 3)
    s = simplify(f, info)
    np.testing.assert_array_equal(evaluate_formula(f, Z), evaluate_formula(s, Z))
    assert simplify(s, info) == s  # canonical: a fixed point


def test_from_formulas_folds_merges_and_drops():
    rules = RuleSet.from_formulas(
        [And((Z, TRUE)), Or((X3, ~X7)), And((X3, ~X3)), Z, And((Y0, Z)), And((Z, Y0)), Y5, Y5],
        [1.0, 0.5, 9.0, 2.0, 0.25, 0.25, 1.5, -1.5],
        intercept=0.1,
        literals=INFO,
    )
    # z twice -> 3.0; the tautology -> intercept; the contradiction and the
    # rules that cancel out (y > 5, +1.5 and -1.5) are gone
    assert len(rules) == 2
    assert rules[0].formula == Z and rules[0].weight == 3.0
    assert rules[1].formula == And((Y0, Z)) and rules[1].weight == 0.5
    assert rules.intercept == pytest.approx(0.6)
    assert rules.n_literals == [1, 2]


def test_score_and_fires_on_a_literal_matrix():
    Xb = np.array([[1, 0, 1], [0, 1, 0], [1, 1, 1], [0, 0, 0]], dtype=bool)
    rules = RuleSet.from_formulas(
        [And((Lit(0), Lit(2))), Or((Lit(1), Lit(2, True)))], [2.0, -0.5], intercept=1.0, n_literals=3
    )
    np.testing.assert_array_equal(
        rules.fires(Xb), [[True, False], [False, True], [True, True], [False, True]]
    )
    np.testing.assert_allclose(rules.score(Xb), [3.0, 0.5, 2.5, 0.5])
    np.testing.assert_allclose(rules.score(Xb.astype(int)), [3.0, 0.5, 2.5, 0.5])
    with pytest.raises(ValueError, match="columns"):
        rules.score(Xb[:, :2])
    with pytest.raises(ValueError, match="binary"):
        rules.score(Xb * 2)


def test_text_rendering():
    rules = RuleSet.from_formulas(
        [And((X1, ~X7, Y0)), Or((~X3, Y5)), ~Y5, Lit(5, True)],
        [0.2, -1.0, 0.5, 0.1],
        literals=INFO,
    )
    lines = str(rules).splitlines()
    # largest |weight| first, weight first; intercept last
    assert lines[0] == "-1.00  (x <= 3 or undefined) OR y > 5"
    assert lines[1] == "+0.500  y <= 5"  # y can not be undefined: no "or undefined"
    assert lines[2] == "+0.200  1 < x <= 7 AND y > 0"
    assert lines[3] == "+0.100  NOT z"
    assert lines[-1] == "0  (intercept)"
    assert rules[0].literals == ("x > 3", "y > 5")
    assert rules[0].negated == (True, False)
    assert rules[0].conditions == ("x <= 3 or undefined", "y > 5")


def test_json_round_trip_with_names():
    rules = RuleSet.from_formulas([And((Lit(0), Or((Lit(1), Lit(2, True)))))], [1.25], 0.5,
                                  literals=["a", "b", "c"])
    text = rules.to_json()
    json.loads(text)  # plain JSON
    back = RuleSet.from_json(text)
    assert str(back) == str(rules)
    Xb = np.random.default_rng(0).random((50, 3)) < 0.5
    np.testing.assert_array_equal(back.score(Xb), rules.score(Xb))
    with pytest.raises(ValueError, match="not a rudi-explain rule set"):
        RuleSet.from_json('{"format": "something else"}')


def test_json_round_trip_with_literals_and_linear_terms():
    rng = np.random.default_rng(3)
    V = rng.normal(size=(100, 2))
    V[:5, 1] = np.nan
    lits = Literals.from_values(V, names=["a", "b"])
    rules = RuleSet([LinearTerm(0, 2.0, 0.0, "a", False), LinearTerm(1, -1.0, 0.5, "b")], 1.0, lits)
    back = RuleSet.from_json(rules.to_json())
    expected = 1.0 + 2.0 * V[:, 0] - np.where(np.isnan(V[:, 1]), 0.5, V[:, 1])
    np.testing.assert_allclose(back.score(V), expected)
    np.testing.assert_allclose(rules.score(V), expected)
    assert "undefined counts as 0.5" in str(back)
    assert isinstance(back.literals, Literals)


def test_rules_and_linear_terms_mix_only_over_a_literal_table():
    # mixed rule sets are allowed (tests/rules/test_linear_cards.py), but they read statistic values, which a
    # rule set over plain literal names cannot turn into literals; and nothing that works on formulas alone
    # (pruning, refinement) may silently drop their linear terms
    mixed = RuleSet([LinearTerm(0, 1.0, 0.0, "a"), RuleSet.from_formulas([Lit(0)], [1.0], n_literals=1)[0]],
                    literals=["a"])
    assert mixed.has_linear and not mixed.linear and mixed.reads_values
    with pytest.raises(ValueError, match="not a Literals table"):
        mixed.score(np.zeros((3, 1)))
    with pytest.raises(ValueError, match="linear terms"):
        mixed.formula_rules()
    with pytest.raises(ValueError, match="value matrix"):
        mixed.score(np.zeros((3, 1), dtype=bool))


# --------------------------------------------------------------------------- words


def words_info():
    """0: a count > 14; 1: the same count > 0; 2: a share > 0.34; 3: a 0/1 output; 4: an amount > 60 that
    some users lack; 5: an amount > 750 every user has."""
    base = ["number of debit-card payments", "number of debit-card payments", "share of payments made abroad",
            "whether any event has channel = atm", "largest amount among games purchases", "total amount"]
    text = ["14", "0", "0.34", "0", "60", "750"]
    return LiteralInfo(
        names=[f"{b} > {t}" for b, t in zip(base, text)],
        column=np.array([0, 0, 1, 2, 3, 4]),
        thresholds=np.array([14.0, 0.0, 0.34, 0.0, 60.0, 750.0]),
        base=base,
        undefined=np.array([False, False, False, False, True, False]),
        threshold_text=["14", "0", "0.34", "0", "60", "750"],
        kind=["count", "count", "share", "binary", "value", "value"],
        undefined_words=["", "", "", "", "users with no games purchases", ""],
    )


@pytest.mark.parametrize("index, negated, expected", [
    (0, False, "number of debit-card payments is more than 14"),
    (0, True, "number of debit-card payments is at most 14"),
    (1, False, "any debit-card payments"),
    (1, True, "no debit-card payments"),
    (2, False, "share of payments made abroad is more than 34%"),
    (2, True, "share of payments made abroad is at most 34%"),
    (3, False, "any event has channel = atm"),
    (3, True, "no event has channel = atm"),
    (4, False, "largest amount among games purchases is more than 60"),
    (4, True, "largest amount among games purchases is at most 60 (users with no games purchases count as below)"),
    (5, True, "total amount is at most 750"),
])
def test_literals_read_as_sentences(index, negated, expected):
    info = words_info()
    assert info.render_literal(Lit(index, negated)) == expected
    # the notation stays available
    op = "<=" if negated else ">"
    assert info.notation(Lit(index, negated)).startswith(f"{info.base[index]} {op} {info.threshold_text[index]}")


def test_a_rule_writes_a_large_threshold_as_the_cards_do():
    """One way to write a value (SEMANTICS.md): "more than 7,300 EUR" in a rule's sentence, as the card's band
    and the per-user view write it (format_value, exact), while the notation stays code ("> 7300")."""
    from rudi_explain.rules.values import format_value

    info = LiteralInfo(names=["total amount > 7300", "total amount > 12000.5", "number of payments > 1499"],
                       column=np.array([0, 0, 1]), thresholds=np.array([7300.0, 12000.5, 1499.0]),
                       base=["total amount", "total amount", "number of payments"],
                       undefined=np.array([False, False, False]), threshold_text=["7300", "12000.5", "1499"],
                       kind=["value", "value", "count"], unit=["EUR", "EUR", ""], undefined_words=["", "", ""])
    assert info.render_literal(Lit(0)) == f"total amount is more than {format_value(7300.0, exact=True)} EUR" \
        == "total amount is more than 7,300 EUR"
    assert info.render_literal(Lit(2, True)) == "number of payments is at most 1,499"
    assert info.render_interval(Lit(0), Lit(1, True)) == "total amount is more than 7,300 and at most 12,000.5 EUR"
    assert info.notation(Lit(0, True)) == "total amount <= 7300"


def test_rules_in_words_and_notation():
    info = words_info()
    rules = RuleSet.from_formulas([And((Lit(0), Lit(4, True))), And((Lit(5), Lit(2)))], [1.0, -0.5], literals=info)
    assert rules[0].text == ("number of debit-card payments is more than 14 AND largest amount among games purchases "
                             "is at most 60 (users with no games purchases count as below)")
    assert rules[0].notation == ("number of debit-card payments > 14 AND (largest amount among games purchases <= 60 "
                                 "or undefined)")
    assert rules[0].conditions == (info.render_literal(Lit(0)), info.render_literal(Lit(4, True)))
    assert "more than 14" in str(rules)


def test_fitted_rules_speak_words_and_name_undefined_users_only_where_they_exist():
    import rudi_explain as rx

    data = rx.datasets.make_payments(500, random_state=3)
    seqs = data.sequences()
    stats = ["Select(amount) | Sum", "Select(card_type) | Sum", "Select(channel) | Mean",
             "Select(amount) | RetainBy(merchant_category=gambling) | Max"]
    lits = Literals.fit(seqs, stats)
    rng = np.random.default_rng(0)
    formulas = [Lit(int(i), bool(rng.integers(2))) for i in range(lits.n_literals)]
    rules = RuleSet.from_formulas(formulas, rng.normal(size=len(formulas)), literals=lits)
    V = lits.values(seqs)
    for rule in rules:
        (lit,) = formula_literals(rule.formula)
        c = lits.column[lit.index]
        assert " > " not in rule.text and " <= " not in rule.text  # words, not notation
        says_undefined = "count as below" in rule.text
        assert says_undefined == (lit.negated and bool(np.isnan(V[:, c]).any()))
        if says_undefined:
            assert "users with no" in rule.text
    # gambling is missing for some users: its negated literals say so; the total amount never is
    assert np.isnan(V[:, -1]).any() and not np.isnan(V[:, 0]).any()


def test_at_most_zero_reads_as_zero_only_where_no_value_is_negative():
    rng = np.random.default_rng(5)
    n = 2000
    spend = np.where(rng.random(n) < 0.6, 0.0, rng.lognormal(4, 1, n))  # most users spent nothing
    balance = np.where(rng.random(n) < 0.6, 0.0, rng.normal(0, 50, n))  # signed: "at most 0" stays
    lits = Literals.from_values(np.column_stack([spend, balance]), names=["spend", "balance"],
                                descriptions=["total amount over games purchases", "net balance change"])
    assert lits.output_min[0] == 0 and lits.output_min[1] < 0
    info = lits.literal_info()
    zero = {int(lits.column[i]): i for i in range(lits.n_literals) if lits.thresholds[i] == 0}
    assert set(zero) == {0, 1}
    assert info.render_literal(Lit(zero[0], True)) == "total amount over games purchases is 0"
    assert info.render_literal(Lit(zero[0])) == "total amount over games purchases is more than 0"
    assert info.render_literal(Lit(zero[1], True)) == "net balance change is at most 0"
    # the fact travels through JSON; tables written before it read as before
    back = Literals.from_json(lits.to_json())
    np.testing.assert_array_equal(back.output_min, lits.output_min)
    d = lits.to_dict()
    del d["output_min"]
    assert Literals.from_dict(d).literal_info().render_literal(Lit(zero[0], True)).endswith("is at most 0")


def test_a_cut_below_every_defined_value_reads_as_any_or_no():
    import rudi_explain as rx

    data = rx.datasets.make_payments(600, random_state=2)
    seqs = data.sequences()
    stat = "Select(hour) | RetainBy(channel=online) | Mean"
    lits = Literals.fit(seqs, [stat])
    V = lits.values(seqs)[:, 0]
    assert np.isnan(V).any()
    info = lits.literal_info()
    # a literal just below the smallest defined value: true exactly for users with online events
    low = Literals(np.array([0]), np.array([np.nanmin(V) - 1]), lits.output_names, lits.output_descriptions,
                   output_undefined=lits.output_undefined, output_kind=lits.output_kind,
                   output_undefined_words=lits.output_undefined_words, output_min=lits.output_min)
    info = low.literal_info()
    assert info.render_literal(Lit(0)) == "any events where channel is online"
    assert info.render_literal(Lit(0, True)) == "no events where channel is online"
    assert np.array_equal(low.transform_values(V[:, None])[:, 0], ~np.isnan(V))
    # a cut among the values keeps its number
    mid = int(np.flatnonzero(lits.thresholds > np.nanmin(V))[0])
    assert "is more than" in lits.literal_info().render_literal(Lit(mid))


def test_thresholds_carry_the_unit_of_their_column_only_where_the_value_is_in_it():
    import rudi_explain as rx

    data = rx.datasets.make_payments(800, random_state=3)
    seqs = data.sequences()
    assert seqs.units == {"amount": "EUR"}
    stats = ["Select(amount) | RetainBy(merchant_category=gambling) | Sum", "Select(amount) | Max",
             "Select(amount) | Std", "Select(hour) | Mean", "Select(card_type) | Mean",
             "Select(amount) | RetainBy(channel=atm) | Count", "Select(*) | Tenure"]
    lits = Literals.fit(seqs, stats)
    # an independent reading of which outputs are measured in EUR
    in_eur = {0: True, 1: True, 2: True, 3: False, 5: False, 6: False}
    info = lits.literal_info()
    seen = set()
    for i in range(lits.n_literals):
        k = int(lits.output_statistic[lits.column[i]])
        if k == 4:  # shares of each card type: percent, never a unit
            assert "EUR" not in info.render_literal(Lit(i)) and lits.output_unit[lits.column[i]] == ""
            continue
        for neg in (False, True):
            text = info.render_literal(Lit(i, neg))
            said = grouped(lits.threshold_text[i])  # "1,000": thousands separated, as the cards write it
            says = text.endswith(f"{said} EUR") or f"{said} EUR (" in text
            if in_eur[k] and (" more than " in text or " at most " in text):
                assert says, text
            if not in_eur[k]:
                assert "EUR" not in text, text
        seen.add(k)
    assert {0, 1, 2, 3, 5, 6} <= seen
    # an interval names the unit once, at its end
    j = [i for i in range(lits.n_literals) if lits.output_statistic[lits.column[i]] == 1]
    band = info.render_interval(Lit(j[1]), Lit(j[3], True))
    assert band.endswith(f"at most {lits.threshold_text[j[3]]} EUR") and band.count("EUR") == 1
    # units travel through JSON; a table saved before units reads without them
    back = Literals.from_json(lits.to_json())
    assert back.output_unit == lits.output_unit
    d = lits.to_dict()
    del d["output_unit"]
    old = Literals.from_dict(d).literal_info()
    assert all("EUR" not in old.render_literal(Lit(i)) for i in range(lits.n_literals))


def test_sequences_check_units_and_keep_them():
    import pandas as pd

    import rudi_explain as rx

    events = pd.DataFrame({"user_id": [1, 1, 2], "ts": [1, 2, 1], "amount": [5.0, 7.0, 1.0],
                           "channel": ["a", "b", "a"]})
    seqs = rx.Sequences(events, units={"amount": " EUR "})
    assert seqs.units == {"amount": "EUR"}
    assert seqs.subset([1]).units == {"amount": "EUR"}
    meta, arrays = seqs.to_arrays()
    assert rx.Sequences.from_arrays(json.loads(json.dumps(meta)), arrays).units == {"amount": "EUR"}
    del meta["units"]  # saved before units
    assert rx.Sequences.from_arrays(meta, arrays).units == {}
    with pytest.raises(ValueError, match="'channel'.*not a numerical column"):
        rx.Sequences(events, units={"channel": "EUR"})
    with pytest.raises(ValueError, match="'price'"):
        rx.Sequences(events, units={"price": "EUR"})
    for bad in ("", "x" * 25, "a\nb", 3):
        with pytest.raises(ValueError, match="unit of column 'amount'"):
            rx.Sequences(events, units={"amount": bad})
    with pytest.raises(TypeError, match="mapping"):
        rx.Sequences(events, units=["EUR"])
    assert events.columns.tolist() == ["user_id", "ts", "amount", "channel"]


def test_an_infinite_threshold_is_written_not_raised():
    from rudi_explain.rules.formula import format_threshold

    assert format_threshold(float("-inf")) == "-inf" and format_threshold(float("inf")) == "inf"
    assert format_threshold(0.34) == "0.34" and format_threshold(750.0) == "750"
    huge = -1.7976931348623157e308  # a scorecard's "the value is defined" threshold
    assert format_threshold(huge) == "-1.7976931348623157e+308" and float(format_threshold(huge)) == huge
