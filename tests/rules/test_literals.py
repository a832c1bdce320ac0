import json

import numpy as np
import pandas as pd
import pytest

import rudi_explain as rx
from rudi_explain.exceptions import InputError
from rudi_explain.rules.literals import Literals


@pytest.fixture(scope="module")
def payments():
    data = rx.datasets.make_payments(400, random_state=1)
    return data, data.sequences()


STATS = [
    "Select(amount) | Sum",
    "Select(card_type) | Sum",
    "Select(channel) | Max",
    "Select(hour) | RetainBy(channel=online) | Mean",
]


def _digits(x: float) -> int:
    """Significant digits of the shortest text of x (independent of the library)."""
    text = repr(float(x)).lstrip("-").replace(".", "").lstrip("0").rstrip("0")
    return len(text.split("e")[0]) if text else 0


def _allowed(v, q, n, tolerance=0.005):
    """[lo, hi): thresholds that move at most floor(tolerance n) users from where q puts them."""
    c = int((v <= q).sum())
    m = int(np.floor(tolerance * n))
    lo_c, hi_c = max(c - m, 1), min(c + m, len(v) - 1)
    return v[lo_c - 1], v[hi_c], c


def _rounder_exists(lo, hi, digits, whole):
    """Brute force: is there a number with fewer than ``digits`` significant digits in [lo, hi)?"""
    if lo <= 0 < hi:
        return digits > 0
    for e in range(-8, 9):
        if whole and e < 0:
            continue
        step = 10.0 ** e
        k0, k1 = int(np.ceil(lo / step)), int(np.floor(hi / step))
        for k in range(k0, min(k1, k0 + 2000) + 1):
            r = float(f"{k}e{e}")
            if lo <= r < hi and _digits(r) < digits:
                return True
    return False


@pytest.mark.parametrize("seed", range(4))
def test_thresholds_are_round_and_move_few_users(seed):
    rng = np.random.default_rng(seed)
    n = 2000
    V = np.column_stack([
        rng.lognormal(5, 1.2, n),  # amounts
        rng.normal(size=n),  # signed
        rng.poisson(12, n).astype(float),  # a count
        rng.beta(2, 9, n),  # a share
    ])
    V[rng.random(n) < 0.1, 1] = np.nan
    lits = Literals.from_values(V, kinds=["value", "value", "count", "share"], n_quantiles=20)
    assert lits.output_kind == ["value", "value", "count", "share"]
    for i, (j, r) in enumerate(zip(lits.column, lits.thresholds)):
        text = lits.threshold_text[i]
        assert float(text) == r and "e" not in text  # the text shown is exactly the value used
        assert lits.names[i] == f"v{j} > {text}"
        v = np.sort(V[~np.isnan(V[:, j]), j])
        quantiles = np.percentile(v, np.linspace(0, 100, 21))
        # some candidate quantile puts all but at most 0.5% of the users on the same side
        windows = [_allowed(v, q, n) for q in quantiles]
        near = [(lo, hi) for lo, hi, c in windows if lo <= r < hi]
        assert near, f"threshold {r} of column {j} moves too many users"
        assert _digits(r) <= 3
        if j == 2:
            assert r == int(r)  # whole numbers for counts
        if j == 3:  # whole percents where one is allowed
            assert float(f"{r:.2f}") == r or not any(lo <= k / 100 < hi for lo, hi in near for k in range(101))
        # and nothing rounder was allowed where it came from
        assert not all(_rounder_exists(lo, hi, _digits(r), j == 2) for lo, hi in near)
    # finer than deciles, but bounded: at most 20 literals per output
    counts = np.bincount(lits.column, minlength=V.shape[1])
    assert (counts <= 20).all() and (counts[:2] >= 15).all()


def test_exact_thresholds_keep_every_user_on_its_side():
    rng = np.random.default_rng(5)
    v = rng.normal(size=500)
    lits = Literals.from_values(v[:, None], n_quantiles=10, move_tolerance=0.0)
    s = np.sort(v)
    splits = {int((s <= q).sum()) for q in np.percentile(s, np.arange(0, 101, 10))}
    # exactly the deciles' splits; the top one (constant) and the bottom one (1 of 500 users at or below: true
    # for 99.8%, vacuous) are dropped
    assert {int((s <= r).sum()) for r in lits.thresholds} == splits - {len(s), 1}


def test_finer_quantiles_find_a_cut_between_deciles():
    # counts uniform on 0..30: deciles cut every ~3 values, 20 quantiles every ~1.5
    rng = np.random.default_rng(0)
    counts = rng.integers(0, 31, 3000).astype(float)
    deciles = Literals.from_values(counts[:, None], n_quantiles=10)
    fine = Literals.from_values(counts[:, None], n_quantiles=20)
    assert 14.0 not in deciles.thresholds and 14.0 in fine.thresholds
    assert fine.n_literals == 20 and deciles.n_literals == 10
    assert (np.diff(fine.thresholds) <= 2).all()


