import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import kendalltau
from sklearn.metrics import roc_auc_score

from rudi_explain import metrics


def brute_fidelity(t, s):
    """The definition, pair by pair: ordered pairs i != j."""
    n = len(t)
    agree = 0
    for i in range(n):
        for j in range(n):
            if i != j and ((t[i] > t[j]) == (s[i] > s[j])):
                agree += 1
    return agree / (n * (n - 1))


small_scores = st.lists(st.integers(-3, 3), min_size=2, max_size=30)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_fidelity_matches_brute_force_with_ties(data):
    t = data.draw(small_scores)
    s = data.draw(st.lists(st.integers(-3, 3), min_size=len(t), max_size=len(t)))
    assert metrics.fidelity(t, s) == pytest.approx(brute_fidelity(t, s), abs=1e-15)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=2, max_size=25), st.randoms())
def test_fidelity_matches_brute_force_floats(t, rnd):
    s = [x * rnd.choice([-1.0, 0.5, 2.0]) + rnd.random() for x in t]
    assert metrics.fidelity(t, s) == pytest.approx(brute_fidelity(t, s), abs=1e-15)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_agreement_with_one_teacher_counts_as_fidelity_for_every_student(data):
    t = np.asarray(data.draw(small_scores), dtype=float)
    agreement = metrics.Agreement(t)
    for _ in range(3):
        s = np.asarray(data.draw(st.lists(st.integers(-3, 3), min_size=len(t), max_size=len(t))), dtype=float)
        assert agreement(s) == metrics.fidelity(t, s) == pytest.approx(brute_fidelity(t, s), abs=1e-15)
    with pytest.raises(ValueError, match="NaN"):
        agreement(np.full(len(t), np.nan))


def test_ties_follow_the_definition():
    # teacher tied, student not: of the pair's two orders, one agrees
    assert metrics.fidelity([1, 1], [0, 1]) == 0.5
    # both tied: both orders agree (false == false)
    assert metrics.fidelity([1, 1], [2, 2]) == 1.0
    # a constant student agrees only with the teacher's ties
    assert metrics.fidelity([1, 2, 3], [0, 0, 0]) == pytest.approx(0.5)
    assert metrics.fidelity([1, 2, 3], [3, 2, 1]) == 0.0
    assert metrics.fidelity([1, 2, 3], [10, 20, 30]) == 1.0


def test_agrees_with_kendall_tau_without_ties():
    rng = np.random.default_rng(0)
    t = rng.normal(size=5000)
    s = t + rng.normal(size=5000)
    tau = kendalltau(t, s).statistic
    # without ties fidelity = share of concordant pairs = (1 + tau) / 2
    assert metrics.fidelity(t, s) == pytest.approx((1 + tau) / 2, abs=1e-12)


def test_count_pairs_is_exact_integer():
    agree, total = metrics.count_pairs([3, 1, 2, 2], [1, 1, 2, 3])
    assert total == 12
    assert agree == round(brute_fidelity([3, 1, 2, 2], [1, 1, 2, 3]) * 12)


def test_invariant_to_monotone_transforms():
    rng = np.random.default_rng(1)
    t = rng.integers(0, 20, 500).astype(float)
    s = rng.integers(0, 20, 500).astype(float)
    f = metrics.fidelity(t, s)
    assert metrics.fidelity(np.exp(t / 5), 3 * s - 7) == pytest.approx(f)


@pytest.mark.parametrize(
    "t, s, message",
    [
        ([1, 2, 3], [1, 2], "same users"),
        ([1, np.nan, 3], [1, 2, 3], "NaN"),
        ([1, 2, 3], [1, np.inf, 3], "NaN or infinite"),
        ([1], [1], "at least two"),
        (np.ones((3, 2)), np.ones((3, 2)), "1-D"),
        (["a", "b"], [1, 2], "numeric"),
    ],
)
def test_fidelity_rejects_bad_input(t, s, message):
    with pytest.raises(ValueError, match=message):
        metrics.fidelity(t, s)


def test_auc_matches_sklearn_with_ties():
    rng = np.random.default_rng(2)
    y = rng.integers(0, 2, 300)
    s = rng.integers(0, 5, 300)  # many ties
    assert metrics.auc(y, s) == pytest.approx(roc_auc_score(y, s))
    assert metrics.auc([0, 0, 1, 1], [0.1, 0.2, 0.3, 0.4]) == 1.0
    assert metrics.auc([True, False], [0.0, 1.0]) == 0.0


@pytest.mark.parametrize(
    "y, s, message",
    [
        ([0, 1, 2], [1, 2, 3], "binary"),
        ([1, 1, 1], [1, 2, 3], "both positive and negative"),
        ([0, 1], [1, 2, 3], "differ in length"),
        ([0, 1, 1], [1, np.nan, 3], "NaN"),
    ],
)
def test_auc_rejects_bad_input(y, s, message):
    with pytest.raises(ValueError, match=message):
        metrics.auc(y, s)


@pytest.mark.parametrize("seed", range(3))
def test_both_counts_of_increasing_pairs_match_a_plain_count(seed):
    # the merge count (up to MERGE_COUNT_UP_TO values) and the bitwise count (beyond), against a pair loop
    # on small arrays and against each other on large ones; ties, values above the length, one distinct value
    rng = np.random.default_rng(seed)
    for _ in range(400):
        n, q = int(rng.integers(0, 70)), int(rng.integers(1, 200))
        v = rng.integers(0, q, n)
        plain = sum(int(v[i] < v[j]) for i in range(n) for j in range(i + 1, n))
        assert metrics._count_increasing_pairs(v) == plain
        if n >= 2:
            assert metrics._merge_count(v) == metrics._bitwise_count(v) == plain
    for n in (1000, 3000, metrics.MERGE_COUNT_UP_TO, metrics.MERGE_COUNT_UP_TO + 1):
        v = rng.integers(0, rng.integers(1, 2 * n), n)
        assert metrics._merge_count(v) == metrics._bitwise_count(v)
