"""Swap a pruned rule for a better one: a local search over short rules.

Pruning only removes rules, so a small rule set keeps rules that were chosen
beside twenty others. :func:`swap_rules` revisits each rule in turn: with the
other rules held, it finds the one- or two-literal condition that explains the
rest of the teacher's score best on the fitting users (every literal, and
every pair of the ``n_pairs`` literals that explain it best alone, in all four
sign combinations), and swaps it in when it explains clearly more than the
rule it replaces. All weights are refitted by least squares after each swap.
The swapped rules are kept only if the validation users (a split of the
training users the student was not fitted on) are fitted at least as well.
A literal true or false for 99% of the training users or more is never
swapped in (:data:`~rudi_explain.rules.literals.VACUOUS_SHARE`), and a rule
that fires for 90% of them or more is written as its complement
(:func:`~rudi_explain.rules.pruning.complement_common`, the same scores).

The search is exact for its candidates and costs two matrix products per
rule: for a centred residual ``r`` and a 0/1 column ``f`` that fires for
``m`` of ``n`` users, refitting that rule's weight and the intercept removes
``(r @ f)**2 / (m * (1 - m / n))`` of the squared error, and the sums and
counts of every pair follow from ``Z.T @ (r * Z)`` and ``Z.T @ Z``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from rudi_explain.exceptions import InputError
from rudi_explain.metrics import fidelity
from rudi_explain.rules.formula import FALSE, TRUE, And, Lit, literal_info, simplify
from rudi_explain.rules.literals import is_vacuous
from rudi_explain.rules.pruning import PruningPath, _fires, _refit, _standard_units, complement_common, fold_bands
from rudi_explain.rules.ruleset import RuleSet
from rudi_explain.validation import check_whole

__all__ = ["swap_rules", "swap_path", "N_PAIRS", "MAX_USERS"]

#: Literals, the best alone, whose pairs are tried as conditions.
N_PAIRS = 48
#: Fitting users the search looks at, at most (the first ones of a fixed shuffle): the
#: candidates' sums cost n_users * N_PAIRS**2.
MAX_USERS = 20_000
#: A swap must remove this share more squared error than the rule it replaces: a near-tie
#: keeps the rule, so results do not hinge on rounding.
RELATIVE_GAIN = 1e-3


def _gain(total: np.ndarray, count: np.ndarray, n: int) -> np.ndarray:
    """Squared error removed by fitting a 0/1 column with ``count`` ones whose residual sum is ``total``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        g = total ** 2 / (count * (1.0 - count / n))
    return np.where((count > 0) & (count < n), g, 0.0)


