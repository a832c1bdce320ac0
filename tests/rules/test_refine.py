"""Threshold refinement: thresholds move to where the teacher splits, only when validation agrees."""

import numpy as np
import pytest

import rudi_explain as rx
from rudi_explain.metrics import fidelity
from rudi_explain.rules.formula import And, Lit, formula_literals
from rudi_explain.rules.refine import refine_thresholds
from rudi_explain.rules.ruleset import RuleSet


def _nearest_literal(lits: rx.Literals, column: int, t: float) -> int:
    mine = np.flatnonzero(lits.column == column)
    return int(mine[np.argmin(np.abs(lits.thresholds[mine] - t))])


def _share_between(v: np.ndarray, a: float, b: float) -> float:
    """Share of users whose side of the cut differs between thresholds a and b."""
    lo, hi = min(a, b), max(a, b)
    return float(np.mean((v > lo) & (v <= hi)))


def _case(seed: int, n: int = 6000):
    """Two value columns; the teacher is two threshold rules at random quantiles, plus noise."""
    rng = np.random.default_rng(seed)
    V = np.column_stack([rng.lognormal(3, 1, n), rng.poisson(rng.uniform(2, 20), n).astype(float)])
    q = rng.uniform(0.2, 0.8, size=2)
    t = [float(np.quantile(V[:, 0], q[0])), float(np.quantile(V[:, 1], q[1]))]
    y = 2.0 * (V[:, 0] > t[0]) - 1.5 * ((V[:, 0] <= t[0]) & (V[:, 1] > t[1])) + 0.2 * rng.normal(size=n)
    is_valid = np.zeros(n, dtype=bool)
    is_valid[rng.permutation(n)[: n // 5]] = True
    return V, y, t, is_valid


def _grid_rules(lits: rx.Literals, t: list) -> RuleSet:
    """The planted rules written with the grid's nearest literals (what a student can pick)."""
    a, b = _nearest_literal(lits, 0, t[0]), _nearest_literal(lits, 1, t[1])
    return RuleSet.from_formulas([Lit(a), And((Lit(a, True), Lit(b)))], [2.0, -1.5], 0.0, literals=lits)


@pytest.mark.parametrize("seed", range(8))
def test_thresholds_move_to_the_planted_ones(seed):
    V, y, t, is_valid = _case(seed)
    lits = rx.Literals.from_values(V, names=["amount", "payments"], kinds=["value", "count"])
    rules = _grid_rules(lits, t)
    refined = refine_thresholds(rules, V, y, is_valid)
    table = refined.literals
    # the old literals keep their indices and thresholds
    assert table.n_literals >= lits.n_literals
    np.testing.assert_array_equal(table.column[: lits.n_literals], lits.column)
    np.testing.assert_array_equal(table.thresholds[: lits.n_literals], lits.thresholds)
    # each used threshold now splits the users as the planted one does, but for under 1.5% of them
    # (the candidates are ~1% apart; rounding may move 0.5%)
    for column in (0, 1):
        used = {lit.index for r in refined for lit in formula_literals(r.formula) if table.column[lit.index] == column}
        assert used, f"no rule uses column {column}"
        best = min(_share_between(V[:, column], table.thresholds[i], t[column]) for i in used)
        before = min(_share_between(V[:, column], lits.thresholds[i], t[column])
                     for i in np.flatnonzero(lits.column == column))
        assert best <= min(before, 0.015), (column, best, before)
    # fitted better on every user, held-out ones included (they are a fresh draw of the same teacher)
    assert fidelity(y, refined.score(table.transform_values(V))) > fidelity(y, rules.score(lits.transform_values(V)))


def test_new_thresholds_are_round_and_new():
    V, y, t, is_valid = _case(3)
    lits = rx.Literals.from_values(V, names=["amount", "payments"], kinds=["value", "count"])
    table = refine_thresholds(_grid_rules(lits, t), V, y, is_valid).literals
    new = np.arange(lits.n_literals, table.n_literals)
    assert new.size >= 1
    for i in new:
        x = table.thresholds[i]
        assert float(f"{x:.3g}") == x, x  # at most 3 significant digits
        if table.column[i] == 1:
            assert x == np.floor(x)  # counts get whole numbers
        assert table.threshold_text[i] == rx.rules.format_threshold(x)
    # no two literals of one column split the users alike
    Z = table.transform_values(V)
    for c in (0, 1):
        cols = Z[:, table.column == c]
        assert len({col.tobytes() for col in cols.T}) == cols.shape[1]


def test_validation_users_can_refuse():
    # the fitting users' teacher cuts at one place, the validation users' at the grid's: keep the grid's
    rng = np.random.default_rng(0)
    n = 5000
    v = rng.lognormal(3, 1, n)
    lits = rx.Literals.from_values(v[:, None], names=["amount"])
    grid_t = lits.thresholds[4]
    other = float(np.quantile(v, np.mean(v <= grid_t) + 0.05))  # halfway to the next decile
    is_valid = rng.random(n) < 0.3
    y = np.where(is_valid, v > grid_t, v > other).astype(float)
    rules = RuleSet.from_formulas([Lit(4)], [1.0], 0.0, literals=lits)
    assert refine_thresholds(rules, v[:, None], y, is_valid) is rules
    # the same without the disagreement: it moves
    y_same = (v > other).astype(float)
    moved = refine_thresholds(rules, v[:, None], y_same, is_valid)
    assert moved is not rules and moved.literals.n_literals == lits.n_literals + 1


def test_nothing_to_refine_comes_back_as_is():
    V, y, t, is_valid = _case(1)
    lits = rx.Literals.from_values(V, names=["amount", "payments"])
    empty = RuleSet([], 0.5, literals=lits)
    assert refine_thresholds(empty, V, y, is_valid) is empty
    rules = _grid_rules(lits, t)
    assert refine_thresholds(rules, V, y, is_valid, passes=0).literals is lits


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(n_candidates=0), ValueError, "n_candidates"),
    (dict(passes=-1), ValueError, "passes"),
    (dict(n_candidates=2.5), TypeError, "n_candidates"),  # not a whole number: a type error, as scikit-learn's
])
def test_bad_settings(kwargs, error, message):
    V, y, t, is_valid = _case(2, n=500)
    lits = rx.Literals.from_values(V)
    with pytest.raises(error, match=message):
        refine_thresholds(_grid_rules(lits, t), V, y, is_valid, **kwargs)


