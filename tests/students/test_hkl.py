"""HKL rule ensembles: sparse conjunctions found without enumerating the lattice; errors."""

import numpy as np
import pytest

import rudi_explain as rx
from rudi_explain.rules.formula import And, Lit
from rudi_explain.rules.ruleset import RuleSet
from rudi_explain.students import HKLRuleEnsemble, NotFittedError


@pytest.fixture(scope="module")
def conjunction_data():
    """Scores made of two conjunctions over 30 literals (60 items)."""
    rng = np.random.default_rng(0)
    X = rng.random((1500, 30)) < 0.5
    y = 2.0 * (X[:, 0] & X[:, 1]) - 1.5 * (X[:, 2] & ~X[:, 3]) + 0.1 * rng.normal(size=1500)
    return X, y


@pytest.fixture(scope="module")
def fitted(conjunction_data):
    X, y = conjunction_data
    return HKLRuleEnsemble(n_rules=8, random_state=0).fit(X, y)


def test_finds_the_conjunctions_without_enumerating_the_lattice(fitted, conjunction_data):
    X, y = conjunction_data
    rules = fitted.rules()
    formulas = {r.formula: r.weight for r in rules}
    assert And((Lit(0), Lit(1))) in formulas and formulas[And((Lit(0), Lit(1)))] > 0
    assert And((Lit(2), Lit(3, True))) in formulas and formulas[And((Lit(2), Lit(3, True)))] < 0
    # only literals of the truth appear
    used = {lit.index for r in rules for lit in _lits(r.formula)}
    assert used <= {0, 1, 2, 3}
    assert len(rules) <= 8 and rules.max_literals <= 2
    # the search touched a small part of the lattice of conjunctions up to 3 of 60 items
    assert fitted.lattice_size_ == 1 + 60 + 4 * 435 + 8 * 4060
    assert fitted.n_kernel_evaluations_ < 0.1 * fitted.lattice_size_
    assert fitted.converged_  # the fidelity: test_fidelity_over_seeds, a rate over seeds


@pytest.mark.slow
def test_fidelity_over_seeds():
    # The conjunctions found and the fidelity as a rate over four seeds (data and model), not one
    # seed's luck. When written, fidelity 0.799, 0.786, 0.783, 0.781 against the truth's own
    # 0.813, 0.806, 0.805, 0.802 at seeds 0-3 (the noise caps it).
    hits, fids = 0, []
    for seed in range(4):
        rng = np.random.default_rng(seed)
        X = rng.random((1500, 30)) < 0.5
        truth = 2.0 * (X[:, 0] & X[:, 1]) - 1.5 * (X[:, 2] & ~X[:, 3])
        y = truth + 0.1 * rng.normal(size=1500)
        fitted = HKLRuleEnsemble(n_rules=8, random_state=seed).fit(X, y)
        formulas = {r.formula for r in fitted.rules()}
        fid = rx.metrics.fidelity(y, fitted.predict(X))
        fids.append(fid)
        found = And((Lit(0), Lit(1))) in formulas and And((Lit(2), Lit(3, True))) in formulas
        hits += found and fid > rx.metrics.fidelity(y, truth) - 0.04
    assert hits >= 3 and min(fids) > 0.75, (hits, fids)


def _lits(f):
    from rudi_explain.rules.formula import formula_literals

    return formula_literals(f)


