"""A sum of shallow regression trees over the literals (FIGS-like), read as rules.

Fast Interpretable Greedy-tree Sums (FIGS, Tan et al. 2022) grows several
regression trees at once. The model is ``f(x) = sum_t tree_t(x)``. At each
step every leaf of every tree is a candidate for a split, and so is the root
of a new tree; a leaf of tree ``t`` is scored on the residual that tree has
to explain, ``r_t = y - sum_{u != t} tree_u(x)``, by the reduction of the
squared error within the leaf. The single best split over all candidates is
made, then the leaf values of every tree are refitted by one backfitting
sweep (each tree's leaf values set to the mean of its residual, trees in
order), so the training error never goes up. Growth stops at ``n_rules``
leaves in all, or when no split reduces the error.

On binary literals a split of a leaf is "literal true" against "literal
false", so each leaf is the AND of the literals (or their negations) on its
path: at most ``max_depth`` of them. Every user falls in exactly one leaf
per tree, and its score is the sum of those leaves' values: the rule set
with one rule per leaf, weighted by its value, scores exactly as the model.

Split gains for all leaves and all literals are one matrix product per step
(literal matrix times the leaf-masked, leaf-centred residuals), done in row
blocks so that memory stays bounded for any number of users.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from rudi_explain.exceptions import InputError
from rudi_explain.metrics import fidelity
from rudi_explain.rules.formula import TRUE, And, Lit, literal_info
from rudi_explain.rules.ruleset import RuleSet
from rudi_explain.students.base import FitProgress, RuleStudent, check_binary_matrix, check_target
from rudi_explain.validation import check_random_state_seed, check_whole

__all__ = ["SumOfTrees"]

#: rows of the literal matrix turned into floats at a time while scoring splits
_ROW_BLOCK = 8192


class _Leaf:
    """One leaf: its path, its users and how many of them hold each literal."""

    __slots__ = ("path", "rows", "counts", "value")

    def __init__(self, path: tuple, rows: np.ndarray, counts: np.ndarray):
        self.path = path  # ((literal, is_true), ...) from the root
        self.rows = rows
        self.counts = counts
        self.value = 0.0


class SumOfTrees(RuleStudent):
    """A FIGS-like sum of shallow regression trees; one rule per leaf.

    Parameters
    ----------
    n_rules : int, default=20
        Most leaves over all trees, i.e. most rules (at least 2). Named as
        in the other students, where it is the rule budget ``R``.
    max_depth : int, default=4
        Deepest leaf, so the most literals in a rule (1 to 4).
    max_trees : int or None, default=None
        Most trees; None leaves it to the greedy choice (at most
        ``n_rules // 2``). ``max_trees=1`` is a best-first CART tree with
        ``n_rules`` leaves.
    min_samples_leaf : int, default=1
        Fewest training users in a leaf.
    random_state : int or None, default=0
        Breaks exact ties between equally good splits (through a fixed
        random order of the literals); nothing else is random.

    Attributes
    ----------
    trees_ : list of list of tuple
        Per tree, its leaves as ``(path, value, n_users)``; ``path`` is a
        tuple of ``(literal index, is_true)`` from the root.
    n_trees_ : int
    gains_ : ndarray of float64
        Reduction of the training squared error (summed over users) of
        each split, in the order they were made.
    training_mse_ : float
    n_features_in_ : int

    Examples
    --------
    >>> student = SumOfTrees(n_rules=20).fit(literals.transform(seqs), teacher_scores)
    >>> print(student.rules(literals))
    """

    def __init__(self, *, n_rules: int = 20, max_depth: int = 4, max_trees: int | None = None,
                 min_samples_leaf: int = 1, random_state: int | None = 0):
        self.n_rules = n_rules
        self.max_depth = max_depth
        self.max_trees = max_trees
        self.min_samples_leaf = min_samples_leaf
        self.random_state = random_state

    def _check_params(self) -> None:
        """Check the hyper-parameters (``fit`` does; ``explain`` before any work)."""
        try:
            check_whole(self.n_rules, "n_rules", min_value=2)
        except ValueError as err:
            raise InputError(f"{err} (a split makes two leaves)") from None
        check_whole(self.max_depth, "max_depth", min_value=1, max_value=4)
        check_whole(self.max_trees, "max_trees", min_value=1, allow_none=True)
        check_whole(self.min_samples_leaf, "min_samples_leaf", min_value=1)
        check_random_state_seed(self.random_state)

    # ------------------------------------------------------------------ fit

    def fit(self, X: ArrayLike, y: ArrayLike,
            progress: Callable[[FitProgress], Any] | None = None) -> SumOfTrees:
        """Grow the trees on a literal matrix and teacher scores.

        Parameters
        ----------
        X : array-like of bool, shape (n_users, n_literals)
            The literal matrix, e.g. ``literals.transform(seqs)``.
        y : array-like of shape (n_users,)
            Teacher scores.
        progress : callable, optional
            Called after every split with a :class:`FitProgress` (``epoch``:
            leaves so far, ``epochs``: ``n_rules``). Returning ``False``
            stops growth there.

        Returns
        -------
        self
        """
        start = time.perf_counter()
        self._check_params()
        Xb = check_binary_matrix(X)
        yv = check_target(y, Xb.shape[0])
        n, p = Xb.shape
        msl = int(self.min_samples_leaf)
        max_trees = int(self.max_trees) if self.max_trees is not None else int(self.n_rules) // 2
        # exact ties go to the literal earliest in this fixed random order
        order = np.random.default_rng(self.random_state).permutation(p)
        all_counts = Xb.sum(axis=0, dtype=np.int64)
        tol = 1e-12 * float(np.sum((yv - yv.mean()) ** 2))

        trees: list[list[_Leaf]] = []
        assign: list[np.ndarray] = []  # per tree: leaf index of every user
        preds: list[np.ndarray] = []
        total = np.zeros(n)
        n_leaves = 0
        gains: list[float] = []
        while True:
            # candidates: (tree, leaf) pairs; tree == len(trees) is a new tree's root
            cand: list[tuple[int, int]] = []
            cols: list[np.ndarray] = []
            counts: list[np.ndarray] = []
            sizes: list[int] = []
            for t, leaves in enumerate(trees):
                if n_leaves + 1 > self.n_rules:
                    break
                r = yv - (total - preds[t])
                for k, leaf in enumerate(leaves):
                    if len(leaf.path) >= self.max_depth or leaf.rows.size < 2 * msl:
                        continue
                    c = np.zeros(n)
                    c[leaf.rows] = r[leaf.rows] - r[leaf.rows].mean()
                    cand.append((t, k))
                    cols.append(c)
                    counts.append(leaf.counts)
                    sizes.append(leaf.rows.size)
            if len(trees) < max_trees and n_leaves + 2 <= self.n_rules and n >= 2 * msl:
                r = yv - total
                cand.append((len(trees), -1))
                cols.append(r - r.mean())
                counts.append(all_counts)
                sizes.append(n)
            if not cand:
                break
            # s1[j, c]: sum of candidate c's centred residual over its users holding literal j
            C = np.stack(cols, axis=1)
            s1 = np.zeros((p, C.shape[1]))
            for lo in range(0, n, _ROW_BLOCK):
                s1 += Xb[lo : lo + _ROW_BLOCK].T.astype(np.float64) @ C[lo : lo + _ROW_BLOCK]
            n1 = np.stack(counts, axis=1).astype(np.float64)
            m = np.asarray(sizes, dtype=np.float64)[None, :]
            n0 = m - n1
            ok = (n1 >= msl) & (n0 >= msl)
            with np.errstate(divide="ignore", invalid="ignore"):
                # the leaf's residual sums to zero, so the two sides' sums are s1 and -s1:
                # error reduction s1^2 / n1 + s1^2 / n0
                gain = np.where(ok, s1**2 * m / (n1 * n0), -np.inf)
            # candidate by candidate, literals in the tie-breaking order
            winner, jo = np.unravel_index(int(np.argmax(gain[order].T)), (gain.shape[1], p))
            j = int(order[jo])
            best = float(gain[j, winner])
            if not best > tol:
                break
            t, k = cand[int(winner)]
            lit = j
            if k == -1:
                rows = np.arange(n)
                path: tuple = ()
                trees.append([])
                assign.append(np.zeros(n, dtype=np.int64))
                preds.append(np.zeros(n))
                n_leaves += 1  # the root, split below into two
                k_new = 0
                leaves = trees[t]
                leaves.append(_Leaf((), rows, all_counts))
            else:
                leaves = trees[t]
                k_new = k
                rows, path = leaves[k].rows, leaves[k].path
            parent = leaves[k_new]
            true_side = Xb[parent.rows, j]
            rows_true, rows_false = parent.rows[true_side], parent.rows[~true_side]
            counts_true = Xb[rows_true].sum(axis=0, dtype=np.int64)
            leaves[k_new] = _Leaf(path + ((lit, True),), rows_true, counts_true)
            leaves.append(_Leaf(path + ((lit, False),), rows_false, parent.counts - counts_true))
            assign[t][rows_false] = len(leaves) - 1
            n_leaves += 1
            gains.append(best)
            # preds[t] still holds the parent's value on both children: the sweep
            # starts from the model as it was, so it can only lower the error
            total = self._backfit(trees, assign, preds, yv)
            if progress is not None:
                info = FitProgress(epoch=n_leaves, epochs=int(self.n_rules),
                                   loss=float(np.mean((total - yv) ** 2)), fidelity=fidelity(yv, total),
                                   temperature=float("nan"), learning_rate=float("nan"),
                                   seconds=time.perf_counter() - start)
                if progress(info) is False:
                    break

        if not trees:  # no split helps (e.g. no literal separates any users): one constant leaf
            trees.append([_Leaf((), np.arange(n), all_counts)])
            trees[0][0].value = float(yv.mean())
            assign.append(np.zeros(n, dtype=np.int64))
            preds.append(np.full(n, yv.mean()))
            total = preds[0]
        self.trees_ = [[(leaf.path, float(leaf.value), int(leaf.rows.size)) for leaf in leaves] for leaves in trees]
        self.n_trees_ = len(trees)
        self.gains_ = np.asarray(gains, dtype=np.float64)
        self.training_mse_ = float(np.mean((total - yv) ** 2))
        self.n_features_in_ = p
        self.fit_seconds_ = time.perf_counter() - start
        # predict's rules without names, made on first use (a cache: predict changes no attribute)
        self._plain_rules: dict[str, RuleSet] = {}
        self._report(progress, Xb, yv, self.fit_seconds_)
        return self

    @staticmethod
    def _backfit(trees: list, assign: list, preds: list, y: np.ndarray) -> np.ndarray:
        """One sweep: each tree's leaf values := mean of its residual, in tree order.

        Each update is the least-squares optimum for that tree given the
        others, so the training error never rises. Returns the new total.
        """
        total = np.sum(preds, axis=0) if preds else np.zeros_like(y)
        for t, leaves in enumerate(trees):
            r = y - (total - preds[t])
            sums = np.bincount(assign[t], weights=r, minlength=len(leaves))
            sizes = np.bincount(assign[t], minlength=len(leaves))
            values = sums / sizes
            for leaf, v in zip(leaves, values):
                leaf.value = float(v)
            new = values[assign[t]]
            total += new - preds[t]
            preds[t] = new
        return total

    # ---------------------------------------------------------------- output

    def leaf_formulas(self) -> tuple[list, np.ndarray]:
        """The path formula and value of every leaf of every tree."""
        self._check_fitted()
        formulas, values = [], []
        for leaves in self.trees_:
            for path, value, _ in leaves:
                lits = tuple(Lit(j, not is_true) for j, is_true in path)
                formulas.append(And(lits) if lits else TRUE)
                values.append(value)
        return formulas, np.asarray(values, dtype=np.float64)

    def rules(self, literals: Any = None) -> RuleSet:
        """One AND rule per leaf, weighted by the leaf's value.

        Parameters
        ----------
        literals : Literals or list of str, optional
            The literal table ``X`` came from; without it literals are
            named ``x0, x1, ...``.

        Returns
        -------
        RuleSet
            Scores every user as the sum of its leaves' values, i.e. as the
            model predicts. Leaves of different trees with the same formula
            are one rule (weights added); a root leaf is the intercept.
        """
        self._check_fitted()
        info = literal_info(literals, self.n_features_in_)
        if info.n_literals != self.n_features_in_:
            raise InputError(f"the literal table has {info.n_literals} literals, the student was fitted on "
                             f"{self.n_features_in_}")
        formulas, values = self.leaf_formulas()
        return RuleSet.from_formulas(formulas, values, 0.0, literals=literals, n_literals=self.n_features_in_)

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Rule scores for the rows of the literal matrix ``X``.

        Parameters
        ----------
        X : array-like of bool, shape (n_users, n_literals)

        Returns
        -------
        ndarray of float64, shape (n_users,)
        """
        self._check_fitted()
        Xb = check_binary_matrix(X)
        if Xb.shape[1] != self.n_features_in_:
            raise InputError(f"X has {Xb.shape[1]} literals, the student was fitted on {self.n_features_in_}")
        if "rules" not in self._plain_rules:
            self._plain_rules["rules"] = self.rules()
        return self._plain_rules["rules"].score(Xb)