def test_shapes_must_line_up():
    V, y, t, is_valid = _case(2, n=500)
    lits = rx.Literals.from_values(V)
    with pytest.raises(ValueError, match="same users"):
        refine_thresholds(_grid_rules(lits, t), V[:-1], y, is_valid)


def test_stop_returns_at_once():
    V, y, t, is_valid = _case(4)
    lits = rx.Literals.from_values(V)
    rules = _grid_rules(lits, t)
    out = refine_thresholds(rules, V, y, is_valid, should_stop=lambda: True)
    assert out.literals.n_literals == lits.n_literals  # stopped before any move


@pytest.fixture(scope="module")
def demo():
    return rx.datasets.make_payments(800, random_state=7)


@pytest.mark.slow
def test_explain_refines_and_can_be_told_not_to(demo):
    fast = dict(n_stats=4, max_depth=2, n_rules=8, n_simulations=20, batch_size=64, background=False,
                student_params={"epochs": 15})
    on = rx.explain(None, demo.events, scores=demo.risk, **fast)
    off = rx.explain(None, demo.events, scores=demo.risk, refine=False, **fast)
    assert [str(s) for s in on.statistics] == [str(s) for s in off.statistics]
    n = off.student.n_features_in_  # the table the student trained on: both scorecards extend it afterwards
    np.testing.assert_array_equal(on.literals.thresholds[:n], off.literals.thresholds[:n])
    assert on.params["refine"] and not off.params["refine"]
    # the default point fits the validation users at least as well as without refinement
    assert on.pruning.fidelity_valid[on.pruning.default] >= off.pruning.fidelity_valid[off.pruning.default] - 1e-12
    # the rules are scored over the extended table, and the curve starts at the refined rules
    assert on.pruning.unpruned is on.unpruned_rules
    np.testing.assert_allclose(on.student_scores.to_numpy(),
                               on.rules.score(on.sequences), rtol=1e-9, atol=1e-9)


def test_refine_default_rebinds_the_whole_path():
    from rudi_explain.rules.pruning import prune_rules
    from rudi_explain.rules.refine import refine_default

    V, y, t, is_valid = _case(6)
    lits = rx.Literals.from_values(V, names=["amount", "payments"], kinds=["value", "count"])
    Z = lits.transform_values(V)
    rng = np.random.default_rng(6)
    # a crowd of single-literal rules with least-squares weights: pruning leaves a few, off the planted cuts
    formulas = [Lit(int(i)) for i in range(lits.n_literals)]
    rules = RuleSet.from_formulas(formulas, rng.normal(0, 0.01, size=len(formulas)), 0.0, literals=lits)
    path = prune_rules(rules, Z, y, is_valid, max_rules=3)
    scores_before = [rs.score(Z) for rs in path.rule_sets]
    fid_before = path.fidelity_valid[path.default]
    out = refine_default(path, V, y, is_valid)
    assert out is path
    table = path.default_rules.literals
    assert table.n_literals > lits.n_literals  # it moved something
    Z_new = table.transform_values(V)
    assert path.unpruned.literals is table
    for i, rs in enumerate(path.rule_sets):
        assert rs.literals is table
        if i != path.default:  # the other points score as before
            np.testing.assert_array_equal(rs.score(Z_new), scores_before[i])
    valid = np.flatnonzero(is_valid)
    assert path.fidelity_valid[path.default] == pytest.approx(
        fidelity(y[valid], path.default_rules.score(Z_new[valid])))
    assert path.fidelity_valid[path.default] >= fid_before


