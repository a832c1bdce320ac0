"""Rule ensembles learned with hierarchical kernels (seed 002_ddccc5d54b1d5afd.txt).

The hypothesis space is the lattice of all conjunctions of basic
propositions: here the literals and their negations ("items"). Node ``v`` of
the lattice is a set of items; its rule ``R_v(x)`` is their conjunction and
its kernel ``K_v(x, x') = R_v(x) R_v(x')``. The root is the empty
conjunction; the descendants ``D(v)`` of a node are its supersets (more
specific rules) and its ancestors ``A(v)`` its subsets.

The model ``f(x) = sum_v w_v R_v(x) + b`` is fitted to the teacher's scores
(squared loss) with the generalized HKL penalty

    Omega(w) = sum_v d_v ||w_D(v)||_rho,   d_v = beta ** |v|,   rho in (1, 2],

    minimize (1 / 2n) ||y - f(X)||^2 + (lam / 2) Omega(w)^2.

A node can only be nonzero when its ancestors' groups are, and long rules
cost more (``beta ** |v|``), so the solution is a few short conjunctions.

Solved by the seed's active-set method: start from the root, solve the
problem reduced to the active set ``W``, then check the sufficiency
condition on the sources of the complement (nodes outside ``W`` whose
parents are all in ``W``)

    sum_{v in D(t)} (alpha' K_v alpha) / (sum_{u in A(v) & D(t)} d_u)^2
        <= Omega(w_W)^2 + 2 epsilon,

with ``alpha`` the dual variables (scaled residuals). The left side sums
over all descendants of ``t``, an exponential number of nodes, but in
product form: with ``d_u = beta ** |u|`` the denominator is
``beta^|t| (1 + beta)^(|v| - |t|)``, so the sum is

    beta^(-2|t|) (1 + c)^(-|t|) alpha_t' G alpha_t,   c = (1 + beta)^-2,
    G_ij = prod_k (1 + c phi_k(x_i) phi_k(x_j)) = (1 + c)^(items i and j share),

a kernel computed once (``alpha_t`` is ``alpha`` on the users ``t`` covers).
Violators are added and the loop repeats until the condition holds. The
lattice is never enumerated: ``n_kernel_evaluations_`` counts the nodes
whose kernel or descendant kernel sum was evaluated. For rho < 2 the
condition's inner l_rho-bar norm is bounded by the l_1 sum (the seed's
"computationally feasible" form), which keeps it sufficient.

The reduced problem is solved in its variational form (the seed's partial
dual: ``Omega(w)^2 = min over eta on the simplex and lambda_v of
sum_u w_u^2 / delta_u(eta, lambda)``) by alternating the closed-form eta and
lambda with the weighted ridge in ``w``, instead of the seed's mirror
descent on eta: both solve the same convex problem, and the alternation
needs no step size.

The regularization ``lam`` is walked down a path (halving) until more than
``n_rules`` rules would be nonzero; the last solution with at most
``n_rules`` rules is kept.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from rudi_explain.rules.formula import And, Lit, literal_info
from rudi_explain.rules.ruleset import RuleSet
from rudi_explain.students.base import FitProgress, FitStopped, RuleStudent, check_binary_matrix, check_target
from rudi_explain.students.fpgrowth import item_matrix
from rudi_explain.validation import check_random_state_seed, check_real, check_whole

__all__ = ["HKLRuleEnsemble"]


class HKLRuleEnsemble(RuleStudent):
    """Sparse weighted conjunctions by hierarchical kernel learning over the rule lattice.

    Parameters
    ----------
    n_rules : int, default=20
        Most rules (nonzero conjunctions) to keep; picks the regularization.
    rho : float, default=2.0
        The norm inside each descendant group, in (1, 2]. Nearer 1 gives
        sparser groups (fewer rules per sub-lattice).
    beta : float or None, default=None
        Node weights ``d_v = beta ** |v|``. None: ``sqrt(n_literals)``, which
        keeps the descendant sums of the sufficiency condition bounded
        (``(1 + c) ** n_literals`` stays near ``e``).
    max_literals : int, default=3
        Longest conjunction the active set may grow to.
    max_samples : int, default=1000
        Users the kernel is built on (a random subset when there are more;
        the kernel matrix is ``max_samples`` squared; the search's time
        grows as its square too: 2,000 takes about four times as long).
        The rules are found on them; the weights of the rules found are then
        fitted on every user (same problem and regularization, reduced to
        those rules), in memory linear in the number of users.
    tol : float, default=1e-3
        Relative duality gap ``epsilon`` allowed by the sufficiency condition.
    max_add : int, default=8
        Most violating sources added to the active set per iteration.
    random_state : int or None, default=0
        Seeds the subsample.

    Attributes
    ----------
    nodes_ : list of tuple of int
        Kept conjunctions as items (``j < n_literals``: literal ``j``; else
        the negation of literal ``j - n_literals``).
    coef_ : ndarray of shape (n_kept,)
    intercept_ : float
    active_set_ : list of tuple of int
        The final active set (root first).
    lam_ : float
        The chosen regularization.
    beta_ : float
    converged_ : bool
        Whether the sufficiency condition held at the chosen solution.
    n_kernel_evaluations_ : int
        Lattice nodes whose kernel or descendant kernel sum was evaluated.
    lattice_size_ : int
        Nodes of the lattice of conjunctions up to ``max_literals`` items
        that the search could have had to visit, for comparison.
    path_ : list of dict
        Per regularization: lam, active set size, rules, objective, converged.
    """

    def __init__(self, *, n_rules: int = 20, rho: float = 2.0, beta: float | None = None, max_literals: int = 3,
                 max_samples: int = 1000, tol: float = 1e-3, max_add: int = 8, random_state: int | None = 0):
        self.n_rules = n_rules
        self.rho = rho
        self.beta = beta
        self.max_literals = max_literals
        self.max_samples = max_samples
        self.tol = tol
        self.max_add = max_add
        self.random_state = random_state

    # -- checks --------------------------------------------------------------

    def _check_params(self) -> None:
        """Check the hyper-parameters (``fit`` does; ``explain`` before any work)."""
        check_whole(self.n_rules, "n_rules", min_value=1)
        check_real(self.rho, "rho", min_value=1.0, max_value=2.0, include_min=False)
        check_real(self.beta, "beta", min_value=0.0, include_min=False, allow_none=True)
        check_whole(self.max_literals, "max_literals", min_value=1)
        check_whole(self.max_add, "max_add", min_value=1)
        check_whole(self.max_samples, "max_samples", min_value=2)
        check_real(self.tol, "tol", min_value=0.0, include_min=False)
        check_random_state_seed(self.random_state)

    # -- fitting ---------------------------------------------------------------

    def fit(self, X: ArrayLike, y: ArrayLike,
            progress: Callable[[FitProgress], Any] | None = None,
            should_stop: Callable[[], bool] | None = None) -> HKLRuleEnsemble:
        """Learn the rule ensemble.

        Parameters
        ----------
        X : array-like of bool, shape (n_users, n_literals)
        y : array-like of shape (n_users,)
            Teacher scores.
        progress : callable, optional
            Called once per regularization on the path with a :class:`FitProgress`.
        should_stop : callable, optional
            Asked before every solve of the active set (a fraction of a second);
            ``True`` ends the path there, keeping the last regularization done
            (:class:`FitStopped` if none was).

        Returns
        -------
        self
        """
        start = time.perf_counter()
        self._check_params()
        Xb = check_binary_matrix(X)
        yv = check_target(y, Xb.shape[0])
        n_all, p = Xb.shape
        rng = np.random.default_rng(self.random_state)
        if n_all > self.max_samples:
            rows = np.sort(rng.choice(n_all, self.max_samples, replace=False))
            Xs, ys = Xb[rows], yv[rows]
        else:
            Xs, ys = Xb, yv
        n = Xs.shape[0]
        rho = float(self.rho)
        beta = float(self.beta) if self.beta is not None else math.sqrt(p)
        c = 1.0 / (1.0 + beta) ** 2
        items = item_matrix(Xs)
        Phi = items.astype(np.float64)
        # G_ij = (1 + c) ** (items shared by users i and j), scaled by (1 + c) ** -p
        # (each user holds exactly p items) so that it stays <= 1; the scale is put back below
        shared = Phi @ Phi.T
        G = np.exp((shared - p) * math.log1p(c))
        g_scale = math.exp(p * math.log1p(c))
        support = items.sum(axis=0)
        usable = np.flatnonzero((support > 0) & (support < n))
        self._evals = 0

        ym = ys.mean()
        yc = ys - ym
        cover: dict[tuple, np.ndarray] = {(): np.ones(n, dtype=bool)}
        W: list[tuple] = [()]
        # lam so large that one rule barely moves: the start of the path
        f = Phi[:, usable] - Phi[:, usable].mean(axis=0)
        corr = np.abs(f.T @ yc) / n
        lam = float(corr.max() ** 2 / max(yc.var(), 1e-300) / (1.0 + beta) ** 2) * 1e3 + 1e-12
        lam_min = lam * 1e-8
        max_active = 10 * int(self.n_rules) + 20
        best = None
        path = []
        w_prev = np.zeros(0)
        while lam >= lam_min:
            try:
                W, w, Omega, converged, obj = self._active_set(W, w_prev, lam, G, g_scale, Phi, items, usable,
                                                               cover, yc, beta, c, rho, max_active, should_stop)
            except FitStopped:
                if best is None:
                    raise
                break
            w_prev = w
            nz = np.abs(w) > 1e-2 * max(np.abs(w).max(initial=0.0), 1e-300)
            n_nz = len(_fold([u for u, keep in zip(W[1:], nz) if keep], w[nz], 0.0, p)[0])
            path.append({"lam": lam, "active": len(W), "rules": n_nz, "objective": obj, "converged": converged})
            if progress is not None:
                progress(FitProgress(epoch=len(path), epochs=len(path) + 1, loss=obj, fidelity=float("nan"),
                                     temperature=float("nan"), learning_rate=lam,
                                     seconds=time.perf_counter() - start))
            if n_nz > self.n_rules and best is not None:
                break
            best = (lam, list(W), w.copy(), nz.copy(), converged)
            if n_nz > self.n_rules or len(W) >= max_active:
                break
            lam /= 2.0

        assert best is not None  # the first regularization on the path is always kept
        lam, W, w, nz, converged = best
        if n_all > n and len(W) > 1:
            # The kernel (n^2) needs the subsample to find the rules; their weights
            # need no kernel: the same problem, reduced to the chosen rules and at the
            # same lam (the loss is a mean, so lam means the same for any n), is
            # solved again on every user, in memory linear in the users.
            cover = {u: _node_cover(Xb, u) for u in W}
            ym = float(yv.mean())
            w, _, _ = self._solve_reduced(W, w, lam, cover, yv - ym, beta, rho)
            nz = np.abs(w) > 1e-2 * max(np.abs(w).max(initial=0.0), 1e-300)
        # intercept on the fitting users (centered features): ym - sum_u w_u mean(R_u)
        kept = [u for u, keep in zip(W[1:], nz) if keep]
        means = np.array([cover[u].mean() for u in kept]) if kept else np.zeros(0)
        intercept = float(ym - w[nz] @ means)
        nodes, coef, intercept = _fold(kept, w[nz], intercept, p)
        if len(nodes) > self.n_rules:  # even the strongest regularization kept more: keep the largest
            order = np.argsort(-np.abs(coef), kind="stable")[: self.n_rules]
            nodes, coef = [nodes[k] for k in order], coef[order]
        self.nodes_ = nodes
        self.coef_ = np.asarray(coef, dtype=np.float64)
        self.intercept_ = intercept
        self.active_set_ = W
        self.lam_ = lam
        self.beta_ = beta
        self.converged_ = bool(converged)
        self.n_kernel_evaluations_ = int(self._evals)
        self.lattice_size_ = int(sum(math.comb(p, k) * 2**k for k in range(int(self.max_literals) + 1)))
        self.path_ = path
        self.n_features_in_ = p
        self.n_samples_fit_ = n
        self.seconds_ = time.perf_counter() - start
        self._report(progress, Xb, yv, self.seconds_)
        return self

    def _active_set(self, W, w_warm, lam, G, g_scale, Phi, items, usable, cover, yc, beta, c, rho, max_active,
                    should_stop=None):
        """Grow ``W`` until the sufficiency condition holds at ``lam``; solve on it."""
        n = yc.size
        p = items.shape[1] // 2
        w = _extend(w_warm, len(W) - 1)
        while True:
            if should_stop is not None and should_stop():
                raise FitStopped("HKLRuleEnsemble.fit was asked to stop before the first regularization was done")
            w, Omega, r = self._solve_reduced(W, w, lam, cover, yc, beta, rho)
            C = 1.0 / (n * lam)
            alpha = C * r  # dual variables of the squared loss (they sum to 0: free intercept)
            primal = 0.5 * Omega**2 + 0.5 * C * float(r @ r)
            eps = float(self.tol) * primal
            if len(W) >= max_active:
                return W, w, Omega, False, primal * lam
            cand, lhs = self._sources(W, alpha, G, g_scale, Phi, items, usable, cover, beta, c, p)
            viol = np.flatnonzero(lhs > Omega**2 + 2 * eps)
            if viol.size == 0:
                return W, w, Omega, True, primal * lam
            viol = viol[np.argsort(-lhs[viol], kind="stable")][: int(self.max_add)]
            for k in viol:
                t = cand[k]
                cover[t] = items[:, list(t)].all(axis=1)
                W.append(t)
                self._evals += 1  # the new node's own kernel enters the reduced problem
            w = np.concatenate([w, np.full(viol.size, 0.0)])

    def _sources(self, W, alpha, G, g_scale, Phi, items, usable, cover, beta, c, p):
        """Sources of the complement of ``W`` and their descendant kernel sums."""
        in_w = set(W)
        seen: set[tuple] = set()
        cand: list[tuple] = []
        lhs: list[np.ndarray] = []
        for v in W:
            if len(v) >= self.max_literals:
                continue
            rows = np.flatnonzero(cover[v])
            if rows.size == 0:
                continue
            taken = {i % p for i in v}
            ks = []
            for k in usable.tolist():
                if k % p in taken:
                    continue
                t = tuple(sorted(v + (k,)))
                if t in in_w or t in seen:
                    continue
                # a source: every parent (one item fewer) is already active
                if len(t) > 1 and any(t[:j] + t[j + 1:] not in in_w for j in range(len(t))):
                    continue
                seen.add(t)
                ks.append(k)
                cand.append(t)
            if not ks:
                continue
            a = alpha[rows]
            A = Phi[np.ix_(rows, ks)] * a[:, None]  # alpha_t restricted to v's users, one column per t
            # alpha_t' G alpha_t for every t at once: the product form of the descendant sums
            quad = np.einsum("ik,ik->k", A, G[np.ix_(rows, rows)] @ A) * g_scale
            size = len(v) + 1
            lhs.append(quad * (beta ** (-2 * size)) * (1.0 + c) ** (-size))
            self._evals += len(ks)
        if not cand:
            return [], np.zeros(0)
        return cand, np.concatenate(lhs)

    def _solve_reduced(self, W, w, lam, cover, yc, beta, rho, n_iter: int = 300):
        """The problem reduced to ``W`` by alternating eta/lambda and a weighted ridge.

        Returns the weights of ``W[1:]`` (the root carries none: the intercept
        is free), ``Omega(w)`` and the residuals.
        """
        n = yc.size
        k = len(W) - 1
        if k == 0:
            return np.zeros(0), 0.0, yc.copy()
        F = np.stack([cover[u] for u in W[1:]], axis=1).astype(np.float64)
        F -= F.mean(axis=0)
        FtF = F.T @ F / n
        Fty = F.T @ yc / n
        sizes = np.array([len(v) for v in W], dtype=np.float64)
        d = beta**sizes
        # Dm[v, u]: node u (a non-root node) is a descendant of v (v is a subset of u)
        sets = [frozenset(v) for v in W]
        Dm = np.array([[sv <= su for su in sets[1:]] for sv in sets], dtype=np.float64)
        # start from the ridge that charges each weight its ancestors' d as if alone: every
        # weight nonzero, so that the reweighting can pick which groups vanish
        w = np.linalg.solve(FtF + lam * np.diag((Dm.T @ d) ** 2), Fty)
        for _ in range(n_iter):
            scale = max(np.abs(w).max(), 1e-300)
            a = np.maximum(np.abs(w), 1e-10 * scale)
            g = (Dm @ a**rho) ** (1.0 / rho)  # ||w_D(v)||_rho per group
            Omega = float(d @ g)
            # closed-form eta_v ∝ d_v g_v and lambda_vu ∝ |w_u|^(2 - rho): the weight on w_u^2
            q = Omega * a ** (rho - 2.0) * (Dm.T @ (d * g ** (1.0 - rho)))
            w_new = np.linalg.solve(FtF + lam * np.diag(q), Fty)
            done = np.max(np.abs(w_new - w)) <= 1e-7 * max(np.abs(w_new).max(), 1e-300)
            w = w_new
            if done:
                break
        a = np.abs(w)
        Omega = float(d @ (Dm @ a**rho) ** (1.0 / rho))
        return w, Omega, yc - F @ w

    # -- output ---------------------------------------------------------------

    def _formula(self, node: tuple):
        p = self.n_features_in_
        lits = tuple(Lit(i) if i < p else Lit(i - p, True) for i in node)
        return lits[0] if len(lits) == 1 else And(lits)

    def rules(self, literals: Any = None) -> RuleSet:
        """The kept conjunctions with their weights, as a :class:`RuleSet`.

        Parameters
        ----------
        literals : Literals or list of str, optional
            Names the literals.

        Returns
        -------
        RuleSet
        """
        self._check_fitted()
        literal_info(literals, self.n_features_in_)  # checks the names
        return RuleSet.from_formulas([self._formula(u) for u in self.nodes_], self.coef_, self.intercept_,
                                     literals=literals, n_literals=self.n_features_in_)

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
        return self.rules().score(check_binary_matrix(X))


def _fold(nodes: list, coef: np.ndarray, intercept: float, p: int) -> tuple[list, np.ndarray, float]:
    """Fold a literal and its negation, both kept as one-item rules, into one rule.

    ``w1 * x + w2 * (NOT x) = w2 + (w1 - w2) * x``: the two are one rule and
    a shift of the intercept (both polarities are items of the lattice, and
    at depth one they span the same feature).
    """
    pos = {u[0]: k for k, u in enumerate(nodes) if len(u) == 1 and u[0] < p}
    drop = set()
    coef = np.array(coef, dtype=np.float64)
    for k, u in enumerate(nodes):
        if len(u) == 1 and u[0] >= p and (u[0] - p) in pos:
            j = pos[u[0] - p]
            intercept += coef[k]
            coef[j] -= coef[k]
            drop.add(k)
    keep = [k for k in range(len(nodes)) if k not in drop and coef[k] != 0.0]
    return [nodes[k] for k in keep], coef[keep], float(intercept)


def _node_cover(Xb: np.ndarray, node: tuple) -> np.ndarray:
    """Users a conjunction of items holds for (items ``j >= n_literals`` are negations)."""
    p = Xb.shape[1]
    out = np.ones(Xb.shape[0], dtype=bool)
    for i in node:
        out &= Xb[:, i] if i < p else ~Xb[:, i - p]
    return out


def _extend(w: np.ndarray, k: int) -> np.ndarray:
    out = np.zeros(k)
    out[: min(k, w.size)] = w[:k]
    return out
