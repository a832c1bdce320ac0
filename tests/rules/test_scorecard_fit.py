"""Band edges added where validation users say they fit (``refit(split=True)``, issue 26), over seeds."""

import numpy as np
import pytest

from rudi_explain.rules.formula import Lit
from rudi_explain.rules.literals import Literals
from rudi_explain.rules.ruleset import RuleSet
from rudi_explain.rules.scorecard import Scorecard

SEEDS = range(10)
#: a step the student's one rule misses: not monotone, so no linear card fits it either
LEVELS = (0.0, 1.0, 0.3, 1.2)


def _one_edge_case(seed, teacher, n=3000):
    """One output, uniform on 0-100; the student's rules cut it once, at its median."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 100, n)
    V = x[:, None]
    lits = Literals.from_values(V, n_quantiles=10)
    mid = int(np.argmin(np.abs(lits.thresholds - 50)))
    rules = RuleSet.from_formulas([Lit(mid)], [0.5], literals=lits)
    y = teacher(x) + rng.normal(0, 0.3, n)
    return rng, V, lits, y, rules


def _steps(x):
    return np.asarray(LEVELS)[np.searchsorted([25.0, 50.0, 75.0], x, side="left")]


def _noise(x):
    return np.zeros_like(x)


def _mse(sc, V, y):
    return float(np.mean((sc.predict(V) - y) ** 2))


def test_split_finds_the_teachers_steps_and_fits_fresh_users_better():
    better, found = 0, 0
    for seed in SEEDS:
        rng, V, lits, y, rules = _one_edge_case(seed, _steps)
        is_valid = rng.random(len(y)) < 0.25
        sc = Scorecard.from_rules(rules, V, y)
        plain = sc.refit(V, y, is_valid=is_valid, split=False)
        split = sc.refit(V, y, is_valid=is_valid)
        card = split.cards[0]
        assert card.linear is None and 2 <= card.n_bands <= 6
        # every edge is a threshold of the literal table on its output, or the read-off's own
        assert set(card.edges) <= set(lits.thresholds[lits.column == card.column]) | set(sc.cards[0].edges)
        x = rng.uniform(0, 100, 4000)
        fresh_y = _steps(x) + rng.normal(0, 0.3, x.size)
        better += _mse(split, x[:, None], fresh_y) < _mse(plain, x[:, None], fresh_y)
        # the steps at 25 and 75 sit between deciles' round thresholds: an edge within 5 of each
        found += all(np.min(np.abs(np.asarray(card.edges) - e)) <= 5 for e in (25, 50, 75))
    assert better >= 0.9 * len(SEEDS)
    assert found >= 0.8 * len(SEEDS)


def test_split_adds_few_edges_where_the_teacher_ignores_the_output():
    added = 0
    for seed in SEEDS:
        rng, V, lits, y, rules = _one_edge_case(seed, _noise)
        is_valid = rng.random(len(y)) < 0.25
        split = Scorecard.from_rules(rules, V, y).refit(V, y, is_valid=is_valid, monotone=False, linear=False)
        added += sum(len(c.edges) for c in split.cards) > 1
    assert added <= 0.6 * len(SEEDS)  # 30% of 40 seeds


def test_split_needs_validation_users_and_keeps_the_budget():
    rng, V, lits, y, rules = _one_edge_case(0, _steps)
    sc = Scorecard.from_rules(rules, V, y)
    # without validation users, nothing chooses an edge: the read-off's stay
    assert sc.refit(V, y).cards[0].edges == sc.cards[0].edges
    for max_bands in (2, 3):
        ref = sc.refit(V, y, is_valid=rng.random(len(y)) < 0.25, max_bands=max_bands)
        assert ref.cards[0].n_bands <= max_bands and len(ref) == 1


@pytest.mark.parametrize("seed", range(6))
def test_split_scorecards_keep_the_scorecard_semantics(seed):
    """Scores equal the rule form's, every user in one band of each card, at most 6 bands, centred points."""
    rng = np.random.default_rng(seed)
    n = 2000
    V = np.column_stack([rng.lognormal(3, 1, n), rng.poisson(4, n).astype(float), rng.random(n)])
    V[rng.random(n) < 0.15, 0] = np.nan
    lits = Literals.from_values(V, n_quantiles=10)
    y = (np.sin(np.log1p(np.nan_to_num(V[:, 0]))) + 0.3 * (V[:, 1] % 3) + (V[:, 2] > 0.6) * (V[:, 1] > 3)
         + rng.normal(0, 0.2, n))
    formulas = [Lit(int(np.flatnonzero(lits.column == c)[4])) for c in range(3)]
    rules = RuleSet.from_formulas(formulas, rng.normal(size=3), literals=lits)
    ref = Scorecard.from_rules(rules, V, y).refit(V, y, is_valid=rng.random(n) < 0.25, linear=False)
    assert any(c.n_bands > 2 for c in ref.cards)  # the split did something here
    back = ref.to_rules()
    W = np.vstack([V, rng.permutation(V)])
    np.testing.assert_allclose(back.score(back.literals.transform_values(W)), ref.predict(W), rtol=0, atol=1e-12)
    B, P = ref.band_index(V), ref.points(V)
    for j, card in enumerate(ref.cards):
        assert card.n_bands <= 6
        inside = (B[:, j] >= 0) & (B[:, j] < card.n_bands) | (B[:, j] == -1) & (card.undefined is not None)
        assert inside.all()
        assert sum(b.share for b in card.bands) + (card.undefined.share if card.undefined else 0) == pytest.approx(1)
    assert np.abs(P.mean(axis=0)).max() <= 1e-12 * max(1.0, np.abs(P).max())


