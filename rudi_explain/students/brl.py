"""Bayesian Rule Lists (Letham et al.; seed 001_2b6881e95d3bc907.txt).

An ordered list ``IF a_1 THEN p_1 ELSE IF a_2 THEN p_2 ... ELSE p_0`` over
antecedents pre-mined from the literals. The model is the seed's:

- list length ``m`` ~ Poisson(``lambda``) truncated to ``0..|A|``;
- each antecedent's cardinality ``c_j`` ~ Poisson(``eta``) truncated to the
  cardinalities still available (at least one unused antecedent of that
  size), renormalised by subtracting the mass of exhausted cardinalities;
- the antecedent uniform among the unused ones of cardinality ``c_j``;
- each rule's label distribution ``theta_j`` ~ Dirichlet(``alpha``), so that
  the labels of the users a rule captures are Dirichlet-multinomial.

The posterior over lists is sampled by Metropolis-Hastings with insert,
delete and swap proposals and their exact Hastings ratios, in several
chains. The point estimate is the seed's: among sampled lists whose length
and mean cardinality are near the posterior averages, the one of highest
posterior (the MAP list when none qualifies). Each rule then carries the
posterior predictive probability of the positive class and a credible
interval.

Coverage is kept as packed ``uint64`` bitsets (one per antecedent, one per
list prefix), and a proposal only recomputes the list from the first
position it changes: the prefix before it is reused.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import gammaln

from rudi_explain.exceptions import InputError
from rudi_explain.rules.formula import (
    FALSE,
    TRUE,
    And,
    Formula,
    Lit,
    Or,
    formula_from_json,
    formula_literals,
    formula_to_json,
    literal_info,
    render,
    simplify,
)
from rudi_explain.rules.ruleset import Rule, RuleSet
from rudi_explain.students.base import FitProgress, FitStopped, RuleStudent, check_binary_matrix, check_target
from rudi_explain.students.fpgrowth import frequent_itemsets, item_matrix, pack_rows
from rudi_explain.validation import check_random_state_seed, check_real, check_whole

__all__ = ["BayesianRuleList", "RuleList", "ListRule"]

#: Metropolis-Hastings steps between two questions to ``should_stop`` (a few milliseconds of sampling).
STEPS_PER_CHECK = 256


# --------------------------------------------------------------------------
# the ordered rule list as a RuleSet


@dataclass(frozen=True)
class ListRule(Rule):
    """One ``IF``/``ELSE IF`` entry of a rule list.

    ``formula`` is what makes the rule fire (its antecedent AND no earlier
    antecedent), so scoring with the inherited machinery is exact; ``text``,
    ``literals`` and ``n_literals`` describe the antecedent as written in the
    list. ``weight`` is the rule's probability minus the default's, so that
    intercept plus weight is the probability.

    Attributes
    ----------
    antecedent : Formula
    probability : float
        Posterior predictive probability of the positive class for the users
        this rule captures.
    interval : tuple of float
        Credible interval of that probability.
    n_captured : int
        Training users the rule captures.
    """

    antecedent: Formula
    probability: float
    interval: tuple
    n_captured: int

    @property
    def literals(self) -> tuple:
        out = []
        for lit in formula_literals(self.antecedent):
            name = self.info.names[lit.index]
            out.append(f"NOT {name}" if lit.negated else name)
        return tuple(out)

    @property
    def n_literals(self) -> int:
        return len(formula_literals(self.antecedent))

    @property
    def text(self) -> str:
        return render(self.antecedent, self.info)


class RuleList(RuleSet):
    """An ordered rule list that scores and fires like a :class:`RuleSet`.

    The first rule whose antecedent holds decides a user's score (the
    probability of the positive class); a user no rule captures gets the
    default probability, the intercept. At most one rule fires per user.
    Printed as ``IF ... THEN p=0.83 [0.79, 0.87] ELSE IF ... ELSE p=...``.

    Parameters
    ----------
    rules : list of ListRule
        In list order.
    default : float
        Probability for users no rule captures.
    default_interval : tuple of float
    default_captured : int
    literals : Literals, LiteralInfo, list of str or None
    n_literals : int, optional
    target : str, optional
        What "positive" means (e.g. ``"teacher score > 0.41 (median)"``).
    """

    def __init__(self, rules: list, default: float, default_interval: tuple = (float("nan"), float("nan")),
                 default_captured: int = 0, literals: Any = None, n_literals: int | None = None,
                 target: str = "positive class"):
        super().__init__(rules, default, literals, n_literals)
        self.default_interval = tuple(float(v) for v in default_interval)
        self.default_captured = int(default_captured)
        self.target = target

    @property
    def _list_rules(self) -> list[ListRule]:
        return cast(list[ListRule], self.rules)

    def __str__(self) -> str:
        lines = [f"P({self.target}):"]
        for k, r in enumerate(self._list_rules):
            lo, hi = r.interval
            key = "IF" if k == 0 else "ELSE IF"
            lines.append(f"{key} {r.text} THEN p={r.probability:.3f} [{lo:.3f}, {hi:.3f}]  (n={r.n_captured})")
        lo, hi = self.default_interval
        key = "ELSE" if self.rules else "ALWAYS"
        lines.append(f"{key} p={self.intercept:.3f} [{lo:.3f}, {hi:.3f}]  (n={self.default_captured})")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<RuleList: {len(self)} rules, max {self.max_literals} literals per rule>"

    @property
    def probabilities(self) -> np.ndarray:
        """Probability of each rule, in list order (the default not included)."""
        return np.array([r.probability for r in self._list_rules], dtype=np.float64)

    def to_dict(self) -> dict:
        """A JSON-ready dict. :meth:`RuleSet.from_dict` reads it as a plain
        RuleSet that scores the same; :meth:`RuleList.from_dict` restores the list."""
        d = super().to_dict()
        d["rule_list"] = {
            "target": self.target,
            "default_interval": list(self.default_interval),
            "default_captured": self.default_captured,
            "rules": [
                {"antecedent": formula_to_json(r.antecedent), "probability": r.probability,
                 "interval": list(r.interval), "n_captured": r.n_captured}
                for r in self._list_rules
            ],
        }
        return d

    @classmethod
    def from_dict(cls, d: dict) -> RuleSet:
        base = RuleSet.from_dict(d)
        extra = d.get("rule_list")
        if extra is None or cls is RuleSet:
            return base
        info = base.info
        rules = [
            ListRule(r.formula, r.weight, info, formula_from_json(e["antecedent"]), float(e["probability"]),
                     tuple(float(v) for v in e["interval"]), int(e["n_captured"]))
            for r, e in zip(cast(list[Rule], base.rules), extra["rules"])
        ]
        literals = base.literals if base.literals is not None else info
        return cls(rules, base.intercept, tuple(extra["default_interval"]), extra["default_captured"],
                   literals, target=extra["target"])


# --------------------------------------------------------------------------
# the posterior and its sampler


class _ListPosterior:
    """Log posterior of rule lists over fixed antecedents, and the MH sampler.

    Parameters
    ----------
    cover : ndarray of bool, shape (n_antecedents, n_rows)
        Or already packed by :func:`pack_rows` (uint64, one bitset per
        antecedent), which keeps memory at one bit per antecedent and row.
    cardinality : ndarray of int, shape (n_antecedents,)
    labels : ndarray of bool, shape (n_rows,)
    lam, eta : float
    alpha : ndarray of float, shape (2,)
        Dirichlet prior for (negative, positive).
    """

    def __init__(self, cover: np.ndarray, cardinality: np.ndarray, labels: np.ndarray,
                 lam: float, eta: float, alpha: np.ndarray):
        self.n_rows = labels.size
        self.cover = cover if cover.dtype == np.uint64 else pack_rows(cover)
        self.n_ante = self.cover.shape[0]
        self.notcover = ~self.cover
        self.card = np.asarray(cardinality, dtype=np.int64)
        n_words = self.cover.shape[1]
        self.full = pack_rows(np.ones((1, self.n_rows), dtype=bool))[0]
        self.ypos = pack_rows(labels[None, :])[0]
        self.lam, self.eta = float(lam), float(eta)
        a0, a1 = float(alpha[0]), float(alpha[1])
        k = np.arange(self.n_rows + 1, dtype=np.float64)
        # Dirichlet-multinomial per rule, as lookup tables over counts
        self.lg0 = gammaln(k + a0)
        self.lg1 = gammaln(k + a1)
        self.lgs = gammaln(k + a0 + a1)
        self.lconst = float(gammaln(a0 + a1) - gammaln(a0) - gammaln(a1))
        # list length: Poisson(lam) truncated to 0..|A|
        j = np.arange(self.n_ante + 1)
        logp = j * math.log(self.lam) - gammaln(j + 1)
        self.len_logz = float(np.logaddexp.reduce(logp))
        # cardinality: Poisson(eta) truncated to the cardinalities on offer
        self.max_card = int(self.card.max(initial=1))
        c = np.arange(self.max_card + 1)
        self.card_mass = np.exp(c * math.log(self.eta) - gammaln(c + 1))
        self.card_mass[0] = 0.0  # a rule has at least one literal
        self.n_card = np.bincount(self.card, minlength=self.max_card + 1)
        self.n_words = n_words

    # -- densities -------------------------------------------------------

    def log_prior(self, d: list[int]) -> float:
        """log p(d | A, lambda, eta) of the ordered list ``d``."""
        m = len(d)
        lp = m * math.log(self.lam) - math.lgamma(m + 1) - self.len_logz
        left = self.n_card.copy()
        for a in d:
            c = self.card[a]
            # mass of the cardinalities still on offer: the total minus that of the exhausted ones
            total = float(self.card_mass[left > 0].sum())
            lp += math.log(self.card_mass[c]) - math.log(total) - math.log(left[c])
            left[c] -= 1
        return lp

    def _suffix(self, d: list[int], start: int, rem_start: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Bitsets left and log-likelihood terms of the list from ``start`` on.

        Returns ``rem`` (rows not yet captured before each rule, and after the
        last; shape (m - start + 1, n_words)), the log-likelihood term of each
        rule from ``start`` and of the default (shape (m - start + 1,)), and
        the (n, n_pos) counts of the same.
        """
        idx = np.asarray(d[start:], dtype=np.int64)
        # rows still uncaptured before each rule: a running AND of the complements
        rem = np.empty((idx.size + 1, self.n_words), dtype=np.uint64)
        rem[0] = rem_start
        if idx.size:
            np.bitwise_and.accumulate(np.vstack([rem_start[None, :], self.notcover[idx]]), axis=0, out=rem)
            captured = np.empty_like(rem)
            np.bitwise_and(rem[:-1], self.cover[idx], out=captured[:-1])
            captured[-1] = rem[-1]
        else:
            captured = rem
        n = np.bitwise_count(captured).sum(axis=1, dtype=np.int64)
        n1 = np.bitwise_count(captured & self.ypos).sum(axis=1, dtype=np.int64)
        ll = self.lg1[n1] + self.lg0[n - n1] - self.lgs[n] + self.lconst
        return rem, ll, np.stack([n, n1], axis=1)

    def log_likelihood(self, d: list[int]) -> float:
        return float(self._suffix(d, 0, self.full)[1].sum())

    def log_posterior(self, d: list[int]) -> float:
        return self.log_likelihood(d) + self.log_prior(d)

    def counts(self, d: list[int]) -> np.ndarray:
        """(captured, captured positives) per rule, the default last; shape (m + 1, 2)."""
        return self._suffix(d, 0, self.full)[2]

    # -- proposals -------------------------------------------------------

    def _moves(self, m: int) -> tuple[float, float, float]:
        """Probabilities of (insert, delete, swap) from a list of length ``m``."""
        ok = (m < self.n_ante, m >= 1, m >= 2)
        k = sum(ok)
        return tuple(1.0 / k if o else 0.0 for o in ok)  # type: ignore[return-value]

    def sample_prior(self, rng: np.random.Generator) -> list[int]:
        """A list drawn from the prior (the generative model, without labels)."""
        j = np.arange(self.n_ante + 1)
        p = np.exp(j * math.log(self.lam) - gammaln(j + 1) - self.len_logz)
        m = int(rng.choice(j, p=p / p.sum()))
        left = self.n_card.copy()
        used = np.zeros(self.n_ante, dtype=bool)
        d: list[int] = []
        for _ in range(m):
            mass = self.card_mass * (left > 0)
            c = int(rng.choice(mass.size, p=mass / mass.sum()))
            options = np.flatnonzero((self.card == c) & ~used)
            a = int(options[rng.integers(options.size)])
            d.append(a)
            used[a] = True
            left[c] -= 1
        return d

    def run_chain(self, d0: list[int], n_steps: int, rng: np.random.Generator,
                  should_stop: Callable[[], bool] | None = None
                  ) -> tuple[list[tuple], np.ndarray, np.ndarray, int]:
        """Metropolis-Hastings from ``d0`` for ``n_steps`` steps.

        ``should_stop`` is asked every :data:`STEPS_PER_CHECK` steps; ``True``
        raises :class:`FitStopped`.

        Returns
        -------
        states : list of tuple
            The distinct states in the order the chain entered them.
        trace : ndarray of int, shape (n_steps,)
            Index into ``states`` of the state after each step.
        trace_lp : ndarray of float, shape (n_steps,)
            Log posterior after each step.
        accepted : int
        """
        d = list(d0)
        in_list = np.zeros(self.n_ante, dtype=bool)
        in_list[d] = True
        rem, ll, _ = self._suffix(d, 0, self.full)
        lp_prior = self.log_prior(d)
        lp = float(ll.sum()) + lp_prior
        states: list[tuple] = [tuple(d)]
        trace = np.empty(n_steps, dtype=np.int64)
        trace_lp = np.empty(n_steps, dtype=np.float64)
        accepted = 0
        u = rng.random((n_steps, 4))  # move, position, second position / antecedent, accept
        n_ante = self.n_ante
        for t in range(n_steps):
            if should_stop is not None and t % STEPS_PER_CHECK == 0 and should_stop():
                raise FitStopped(f"BayesianRuleList.fit was asked to stop at step {t} of a chain of {n_steps}")
            m = len(d)
            p_ins, p_del, p_swap = self._moves(m)
            r = u[t, 0]
            if r < p_ins:
                # insert an unused antecedent at one of m + 1 positions
                free = np.flatnonzero(~in_list)
                a = int(free[int(u[t, 2] * free.size)])
                i = int(u[t, 1] * (m + 1))
                new = d[:i] + [a] + d[i:]
                log_q = math.log(self._moves(m + 1)[1]) + math.log(n_ante - m) - math.log(p_ins)
            elif r < p_ins + p_del:
                i = int(u[t, 1] * m)
                new = d[:i] + d[i + 1:]
                log_q = math.log(self._moves(m - 1)[0]) - math.log(n_ante - m + 1) - math.log(p_del)
            else:
                # swap two distinct positions: symmetric, no correction
                i = int(u[t, 1] * m)
                j = int(u[t, 2] * (m - 1))
                j += j >= i
                i, j = min(i, j), max(i, j)
                new = list(d)
                new[i], new[j] = new[j], new[i]
                log_q = 0.0
            rem_new, ll_new, _ = self._suffix(new, i, rem[i])
            ll_total = float(ll[:i].sum() + ll_new.sum())
            lp_prior_new = self.log_prior(new)
            lp_new = ll_total + lp_prior_new
            log_accept = lp_new - lp + log_q
            if log_accept >= 0 or u[t, 3] < math.exp(log_accept):
                rem = np.concatenate([rem[:i], rem_new], axis=0)
                ll = np.concatenate([ll[:i], ll_new])
                if r < p_ins:
                    in_list[a] = True
                elif r < p_ins + p_del:
                    in_list[d[i]] = False
                d, lp = new, lp_new
                states.append(tuple(d))
                accepted += 1
            trace[t] = len(states) - 1
            trace_lp[t] = lp
        return states, trace, trace_lp, accepted