def test_identical_literal_columns_are_dropped():
    rng = np.random.default_rng(1)
    x = rng.poisson(3, 300).astype(float)
    V = np.column_stack([x, x, -x, (x > 2).astype(float)])
    lits = Literals.from_values(V, names=["a", "b", "minus a", "a > 2"])
    Z = lits.transform_values(V)
    keys = {tuple(c) for c in Z.T} | {tuple(~c) for c in Z.T}
    assert len(keys) == 2 * Z.shape[1]  # no column equals another or its complement
    assert 1 not in set(lits.column)  # b is a again: none of its literals is kept
    # the kept literals still split users in every way the four outputs did on their own
    canon = lambda c: min(tuple(c), tuple(~c))  # noqa: E731
    alone = set()
    for j in range(V.shape[1]):
        one = Literals.from_values(V[:, [j]])
        alone |= {canon(c) for c in one.transform_values(V[:, [j]]).T}
    assert {canon(c) for c in Z.T} == alone


def test_binary_output_is_one_literal_and_constants_dropped():
    V = np.array([[0, 5, 1], [1, 5, 2], [1, 5, 2], [np.nan, 5, 2], [0, 5, 3]], dtype=float)
    lits = Literals.from_values(V, names=["flag", "const", "few"])
    assert list(lits.column) == [0, 2, 2]
    assert lits.thresholds[0] == 0.0
    assert lits.names[0] == "flag > 0"
    Z = lits.transform_values(V)
    np.testing.assert_array_equal(Z[:, 0], [False, True, True, False, False])
    # no literal is constant on the training users, and no two split them alike
    assert (Z.any(axis=0) & ~Z.all(axis=0)).all()
    assert len({tuple(c) for c in Z.T}) == Z.shape[1]


def test_fit_on_statistics(payments):
    data, seqs = payments
    stats = [rx.Statistic.parse(t) for t in STATS]
    lits = rx.Literals.fit(seqs, stats)
    n_cards = len(seqs.categories("card_type"))
    n_channels = len(seqs.categories("channel"))
    assert lits.n_outputs == 1 + n_cards + n_channels + 1
    table = lits.table()
    assert list(table.columns) == ["name", "statistic", "statistic_text", "output", "output_name",
                                   "column", "threshold", "can_be_undefined", "kind"]
    # Max of a one-hot is 0/1: exactly one literal per category that varies
    maxes = table[table.statistic == 2]
    assert (maxes.threshold == 0).all() and maxes.output.is_unique
    # readable names from the statistic's words
    debit = table[table.output_name == "card_type=debit"]
    words = stats[1].describe(output="card_type=debit", data=seqs)
    assert debit.name.iloc[0].startswith(f"{words} > ")
    assert lits.names[0].startswith(stats[0].describe(data=seqs) + " > ")
    # undefined only where some training user has no value: a Mean after RetainBy here
    V = lits.values(seqs)
    np.testing.assert_array_equal(table.can_be_undefined, np.isnan(V[:, lits.column]).any(axis=0))
    assert table[table.statistic == 3].can_be_undefined.all()
    assert not table[table.statistic.isin([0, 1, 2])].can_be_undefined.any()
    online = lits.output_statistic == 3
    assert [lits.output_undefined_words[c] for c in np.flatnonzero(online)] == \
        ["users with no events where channel is online"]
    assert not any(lits.output_undefined_words[c] for c in np.flatnonzero(~online))
    assert table.kind.tolist() == [{0: "value", 1: "count", 2: "binary", 3: "value"}[k] for k in table.statistic]
    # the literal matrix is the thresholded value matrix
    Z = lits.transform(seqs)
    assert Z.dtype == bool and Z.shape == (seqs.n_users, lits.n_literals)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(Z, V[:, lits.column] > lits.thresholds)


def test_transform_new_users_matches(payments):
    data, seqs = payments
    lits = rx.Literals.fit(seqs, STATS)  # text is parsed
    assert lits.statistics == [rx.Statistic.parse(t) for t in STATS]
    idx = np.array([3, 10, 200, 399])
    part = seqs.subset(idx)
    np.testing.assert_array_equal(lits.transform(part), lits.transform(seqs)[idx])


def test_new_data_with_another_vocabulary(payments):
    data, seqs = payments
    lits = rx.Literals.fit(seqs, [rx.Statistic.parse("Select(card_type) | Sum")])
    events = data.events[data.events.card_type != "debit"].copy()
    events["card_type"] = events["card_type"].astype(str)
    other = rx.Sequences(events, user="user_id", time="ts", categorical=data.categorical,
                         numerical=data.numerical)
    with pytest.raises(ValueError, match="vocabularies=literals.vocabularies"):
        lits.transform(other)
    same = rx.Sequences(events, user="user_id", time="ts", categorical=data.categorical,
                        numerical=data.numerical, vocabularies=lits.vocabularies)
    Z = lits.transform(same)
    assert Z.shape[1] == lits.n_literals
    debit = [i for i, n in enumerate(lits.output_names) if n == "card_type=debit"]
    assert not Z[:, np.isin(lits.column, debit)].any()  # no debit payments left


