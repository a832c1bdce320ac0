"""Swapping pruned rules for better short ones: the candidate search against brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from rudi_explain.metrics import fidelity
from rudi_explain.rules.formula import And, Lit, evaluate_formula, formula_literals
from rudi_explain.rules.literals import Literals
from rudi_explain.rules.pruning import prune_rules
from rudi_explain.rules.ruleset import RuleSet
from rudi_explain.rules.swap import _best_condition, swap_path, swap_rules


def _lstsq_gain(r: np.ndarray, f: np.ndarray) -> float:
    """Squared error of ``r`` removed by refitting an intercept and one weight on ``f`` (numpy lstsq)."""
    A0 = np.ones((r.size, 1))
    A1 = np.column_stack([A0, f.astype(float)])
    sse0 = np.sum((r - A0 @ np.linalg.lstsq(A0, r, rcond=None)[0]) ** 2)
    sse1 = np.sum((r - A1 @ np.linalg.lstsq(A1, r, rcond=None)[0]) ** 2)
    return float(sse0 - sse1)


def _brute_force_best(r: np.ndarray, Z: np.ndarray) -> float:
    best = 0.0
    L = Z.shape[1]
    for j in range(L):
        best = max(best, _lstsq_gain(r, Z[:, j]))
    for i, j in itertools.combinations(range(L), 2):
        for a, b in itertools.product((False, True), repeat=2):
            best = max(best, _lstsq_gain(r, (Z[:, i] ^ a) & (Z[:, j] ^ b)))
    return best


@pytest.mark.parametrize("seed", range(5))
def test_best_condition_is_the_brute_force_best_of_every_single_and_pair(seed):
    rng = np.random.default_rng(seed)
    Z = rng.random((300, 7)) < rng.uniform(0.1, 0.9, 7)
    Z[:, 6] = True  # a literal every user meets: never a condition
    r = 1.5 * ((Z[:, rng.integers(6)]) & ~Z[:, rng.integers(6)]) + rng.normal(size=300)
    r -= r.mean()
    gain, lits = _best_condition(r, Z.astype(float), n_pairs=7)
    assert gain == pytest.approx(_brute_force_best(r, Z), rel=1e-9)
    # the condition returned is one that removes that much
    f = evaluate_formula(lits[0] if len(lits) == 1 else And(lits), Z)
    assert _lstsq_gain(r, f) == pytest.approx(gain, rel=1e-9)


def _planted_case(seed: int, n: int = 2000):
    rng = np.random.default_rng(seed)
    Z = rng.random((n, 10)) < rng.uniform(0.2, 0.8, 10)
    planted = And((Lit(0), Lit(3, True)))
    y = 2.0 * evaluate_formula(planted, Z) + 1.0 * Z[:, 5] + 0.3 * rng.normal(size=n)
    is_valid = np.zeros(n, dtype=bool)
    is_valid[rng.permutation(n)[: n // 5]] = True
    names = [f"x{j} > 0" for j in range(10)]
    start = RuleSet.from_formulas([Lit(1), Lit(5)], [1.0, 1.0], 0.0, literals=names)
    return Z, y, is_valid, planted, start


def test_a_wrong_rule_is_swapped_for_the_planted_one_in_every_case():
    recovered = 0
    for seed in range(10):
        Z, y, is_valid, planted, start = _planted_case(seed)
        out = swap_rules(start, Z, y, is_valid)
        assert len(out) == len(start)
        formulas = {r.formula for r in out}
        recovered += planted in formulas and Lit(5) in formulas
        v = is_valid
        assert fidelity(y[v], out.score(Z[v])) >= fidelity(y[v], start.score(Z[v]))
    assert recovered == 10


def test_a_swap_the_validation_users_disagree_with_is_not_made():
    rng = np.random.default_rng(0)
    n = 2000
    Z = rng.random((n, 6)) < 0.5
    is_valid = np.zeros(n, dtype=bool)
    is_valid[: n // 4] = True
    # fitting users follow literal 0, validation users literal 1 (the rule already there)
    y = np.where(is_valid, Z[:, 1], Z[:, 0]).astype(float) + 0.1 * rng.normal(size=n)
    start = RuleSet.from_formulas([Lit(1)], [1.0], 0.0, literals=[f"x{j} > 0" for j in range(6)])
    assert swap_rules(start, Z, y, is_valid) is start


def test_swaps_are_deterministic_and_never_duplicate_a_rule():
    Z, y, is_valid, planted, _ = _planted_case(3)
    names = [f"x{j} > 0" for j in range(10)]
    # both rules nearly the planted one: a swap may not make them equal
    start = RuleSet.from_formulas([Lit(0), And((Lit(0), Lit(3, True), Lit(7)))], [1.0, 1.0], 0.0, literals=names)
    a = swap_rules(start, Z, y, is_valid)
    b = swap_rules(start, Z.copy(), y.copy(), is_valid.copy())
    assert [(r.formula, r.weight) for r in a] == [(r.formula, r.weight) for r in b]
    assert len({r.formula for r in a}) == len(a) == len(start)


def test_bad_arguments_are_named():
    Z, y, is_valid, _, start = _planted_case(0, n=200)
    with pytest.raises(ValueError, match="n_pairs"):
        swap_rules(start, Z, y, is_valid, n_pairs=1)
    with pytest.raises(ValueError, match="line up"):
        swap_rules(start, Z[:10], y, is_valid)


def test_every_point_up_to_the_cap_is_swapped_and_its_fidelity_is_its_rule_sets():
    Z, y, is_valid, planted, _ = _planted_case(1)
    names = [f"x{j} > 0" for j in range(10)]
    # a rule set of single literals: pruning keeps some, the planted pair is none of them
    start = RuleSet.from_formulas([Lit(j) for j in range(10)], np.linspace(1, 0.1, 10), 0.0, literals=names)
    path = prune_rules(start, Z, y, is_valid, max_rules=10)
    before = [rs for rs in path.rule_sets]
    default = path.default
    swap_path(path, Z, y, is_valid, max_rules=4)
    assert path.default == default
    v = is_valid
    for i, rs in enumerate(path.rule_sets):
        assert len(rs) == path.n_rules[i]
        assert path.fidelity_valid[i] == pytest.approx(fidelity(y[v], rs.score(Z[v])), abs=1e-12)
        if path.n_rules[i] > 4:
            assert rs is before[i]
    # the planted pair reaches the small points
    assert any(planted in {r.formula for r in rs} for rs, k in zip(path.rule_sets, path.n_rules) if k <= 4)


def _overlapping_bands(rules: RuleSet, Z: np.ndarray, column: np.ndarray) -> int:
    """Users for whom two rules that each use one statistic output alone, the same one, both fire."""
    fires = rules.fires(Z)
    by_column: dict[int, list[int]] = {}
    for k, r in enumerate(rules):
        cols = {int(column[x.index]) for x in formula_literals(r.formula)}
        if len(cols) == 1:
            by_column.setdefault(cols.pop(), []).append(k)
    return sum(int((fires[:, ks].sum(axis=1) > 1).sum()) for ks in by_column.values() if len(ks) > 1)


@pytest.mark.parametrize("seed", range(4))
def test_swapped_points_read_as_disjoint_bands_with_the_same_scores(seed):
    # The score is a smooth step in one statistic: swaps bring in bands on it, which must not
    # overlap the bands already there (a reader would have to add them up).
    rng = np.random.default_rng(seed)
    n = 3000
    V = np.column_stack([rng.lognormal(3, 1, n), rng.poisson(4, n), rng.normal(size=n)])
    lits = Literals.from_values(V, n_quantiles=10)
    Z = lits.transform_values(V)
    y = np.log1p(V[:, 0]) + 0.3 * (V[:, 1] > 5) + rng.normal(0, 0.2, n)
    is_valid = rng.random(n) < 0.25
    col0 = np.flatnonzero(lits.column == 0)
    formulas = [Lit(int(i)) for i in col0[::3]] + [Lit(int(i)) for i in np.flatnonzero(lits.column == 2)[:3]]
    start = RuleSet.from_formulas(formulas, np.linspace(0.5, 0.1, len(formulas)), 0.0, literals=lits)
    path = prune_rules(start, Z, y, is_valid, max_rules=8)
    unswapped = [fidelity(y[is_valid], rs.score(Z[is_valid])) for rs in path.rule_sets]
    counts = path.n_rules.copy()
    swap_path(path, Z, y, is_valid, max_rules=8)
    for rs, k, before in zip(path.rule_sets, counts, unswapped):
        assert len(rs) <= k
        assert _overlapping_bands(rs, Z, lits.column) == 0
        assert fidelity(y[is_valid], rs.score(Z[is_valid])) >= before - 1e-12


def test_pair_counts_of_the_strongest_literals_are_computed_once_per_set_of_literals():
    # the same strongest literals for every rule of a pass: their columns and A.T @ A are kept, and the
    # best condition is the one found without them
    from rudi_explain.rules.swap import _Pairs

    rng = np.random.default_rng(3)
    Zf = (rng.random((600, 12)) < 0.3).astype(np.float64)
    pairs = _Pairs(Zf)
    first = pairs.of(np.arange(12))
    for _ in range(4):
        r = rng.normal(size=600)
        r -= r.mean()
        assert _best_condition(r, pairs, 48) == _best_condition(r, Zf, 48)
    assert pairs.of(np.arange(12))[1] is first[1]
    assert pairs.of(np.arange(1, 12))[1] is not first[1]


def test_a_path_builds_the_fitting_users_matrix_once(monkeypatch):
    # every point is swapped over the same users: one float matrix and its pair counts for all of them,
    # and each point's rules those of swap_rules alone
    import rudi_explain.rules.swap as swap

    built = []
    original = swap._Pairs.__init__
    monkeypatch.setattr(swap._Pairs, "__init__",
                        lambda self, Zf, *allowed: built.append(Zf.shape) or original(self, Zf, *allowed))
    Z, y, is_valid, _, rules = _planted_case(1)
    path = prune_rules(rules, Z, y, is_valid, max_rules=4)
    alone = [str(swap_rules(rs, Z, y, is_valid)) for rs in path.rule_sets]
    built.clear()
    swap_path(path, Z, y, is_valid, max_rules=len(rules))
    assert len(built) == 1
    assert [str(rs) for rs in path.rule_sets] == alone
