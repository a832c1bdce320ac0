"""Move each rule's thresholds to where the data splits: a local search after fitting.

A student picks its literals from a fixed grid (the deciles by default): a
planted "more than 14 debit-card payments" that sits between two deciles can
only be approximated by one of them. After fitting, :func:`refine_thresholds`
tries, for every literal of every rule, the thresholds between that literal's
neighbours on the grid (``n_candidates`` quantiles of the training values
there) and a coarser grid over the whole range (``n_global`` quantiles, so a
threshold placed far off can jump), each rounded as every threshold is
(SEMANTICS.md, "Round thresholds"), never one true or false for 99% of the
training users or more (:data:`~rudi_explain.rules.literals.VACUOUS_SHARE`). It
keeps the one that fits the teacher best on the fitting users (the rule's
weight and the intercept re-fitted for each candidate, the other rules held),
and refits all weights by least squares after each pass. The result is kept
only if the validation users (a split of the training users the student was
not fitted on) are fitted at least as well as before.

New thresholds are new literals appended to the table, so the student's own
rules keep their meaning; a candidate that splits the training users as an
existing literal of the same output does reuses it, and only the literals the
final rules use are added.

Rules are scored and chosen on training users only: the held-out test users of
``explain()`` are never seen here.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from rudi_explain.exceptions import InputError
from rudi_explain.metrics import fidelity
from rudi_explain.rules.formula import And, Const, Formula, Lit, evaluate_formula, formula_literals
from rudi_explain.rules.literals import MOVE_TOLERANCE, Literals, is_vacuous, round_threshold
from rudi_explain.rules.pruning import PruningPath, _refit, _standard_units, complement_common, prune_rules
from rudi_explain.rules.ruleset import RuleSet
from rudi_explain.rules.swap import swap_path
from rudi_explain.search.parallel import one_blas_thread
from rudi_explain.validation import check_whole

__all__ = ["refine_thresholds", "refine_default", "prune_and_refine", "N_CANDIDATES", "N_GLOBAL"]

#: Candidate thresholds tried between a literal's neighbours on the grid.
N_CANDIDATES = 48
#: Candidate thresholds tried over the whole range of the output (every 2nd percentile).
N_GLOBAL = 50
#: A threshold moves only when it cuts the fitting users' squared error by this share: near-ties
#: keep the student's choice, so results do not hinge on rounding.
RELATIVE_GAIN = 1e-4


def _replace_leaf(f: Formula, position: int, index: int) -> Formula:
    """``f`` with its ``position``-th literal (left to right) pointing at literal ``index``."""
    counter = [0]

    def walk(g: Formula) -> Formula:
        if isinstance(g, Lit):
            here = counter[0]
            counter[0] += 1
            return Lit(index, g.negated) if here == position else g
        if isinstance(g, Const):
            return g
        return type(g)(tuple(walk(c) for c in g.children))

    return walk(f)


def _renumber(f: Formula, mapping: dict[int, int]) -> Formula:
    """``f`` with literal indices replaced through ``mapping`` (others kept)."""
    if isinstance(f, Lit):
        return Lit(mapping.get(f.index, f.index), f.negated)
    if isinstance(f, Const):
        return f
    return type(f)(tuple(_renumber(c, mapping) for c in f.children))


def _fires_with(f: Formula, Z: np.ndarray, position: int, column: np.ndarray) -> np.ndarray:
    """Truth of ``f`` on the rows of ``Z``, its ``position``-th literal's column replaced.

    ``column`` may be 2-D (rows, candidates): the result is then one column per
    candidate, the rest of the formula evaluated once.
    """
    counter = [0]
    wide = column.ndim == 2

    def walk(g: Formula) -> np.ndarray:
        if isinstance(g, Lit):
            here = counter[0]
            counter[0] += 1
            col = column if here == position else Z[:, g.index]
            if wide and col.ndim == 1:
                col = col[:, None]
            return ~col if g.negated else col
        if isinstance(g, Const):
            return np.full((Z.shape[0], 1) if wide else Z.shape[0], g.value, dtype=bool)
        parts = [walk(c) for c in g.children]
        reduce = np.logical_and.reduce if isinstance(g, And) else np.logical_or.reduce
        if not parts:
            return np.full((Z.shape[0], 1) if wide else Z.shape[0], isinstance(g, And), dtype=bool)
        return reduce(np.broadcast_arrays(*parts)) if wide else reduce(parts)

    out = walk(f)
    return np.broadcast_to(out, (Z.shape[0], column.shape[1])) if wide else out


def _sse_by_threshold(r: np.ndarray, fit_order: tuple[np.ndarray, np.ndarray], f0: np.ndarray, f1: np.ndarray,
                      thresholds: np.ndarray) -> np.ndarray:
    """:func:`_sse_after_fit` of the columns ``where(v > t, f1, f0)``, one per threshold ``t``, without forming them.

    ``fit_order`` is ``(order, sorted)``: the users with a value (NaN is never above) in increasing order of
    ``v``, and those values. A user's firing differs from ``f0`` only where ``v > t``, by ``f1 - f0``: the
    sums and counts of every candidate are suffix sums over that order, one pass for all candidates (where
    the columns cost ``n_users`` per candidate).
    """
    n = r.size
    order, sorted_v = fit_order
    rc = r - r.mean()
    s_rr = float(rc @ rc)
    d = f1.astype(np.int64) - f0.astype(np.int64)  # -1, 0 or +1: how firing changes above the threshold
    count_d = np.concatenate(([0], np.cumsum(d[order])))
    sum_d = np.concatenate(([0.0], np.cumsum((rc * d)[order])))
    below = np.searchsorted(sorted_v, np.asarray(thresholds, dtype=np.float64), side="right")
    count = int(f0.sum()) + (count_d[-1] - count_d[below])
    s_rf = float(rc[f0].sum()) + (sum_d[-1] - sum_d[below])
    f_mean = count / n
    s_ff = n * f_mean * (1.0 - f_mean)
    with np.errstate(divide="ignore", invalid="ignore"):
        gain = np.where(s_ff > 0, s_rf ** 2 / s_ff, 0.0)
    return s_rr - gain


def _sse_after_fit(r: np.ndarray, F: np.ndarray) -> np.ndarray:
    """Residual sum of squares of ``r`` after fitting ``b + w * F[:, j]``, for every column j."""
    n = r.size
    F = F.astype(np.float64)
    rc = r - r.mean()
    s_rr = float(rc @ rc)
    f_mean = F.mean(axis=0)
    s_rf = rc @ F  # sum (r - mean r) f
    s_ff = n * f_mean * (1.0 - f_mean)
    with np.errstate(divide="ignore", invalid="ignore"):
        gain = np.where(s_ff > 0, s_rf ** 2 / s_ff, 0.0)
    return s_rr - gain


def _fit_order(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The users with a value, in increasing order of it (stable), and their sorted values."""
    defined = np.flatnonzero(~np.isnan(v))
    order = defined[np.argsort(v[defined], kind="stable")]
    return order, v[order]