def test_json_round_trip(payments):
    data, seqs = payments
    lits = rx.Literals.fit(seqs, [rx.Statistic.parse(t) for t in STATS])
    text = lits.to_json()
    assert json.loads(text)["format"] == "rudi-explain/literals"
    back = Literals.from_json(text)
    assert back.names == lits.names
    assert back.output_kind == lits.output_kind and back.output_undefined_words == lits.output_undefined_words
    np.testing.assert_array_equal(back.thresholds, lits.thresholds)  # exact floats
    np.testing.assert_array_equal(back.transform(seqs), lits.transform(seqs))
    with pytest.raises(ValueError, match="not a rudi-explain literal table"):
        Literals.from_json("{}")


def test_bad_input():
    with pytest.raises(ValueError, match="at least one statistic"):
        Literals.fit(None, [])
    with pytest.raises(ValueError, match="value matrix"):
        Literals.from_values(np.zeros(5))
    lits = Literals.from_values(np.arange(20.0).reshape(10, 2))
    with pytest.raises(ValueError, match="expected 2 value columns"):
        lits.transform_values(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="built from values"):
        lits.values(object())
    with pytest.raises(ValueError, match="numeric"):
        lits.transform_values(pd.DataFrame({"a": ["x"], "b": ["y"]}).to_numpy())


def test_infinite_values_are_rejected():
    with pytest.raises(ValueError, match="column 1 has infinite values"):
        Literals.from_values(np.array([[0.0, 1.0], [1.0, np.inf]]))


def test_rules_score_sequences_only_with_a_literal_table(payments):
    data, seqs = payments
    lits = rx.Literals.fit(seqs, [rx.Statistic.parse("Select(amount) | Sum")])
    from rudi_explain.rules.formula import Lit

    with_table = rx.RuleSet.from_formulas([Lit(0)], [2.0], 1.0, literals=lits)
    expected = 1.0 + 2.0 * lits.transform(seqs)[:, 0]
    np.testing.assert_array_equal(with_table.score(seqs), expected)
    np.testing.assert_array_equal(with_table.fires(seqs)[:, 0], lits.transform(seqs)[:, 0])
    names_only = rx.RuleSet.from_formulas([Lit(0)], [2.0], 1.0, literals=lits.names)
    with pytest.raises(ValueError, match="without a Literals table"):
        names_only.score(seqs)


def test_thresholds_never_carry_more_than_three_significant_digits():
    # Dense values (an average hour over thousands of users): no 3-digit number
    # moves at most 0.5% of users, and SEMANTICS.md caps the digits at 3 anyway.
    from rudi_explain.rules.literals import round_threshold

    for seed in range(3):
        v = np.sort(np.random.default_rng(seed).normal(14, 2, 20000))
        for t in np.quantile(v, [0.1, 0.3, 0.5, 0.7, 0.9]):
            r = round_threshold(v, float(t), len(v), "value", 0.005)
            assert float(f"{r:.3g}") == r, (t, r)
            assert abs(r - t) <= 0.05 * abs(t)


SORTING_STATS = STATS + [
    "Select(amount) | SortBy(amount, desc) | Top(3) | Mean",
    "Select(hour) | RetainBy(channel=online) | SortBy(amount, desc) | Top(5) | Mean",
    "Select(merchant_category) | Max",
]


@pytest.mark.parametrize("seed", range(3))
def test_values_of_training_users_and_a_batch_of_the_rest_equal_every_users(seed):
    """explain()'s literals: the training users' values and a batch of the others', put together, equal the
    table's values on every user, and thresholds fitted from the given values equal those of evaluating."""
    from rudi_explain.rules.literals import statistic_values

    data = rx.datasets.make_payments(600, random_state=seed)
    seqs = data.sequences()
    rng = np.random.default_rng(seed)
    train_idx = np.flatnonzero(rng.random(seqs.n_users) < 0.8)
    test_idx = np.setdiff1d(np.arange(seqs.n_users), train_idx)
    train = seqs.subset(train_idx)
    reference = Literals.fit(train, SORTING_STATS)
    given = statistic_values(train, SORTING_STATS)
    fitted = Literals.fit(train, SORTING_STATS, values=given)
    assert fitted.to_json() == reference.to_json()
    values = np.empty((seqs.n_users, given.shape[1]))
    values[train_idx] = given
    values[test_idx] = statistic_values(seqs, SORTING_STATS, test_idx)
    np.testing.assert_array_equal(values, reference.values(seqs))  # NaN where undefined, alike
    with pytest.raises(InputError):
        Literals.fit(train, SORTING_STATS, values=given[:, :-1])
    with pytest.raises(InputError):
        Literals.fit(train, SORTING_STATS, values=given[:-1])
