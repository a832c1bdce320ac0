"""SumOfTrees against scikit-learn's tree (one tree) and a brute-force FIGS (several)."""

import numpy as np
import pytest
from sklearn.tree import DecisionTreeRegressor

import rudi_explain as rx
from rudi_explain.metrics import fidelity
from rudi_explain.rules.formula import formula_literals
from rudi_explain.students import CARTRules, NotFittedError, SumOfTrees


def reference_figs(X, y, n_rules, max_depth, max_trees):
    """FIGS by brute force: every (tree, leaf, literal) split and every new root tried
    by recomputing the leaf's squared error on both sides, the best made, then one
    backfitting sweep. Trees are lists of leaves; a leaf is a boolean mask of users."""
    n, p = X.shape
    trees = []  # list of list of [mask, depth, value]

    def predict_tree(tree):
        out = np.zeros(n)
        for mask, _, value in tree:
            out[mask] = value
        return out

    def sse(v):
        return float(((v - v.mean()) ** 2).sum()) if v.size else 0.0

    while True:
        n_leaves = sum(len(t) for t in trees)
        preds = [predict_tree(t) for t in trees]
        total = np.sum(preds, axis=0) if preds else np.zeros(n)
        best = (1e-12 * sse(y), None)
        options = [(t, k) for t in range(len(trees)) for k in range(len(trees[t]))] if n_leaves + 1 <= n_rules else []
        if len(trees) < max_trees and n_leaves + 2 <= n_rules:
            options.append((len(trees), None))
        for t, k in options:
            if k is None:
                r, mask, depth = y - total, np.ones(n, bool), 0
            else:
                r = y - (total - preds[t])
                mask, depth, _ = trees[t][k]
                if depth >= max_depth:
                    continue
            for j in range(p):
                a, b = mask & X[:, j], mask & ~X[:, j]
                if a.sum() == 0 or b.sum() == 0:
                    continue
                gain = sse(r[mask]) - sse(r[a]) - sse(r[b])
                if gain > best[0] * (1 + 1e-9):
                    best = (gain, (t, k, j))
        if best[1] is None:
            break
        t, k, j = best[1]
        if k is None:
            trees.append([[np.ones(n, bool), 0, 0.0]])
            k = 0
        mask, depth, value = trees[t][k]
        # both children start at the parent's value: the sweep starts from the current model
        trees[t][k] = [mask & X[:, j], depth + 1, value]
        trees[t].append([mask & ~X[:, j], depth + 1, value])
        for t in range(len(trees)):  # backfitting sweep, trees in order
            others = sum((predict_tree(u) for i, u in enumerate(trees) if i != t), np.zeros(n))
            for leaf in trees[t]:
                leaf[2] = float((y - others)[leaf[0]].mean())
    return sum((predict_tree(t) for t in trees), np.zeros(n)), len(trees)


@pytest.mark.parametrize("seed", range(6))
def test_matches_a_brute_force_figs_on_tiny_data(seed):
    rng = np.random.default_rng(seed)
    X = rng.random((40, 5)) < 0.5
    y = X[:, 0] + X[:, 1] * X[:, 2] + 0.7 * X[:, 3] + 0.3 * rng.normal(size=40)
    ref, n_trees = reference_figs(X, y, n_rules=7, max_depth=2, max_trees=3)
    student = SumOfTrees(n_rules=7, max_depth=2, max_trees=3, random_state=seed).fit(X, y)
    np.testing.assert_allclose(student.predict(X), ref, atol=1e-9)
    assert student.n_trees_ == n_trees


def test_matches_a_brute_force_figs_with_several_trees_over_seeds():
    # an additive target: several trees are the best use of the leaves, on most seeds
    n_multi = 0
    for seed in range(5):
        rng = np.random.default_rng(100 + seed)
        X = rng.random((60, 6)) < 0.5
        y = 1.0 * X[:, 0] + 0.9 * X[:, 1] + 0.8 * X[:, 2] + 0.1 * rng.normal(size=60)
        ref, n_trees = reference_figs(X, y, n_rules=8, max_depth=3, max_trees=4)
        student = SumOfTrees(n_rules=8, max_depth=3, max_trees=4).fit(X, y)
        np.testing.assert_allclose(student.predict(X), ref, atol=1e-9)
        n_multi += student.n_trees_ >= 2
    assert n_multi >= 4


@pytest.mark.parametrize("n_rules, max_depth", [(2, 1), (8, 3), (15, 4)])
def test_one_tree_is_sklearns_best_first_tree(n_rules, max_depth):
    rng = np.random.default_rng(n_rules)
    X = rng.random((1500, 20)) < rng.uniform(0.1, 0.9, size=20)
    y = 2 * X[:, 0] - X[:, 1] * X[:, 2] + X[:, 5] * ~X[:, 6] + rng.normal(size=1500)
    student = SumOfTrees(n_rules=n_rules, max_depth=max_depth, max_trees=1).fit(X, y)
    tree = DecisionTreeRegressor(max_leaf_nodes=n_rules, max_depth=max_depth, random_state=0).fit(X, y)
    np.testing.assert_allclose(student.predict(X), tree.predict(X), atol=1e-9)
    assert student.n_trees_ == 1
    assert len(student.trees_[0]) == tree.get_n_leaves()