class _Pairs:
    """The literal matrix as 0.0/1.0 floats, its column counts, and the pair counts of the strongest literals.

    The same literals are usually the strongest for every rule of a swap pass: their columns and
    ``A.T @ A`` are kept rather than gathered and multiplied again (the same products, so the same
    figures).
    """

    def __init__(self, Zf: np.ndarray, allowed: np.ndarray | None = None) -> None:
        self.Zf = Zf
        self.counts = Zf.sum(axis=0)
        # literals a condition may use: by default all; swaps pass those not vacuous on the training users
        self.allowed = np.ones(Zf.shape[1], dtype=bool) if allowed is None else np.asarray(allowed, dtype=bool)
        self._top: np.ndarray | None = None
        self._A = self._C = np.zeros((0, 0))
        self._gram: np.ndarray | None = None

    def of(self, top: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(A, A.T @ A)`` with ``A = Zf[:, top]``.

        ``A.T @ A`` is read off ``Zf.T @ Zf``, made once: the strongest literals change from rule to rule
        (9 in 10 calls at 100,000 users), and the counts are whole numbers, so any order of summing
        gives them exactly.
        """
        if self._top is None or not np.array_equal(self._top, top):
            if self._gram is None:
                self._gram = self.Zf.T @ self.Zf
            self._top = top.copy()
            self._A = self.Zf[:, top]
            self._C = self._gram[np.ix_(top, top)]
        return self._A, self._C


def _best_condition(r: np.ndarray, Zf: np.ndarray | _Pairs, n_pairs: int) -> tuple[float, tuple]:
    """The best one- or two-literal condition for the centred residual ``r``: (gain, literals).

    ``Zf`` is the literal matrix as 0.0/1.0 floats (converted once by the caller), or a
    :class:`_Pairs` over it; ``literals`` is a tuple of ``Lit``. Ties go to the lowest index
    (singles before pairs).
    """
    pairs = Zf if isinstance(Zf, _Pairs) else _Pairs(Zf)
    Zf = pairs.Zf
    n = r.size
    s = r @ Zf  # residual sum where each literal holds
    c = pairs.counts
    single = np.where(pairs.allowed, _gain(s, c, n), 0.0)
    best_single = int(np.argmax(single))
    best: tuple[float, tuple[Lit, ...]] = (float(single[best_single]), (Lit(best_single),))
    usable = np.flatnonzero((c > 0) & (c < n) & pairs.allowed)
    if usable.size < 2:
        return best
    # the strongest literals alone, in a stable order (index breaks ties)
    top = usable[np.lexsort((usable, -single[usable]))][:n_pairs]
    top.sort()
    A, C = pairs.of(top)  # C: users where both hold
    S = A.T @ (A * r[:, None])  # sum of r where both hold
    si, sj, ci, cj = s[top][:, None], s[top][None, :], c[top][:, None], c[top][None, :]
    # total r = 0 (centred): the other sign combinations follow from the singles
    combos = {(False, False): (S, C), (False, True): (si - S, ci - C), (True, False): (sj - S, cj - C),
              (True, True): (-si - sj + S, n - ci - cj + C)}
    upper = np.triu(np.ones((top.size, top.size), dtype=bool), k=1)
    for (neg_i, neg_j), (tot, cnt) in combos.items():
        g = np.where(upper, _gain(tot, cnt, n), 0.0)
        flat = int(np.argmax(g))
        if g.flat[flat] > best[0] * (1.0 + 1e-12):
            i, j = divmod(flat, top.size)
            best = (float(g.flat[flat]), (Lit(int(top[i]), neg_i), Lit(int(top[j]), neg_j)))
    return best


def _as_bands(formulas: list, Z: np.ndarray, y: np.ndarray, n_max: int, literals) -> RuleSet:
    """The rules refitted on ``Z``, ``y``, their bands on one statistic made disjoint, at most ``n_max`` rules.

    A swapped-in band can overlap a band on the same statistic output that is
    already there; the reader would have to add the two up. Folding them
    (:func:`~rudi_explain.rules.pruning.fold_bands`, the same scores) can take one
    rule more: then the rule whose loss costs the least squared error goes,
    and the weights are refitted.
    """
    b, w = _refit(np.column_stack([_fires(f, Z) for f in formulas]), y)
    folded = fold_bands(RuleSet.from_formulas(formulas, w, b, literals=literals), Z)
    if len(folded) <= n_max:
        return folded  # the refitted weights, folded: the same scores
    kept = folded.formulas
    F = np.column_stack([_fires(f, Z) for f in kept])
    while len(kept) > n_max:
        sse = []
        for k in range(len(kept)):
            rest = np.delete(F, k, axis=1)
            b, w = _refit(rest, y)
            sse.append(float(np.sum((y - b - rest @ w) ** 2)))
        k = int(np.argmin(sse))  # the first of equals: deterministic
        kept.pop(k)
        F = np.delete(F, k, axis=1)
    b, w = _refit(F, y)
    return RuleSet.from_formulas(kept, w, b, literals=literals)


def swap_rules(
    rules: RuleSet,
    Z: np.ndarray,
    y: np.ndarray,
    is_valid: np.ndarray,
    n_pairs: int = N_PAIRS,
    passes: int = 2,
    should_stop: Callable[[], bool] | None = None,
) -> RuleSet:
    """Rules with each rule swapped for a better short one when the data agree.

    Parameters
    ----------
    rules : RuleSet
        A pruned rule set (weighted rules, no linear terms).
    Z : ndarray of bool, shape (n_users, n_literals)
        Literal matrix of the training users over ``rules.literals``.
    y : ndarray of shape (n_users,)
        Teacher scores of the same users.
    is_valid : ndarray of bool, shape (n_users,)
        Validation users: swaps are chosen on the others, and the result is
        kept only if it fits these at least as well as ``rules``.
    n_pairs : int, default=48
        Literals (the best alone) whose pairs are tried.
    passes : int, default=2
        Rounds over every rule.
    should_stop : callable, optional
        Checked between rules; when it returns True the swaps made so far
        (validated as above) are returned.

    Returns
    -------
    RuleSet
        Over the same literals, with as many rules or fewer (rules on one
        statistic output alone are folded into disjoint bands, as pruning
        leaves them); ``rules`` itself when no swap helps the validation users.
    """
    return _swap(rules, Z, y, is_valid, n_pairs, passes, should_stop, {})


def _swap(rules: RuleSet, Z: np.ndarray, y: np.ndarray, is_valid: np.ndarray, n_pairs: int, passes: int,
          should_stop: Callable[[], bool] | None, shared: dict) -> RuleSet:
    """:func:`swap_rules`; ``shared`` keeps the fitting users' matrices between calls on the same ``Z`` and
    ``is_valid`` (:func:`swap_path` swaps every point over the same users)."""
    if rules.linear or len(rules) < 1 or type(rules) is not RuleSet:
        return rules
    Z = np.asarray(Z, dtype=bool)
    y = np.asarray(y, dtype=np.float64)
    is_valid = np.asarray(is_valid, dtype=bool)
    if Z.shape[0] != y.size or is_valid.shape != y.shape:
        raise InputError(f"Z has {Z.shape[0]} users, y {y.size}, is_valid {is_valid.size}: they must line up")
    check_whole(n_pairs, "n_pairs", min_value=2)
    check_whole(passes, "passes", min_value=0)
    fit_rows = np.flatnonzero(~is_valid)
    if fit_rows.size < 2 or is_valid.sum() < 2:
        return rules
    if "pairs" not in shared:
        fit_rows = np.flatnonzero(~is_valid)
        if fit_rows.size > MAX_USERS:  # a fixed subsample: the same on every machine
            fit_rows = np.sort(np.random.default_rng(0).permutation(fit_rows)[:MAX_USERS])
        shared["fit_rows"], shared["Zb"] = fit_rows, np.ascontiguousarray(Z[fit_rows])
        # never a vacuous literal: true (or false) for 99% of the training users (all of them) or more
        shared["pairs"] = _Pairs(shared["Zb"].astype(np.float64), ~is_vacuous(Z.sum(axis=0), Z.shape[0]))
    fit_rows, Zb, pairs = shared["fit_rows"], shared["Zb"], shared["pairs"]
    info = literal_info(rules.literals if rules.literals is not None else rules.info, Z.shape[1])
    # standard units: scores of any size must not overflow a sum of squares
    center, scale = _standard_units(y[fit_rows])
    yf = (y[fit_rows] - center) / scale
    formulas = rules.formulas
    F = np.column_stack([_fires(f, Zb) for f in formulas])
    intercept, weights = _refit(F, yf)
    changed_any = False
    for _ in range(passes):
        changed = False
        for k in range(len(formulas)):
            if should_stop is not None and should_stop():
                break
            r = yf - (intercept + F.astype(np.float64) @ weights - weights[k] * F[:, k])
            r = r - r.mean()
            current = float(_gain(np.array([r @ F[:, k]]), np.array([float(F[:, k].sum())]), r.size)[0])
            gain, lits = _best_condition(r, pairs, int(n_pairs))
            if gain <= current * (1.0 + RELATIVE_GAIN) + 1e-12 * r.size:
                continue
            g = simplify(lits[0] if len(lits) == 1 else And(lits), info)
            if g in (TRUE, FALSE) or any(g == simplify(f, info) for i, f in enumerate(formulas) if i != k):
                continue  # a constant, or a rule already there: keep the rule
            formulas[k] = g
            F[:, k] = _fires(g, Zb)
            intercept, weights = _refit(F, yf)
            changed = changed_any = True
        if not changed:
            break
    if not changed_any:
        return rules
    # the final weights on every fitting user, in the teacher's units, as disjoint bands
    rows = np.flatnonzero(~is_valid)
    literals = rules.literals if rules.literals is not None else rules.info
    swapped = _as_bands(formulas, Z[rows], (y[rows] - center) / scale, len(rules), literals)
    swapped = RuleSet.from_formulas(swapped.formulas, swapped.weights * scale,
                                    swapped.intercept * scale + center, literals=literals)
    swapped = complement_common(swapped, Z)  # no rule that nearly every training user meets
    valid = np.flatnonzero(is_valid)
    before = fidelity(y[valid], rules.score(Z[valid]))
    after = fidelity(y[valid], swapped.score(Z[valid]))
    return swapped if after >= before else rules


def swap_path(path: PruningPath, Z: np.ndarray, y: np.ndarray, is_valid: np.ndarray, max_rules: int = 10,
              should_stop: Callable[[], bool] | None = None, n_pairs: int = N_PAIRS, passes: int = 2
              ) -> PruningPath:
    """The pruning path with the rules of each point of at most ``max_rules`` rules swapped where that helps.

    Every point a user may pick below the cap (``exp.with_rules(k)``) gets the
    same local search as the default (:func:`swap_rules`), so the curve of
    fidelity against the number of rules describes the rule sets shown.

    Parameters
    ----------
    path : PruningPath
        Over the literal table of ``Z``'s columns.
    Z, y, is_valid
        As for :func:`swap_rules`: the training users.
    max_rules : int, default=10
        Points with more rules are left as pruned.
    should_stop : callable, optional
        Checked between rules; when it returns True the points not yet
        swapped stay as they are.
    n_pairs, passes : int
        As for :func:`swap_rules`.

    Returns
    -------
    PruningPath
        ``path`` itself, changed in place: its rule sets, their numbers of
        rules (folding bands may merge two) and validation fidelities; the
        default point stays where it was.
    """
    # column-major: rule firings on every training user read whole literal columns (the fitting users' sample
    # the search multiplies is made row-major again, so its products are the same)
    Z = np.asfortranarray(np.asarray(Z, dtype=bool))
    y = np.asarray(y, dtype=np.float64)
    valid = np.asarray(is_valid, dtype=bool)
    rule_sets = list(path.rule_sets)
    fids = np.asarray(path.fidelity_valid, dtype=np.float64).copy()
    n_rules = np.asarray(path.n_rules).copy()
    shared: dict = {}  # the fitting users' matrices, the same for every point
    for i, before in enumerate(rule_sets):
        if path.n_rules[i] > max_rules:
            continue
        if should_stop is not None and should_stop():
            break
        after = _swap(before, Z, y, valid, n_pairs, passes, should_stop, shared)
        if after is not before:
            rule_sets[i] = after
            fids[i] = fidelity(y[valid], after.score(Z[valid]))
            n_rules[i] = len(after)  # folded bands can merge: fewer rules, never more
    path.rule_sets, path.fidelity_valid, path.n_rules = rule_sets, fids, n_rules
    return path