def test_prune_and_refine_keeps_the_better_path():
    from rudi_explain.rules.pruning import prune_rules
    from rudi_explain.rules.refine import prune_and_refine, refine_default

    for seed in range(3):
        V, y, t, is_valid = _case(10 + seed)
        lits = rx.Literals.from_values(V, names=["amount", "payments"], kinds=["value", "count"])
        rules = _grid_rules(lits, t)
        path = prune_and_refine(rules, V, y, is_valid, max_rules=2)
        plain = refine_default(prune_rules(rules, lits.transform_values(V), y, is_valid, max_rules=2), V, y, is_valid)
        assert path.fidelity_valid[path.default] >= plain.fidelity_valid[plain.default]
        assert all(rs.literals is path.default_rules.literals for rs in path.rule_sets)
        unrefined = prune_and_refine(rules, V, y, is_valid, max_rules=2, refine=False)
        assert unrefined.default_rules.literals is lits


# --------------------------------------------------------------------------- speed: the same rules, less work
def _blas_threads() -> list[int]:
    from threadpoolctl import threadpool_info

    return [int(lib["num_threads"]) for lib in threadpool_info() if lib["user_api"] == "blas"]


def test_post_processing_runs_on_one_blas_thread_and_rounds_each_threshold_once(monkeypatch):
    # Two BLAS threads waking for every small product took twice the time on two busy cores, and the
    # three refinements rounded the same quantiles of the same outputs again and again (13,000 times for
    # 1,350 distinct ones on the 5,000-user demo). Both gone; the rules are those of refine_thresholds alone.
    from threadpoolctl import threadpool_limits

    import rudi_explain.rules.refine as refine

    V, y, t, is_valid = _case(0, n=3000)
    lits = rx.Literals.from_values(V, names=["amount", "payments"], kinds=["value", "count"])
    rules = _grid_rules(lits, t)
    threads, rounded = [], []
    original_prune, original_round = refine.prune_rules, refine.round_threshold
    monkeypatch.setattr(refine, "prune_rules", lambda *a, **k: threads.extend(_blas_threads()) or
                        original_prune(*a, **k))
    monkeypatch.setattr(refine, "round_threshold", lambda v, x, *a: rounded.append((v.size, v[0], x, *a)) or
                        original_round(v, x, *a))
    with threadpool_limits(limits=2, user_api="blas"):
        path = refine.prune_and_refine(rules, V, y, is_valid, max_rules=4)
        assert set(_blas_threads()) == {2}  # given back afterwards
    assert threads and set(threads) == {1}
    assert rounded and len(set(rounded)) == len(rounded)
    # rounded thresholds kept from an earlier refinement of the same users: the same rules
    alone = [str(r) for r in refine_thresholds(rules, V, y, is_valid)]
    shared = refine._Rounding(V, refine.MOVE_TOLERANCE)
    for _ in range(2):
        assert [str(r) for r in refine._refine(rules, V, y, is_valid, rounding=shared)] == alone
    assert len(path.default_rules) >= 1


@pytest.mark.parametrize("seed", range(6))
def test_candidate_errors_by_suffix_sums_equal_the_columns(seed):
    """Every candidate threshold's squared error, from suffix sums over the users sorted by value, equals the
    error of fitting its firing column itself (rules with the literal plain or negated, NaN never above)."""
    from rudi_explain.rules.refine import _fires_with, _fit_order, _sse_after_fit, _sse_by_threshold

    rng = np.random.default_rng(seed)
    n = 3000
    v = np.round(rng.lognormal(2, 1, n), 1)  # ties between users
    v[rng.random(n) < 0.1] = np.nan
    Z = rng.random((n, 3)) < 0.5
    Z[:, 0] = v > np.nanmedian(v)
    r = rng.normal(size=n) + (v > 5)
    thresholds = np.unique(np.round(np.nanquantile(v, rng.uniform(0, 1, 30)), 1))
    for f in [Lit(0), Lit(0, True), And((Lit(0), Lit(1, True))), And((Lit(2), Lit(0, True)))]:
        pos = [lit.index for lit in formula_literals(f)].index(0)
        f0 = _fires_with(f, Z, pos, np.zeros(n, dtype=bool))
        f1 = _fires_with(f, Z, pos, np.ones(n, dtype=bool))
        with np.errstate(invalid="ignore"):
            columns = _fires_with(f, Z, pos, v[:, None] > thresholds[None, :])
        np.testing.assert_allclose(_sse_by_threshold(r, _fit_order(v), f0, f1, thresholds),
                                   _sse_after_fit(r, columns), rtol=1e-10, atol=1e-8)