def test_rules_are_the_leaves_and_score_as_the_model():
    rng = np.random.default_rng(3)
    V = rng.normal(size=(2000, 6))
    lits = rx.Literals.from_values(V, names=[f"s{j}" for j in range(6)])
    X = lits.transform_values(V)
    truth = (V[:, 0] > 0.5) + (V[:, 1] > -0.2) * (V[:, 2] > 0) + 0.5 * (V[:, 3] > 1)
    y = truth + 0.05 * rng.normal(size=2000)
    student = SumOfTrees(n_rules=20, max_depth=3).fit(X, y)
    n_leaves = sum(len(t) for t in student.trees_)
    assert n_leaves <= 20
    rules = student.rules(lits)
    assert len(rules) <= n_leaves
    assert rules.max_literals <= 3
    # the model's prediction from its own leaves, and the rule set's score
    own = np.zeros(len(y))
    for leaves in student.trees_:
        for path, value, _ in leaves:
            fires = np.all([X[:, j] == is_true for j, is_true in path], axis=0) if path else np.ones(len(y), bool)
            own[fires] += value
    np.testing.assert_allclose(rules.score(X), own, atol=1e-9)
    np.testing.assert_allclose(student.training_mse_, np.mean((own - y) ** 2))
    # each tree's leaves partition the users
    for leaves in student.trees_:
        cover = np.zeros(len(y), int)
        for path, _, n_users in leaves:
            fires = np.all([X[:, j] == is_true for j, is_true in path], axis=0)
            assert fires.sum() == n_users
            cover += fires
        assert (cover == 1).all()
    # about as good as the planted rules themselves
    assert fidelity(y, rules.score(X)) > fidelity(y, truth.astype(float)) - 0.02
    assert (student.gains_ > 0).all()
    # rules name statistics and thresholds
    assert all(any(name in str(r) for name in lits.output_names) for r in rules)
    assert all(len(formula_literals(r.formula)) == r.n_literals for r in rules)


def test_beats_one_tree_of_the_same_size_on_an_additive_target():
    # three independent stumps need 6 leaves as trees, 8 as one tree
    wins = 0
    for seed in range(5):
        rng = np.random.default_rng(seed)
        X = rng.random((3000, 10)) < 0.5
        y = X[:, 0] + 1.1 * X[:, 1] + 1.2 * X[:, 2] + 0.05 * rng.normal(size=3000)
        s = SumOfTrees(n_rules=6, max_depth=2).fit(X, y)
        c = CARTRules(n_rules=6).fit(X, y)
        wins += np.mean((s.predict(X) - y) ** 2) < 0.5 * np.mean((c.predict(X) - y) ** 2)
        assert s.training_mse_ < 0.01
    assert wins == 5


def test_budget_depth_and_progress():
    rng = np.random.default_rng(1)
    X = rng.random((800, 12)) < 0.5
    y = X @ rng.normal(size=12) + 0.3 * rng.normal(size=800)
    seen = []
    s = SumOfTrees(n_rules=9, max_depth=2).fit(X, y, progress=seen.append)
    assert sum(len(t) for t in s.trees_) <= 9
    assert all(len(path) <= 2 for t in s.trees_ for path, _, _ in t)
    assert [e.epoch for e in seen[:-1]] == sorted(e.epoch for e in seen[:-1])
    losses = [e.loss for e in seen[:-1]]
    assert all(b <= a + 1e-12 for a, b in zip(losses, losses[1:]))  # backfitting never raises the error
    # a callback returning False stops growth
    stopped = SumOfTrees(n_rules=9).fit(X, y, progress=lambda e: e.epoch < 4)
    assert sum(len(t) for t in stopped.trees_) == 4


def test_no_useful_split_gives_a_constant():
    X = np.zeros((10, 3), bool)
    y = np.arange(10.0)
    s = SumOfTrees().fit(X, y)
    rules = s.rules()
    assert len(rules) == 0 and rules.intercept == pytest.approx(4.5)
    np.testing.assert_allclose(s.predict(X), 4.5)


@pytest.mark.parametrize("params, message", [
    ({"n_rules": 1}, "n_rules"), ({"max_depth": 5}, "max_depth"), ({"max_depth": 0}, "max_depth"),
    ({"max_trees": 0}, "max_trees"), ({"min_samples_leaf": 0}, "min_samples_leaf"),
])
def test_bad_parameters(params, message):
    with pytest.raises(ValueError, match=message):
        SumOfTrees(**params).fit(np.eye(4, dtype=bool), [0.0, 1.0, 2.0, 3.0])


def test_unfitted_and_mismatched():
    with pytest.raises(NotFittedError):
        SumOfTrees().rules()
    s = SumOfTrees(n_rules=4).fit(np.eye(4, dtype=bool), [0.0, 1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="4"):
        s.predict(np.zeros((2, 3), bool))
    with pytest.raises(ValueError, match="literal table has 2"):
        s.rules(["a", "b"])


def test_explain_knows_the_trees_student():
    from rudi_explain.explanation.pipeline import STUDENTS
    from rudi_explain.explanation.student_stage import student_for as _student

    assert "trees" in STUDENTS
    s = _student("trees", 12, 3, {"max_depth": 2})
    assert isinstance(s, SumOfTrees) and s.n_rules == 12 and s.max_depth == 2 and s.random_state == 3