def test_descendant_sum_matches_enumeration():
    """The product form equals the explicit sum over all descendants on a tiny lattice."""
    import itertools

    rng = np.random.default_rng(1)
    X = rng.random((12, 3)) < 0.5
    items = np.concatenate([X, ~X], axis=1)
    alpha = rng.normal(size=12)
    alpha -= alpha.mean()
    beta = 1.5
    c = 1 / (1 + beta) ** 2
    t = (0,)  # the node "x0"
    brute = 0.0
    others = [k for k in range(6) if k not in t]
    for r in range(len(others) + 1):
        for extra in itertools.combinations(others, r):
            v = t + extra
            R = items[:, list(v)].all(axis=1)
            norm = sum(beta ** (len(t) + k) * len(list(itertools.combinations(extra, k)))
                       for k in range(len(extra) + 1))
            brute += (alpha @ R) ** 2 / norm**2
    m = HKLRuleEnsemble(beta=beta, max_literals=3)
    m._evals = 0
    G = (1 + c) ** (items.astype(float) @ items.T.astype(float))
    cover = {(): np.ones(12, dtype=bool)}
    cand, lhs = m._sources([()], alpha, G, 1.0, items.astype(float), items, np.arange(6), cover, beta, c, 3)
    assert lhs[cand.index(t)] == pytest.approx(brute, rel=1e-10)


def test_rho_below_two_and_rules_score_like_the_model(conjunction_data):
    X, y = conjunction_data
    m = HKLRuleEnsemble(n_rules=6, rho=1.3, random_state=0).fit(X[:800], y[:800])
    rules = m.rules([f"x{i}" for i in range(30)])
    assert isinstance(rules, RuleSet) and 1 <= len(rules) <= 6
    np.testing.assert_allclose(m.predict(X), rules.score(X))
    assert any(r.n_literals == 2 for r in rules)


def test_deterministic_under_random_state(conjunction_data):
    X, y = conjunction_data
    a = HKLRuleEnsemble(n_rules=5, max_samples=500, random_state=3).fit(X, y)
    b = HKLRuleEnsemble(n_rules=5, max_samples=500, random_state=3).fit(X, y)
    assert str(a.rules()) == str(b.rules()) and a.n_kernel_evaluations_ == b.n_kernel_evaluations_


@pytest.mark.parametrize("kwargs,message", [
    (dict(rho=1.0), "rho"), (dict(rho=2.5), "rho"), (dict(n_rules=0), "n_rules"),
    (dict(beta=-1.0), "beta"), (dict(max_literals=0), "max_literals"), (dict(tol=0), "tol"),
    (dict(max_samples=1), "max_samples"),
])
def test_bad_parameters(kwargs, message, conjunction_data):
    X, y = conjunction_data
    with pytest.raises(ValueError, match=message):
        HKLRuleEnsemble(**kwargs).fit(X[:100], y[:100])


def test_bad_input(conjunction_data):
    X, y = conjunction_data
    m = HKLRuleEnsemble()
    with pytest.raises(NotFittedError):
        m.rules()
    with pytest.raises(ValueError, match="binary"):
        m.fit(X * 3.0, y)
    with pytest.raises(ValueError, match="constant"):
        m.fit(X, np.zeros(len(y)))
    with pytest.raises(ValueError, match="users"):
        m.fit(X[:-2], y)
    assert not [k for k in vars(HKLRuleEnsemble()) if k.endswith("_")]


def test_weights_are_fitted_on_every_user_beyond_the_kernel_sample():
    # the rules come from a 300-user kernel; their weights from all 6,000 users, which
    # estimates them better than the 300 do, on most seeds
    better = 0
    for seed in range(5):
        rng = np.random.default_rng(seed)
        X = rng.random((6000, 8)) < 0.5
        truth = 1.0 * (X[:, 0] & X[:, 1]) - 0.8 * X[:, 2] + 0.5 * (X[:, 3] & ~X[:, 4])
        y = truth + 0.5 * rng.normal(size=6000)
        student = HKLRuleEnsemble(n_rules=6, max_samples=300, random_state=seed).fit(X, y)
        assert student.n_samples_fit_ == 300
        # the same rules, weighted on the kernel sample only (the sample fit() draws)
        rows = np.sort(np.random.default_rng(seed).choice(6000, 300, replace=False))
        small = HKLRuleEnsemble(n_rules=6, max_samples=300, random_state=seed).fit(X[rows], y[rows])
        err_all = np.mean((student.predict(X) - truth) ** 2)
        err_small = np.mean((small.predict(X) - truth) ** 2)
        better += err_all < err_small
    assert better >= 4