class _Rounding:
    """The training values of every output, sorted, and the rounded thresholds computed on them.

    One per ``V``: :func:`prune_and_refine` refines three times over the same users, and each
    call would otherwise sort the same outputs and round the same quantiles again.
    """

    def __init__(self, V: np.ndarray, move_tolerance: float) -> None:
        self.V = V
        self.n = V.shape[0]
        self.move_tolerance = move_tolerance
        self._sorted: dict[int, np.ndarray] = {}
        self._rounded: dict[tuple[int, float, str], float] = {}
        self._global: dict[tuple[int, int], np.ndarray] = {}

    def sorted_values(self, c: int) -> np.ndarray:
        if c not in self._sorted:
            v = self.V[:, c]
            self._sorted[c] = np.sort(v[~np.isnan(v)])
        return self._sorted[c]

    def rounded(self, c: int, x: float, kind: str) -> float:
        """``round_threshold`` of ``x`` on output ``c``, computed once."""
        key = (c, x, kind)
        if key not in self._rounded:
            self._rounded[key] = round_threshold(self.sorted_values(c), x, self.n, kind, self.move_tolerance)
        return self._rounded[key]

    def global_quantiles(self, c: int, n_global: int) -> np.ndarray:
        key = (c, n_global)
        if key not in self._global:
            self._global[key] = np.quantile(self.sorted_values(c), np.linspace(0.0, 1.0, n_global + 1))
        return self._global[key]