# --------------------------------------------------------------------------
# the student


class BayesianRuleList(RuleStudent):
    """Bayesian Rule List over literals (seed 001_2b6881e95d3bc907.txt).

    Learns an ordered list ``IF a_1 THEN p_1 ELSE IF a_2 ... ELSE p_0`` whose
    antecedents are conjunctions of literals or their negations (so a rule
    can say ``x <= t``), mined with FP-growth. See the module docstring for
    the model and the sampler.

    The seed's model is for class labels. Teacher scores with exactly two
    distinct values are used as labels (the larger value is the positive
    class). Real-valued teacher scores are binarized: the positive class is
    "score above its ``target_quantile`` quantile" (default the median); the
    threshold is kept in ``threshold_`` and ``binarized_`` is True. The
    student's scores are then the posterior predictive probability of that
    positive class, and :meth:`predict_label` classifies at 0.5 (arg-max).

    Parameters
    ----------
    list_length : float, default=3.0
        ``lambda``: prior expected number of rules (Poisson, truncated).
    cardinality : float, default=1.0
        ``eta``: prior expected literals per antecedent (Poisson, truncated).
    alpha : float or pair of float, default=1.0
        Dirichlet prior of each rule's (negative, positive) probability.
    min_support : float, default=0.05
        Minimum share of training users an antecedent must hold for (0, 1],
        or, as an int >= 1, a number of users.
    max_cardinality : int, default=2
        Maximum literals per antecedent.
    n_chains : int, default=3
    n_iterations : int, default=5000
        Metropolis-Hastings steps per chain; the first half of each chain is
        burn-in (``burn_in_``).
    target_quantile : float, default=0.5
        Quantile of real-valued teacher scores that splits the classes.
    credible_level : float, default=0.95
        Mass of the credible interval reported for each rule.
    max_antecedents : int, default=1000
        Most candidate antecedents. The seed keeps every frequent itemset;
        with hundreds of literals there are hundreds of thousands, whose
        coverage does not fit in memory. When mining finds more, the ones
        whose positive share differs most from the base rate (largest
        binomial z-score on the mining users) are kept. Memory then grows as
        ``max_antecedents`` bits per user.
    max_mining_users : int, default=10000
        Users antecedents are mined and screened on (a random subset when
        there are more; a share ``min_support`` is applied to them). The
        posterior is then sampled on all users.
    random_state : int or None, default=0

    Attributes
    ----------
    antecedents_ : list of tuple of int
        Mined antecedents, as items: ``j < n_literals`` is literal ``j``,
        ``n_literals + j`` is its negation.
    n_mined_ : int
        Frequent itemsets found before ``max_antecedents`` was applied (a
        lower bound when the screening below had to cut the items combined).
    n_mining_users_ : int
    list_ : list of int
        The point estimate: indices into ``antecedents_``, in list order.
    map_list_ : list of int
        The highest-posterior list met by any chain.
    point_estimate_fallback_ : bool
        True when no sampled list fell in the length/width window and the
        MAP list was taken instead.
    log_posterior_, map_log_posterior_ : float
    counts_ : ndarray of int, shape (len(list_) + 1, 2)
        (captured, captured positives) per rule, the default last.
    probabilities_ : ndarray of shape (len(list_) + 1,)
        Posterior predictive probability of the positive class per rule,
        the default last: ``(alpha_1 + N_j1) / (alpha_0 + alpha_1 + N_j)``.
    intervals_ : ndarray of shape (len(list_) + 1, 2)
        Central credible intervals at ``credible_level``.
    threshold_ : float or None
        Score threshold of the positive class when binarized, else None.
    binarized_ : bool
    labels_description_ : str
    acceptance_rate_ : ndarray of shape (n_chains,)
    burn_in_ : int
    mean_length_, mean_width_ : float
        Posterior means of list length and antecedent cardinality (after burn-in).
    rhat_ : float
        Gelman-Rubin statistic of the log posterior across chains (NaN for one chain).
    """

    def __init__(self, *, list_length: float = 3.0, cardinality: float = 1.0, alpha: float | tuple = 1.0,
                 min_support: float = 0.05, max_cardinality: int = 2, n_chains: int = 3,
                 n_iterations: int = 5000, target_quantile: float = 0.5, credible_level: float = 0.95,
                 max_antecedents: int = 1000, max_mining_users: int = 10_000, random_state: int | None = 0):
        self.list_length = list_length
        self.cardinality = cardinality
        self.alpha = alpha
        self.min_support = min_support
        self.max_cardinality = max_cardinality
        self.n_chains = n_chains
        self.n_iterations = n_iterations
        self.target_quantile = target_quantile
        self.credible_level = credible_level
        self.max_antecedents = max_antecedents
        self.max_mining_users = max_mining_users
        self.random_state = random_state

    # -- fitting -----------------------------------------------------------

    def _check_params(self) -> np.ndarray:
        """Check the hyper-parameters (``fit`` does; ``explain`` before any work); the Dirichlet prior as a pair."""
        check_real(self.list_length, "list_length", min_value=0.0, include_min=False)
        check_real(self.cardinality, "cardinality", min_value=0.0, include_min=False)
        alpha = np.broadcast_to(np.asarray(self.alpha, dtype=np.float64), (2,)).copy() \
            if np.ndim(self.alpha) <= 1 and np.size(self.alpha) in (1, 2) else None
        if alpha is None or not np.all(np.isfinite(alpha)) or np.any(alpha <= 0):
            raise InputError(f"alpha must be a positive number or a pair of them, got {self.alpha!r}")
        check_whole(self.max_cardinality, "max_cardinality", min_value=1)
        check_whole(self.max_antecedents, "max_antecedents", min_value=1)
        check_whole(self.max_mining_users, "max_mining_users", min_value=2)
        check_whole(self.n_chains, "n_chains", min_value=1)
        check_whole(self.n_iterations, "n_iterations", min_value=2)
        check_real(self.target_quantile, "target_quantile", min_value=0.0, max_value=1.0, include_min=False,
                   include_max=False)
        check_real(self.credible_level, "credible_level", min_value=0.0, max_value=1.0, include_min=False,
                   include_max=False)
        s = self.min_support
        if not (isinstance(s, (int, np.integer)) and not isinstance(s, bool) and s >= 1) and \
                not (isinstance(s, (float, np.floating)) and 0 < s <= 1):
            raise InputError(f"min_support must be a share in (0, 1] or a number of users >= 1, got {s!r}")
        check_random_state_seed(self.random_state)
        return alpha

    def _min_rows(self, n_rows: int) -> int:
        """``min_support`` as a number of users, of ``n_rows``."""
        s = self.min_support
        if isinstance(s, (int, np.integer)):
            return int(s)
        return max(1, int(math.ceil(s * n_rows)))

    def _labels(self, y: np.ndarray) -> np.ndarray:
        values = np.unique(y)
        if values.size == 2:
            self.threshold_ = None
            self.binarized_ = False
            self.labels_description_ = f"score = {values[1]:g}"
            return y == values[1]
        t = float(np.quantile(y, self.target_quantile))
        labels = y > t
        op = ">"
        if labels.all() or not labels.any():  # many ties at the quantile
            labels, op = y >= t, ">="
        self.threshold_ = t
        self.binarized_ = True
        self.labels_description_ = f"teacher score {op} {t:.4g} (quantile {self.target_quantile:g})"
        return labels

    def fit(self, X: ArrayLike, y: ArrayLike,
            progress: Callable[[FitProgress], Any] | None = None,
            should_stop: Callable[[], bool] | None = None) -> BayesianRuleList:
        """Mine antecedents and sample the posterior over rule lists.

        Parameters
        ----------
        X : array-like of bool, shape (n_users, n_literals)
            Literal matrix, e.g. ``literals.transform(seqs)``.
        y : array-like of shape (n_users,)
            Teacher scores (real: binarized at ``target_quantile``) or labels
            (two distinct values).
        progress : callable, optional
            Called once, after fitting, with a :class:`FitProgress`.
        should_stop : callable, optional
            Asked while mining and every :data:`STEPS_PER_CHECK` sampling steps;
            ``True`` raises :class:`FitStopped` (the posterior's summary needs
            whole chains, so there is nothing part way to keep).

        Returns
        -------
        self
        """
        from scipy.stats import beta as beta_dist

        start = time.perf_counter()
        alpha = self._check_params()
        Xb = check_binary_matrix(X)
        yv = check_target(y, Xb.shape[0])
        n_rows, n_lit = Xb.shape
        min_rows = self._min_rows(n_rows)
        labels = self._labels(yv)
        rng = np.random.default_rng(self.random_state)

        itemsets = self._mine(Xb, labels, min_rows, rng, should_stop)
        cover = _packed_cover(Xb, itemsets)
        card = np.array([len(s) for s in itemsets], dtype=np.int64)
        post = _ListPosterior(cover, card, labels, self.list_length, self.cardinality, alpha)

        n_iter = int(self.n_iterations)
        burn_in = n_iter // 2  # derived, not a knob: half of each chain
        states_all: list[tuple] = []
        idx_all, lp_all, chain_lp = [], [], []
        acc = np.empty(self.n_chains)
        for c in range(self.n_chains):
            d0 = post.sample_prior(rng)
            states, trace, trace_lp, accepted = post.run_chain(d0, n_iter, rng, should_stop)
            idx_all.append(trace[burn_in:] + len(states_all))
            lp_all.append(trace_lp[burn_in:])
            chain_lp.append(trace_lp[burn_in:])
            states_all.extend(states)
            acc[c] = accepted / n_iter
        idx = np.concatenate(idx_all)
        lps = np.concatenate(lp_all)

        # per distinct state: length, mean width, log posterior
        lengths = np.array([len(s) for s in states_all], dtype=np.int64)
        widths = np.array([card[list(s)].mean() if s else np.nan for s in states_all])
        pos, map_pos, self.point_estimate_fallback_, mean_len, mean_w = _point_estimate(
            lengths[idx], widths[idx], lps)
        point = list(states_all[idx[pos]])

        self.antecedents_ = itemsets
        self.list_ = point
        self.map_list_ = list(states_all[idx[map_pos]])
        self.log_posterior_ = float(lps[pos])
        self.map_log_posterior_ = float(lps[map_pos])
        counts = post.counts(point)
        self.counts_ = counts
        a0, a1 = alpha
        n, n1 = counts[:, 0].astype(np.float64), counts[:, 1].astype(np.float64)
        self.probabilities_ = (a1 + n1) / (a0 + a1 + n)
        tail = (1.0 - self.credible_level) / 2
        self.intervals_ = np.stack([
            beta_dist.ppf(tail, a1 + n1, a0 + n - n1),
            beta_dist.ppf(1 - tail, a1 + n1, a0 + n - n1),
        ], axis=1)
        self.acceptance_rate_ = acc
        self.burn_in_ = burn_in
        self.mean_length_ = mean_len
        self.mean_width_ = mean_w
        self.rhat_ = _rhat(np.stack(chain_lp)) if self.n_chains > 1 else float("nan")
        self.n_features_in_ = n_lit
        self.alpha_ = alpha
        self.seconds_ = time.perf_counter() - start
        self._report(progress, Xb, labels.astype(np.float64), self.seconds_)
        return self

    def _mine(self, Xb: np.ndarray, labels: np.ndarray, min_rows: int, rng: np.random.Generator,
              should_stop: Callable[[], bool] | None = None) -> list:
        """Candidate antecedents: frequent itemsets, bounded in number.

        Mined on at most ``max_mining_users`` users. When every combination
        of the frequent items could give more than ``50 * max_antecedents``
        itemsets, only the items of largest |z| (see below) are combined
        into itemsets of two or more, so that mining stays bounded; all
        frequent items remain candidates on their own. Of what is mined, the
        ``max_antecedents`` of largest |z| are kept, in mining order, where
        ``z = (share of positives among the users it holds for - base share)
        * sqrt(users) / sqrt(base share * (1 - base share))``.
        """
        n_rows, n_lit = Xb.shape
        if n_rows > self.max_mining_users:
            rows = np.sort(rng.choice(n_rows, int(self.max_mining_users), replace=False))
            Xs, ls = Xb[rows], labels[rows]
            # the support threshold as the same share of the mining users
            min_s = max(1, int(math.ceil(min_rows * rows.size / n_rows)))
        else:
            Xs, ls, min_s = Xb, labels, min_rows
        n_s = Xs.shape[0]
        self.n_mining_users_ = n_s
        items = item_matrix(Xs)
        group = np.concatenate([np.arange(n_lit), np.arange(n_lit)])
        support = items.sum(axis=0)
        frequent = np.flatnonzero((support >= min_s) & (support < n_s))
        base = float(ls.mean())
        spread = math.sqrt(max(base * (1.0 - base), 1e-12))

        def z_scores(sets: list) -> np.ndarray:
            out = np.empty(len(sets))
            for lo in range(0, len(sets), 256):  # bounded memory: 256 covers at a time
                if should_stop is not None and should_stop():
                    raise FitStopped("BayesianRuleList.fit was asked to stop while mining antecedents")
                chunk = sets[lo : lo + 256]
                cov = np.stack([items[:, list(s)].all(axis=1) for s in chunk])
                n_c = cov.sum(axis=1)
                k_c = cov @ ls.astype(np.int64)
                out[lo : lo + 256] = (k_c / np.maximum(n_c, 1) - base) * np.sqrt(n_c) / spread
            return out

        max_card = int(self.max_cardinality)
        budget = 50 * int(self.max_antecedents)
        n_combos = sum(math.comb(frequent.size, c) for c in range(2, max_card + 1))
        if n_combos <= budget:
            itemsets, _ = frequent_itemsets(items, min_s, max_card, exclusive=group)
        else:
            # combine only the m items of largest |z|, m the most that keeps combinations within budget
            z1 = np.abs(z_scores([(int(i),) for i in frequent]))
            m = 2
            while m < frequent.size and sum(math.comb(m + 1, c) for c in range(2, max_card + 1)) <= budget:
                m += 1
            top = np.sort(frequent[np.argsort(-z1, kind="stable")[:m]])
            combined, _ = frequent_itemsets(items[:, top], min_s, max_card, exclusive=group[top])
            singles = [(int(i),) for i in frequent]
            itemsets = singles + [tuple(int(top[i]) for i in s) for s in combined if len(s) > 1]
        self.n_mined_ = len(itemsets)
        if not itemsets:
            raise InputError(
                f"no antecedent holds for at least {min_s} of the {n_s} mining users "
                f"(min_support={self.min_support!r}); lower min_support"
            )
        if len(itemsets) > self.max_antecedents:
            z = np.abs(z_scores(itemsets))
            keep = np.sort(np.argsort(-z, kind="stable")[: int(self.max_antecedents)])
            itemsets = [itemsets[k] for k in keep]
        return itemsets

    # -- output ------------------------------------------------------------

    def _item_lit(self, item: int) -> Lit:
        p = self.n_features_in_
        return Lit(item) if item < p else Lit(item - p, True)

    def antecedent_formula(self, k: int) -> Formula:
        """Antecedent ``k`` of ``antecedents_`` as a formula.

        Parameters
        ----------
        k : int
            Index into ``antecedents_``.

        Returns
        -------
        Formula
        """
        lits = tuple(self._item_lit(i) for i in self.antecedents_[k])
        return lits[0] if len(lits) == 1 else And(lits)

    def rules(self, literals: Any = None) -> RuleList:
        """The point-estimate list as a :class:`RuleList` (a RuleSet).

        Parameters
        ----------
        literals : Literals, list of str or None
            Names the literals.

        Returns
        -------
        RuleList
            Scores every user with the probability of the rule that captures it.
        """
        self._check_fitted()
        info = literal_info(literals, self.n_features_in_)
        if info.n_literals != self.n_features_in_:
            raise InputError(f"{info.n_literals} literal names for {self.n_features_in_} literals")
        default = float(self.probabilities_[-1])
        out = []
        earlier: list[Formula] = []
        for pos, k in enumerate(self.list_):
            ante = simplify(self.antecedent_formula(k), info)
            # fires: this antecedent and none before it (negation in NNF)
            nots = [Or(tuple(~x for x in formula_literals(e))) for e in earlier]
            fires = simplify(And((ante, *nots)), info) if nots else ante
            earlier.append(ante)
            if fires == FALSE:
                continue  # an earlier rule captures all its users on any data
            if fires == TRUE:  # pragma: no cover - antecedents are never empty
                continue
            p = float(self.probabilities_[pos])
            out.append(ListRule(fires, p - default, info, ante, p, tuple(map(float, self.intervals_[pos])),
                                int(self.counts_[pos, 0])))
        return RuleList(out, default, tuple(map(float, self.intervals_[-1])), int(self.counts_[-1, 0]),
                        literals if literals is not None else info, self.n_features_in_,
                        target=self.labels_description_)

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Probability of the positive class for each row.

        Parameters
        ----------
        X : array-like of bool, shape (n_users, n_literals)

        Returns
        -------
        ndarray of float64, shape (n_users,)
        """
        self._check_fitted()
        return self.rules().score(check_binary_matrix(X))

    def predict_proba(self, X: ArrayLike) -> np.ndarray:
        """Class probabilities.

        Parameters
        ----------
        X : array-like of bool, shape (n_users, n_literals)

        Returns
        -------
        ndarray of float64, shape (n_users, 2)
            (negative, positive) for each row.
        """
        p = self.predict(X)
        return np.stack([1.0 - p, p], axis=1)

    def predict_label(self, X: ArrayLike) -> np.ndarray:
        """Class by arg-max of the probabilities (positive when p > 0.5).

        Parameters
        ----------
        X : array-like of bool, shape (n_users, n_literals)

        Returns
        -------
        ndarray of bool, shape (n_users,)
        """
        return self.predict(X) > 0.5


def _packed_cover(Xb: np.ndarray, itemsets: list, block: int = 64) -> np.ndarray:
    """Rows each antecedent holds for, as packed bitsets, a block of antecedents at a time.

    Items ``j < n_literals`` are literal ``j``, the rest negations. Never
    holds more than ``block`` unpacked rows of coverage at once.
    """
    n_rows, p = Xb.shape
    out = np.empty((len(itemsets), (n_rows + 63) // 64), dtype=np.uint64)
    for lo in range(0, len(itemsets), block):
        chunk = np.ones((min(block, len(itemsets) - lo), n_rows), dtype=bool)
        for k, s in enumerate(itemsets[lo : lo + block]):
            for item in s:
                chunk[k] &= Xb[:, item] if item < p else ~Xb[:, item - p]
        out[lo : lo + chunk.shape[0]] = pack_rows(chunk)
    return out


def _point_estimate(lengths: np.ndarray, widths: np.ndarray, log_post: np.ndarray
                    ) -> tuple[int, int, bool, float, float]:
    """The seed's point estimate among posterior samples.

    Parameters
    ----------
    lengths : ndarray of int, shape (n_samples,)
    widths : ndarray of float, shape (n_samples,)
        Mean antecedent cardinality of each sampled list (NaN when empty).
    log_post : ndarray of float, shape (n_samples,)

    Returns
    -------
    pos : int
        The sample of highest posterior among those whose length lies within
        floor/ceil of the mean length and whose width within floor/ceil of
        the mean width (an empty list passes the width test); the MAP sample
        when no sample qualifies.
    map_pos : int
    fallback : bool
        Whether the MAP sample was taken for lack of one in the window.
    mean_length, mean_width : float
    """
    mean_len = float(lengths.mean())
    mean_w = float(np.nanmean(widths)) if np.isfinite(widths).any() else 0.0
    in_window = (lengths >= math.floor(mean_len)) & (lengths <= math.ceil(mean_len)) & (
        np.isnan(widths) | ((widths >= math.floor(mean_w)) & (widths <= math.ceil(mean_w)))
    )
    map_pos = int(np.argmax(log_post))
    if not in_window.any():
        return map_pos, map_pos, True, mean_len, mean_w
    pos = int(np.flatnonzero(in_window)[np.argmax(log_post[in_window])])
    return pos, map_pos, False, mean_len, mean_w


def _rhat(chains: np.ndarray) -> float:
    """Gelman-Rubin potential scale reduction of a (n_chains, n_samples) trace."""
    m, n = chains.shape
    means = chains.mean(axis=1)
    b = n * means.var(ddof=1)
    w = chains.var(axis=1, ddof=1).mean()
    if w == 0:
        return 1.0 if b == 0 else float("inf")
    var = (n - 1) / n * w + b / n
    return float(np.sqrt(var / w))
