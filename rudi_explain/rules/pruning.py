"""Fewer rules that read better: fold, trim and prune a fitted rule set.

A student's rules often cut one statistic at several nested thresholds with
opposite signs ("x > 556: +0.08", "x > 1940: -0.05", ...), and keep rules
that change almost nothing. After the student is fitted, :func:`prune_rules`

1. **folds** the rules that use only one statistic output into *bands*: the
   net weight of that output's rules is a step function of its value, and it
   is rewritten as one rule per band ``a < x <= b`` whose net weight differs
   from the band most training users are in (which moves into the
   intercept). Adjacent bands of equal weight merge; scores do not change;
2. **trims** rules with more than ``max_literals`` literals, dropping the
   literal whose loss costs the least validation fidelity, one at a time;
3. **prunes** backwards: drops the rule whose removal costs the least
   fidelity on the training users, refits the remaining weights by least squares on the
   fitting users when that helps on validation, and records every point, down
   to one rule;
4. writes every rule that fires for 90% of the training users or more
   (:data:`COMMON_RULE_SHARE`) as its complement, which fires for the rest,
   its weight moved into the intercept (:func:`complement_common`; the same
   scores): a rule nearly everyone meets only says what the few others lose.

Validation users are a split of the *training* users the student was not
fitted on; held-out test users are never seen here. The default point is the
fewest rules, at most ``max_rules``, whose fidelity is within ``tolerance`` of
the unpruned rule set's on the validation users and on all training users.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rudi_explain.exceptions import InputError
from rudi_explain.metrics import Agreement, _dense_ranks
from rudi_explain.rules.formula import (
    FALSE,
    TRUE,
    And,
    Const,
    Formula,
    Lit,
    Or,
    _sort_key,
    evaluate_formula,
    formula_from_json,
    formula_literals,
    formula_to_json,
    literal_info,
    simplify,
)
from rudi_explain.rules.ruleset import Rule, RuleSet
from rudi_explain.rules.scorecard_fit import sample_rows
from rudi_explain.validation import check_whole

__all__ = ["PruningPath", "prune_rules", "fold_bands", "complement_common", "MAX_RULES", "MAX_LITERALS", "TOLERANCE",
           "COMMON_RULE_SHARE"]

#: Rules kept by default, at most.
MAX_RULES = 10
#: Literals per rule, at most.
MAX_LITERALS = 4
#: Validation fidelity the default may lose against the unpruned rules. Small: on the
#: demo, validation fidelity falls about half as fast as held-out fidelity when rules go.
TOLERANCE = 0.002
#: A rule that fires for this share of the training users or more is near constant ("rules covering 91-94% of
#: users"): it is kept only as its complement, which fires for the others (:func:`complement_common`).
COMMON_RULE_SHARE = 0.9
#: Fidelities closer than this are a tie when choosing the rule to drop.
NEAR_TIE = 1e-9
#: Threads that score the candidate drops (at most two: each is independent, so the same figures
#: with one or two).
N_JOBS = min(2, os.cpu_count() or 1)
#: Users from which the candidate drops are scored on :data:`N_JOBS` threads (fewer: a thread costs more).
PARALLEL_USERS = 20_000
#: Training users (a fixed sample beyond) that rank which rule to drop at each step of the path.
RANK_USERS = 20_000
#: Users x firing patterns up to which candidate drops are scored by pattern pair counts (int32 cells).
PATTERN_CELLS = 2**24


@dataclass
class PruningPath:
    """Rule sets from the unpruned student's down to one rule.

    Attributes
    ----------
    unpruned : RuleSet
        The student's rules as fitted.
    rule_sets : list of RuleSet
        One per point, from the most rules (folded and trimmed) to one rule;
        each point has one rule fewer than the one before.
    n_rules : ndarray of int
        Rules at each point.
    fidelity_valid : ndarray of float
        Fidelity of each point on the validation users.
    fidelity_unpruned : float
        Fidelity of the unpruned rules on the validation users.
    default : int
        Index of the default point.
    """

    unpruned: RuleSet
    rule_sets: list
    n_rules: np.ndarray
    fidelity_valid: np.ndarray
    fidelity_unpruned: float
    default: int
    settings: dict = field(default_factory=dict)

    @property
    def default_rules(self) -> RuleSet:
        return self.rule_sets[self.default]

    def at(self, k: int) -> RuleSet:
        """The point with ``k`` rules (the largest point when ``k`` exceeds it).

        Raises
        ------
        ValueError
            If ``k`` is below 1.
        """
        index = self.index_of(k)
        return self.rule_sets[index]

    def to_dict(self) -> dict:
        """JSON-ready, without the literal table (give it back to :meth:`from_dict`)."""
        def rules_of(rs: RuleSet) -> dict:
            return {"intercept": rs.intercept,
                    "rules": [{"formula": formula_to_json(r.formula), "weight": r.weight}
                              for r in rs.formula_rules()]}

        return {"format": "rudi-explain/pruning", "version": 1, "unpruned": rules_of(self.unpruned),
                "rule_sets": [rules_of(rs) for rs in self.rule_sets], "n_rules": self.n_rules.tolist(),
                "fidelity_valid": self.fidelity_valid.tolist(), "fidelity_unpruned": self.fidelity_unpruned,
                "default": self.default, "settings": dict(self.settings)}

    @classmethod
    def from_dict(cls, d: dict, literals: Any) -> PruningPath:
        """Read :meth:`to_dict` back, over the same ``literals`` (a Literals table)."""
        if not isinstance(d, dict) or d.get("format") != "rudi-explain/pruning":
            raise InputError("not a rudi-explain pruning path")
        info = literal_info(literals)

        def rules_from(x: dict) -> RuleSet:
            rules = [Rule(formula_from_json(r["formula"]), float(r["weight"]), info) for r in x["rules"]]
            for r in rules:
                bad = [lit.index for lit in formula_literals(r.formula) if not 0 <= lit.index < info.n_literals]
                if bad:
                    raise InputError(f"a pruned rule refers to literal {bad[0]}, the table has {info.n_literals}")
            return RuleSet(rules, float(x["intercept"]), literals)

        rule_sets = [rules_from(x) for x in d["rule_sets"]]
        n_rules = np.asarray(d["n_rules"], dtype=np.int64)
        if len(n_rules) != len(rule_sets) or [len(r) for r in rule_sets] != n_rules.tolist():
            raise InputError("the pruning path's rule counts do not match its rule sets")
        fidelity_valid = np.asarray(d["fidelity_valid"], dtype=np.float64)
        if fidelity_valid.shape != (len(rule_sets),):
            raise InputError(f"the pruning path has {len(rule_sets)} rule sets but {fidelity_valid.size} "
                             "validation fidelities")
        default = int(d["default"])
        if not 0 <= default < len(rule_sets):
            raise InputError(f"the pruning path's default point {default} does not exist")
        return cls(rules_from(d["unpruned"]), rule_sets, n_rules, fidelity_valid,
                   float(d["fidelity_unpruned"]), default, dict(d.get("settings", {})))

    def index_of(self, k: int) -> int:
        """Index of the point with ``k`` rules (see :meth:`at`)."""
        check_whole(k, "the number of rules", min_value=1)
        fits = np.flatnonzero(self.n_rules <= k)
        if not fits.size:
            raise InputError(f"no point of the curve has {k} rules or fewer (smallest: {self.n_rules.min()})")
        return int(fits[np.argmax(self.n_rules[fits])])


# --------------------------------------------------------------------------
# folding one statistic output's rules into bands


def _single_column(rule: Any) -> int:
    """The one statistic output a rule thresholds, or -1."""
    if not isinstance(rule, Rule):
        return -1
    cols = {int(rule.info.column[lit.index]) for lit in formula_literals(rule.formula)}
    return cols.pop() if len(cols) == 1 and min(cols) >= 0 else -1


def fold_bands(rules: RuleSet, Z: np.ndarray) -> RuleSet:
    """Rewrite the rules on one statistic output as bands; the same scores.

    Parameters
    ----------
    rules : RuleSet
        Rules over a literal table with thresholds (not linear terms).
    Z : ndarray of bool, shape (n_users, n_literals)
        Literal matrix of the training users: the band most of them fall in
        is the baseline, whose weight moves into the intercept.

    Returns
    -------
    RuleSet
        Every output with two rules or more that use it alone becomes one
        rule per band of nonzero net weight: ``x <= t1`` (also true where x
        is undefined), ``t1 < x <= t2``, ..., ``x > tm``. Other rules are
        kept as they are.
    """
    if rules.linear or not len(rules):
        return rules
    info = rules.info
    by_column: dict[int, list[int]] = {}
    for k, rule in enumerate(rules):
        c = _single_column(rule)
        if c >= 0:
            by_column.setdefault(c, []).append(k)
    fold = {c: ks for c, ks in by_column.items() if len(ks) >= 2}
    if not fold:
        return rules
    folded = {k for ks in fold.values() for k in ks}
    rule_list = rules.formula_rules()
    formulas: list[Formula] = [r.formula for k, r in enumerate(rule_list) if k not in folded]
    weights: list[float] = [r.weight for k, r in enumerate(rule_list) if k not in folded]
    intercept = rules.intercept
    for ks in fold.values():
        used = sorted({lit.index for k in ks for lit in formula_literals(rule_list[k].formula)},
                      key=lambda i: info.thresholds[i])
        m = len(used)
        # band b: the value exceeds the b lowest thresholds and no others (band 0 also holds undefined users)
        B = np.zeros((m + 1, info.n_literals), dtype=bool)
        for b in range(m + 1):
            B[b, used[:b]] = True
        net = np.zeros(m + 1)
        for k in ks:
            net += rule_list[k].weight * rule_list[k].fires(B)
        band_of_user = Z[:, used].sum(axis=1)  # nested literals: how many hold is the band
        base = int(np.argmax(np.bincount(band_of_user, minlength=m + 1)))
        intercept += net[base]
        rel = net - net[base]
        b = 0
        while b <= m:
            end = b
            while end + 1 <= m and np.isclose(rel[end + 1], rel[b], rtol=0, atol=1e-12):
                end += 1
            if not np.isclose(rel[b], 0.0, rtol=0, atol=1e-12):
                parts = ([Lit(used[b - 1])] if b > 0 else []) + ([Lit(used[end], True)] if end < m else [])
                formulas.append(parts[0] if len(parts) == 1 else And(tuple(parts)))
                weights.append(float(rel[b]))
            b = end + 1
    literals = rules.literals if rules.literals is not None else info
    return RuleSet.from_formulas(formulas, weights, intercept, literals=literals)


# --------------------------------------------------------------------------
# near-constant rules


def _negation(f: Formula) -> Formula:
    """The complement of ``f``, in negation normal form (De Morgan)."""
    if isinstance(f, Lit):
        return ~f
    if isinstance(f, Const):
        return FALSE if f.value else TRUE
    children = tuple(_negation(c) for c in f.children)
    return Or(children) if isinstance(f, And) else And(children)


def complement_common(rules: RuleSet, Z: np.ndarray) -> RuleSet:
    """``rules`` with every rule that fires for :data:`COMMON_RULE_SHARE` of the users or more complemented.

    A rule ``f`` with weight ``w`` that fires for 95% of the users becomes
    ``NOT f`` with weight ``-w``, and ``w`` moves into the intercept: the same
    scores, read as what the other 5% lose. A rule that fires for every user
    is folded into the intercept.

    Parameters
    ----------
    rules : RuleSet
        Weighted rules over a literal table (linear terms and rule lists come
        back as they are).
    Z : ndarray of bool, shape (n_users, n_literals)
        Literal matrix of the training users.

    Returns
    -------
    RuleSet
        ``rules`` itself where no rule is that common.
    """
    if type(rules) is not RuleSet or rules.linear or not len(rules):
        return rules
    Z = np.asarray(Z, dtype=bool)
    if Z.shape[0] == 0:
        return rules
    rule_list = rules.formula_rules()
    common = [float(r.fires(Z).mean()) >= COMMON_RULE_SHARE for r in rule_list]
    if not any(common):
        return rules
    intercept = rules.intercept
    formulas: list[Formula] = []
    weights: list[float] = []
    for r, flip in zip(rule_list, common):
        if flip:
            intercept += r.weight
            formulas.append(_negation(r.formula))  # fires for nobody here where r fired for all: dropped below
            weights.append(-r.weight)
        else:
            formulas.append(r.formula)
            weights.append(r.weight)
    keep = [k for k, f in enumerate(formulas) if not common[k] or evaluate_formula(f, Z).any()]
    literals = rules.literals if rules.literals is not None else rules.info
    return RuleSet.from_formulas([formulas[k] for k in keep], [weights[k] for k in keep], intercept,
                                 literals=literals)


# --------------------------------------------------------------------------
# trimming and pruning


def _drop_leaf(f: Formula, position: int) -> Formula:
    """``f`` without its ``position``-th literal (the neutral constant of its parent instead)."""
    counter = [0]

    def walk(g: Formula, neutral: Const) -> Formula:
        if isinstance(g, Lit):
            counter[0] += 1
            return neutral if counter[0] - 1 == position else g
        if isinstance(g, Const):
            return g
        child_neutral = TRUE if isinstance(g, And) else FALSE
        return type(g)(tuple(walk(c, child_neutral) for c in g.children))

    return walk(f, TRUE)


class _State:
    """Formulas, weights and their firing matrices on fitting and validation users."""

    def __init__(self, formulas: list, weights: np.ndarray, intercept: float, Z: np.ndarray) -> None:
        self.formulas = list(formulas)
        self.weights = np.asarray(weights, dtype=np.float64).copy()
        self.intercept = float(intercept)
        self.Z = Z
        self.F = np.column_stack([_fires(f, Z) for f in self.formulas]) if self.formulas \
            else np.zeros((Z.shape[0], 0), dtype=bool)

    def scores(self) -> np.ndarray:
        return _sum_scores(self.intercept, self.F, self.weights)


def _sum_scores(intercept: float, F: np.ndarray, weights: np.ndarray, skip: int | None = None) -> np.ndarray:
    """``intercept + F @ weights`` (column ``skip`` left out), added rule by rule as RuleSet.score does.

    Fidelity counts ties, and users who fire the same rules must tie exactly: a matrix
    product or a subtraction can leave them a rounding error apart, on one machine and not
    another.
    """
    s = np.full(F.shape[0], float(intercept))
    for k in range(F.shape[1]):
        if k != skip:
            s[F[:, k]] += weights[k]
    return s


class _PatternPairs:
    """Fidelity to the teacher of students that score users by their firing pattern alone, pair counts by pattern.

    ``M[a, b]`` counts the pairs of users, one of pattern ``a`` and one of pattern ``b``, whose teacher scores
    rise from the first to the second: a student whose pattern scores are ``s`` orders
    ``sum(M[a, b] for s[a] < s[b])`` pairs as the teacher does, and ties the users of equal scores. Each
    candidate drop then costs patterns x patterns, not a sort of every user: the same whole-number counts as
    :meth:`Agreement.of_ranks`, hence the same fidelity.
    """

    def __init__(self, agreement: Agreement, inverse: np.ndarray, n_patterns: int) -> None:
        assert agreement.ranks is not None
        self.agreement = agreement
        n = agreement.n
        q = inverse[agreement.order]  # patterns in the teacher's order
        ranks = agreement.sorted_ranks
        # where each user's tie group of teacher scores starts: the users before it score lower
        start = np.flatnonzero(np.r_[True, ranks[1:] != ranks[:-1]])
        group_start = np.repeat(start, np.diff(np.r_[start, n]))
        below = np.zeros((n + 1, n_patterns), dtype=np.int32)  # users of each pattern among the first m
        below[np.arange(1, n + 1), q] = 1
        np.cumsum(below, axis=0, out=below)
        by_pattern = np.argsort(q, kind="stable")
        firsts = np.flatnonzero(np.r_[True, q[by_pattern][1:] != q[by_pattern][:-1]])
        # M[a, b]: for each user j of pattern b, the users of pattern a with a lower teacher score
        self.M = np.add.reduceat(below[group_start[by_pattern]], firsts, axis=0, dtype=np.int64).T
        self.size = np.bincount(inverse, minlength=n_patterns).astype(np.int64)

    def merged(self, mapping: np.ndarray, n_patterns: int) -> _PatternPairs:
        """The counts of coarser patterns: pattern ``a`` becomes ``mapping[a]`` (a rule dropped merges patterns).

        Sums of whole numbers below 2**53, so exactly the counts built anew.
        """
        out = object.__new__(_PatternPairs)
        out.agreement = self.agreement
        cells = (mapping[:, None] * n_patterns + mapping[None, :]).ravel()
        out.M = np.bincount(cells, weights=self.M.ravel(), minlength=n_patterns ** 2) \
            .astype(np.int64).reshape(n_patterns, n_patterns)
        out.size = np.bincount(mapping, weights=self.size, minlength=n_patterns).astype(np.int64)
        return out

    def fidelity(self, s: np.ndarray) -> float:
        """Fidelity of the student scoring each pattern ``s`` (finite), as :meth:`Agreement.of_ranks`."""
        a = self.agreement
        rs = _dense_ranks(s)
        counts = np.bincount(rs, weights=self.size).astype(np.int64)
        p_s = a.half - int((counts * (counts - 1) // 2).sum())
        both = int(self.M[rs[:, None] < rs[None, :]].sum())
        return (a.total - (a.p_t - both) - (p_s - both)) / a.total


def _drop_losses(agreement: Agreement, intercept: float, F: np.ndarray, weights: np.ndarray,
                 memo: dict | None = None) -> np.ndarray:
    """Fidelity to the teacher of the rule set without each of its rules, as ``_sum_scores(skip=k)`` scores it.

    A user's score depends only on which rules fire (added in rule order), so it is computed once per
    firing pattern and each user takes the rank of their pattern: the same ranks, hence the same
    fidelity, as scoring every user, at the cost of a gather. With few patterns, pairs of users are counted
    by pattern once (:class:`_PatternPairs`); ``memo`` carries them to the next step of a path, whose
    firing matrix has the same rows and fewer columns.
    """
    n_rules = F.shape[1]
    if n_rules > 63 or agreement.ranks is None or F.shape[0] != agreement.n:
        return np.array([agreement(_sum_scores(intercept, F, weights, skip=k)) for k in range(n_rules)])
    codes = np.zeros(F.shape[0], dtype=np.uint64)
    for k in range(n_rules):
        codes |= F[:, k].astype(np.uint64) << np.uint64(k)
    patterns, inverse = np.unique(codes, return_inverse=True)
    inverse = inverse.reshape(-1)
    P = ((patterns[:, None] >> np.arange(n_rules, dtype=np.uint64)[None, :]) & np.uint64(1)).astype(bool)

    def loss(k: int) -> float:
        s = _sum_scores(intercept, P, weights, skip=k)
        if not np.isfinite(s).all():  # overflow: fidelity's own error
            return agreement(_sum_scores(intercept, F, weights, skip=k))
        return agreement.of_ranks(_dense_ranks(s)[inverse])

    if patterns.size * F.shape[0] <= PATTERN_CELLS:
        pairs = None
        if memo is not None and memo.get("agreement") is agreement:
            # the step before's patterns, merged: each of its patterns lies within one of these
            mapping = np.zeros(memo["pairs"].size.size, dtype=np.int64)
            mapping[memo["inverse"]] = inverse
            if np.array_equal(mapping[memo["inverse"]], inverse):
                pairs = memo["pairs"].merged(mapping, patterns.size)
        if pairs is None:
            pairs = _PatternPairs(agreement, inverse, patterns.size)
        if memo is not None:
            memo.update(agreement=agreement, inverse=inverse, pairs=pairs)
        out = []
        for k in range(n_rules):
            s = _sum_scores(intercept, P, weights, skip=k)
            out.append(pairs.fidelity(s) if np.isfinite(s).all() else loss(k))
        return np.array(out)
    if N_JOBS > 1 and F.shape[0] >= PARALLEL_USERS:  # numpy's sorts and sums let go of the GIL
        with ThreadPoolExecutor(N_JOBS) as pool:
            return np.array(list(pool.map(loss, range(n_rules))))
    return np.array([loss(k) for k in range(n_rules)])


def _fires(f: Formula, Z: np.ndarray) -> np.ndarray:
    return evaluate_formula(f, Z)


def _standard_units(y: np.ndarray) -> tuple[float, float]:
    """A center and scale for ``y`` such that ``(y - center) / scale`` has unit spread.

    Median and largest deviation first, then the standard deviation of the
    scaled values: scores of any size (1e300) never overflow a sum of squares.
    """
    center = float(np.median(y))
    spread = float(np.max(np.abs(y - center))) or 1.0
    return center, spread * (float(np.std((y - center) / spread)) or 1.0)


def _refit(F: np.ndarray, y: np.ndarray, ridge: float = 1e-6) -> tuple[float, np.ndarray]:
    """Least-squares intercept and weights of the firing matrix ``F`` for the scores ``y``."""
    A = np.column_stack([np.ones(len(y)), F.astype(np.float64)])
    G = A.T @ A
    G[np.diag_indices_from(G)] += ridge * len(y)
    G[0, 0] -= ridge * len(y)  # no shrinkage of the intercept
    coef = np.linalg.solve(G, A.T @ y)
    return float(coef[0]), coef[1:]


def prune_rules(
    rules: RuleSet,
    Z: np.ndarray,
    y: np.ndarray,
    is_valid: np.ndarray,
    max_rules: int = MAX_RULES,
    max_literals: int = MAX_LITERALS,
    tolerance: float = TOLERANCE,
) -> PruningPath:
    """Fold, trim and prune a fitted rule set; the fidelity-against-rules path.

    Parameters
    ----------
    rules : RuleSet
        The student's rules over the literals of ``Z``.
    Z : ndarray of bool, shape (n_users, n_literals)
        Literal matrix of the training users: those the student was fitted
        on and the validation users.
    y : ndarray of float, shape (n_users,)
        Teacher scores of the same users.
    is_valid : ndarray of bool, shape (n_users,)
        Validation users (not used to fit the student).
    max_rules, max_literals : int
        Bounds of the default point, and of every rule's length.
    tolerance : float
        Validation fidelity the default point may lose against the unpruned
        rules.

    Returns
    -------
    PruningPath
    """
    # column-major: every rule's firing reads whole literal columns (45 times faster than from rows of
    # 80,000 users); only boolean work and whole-number sums read it, so the same figures
    Z = np.asfortranarray(np.asarray(Z, dtype=bool))
    y = np.asarray(y, dtype=np.float64)
    is_valid = np.asarray(is_valid, dtype=bool)
    if Z.shape[0] != y.size or is_valid.size != y.size:
        raise InputError(f"Z has {Z.shape[0]} users, y {y.size}, is_valid {is_valid.size}: they must line up")
    if is_valid.sum() < 2 or (~is_valid).sum() < 2:
        raise InputError("pruning needs at least 2 validation users and 2 fitting users")
    check_whole(max_rules, "max_rules", min_value=1)
    check_whole(max_literals, "max_literals", min_value=1)
    settings = {"max_rules": int(max_rules), "max_literals": int(max_literals), "tolerance": float(tolerance)}
    literals = rules.literals if rules.literals is not None else rules.info
    yv = y[is_valid]
    valid_agreement, agreement = Agreement(yv), Agreement(y)
    fid_unpruned = valid_agreement(rules.score(Z[is_valid]))
    if rules.linear or not len(rules) or type(rules) is not RuleSet:
        # linear terms, and rule lists (first match wins: not a sum of rules) are kept as they are
        return PruningPath(rules, [rules], np.array([len(rules)]), np.array([fid_unpruned]), fid_unpruned, 0,
                           settings)
    folded = fold_bands(rules, Z[~is_valid])
    state = _State(folded.formulas, folded.weights, folded.intercept, Z)
    info = rules.info

    def valid_fid(scores: np.ndarray) -> float:
        return valid_agreement(scores[is_valid])

    # trim long rules, one literal at a time
    for k in range(len(state.formulas)):
        while len(formula_literals(state.formulas[k])) > max_literals:
            base = _sum_scores(state.intercept, state.F, state.weights, skip=k)
            tried: list[tuple[float, Formula, np.ndarray]] = []
            for pos in range(len(formula_literals(state.formulas[k]))):
                g = simplify(_drop_leaf(state.formulas[k], pos), info)
                fires = np.ones(Z.shape[0], dtype=bool) if g == TRUE else \
                    np.zeros(Z.shape[0], dtype=bool) if g == FALSE else _fires(g, Z)
                tried.append((valid_fid(base + state.weights[k] * fires), g, fires))
            _, best_formula, best_fires = max(tried, key=lambda t: t[0])  # the first of the best
            state.formulas[k], state.F[:, k] = best_formula, best_fires
    # constant or repeated formulas after trimming: back through from_formulas
    merged = RuleSet.from_formulas(state.formulas, state.weights, state.intercept, literals=literals)
    state = _State(merged.formulas, merged.weights, merged.intercept, Z)
    # the points as a reader sees them: a rule nearly every training user meets reads as its complement
    merged = complement_common(merged, Z)

    points = [merged]
    fid_list = [valid_fid(state.scores())]
    fit_rows = ~is_valid
    # which rule to drop: judged on the training users (800 validation users alone are too noisy to
    # rank rules that each move fidelity by 0.001), at most RANK_USERS of them: each step sorts them
    # once per rule, and a larger sample no longer changes the ranking; where to stop: on validation
    rank_rows = sample_rows(np.ones(Z.shape[0], dtype=bool), RANK_USERS)
    rank_agreement = agreement if rank_rows.size == Z.shape[0] else Agreement(y[rank_rows])
    memo: dict = {}  # pair counts by firing pattern, from one step to the next
    while len(state.formulas) > 1:
        F_rank = state.F if rank_rows.size == Z.shape[0] else state.F[rank_rows]
        losses = _drop_losses(rank_agreement, state.intercept, F_rank, state.weights, memo)
        # no decision on a floating-point near-tie: of rules whose loss is equal but for rounding,
        # drop the first in a structural order (the same on every machine and for scores in any units)
        tied = np.flatnonzero(losses >= losses.max() - NEAR_TIE)
        drop = int(min(tied, key=lambda k: _sort_key(state.formulas[k])))
        keep = [k for k in range(len(state.formulas)) if k != drop]
        state.formulas = [state.formulas[k] for k in keep]
        state.weights = state.weights[keep]
        state.F = state.F[:, keep]
        # the remaining weights were tuned beside the dropped rule: refit them if validation agrees
        without = valid_agreement(_sum_scores(state.intercept, state.F[is_valid], state.weights))
        b, w = _refit(state.F[fit_rows], y[fit_rows])
        refit = valid_agreement(_sum_scores(b, state.F[is_valid], w))
        if refit > without:
            state.intercept, state.weights = b, w
        points.append(complement_common(
            RuleSet.from_formulas(state.formulas, state.weights, state.intercept, literals=literals), Z))
        fid_list.append(max(refit, without))
    n_rules = np.array([len(p) for p in points])
    fids = np.array(fid_list)
    # Within the tolerance on validation users, and on all training users too: 800 validation
    # users alone let a point with two rules fewer pass by luck (it lost 0.011 held out on the demo).
    allowed = np.flatnonzero(n_rules <= max_rules)
    # the fewest rules (the first of equals) within both tolerances: the training users' fidelity (a sort of
    # every training user per point) is asked only of the points that pass on validation, fewest rules first
    default = -1
    passing = allowed[fids[allowed] >= fid_unpruned - tolerance]
    if passing.size:
        all_unpruned = agreement(rules.score(Z))
        for i in passing[np.lexsort((passing, n_rules[passing]))]:
            if agreement(points[i].score(Z)) >= all_unpruned - tolerance:
                default = int(i)
                break
    if default < 0:
        default = int(allowed[np.argmax(fids[allowed])])
    return PruningPath(rules, points, n_rules, fids, fid_unpruned, default, settings)