def _sign_problems(n_cases: int):
    """Least-squares problems shaped like the scorecard's: indicator and value columns, a base, bounds 0 or
    infinite (increments of one sign, free columns), many with the unconstrained answer out of bounds."""
    rng = np.random.default_rng(7)
    for case in range(n_cases):
        n, p = int(rng.integers(30, 400)), int(rng.integers(2, 30))
        A = np.column_stack([(rng.random((n, p - 1)) < rng.uniform(0.05, 0.9, p - 1)).astype(float)
                             if case % 2 else rng.normal(size=(n, p - 1)), np.ones(n)])
        y = A[:, :-1] @ rng.normal(size=p - 1) + rng.normal(scale=rng.uniform(0.1, 3), size=n)
        kind = rng.integers(0, 3, p)  # 0 free, 1 at least 0, 2 at most 0; the base free
        kind[-1] = 0
        lb = np.where(kind == 1, 0.0, -np.inf)
        ub = np.where(kind == 2, 0.0, np.inf)
        yield A, y, lb, ub


def test_sign_constrained_solve_matches_bvls():
    from scipy.optimize import lsq_linear

    from rudi_explain.rules.scorecard_fit import _solve

    out_of_bounds = 0
    for A, y, lb, ub in _sign_problems(300):
        ridge = 1e-4
        x = _solve(A, y, lb, ub, ridge)
        # the same objective written as one least-squares system, for scipy's BVLS: ridge rows below A
        scale = np.sqrt(ridge * A.shape[0])
        penalty = np.diag(np.r_[np.full(A.shape[1] - 1, scale), 0.0])
        reference = lsq_linear(np.vstack([A, penalty]), np.r_[y, np.zeros(A.shape[1])], bounds=(lb, ub),
                               method="bvls", tol=1e-14).x
        assert ((x >= lb) & (x <= ub)).all()
        np.testing.assert_allclose(x, reference, rtol=1e-7, atol=1e-9 * np.abs(reference).max())
        unconstrained = np.linalg.lstsq(np.vstack([A, penalty]), np.r_[y, np.zeros(A.shape[1])], rcond=None)[0]
        out_of_bounds += not ((unconstrained >= lb) & (unconstrained <= ub)).all()
    assert out_of_bounds > 150  # the bounds are at work in most cases, not a plain solve


def test_sign_constrained_solve_hands_over_to_bvls(monkeypatch):
    import rudi_explain.rules.scorecard_fit as scorecard_fit

    problems = list(_sign_problems(40))
    expected = [scorecard_fit._solve(A, y, lb, ub, 1e-4) for A, y, lb, ub in problems]
    monkeypatch.setattr(scorecard_fit, "ACTIVE_SET_ROUNDS", 0)  # no round: BVLS from the start point
    for (A, y, lb, ub), x in zip(problems, expected):
        np.testing.assert_allclose(scorecard_fit._solve(A, y, lb, ub, 1e-4), x, rtol=1e-7,
                                   atol=1e-9 * np.abs(x).max())