class _Grid:
    """Sorted training values and grid thresholds of every output, for candidates and reuse."""

    def __init__(self, literals: Literals, rounding: _Rounding, n_candidates: int, n_global: int) -> None:
        self.literals = literals
        self.n_global = n_global
        self.V = rounding.V
        self.n = rounding.n
        self.n_candidates = n_candidates
        self.rounding = rounding
        self._candidates: dict[tuple[int, float], np.ndarray] = {}
        self.new_columns: list[int] = []  # literals appended so far
        self.new_thresholds: list[float] = []

    def sorted_values(self, c: int) -> np.ndarray:
        return self.rounding.sorted_values(c)

    def column_of(self, index: int) -> int:
        n_table = self.literals.n_literals
        return int(self.literals.column[index]) if index < n_table else self.new_columns[index - n_table]

    def threshold(self, index: int) -> float:
        n_table = self.literals.n_literals
        return float(self.literals.thresholds[index]) if index < n_table else self.new_thresholds[index - n_table]

    def candidates(self, index: int) -> np.ndarray:
        """Rounded thresholds between literal ``index``'s neighbours on the grid, its own included."""
        c, t = self.column_of(index), self.threshold(index)
        # the grid is this table's literals alone: the same output and threshold, the same candidates
        key = (c, t)
        if key not in self._candidates:
            self._candidates[key] = self._candidates_of(c, t)
        return self._candidates[key]

    def _candidates_of(self, c: int, t: float) -> np.ndarray:
        v = self.sorted_values(c)
        kind = self.literals.output_kind[c]
        if kind == "binary" or v.size < 2:
            return np.array([t])
        grid = np.sort(self.literals.thresholds[self.literals.column == c])
        lower, upper = grid[grid < t], grid[grid > t]
        lo = lower[-1] if lower.size else -np.inf
        hi = upper[0] if upper.size else np.inf
        inside = v[np.searchsorted(v, lo, side="right"):np.searchsorted(v, hi, side="left")]  # v is sorted
        if inside.size == 0:
            return np.array([t])
        raw = np.unique(np.quantile(inside, np.linspace(0.0, 1.0, self.n_candidates + 1)))
        if self.n_global:  # and a coarser grid over the whole range: a threshold may jump
            raw = np.unique(np.concatenate([raw, self.rounding.global_quantiles(c, self.n_global)]))
        rounded = np.array([self.rounding.rounded(c, float(x), kind) for x in raw])
        out = np.unique(np.concatenate([rounded, [t]]))
        above = v.size - np.searchsorted(v, out, side="right")
        # never a vacuous threshold: true (or false) for 99% of the training users or more
        solid = ~is_vacuous(above, self.n)
        out, above = out[solid], above[solid]
        # of thresholds that split the training users alike, one is enough (the student's own first)
        order = np.argsort(out != t, kind="stable")
        _, first = np.unique(above[order], return_index=True)
        return np.sort(out[order][first])

    def index_for(self, c: int, t: float) -> int:
        """The literal ``output c > t``: one splitting the training users alike if there is one, else a new one."""
        v = self.sorted_values(c)

        def above(x: float) -> int:
            return int(v.size - np.searchsorted(v, x, side="right"))

        target = above(t)
        for i in np.flatnonzero(self.literals.column == c):
            if above(self.literals.thresholds[i]) == target:
                return int(i)
        for k, (col, x) in enumerate(zip(self.new_columns, self.new_thresholds)):
            if col == c and above(x) == target:
                return self.literals.n_literals + k
        self.new_columns.append(c)
        self.new_thresholds.append(float(t))
        return self.literals.n_literals + len(self.new_columns) - 1

    def truth(self, c: int, thresholds: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """``V[rows, c] > t`` for every threshold: one column each (NaN is never above)."""
        with np.errstate(invalid="ignore"):
            return self.V[rows, c][:, None] > np.asarray(thresholds, dtype=np.float64)[None, :]


def refine_thresholds(
    rules: RuleSet,
    V: np.ndarray,
    y: np.ndarray,
    is_valid: np.ndarray,
    n_candidates: int = N_CANDIDATES,
    n_global: int = N_GLOBAL,
    passes: int = 3,
    move_tolerance: float = MOVE_TOLERANCE,
    should_stop: Callable[[], bool] | None = None,
) -> RuleSet:
    """Rules with each threshold moved to where it fits the teacher best.

    Parameters
    ----------
    rules : RuleSet
        A student's rules over a :class:`~rudi_explain.rules.literals.Literals`
        table (``rules.literals``); linear terms and empty sets come back as
        they are.
    V : ndarray of shape (n_users, n_outputs)
        The statistic outputs of the training users (NaN where undefined), as
        ``literals.values`` gives them.
    y : ndarray of shape (n_users,)
        Teacher scores of the same users, in the units of the rules' weights.
    is_valid : ndarray of bool, shape (n_users,)
        Validation users: thresholds and weights are chosen on the others, and
        the refined rules are kept only if they fit these at least as well.
    n_candidates : int, default=48
        Quantiles of the training values between a literal's grid neighbours
        tried as its threshold.
    n_global : int, default=50
        Quantiles over all the training values tried as well (0: none), so a
        threshold the student placed far off can jump.
    passes : int, default=3
        Rounds over every literal of every rule.
    move_tolerance : float
        As for :class:`~rudi_explain.rules.literals.Literals`: how far rounding may
        move a candidate.
    should_stop : callable, optional
        Checked between literals; when it returns True the rules found so far
        (validated as above) are returned.

    Returns
    -------
    RuleSet
        Over a literal table extended with the new thresholds (the old
        literals keep their indices), or ``rules`` itself when nothing fits
        the validation users better.
    """
    return _refine(rules, V, y, is_valid, n_candidates=n_candidates, n_global=n_global, passes=passes,
                   move_tolerance=move_tolerance, should_stop=should_stop)


def _refine(rules: RuleSet, V: np.ndarray, y: np.ndarray, is_valid: np.ndarray, n_candidates: int = N_CANDIDATES,
            n_global: int = N_GLOBAL, passes: int = 3, move_tolerance: float = MOVE_TOLERANCE,
            should_stop: Callable[[], bool] | None = None, rounding: _Rounding | None = None) -> RuleSet:
    """:func:`refine_thresholds`, with the sorted values and rounded thresholds of an earlier call on ``V``."""
    literals = rules.literals
    if rules.linear or not len(rules) or type(rules) is not RuleSet or not isinstance(literals, Literals):
        return rules
    V = np.asarray(V, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    is_valid = np.asarray(is_valid, dtype=bool)
    if V.shape != (y.size, literals.n_outputs) or is_valid.shape != y.shape:
        raise InputError(f"V {V.shape}, y {y.shape} and is_valid {is_valid.shape} must describe the same users "
                         f"and the {literals.n_outputs} outputs of the literal table")
    for name, value, low in (("n_candidates", n_candidates, 1), ("n_global", n_global, 0), ("passes", passes, 0)):
        check_whole(value, name, min_value=low)
    # every fitting user: choosing thresholds on a sample of 20,000 of them lost 0.0014 of held-out fidelity on
    # make_payments at 100,000 users (issue 27), for 3 times less time
    fit_rows = np.flatnonzero(~is_valid)
    if fit_rows.size < 2 or is_valid.sum() < 2:
        return rules
    if rounding is None or rounding.V is not V or rounding.move_tolerance != move_tolerance:
        rounding = _Rounding(V, move_tolerance)
    grid = _Grid(literals, rounding, int(n_candidates), int(n_global))
    formulas = rules.formulas
    # work in standard units: scores of any size (1e300) must not overflow a sum of squares
    center, scale = _standard_units(y[fit_rows])
    weights = rules.weights.astype(np.float64) / scale
    intercept = (float(rules.intercept) - center) / scale
    y_fit = (y[fit_rows] - center) / scale
    # the fitting users' literal matrix, with room for every literal the refinement can add
    n_table = literals.n_literals
    room = passes * sum(len(formula_literals(f)) for f in formulas)
    Z_fit = np.zeros((fit_rows.size, n_table + room), dtype=bool, order="F")  # formulas read whole columns
    Z_fit[:, :n_table] = literals.transform_values(V[fit_rows])
    F = np.column_stack([evaluate_formula(f, Z_fit) for f in formulas])
    F_float = F.astype(np.float64)  # kept beside F: the residual's product would convert F for every literal
    fit_orders: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # per output: the fitting users by value
    for _ in range(passes):
        changed = False
        for k in range(len(formulas)):
            if should_stop is not None and should_stop():
                break
            for pos, lit in enumerate(formula_literals(formulas[k])):
                cands = grid.candidates(lit.index)
                if cands.size < 2:
                    continue
                c = grid.column_of(lit.index)
                r = y_fit - (intercept + F_float @ weights - weights[k] * F_float[:, k])
                # the rule with this literal true, and false: each candidate's firing is one of the two per user
                f0 = _fires_with(formulas[k], Z_fit, pos, np.zeros(fit_rows.size, dtype=bool))
                f1 = _fires_with(formulas[k], Z_fit, pos, np.ones(fit_rows.size, dtype=bool))
                if c not in fit_orders:
                    fit_orders[c] = _fit_order(V[fit_rows, c])
                sse = _sse_by_threshold(r, fit_orders[c], f0, f1, cands)
                current = np.flatnonzero(cands == grid.threshold(lit.index))  # the candidates include it
                best = int(np.argmin(sse))
                # move only for a real gain: a near-tie keeps the student's threshold (portable results)
                if current.size == 0 or sse[best] >= sse[current[0]] * (1.0 - RELATIVE_GAIN):
                    continue
                index = grid.index_for(c, float(cands[best]))
                if index >= n_table:
                    Z_fit[:, index] = grid.truth(c, np.array([grid.threshold(index)]), fit_rows)[:, 0]
                formulas[k] = _replace_leaf(formulas[k], pos, index)
                F[:, k] = evaluate_formula(formulas[k], Z_fit)
                F_float[:, k] = F[:, k]
                f = F_float[:, k]
                share = f.mean()
                if 0.0 < share < 1.0:  # this rule's weight and the intercept, the other rules held
                    w = float((r - r.mean()) @ f) / (f.size * share * (1.0 - share))
                    intercept += float(r.mean()) - w * share
                    weights[k] = w
                changed = True
        intercept, weights = _refit(F, y_fit)
        if not changed:
            break
    # a second pass may have moved a threshold again: append only the literals the rules use
    used = sorted({lit.index for f in formulas for lit in formula_literals(f) if lit.index >= n_table})
    renumber = {old: n_table + k for k, old in enumerate(used)}
    formulas = [_renumber(f, renumber) for f in formulas]
    table = literals.extended([grid.column_of(i) for i in used], [grid.threshold(i) for i in used]) \
        if used else literals
    refined = RuleSet.from_formulas(formulas, weights * scale, intercept * scale + center, literals=table)
    valid = np.flatnonzero(is_valid)
    before = fidelity(y[valid], rules.score(literals.transform_values(V[valid])))
    after = fidelity(y[valid], refined.score(table.transform_values(V[valid])))
    return refined if after >= before else rules


def refine_default(path: PruningPath, V: np.ndarray, y: np.ndarray, is_valid: np.ndarray,
                   **kwargs) -> PruningPath:
    """The pruning path with its default point's thresholds refined for the rules that remain.

    Thresholds refined beside twenty rules may sit off where a few rules want
    them: the default point (at most ``max_rules`` rules) is refined again
    (:func:`refine_thresholds`, same users and check) and replaces itself on
    the path, with its validation fidelity, when the validation users agree.

    Parameters
    ----------
    path : PruningPath
        From :func:`rudi_explain.rules.pruning.prune_rules`, over the literal table
        whose outputs ``V`` holds.
    V, y, is_valid
        As for :func:`refine_thresholds`: the training users.
    **kwargs
        Passed to :func:`refine_thresholds`.

    Returns
    -------
    PruningPath
        ``path`` itself, changed in place at its default point; every rule
        set on it (``unpruned`` too) then refers to the extended literal
        table ``path.default_rules.literals``, where the old literals keep
        their indices.
    """
    before = path.rule_sets[path.default]
    after = _refine(before, V, y, is_valid, **kwargs)
    if after is before:
        return path
    valid = np.flatnonzero(np.asarray(is_valid, dtype=bool))
    table = after.literal_table()
    Z_valid = table.transform_values(np.asarray(V, dtype=np.float64)[valid])
    path.unpruned = path.unpruned.with_literals(table)
    path.rule_sets = [after if i == path.default else rs.with_literals(table) for i, rs in enumerate(path.rule_sets)]
    path.fidelity_valid = np.asarray(path.fidelity_valid, dtype=np.float64).copy()
    path.fidelity_valid[path.default] = fidelity(np.asarray(y, dtype=np.float64)[valid], after.score(Z_valid))
    return path


def prune_and_refine(rules: RuleSet, V: np.ndarray, y: np.ndarray, is_valid: np.ndarray, max_rules: int = 10,
                     max_literals: int = 4, refine: bool = True, swap: bool = True,
                     should_stop: Callable[[], bool] | None = None) -> PruningPath:
    """explain()'s stage 2 after the student: thresholds refined, rules pruned, the better path kept.

    Refined thresholds make the student's full rule set fit better, but a
    rule set pruned from it to ``max_rules`` is not always the best of that
    size (on a smooth teacher the refined rules spend many rules on fine
    bands of one statistic). So two paths are built, each pruned by
    :func:`rudi_explain.rules.pruning.prune_rules` and its default point refined
    again (:func:`refine_default`): one from the refined rules, one from the
    rules as fitted. The one whose default point fits the validation users
    better is kept (the refined one on a tie). Last, at every point of at
    most ``max_rules`` rules, a rule is swapped for a better one- or
    two-literal rule where the validation users agree
    (:func:`rudi_explain.rules.swap.swap_path`): pruning only removes rules, and
    the few that remain were chosen beside many others. A rule that then fires
    for 90% of the training users or more is written as its complement
    (:func:`rudi_explain.rules.pruning.complement_common`, the same scores).

    Parameters
    ----------
    rules : RuleSet
        The student's rules over a Literals table.
    V, y, is_valid
        As for :func:`refine_thresholds`: the training users' statistic
        outputs, teacher scores and validation split.
    max_rules, max_literals : int
        As for :func:`rudi_explain.rules.pruning.prune_rules`.
    refine : bool, default=True
        False: :func:`rudi_explain.rules.pruning.prune_rules` alone (and the swaps).
    swap : bool, default=True
        At every point of at most ``max_rules`` rules, swap rules for better
        short ones where the validation users agree
        (:func:`rudi_explain.rules.swap.swap_path`).
    should_stop : callable, optional
        As for :func:`refine_thresholds`.

    Returns
    -------
    PruningPath
        Its rule sets refer to one literal table,
        ``path.default_rules.literals`` (the old literals first).
    """
    # One BLAS thread: the products here are small, and a second thread waking for each costs
    # more than it saves (twice the time on 2 busy cores); the same results either way.
    with one_blas_thread():
        return _prune_and_refine(rules, np.asarray(V, dtype=np.float64), y, is_valid, max_rules, max_literals,
                                 refine, swap, should_stop)


def _prune_and_refine(rules: RuleSet, V: np.ndarray, y: np.ndarray, is_valid: np.ndarray, max_rules: int,
                      max_literals: int, refine: bool, swap: bool,
                      should_stop: Callable[[], bool] | None) -> PruningPath:
    literals = rules.literals
    rounding = _Rounding(V, MOVE_TOLERANCE)  # shared by the three refinements below: the same users

    def path_of(start: RuleSet) -> PruningPath:
        return prune_rules(start, start.literal_table().transform_values(V), y, is_valid, max_rules=max_rules,
                           max_literals=max_literals)

    def swapped(path: PruningPath) -> PruningPath:
        if not swap or not isinstance(path.default_rules.literals, Literals):
            return path
        table = path.default_rules.literals
        return swap_path(path, table.transform_values(V), y, is_valid, max_rules=max_rules,
                         should_stop=should_stop)

    if not refine or not isinstance(literals, Literals):
        return _uncommon(swapped(path_of(rules)), V)
    refined = _refine(rules, V, y, is_valid, should_stop=should_stop, rounding=rounding)
    best = refine_default(path_of(refined), V, y, is_valid, should_stop=should_stop, rounding=rounding)
    if refined is not rules:
        other = refine_default(path_of(rules), V, y, is_valid, should_stop=should_stop, rounding=rounding)
        if other.fidelity_valid[other.default] > best.fidelity_valid[best.default]:  # a tie keeps the refined
            best = other
    return _uncommon(swapped(best), V)


def _uncommon(path: PruningPath, V: np.ndarray) -> PruningPath:
    """``path`` with every rule that fires for 90% of the training users or more complemented, in place.

    Moved thresholds and swapped rules can fire for nearly everyone where the pruned rules did not:
    :func:`~rudi_explain.rules.pruning.complement_common` (the same scores) on every point.
    """
    tables: dict[int, np.ndarray] = {}  # the points share one table, usually: one literal matrix

    def uncommon(rs: RuleSet) -> RuleSet:
        if not isinstance(rs.literals, Literals):
            return rs
        if id(rs.literals) not in tables:
            tables[id(rs.literals)] = np.asfortranarray(rs.literals.transform_values(V))  # read by columns
        return complement_common(rs, tables[id(rs.literals)])

    path.rule_sets = [uncommon(rs) for rs in path.rule_sets]
    path.n_rules = np.array([len(rs) for rs in path.rule_sets])
    return path
