"""A family of planted scenarios for benchmarking stage 1 (issue 11).

Each scenario is a random event schema, random users and a score per user
built from a few planted statistics of the readable grammar (SEMANTICS.md):

* 2 to 6 categorical columns of 2 to 40 categories with skewed (Zipf-like)
  frequencies and per-user preferences, one of them sometimes with missing
  values; 1 to 3 skewed numerical columns (lognormal, gamma, Pareto-like),
  some with NaNs, at most one that can be negative; a datetime column with
  per-user event rates; heavy-tailed sequence lengths (1 to 300 events).
* 2 to 6 planted statistics of depth 1 to 4: counts, sums, means, maxima of
  a numerical column or counts / shares / occurrence of a category, with 0
  to 2 ``RetainBy``/``FilterBy`` filters, sometimes ``SortBy | Top(5)``,
  rarely ``GroupBy`` or ``Abs``; time statistics (``Within``, ``Recency``,
  ``Tenure``) in about a quarter of the scenarios once the engine has them.
* The score: each planted output through a threshold at a random quantile
  (or, one time in four, a clipped linear term) times a random weight,
  summed, plus Gaussian noise.

Planted statistics are evaluated with rudi_explain's own engine
(``Statistic.parse(text).evaluate(seqs)``); ``tests/test_planted.py`` checks
those values against a per-user pandas loop.

Use::

    from planted import make_scenario
    sc = make_scenario(0)
    seqs = sc.sequences()
    train, test = sc.train_sequences(), sc.test_sequences()
    sc.scores            # pandas Series indexed by user id
    sc.planted           # statistic texts; sc.outputs names the output of a vector one

The held-out split (``Scenario.is_test``) is the one that
``rx.explain(..., random_state=0, test_size=0.2)`` draws, so that explain's
held-out users are the scenario's (``bench_planted.py`` checks it).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

import rudi_explain as rx

__all__ = ["Scenario", "make_scenario", "time_templates", "SPLIT_SEED", "TEST_SIZE"]

#: The held-out split: explain()'s default random_state and test_size.
SPLIT_SEED = 0
TEST_SIZE = 0.2

_CATEGORICAL_NAMES = ("channel", "merchant", "country", "device", "card_type", "category", "status", "region")
_NUMERICAL_NAMES = ("amount", "duration", "quantity")
_SIGNED_NAME = "balance_change"
_REFERENCE_END = pd.Timestamp("2026-01-01")


@dataclass
class Scenario:
    """One planted scenario: events, a score per user and what was planted.

    Attributes
    ----------
    seed : int
    events : pandas.DataFrame
        One row per event: ``user_id``, ``ts`` (datetime), the categorical
        columns (strings, NaN for missing) and the numerical ones (float).
    categorical, numerical : list of str
    users : ndarray
        User ids in sorted order (the order of ``Sequences.users``).
    scores : pandas.Series
        The teacher's score of every user, indexed by user id (sorted).
    planted : list of str
        Texts of the planted statistics.
    outputs : list of str or None
        For a vector statistic (categorical selection, GroupBy), the output
        name that enters the score (e.g. ``"channel=ch3"``); None for a scalar.
    depths : list of int
    kinds : list of str
        'threshold' or 'linear', per planted statistic.
    thresholds : list of float
        The threshold of each 'threshold' term (NaN for 'linear').
    weights : list of float
    noise : float
        Standard deviation of the noise, relative to that of the signal.
    has_time : bool
        Whether a time statistic was planted.
    is_test : ndarray of bool
        The held-out users (20%), aligned with ``users``.
    """

    seed: int
    events: pd.DataFrame
    categorical: list[str]
    numerical: list[str]
    users: np.ndarray
    scores: pd.Series
    planted: list[str]
    outputs: list[str | None]
    depths: list[int]
    kinds: list[str]
    thresholds: list[float]
    weights: list[float]
    noise: float
    has_time: bool
    is_test: np.ndarray
    _seqs: rx.Sequences | None = field(default=None, repr=False)

    # ----------------------------------------------------------- sequences
    def sequences(self) -> rx.Sequences:
        """All users as Sequences (built once)."""
        if self._seqs is None:
            self._seqs = rx.Sequences(self.events, user="user_id", time="ts",
                                      categorical=self.categorical, numerical=self.numerical)
        return self._seqs

    @property
    def train_index(self) -> np.ndarray:
        """Positions of the training users in ``users``."""
        return np.flatnonzero(~self.is_test)

    @property
    def test_index(self) -> np.ndarray:
        """Positions of the held-out users in ``users``."""
        return np.flatnonzero(self.is_test)

    def train_sequences(self) -> rx.Sequences:
        return self.sequences().subset(self.train_index)

    def test_sequences(self) -> rx.Sequences:
        return self.sequences().subset(self.test_index)

    def planted_values(self, seqs: rx.Sequences | None = None) -> np.ndarray:
        """The planted outputs per user, shape (n_users, n_planted); NaN where undefined."""
        seqs = self.sequences() if seqs is None else seqs
        return np.column_stack([_output_values(rx.Statistic.parse(t), o, seqs)
                                for t, o in zip(self.planted, self.outputs)])

    def signal(self) -> np.ndarray:
        """The noiseless part of ``scores`` (users in sorted order), from the planted values."""
        return _signal(self.planted_values(), self.kinds, self.thresholds, self.weights)

    def summary(self) -> str:
        """One line per planted statistic, for printing."""
        lines = []
        for t, o, d, k, th, w in zip(self.planted, self.outputs, self.depths, self.kinds, self.thresholds,
                                     self.weights):
            term = f"> {th:.4g}" if k == "threshold" else "linear"
            lines.append(f"  d{d} {w:+.2f} [{term}] {t}" + (f"  [{o}]" if o else ""))
        return "\n".join(lines)


def _output_values(stat: rx.Statistic, output: str | None, seqs: rx.Sequences) -> np.ndarray:
    values = stat.evaluate(seqs)
    if output is None:
        return values.reshape(len(values))
    return values[:, stat.output_names(seqs).index(output)]


# ------------------------------------------------------------------ events
def _skewed_probabilities(rng: np.random.Generator, k: int) -> np.ndarray:
    """Zipf-like frequencies in a random order (so sorted names are not sorted frequencies)."""
    p = 1.0 / np.arange(1, k + 1) ** rng.uniform(0.6, 1.5)
    return rng.permutation(p / p.sum())


def _draw_categories(rng: np.random.Generator, p: np.ndarray, n_users: int, event_user: np.ndarray) -> np.ndarray:
    """Category codes per event, with per-user preferences around the global frequencies."""
    tau = rng.uniform(0.5, 1.5)
    logits = np.log(p)[None, :] + tau * rng.standard_normal((n_users, len(p)))
    pu = np.exp(logits - logits.max(axis=1, keepdims=True))
    cum = np.cumsum(pu / pu.sum(axis=1, keepdims=True), axis=1)
    u = rng.random(len(event_user))
    codes = (u[:, None] > cum[event_user]).sum(axis=1)
    return np.minimum(codes, len(p) - 1)


def _make_events(rng: np.random.Generator, n_users: int) -> tuple[pd.DataFrame, list[str], list[str], str | None]:
    lengths = np.clip(np.round(rng.lognormal(np.log(rng.uniform(8, 20)), rng.uniform(0.8, 1.2), n_users)),
                      1, 300).astype(np.int64)
    event_user = np.repeat(np.arange(n_users), lengths)
    n_events = len(event_user)
    offsets = np.concatenate([[0], np.cumsum(lengths)])

    # Time: each user is active from a start in the year to an end (some stop early: recency and
    # tenure vary), with events at random moments in between.
    start = rng.uniform(0, 365, n_users)
    end = start + (365 - start) * rng.beta(2.0, 0.7, n_users)
    u = rng.random(n_events)
    u = u[np.lexsort((u, event_user))]  # sorted within each user (event_user is sorted)
    u[offsets[:-1]] = 0.0  # the first event opens the span
    days = start[event_user] + u * (end - start)[event_user]
    ts = _REFERENCE_END - pd.Timedelta(days=365) + pd.to_timedelta(np.round(days * 86400), unit="s")

    ids = rng.choice(np.arange(100_000, 1_000_000), n_users, replace=False)
    data: dict[str, object] = {"user_id": ids[event_user], "ts": ts}

    n_cat = int(rng.integers(2, 7))
    categorical = [str(c) for c in rng.choice(_CATEGORICAL_NAMES, n_cat, replace=False)]
    codes_of: dict[str, np.ndarray] = {}
    for j, col in enumerate(categorical):
        k = int(np.clip(np.round(np.exp(rng.uniform(np.log(2), np.log(40)))), 2, 40))
        codes = _draw_categories(rng, _skewed_probabilities(rng, k), n_users, event_user)
        codes_of[col] = codes
        names = np.array([f"{col[:2]}{i}" for i in range(k)], dtype=object)
        values = names[codes]
        if j == 0 and rng.random() < 0.3:  # a column with missing values (its own category, <NA>)
            values = values.copy()
            values[rng.random(n_events) < rng.uniform(0.02, 0.08)] = np.nan
        data[col] = values

    n_num = int(rng.integers(1, 4))
    numerical = list(_NUMERICAL_NAMES[:n_num])
    signed = None
    if rng.random() < 0.3:
        numerical[-1] = signed = _SIGNED_NAME
    level = rng.normal(0, 0.6, n_users)  # users who spend more, spend more in every column
    driver = codes_of[categorical[0]]
    for col in numerical:
        # Values depend on the user and on the first categorical column (a merchant's usual amounts).
        effect = rng.normal(0, 0.7, driver.max() + 1)[driver]
        kind = rng.choice(["lognormal", "gamma", "pareto"])
        if kind == "lognormal":
            x = np.exp(rng.normal(2.5 + level[event_user] + effect, rng.uniform(0.6, 1.2)))
        elif kind == "gamma":
            x = rng.gamma(rng.uniform(0.5, 2.0), 1.0, n_events) * np.exp(1 + level[event_user] + effect)
        else:
            x = (rng.pareto(rng.uniform(1.5, 3.0), n_events) + 0.1) * np.exp(2 + level[event_user] + effect)
        if col == signed:
            p_neg = 1 / (1 + np.exp(-rng.normal(-0.8, 1.0, n_users)))
            x = np.where(rng.random(n_events) < p_neg[event_user], -x, x)
        x = np.round(x, 2)
        if rng.random() < 0.5:
            x[rng.random(n_events) < rng.uniform(0.01, 0.15)] = np.nan
        data[col] = x

    events = pd.DataFrame(data)
    # Rows arrive shuffled, as from a database; Sequences sorts by (user, time).
    events = events.iloc[rng.permutation(n_events)].reset_index(drop=True)
    return events, categorical, numerical, signed


# ---------------------------------------------------------------- grammar
@functools.lru_cache(maxsize=1)
def _probe_sequences() -> rx.Sequences:
    df = pd.DataFrame({"user_id": [1, 1, 2], "ts": pd.to_datetime(["2025-01-01", "2025-01-05", "2025-01-03"]),
                       "g": ["a", "b", "a"], "x": [1.0, 2.0, 3.0]})
    return rx.Sequences(df, categorical=["g"], numerical=["x"])


def _works(text: str) -> bool:
    try:
        stat = rx.Statistic.parse(text)
        stat.evaluate(_probe_sequences())
        return True
    except Exception:  # an operator the engine does not have (yet)
        return False


@functools.lru_cache(maxsize=1)
def _count_head() -> str:
    """``Select(*)`` where the engine has it (Count ignores the selection anyway)."""
    return "Select(*)" if _works("Select(*) | Count") else "Select({x})"


@functools.lru_cache(maxsize=1)
def time_templates() -> tuple[tuple[str, int], ...]:
    """Time statistics the engine can evaluate now: (template, depth).

    HOOK for the time operators (issue 11, item 2): another change adds
    ``Within(kd)`` (events in the last k days before the reference time) and
    the ``Recency`` / ``Tenure`` aggregations (days since the last / first
    event). Until they parse and evaluate, this is empty and no scenario
    plants a time statistic. Placeholders: ``{x}`` a numerical column,
    ``{g}={v}`` a filter, ``{k}`` a window in days.
    """
    head = "Select(*)" if _works("Select(*) | Count") else "Select({x})"
    candidates = [
        ("{head} | Recency", 1),
        ("{head} | Tenure", 1),
        ("{head} | MeanGap", 1),
        ("{head} | Within({k}d) | Count", 2),
        ("Select({x}) | Within({k}d) | Sum", 2),
        ("{head} | RetainBy({g}={v}) | Recency", 2),
        ("{head} | RetainBy({g}={v}) | Within({k}d) | Count", 3),
        ("Select({x}) | RetainBy({g}={v}) | Within({k}d) | Sum", 3),
        ("Select({x}) | RetainBy({g}={v}) | Within({k}d) | Max", 3),
    ]
    out = []
    for template, depth in candidates:
        template = template.replace("{head}", head)
        if _works(template.format(x="x", g="g", v="a", k=7)):
            out.append((template, depth))
    return tuple(out)


class _Grammar:
    """Draws readable statistics for one schema."""

    def __init__(self, rng: np.random.Generator, events: pd.DataFrame, categorical: list[str],
                 numerical: list[str], signed: str | None):
        self.rng = rng
        self.categorical = categorical
        self.numerical = numerical
        self.signed = signed
        n = len(events)
        self.freq = {c: events[c].fillna("<NA>").value_counts() / n for c in categorical}

    def value(self, column: str, low: float = 0.03, high: float = 0.7) -> str | None:
        """A category of ``column`` with a global frequency in [low, high] (weighted by frequency)."""
        f = self.freq[column]
        f = f[(f >= low) & (f <= high) & (f.index != "<NA>")]
        if len(f) == 0:
            return None
        return str(self.rng.choice(f.index.to_numpy(), p=(f / f.sum()).to_numpy()))

    def filters(self, n: int, exclude: set[str]) -> list[str] | None:
        columns = [c for c in self.categorical if c not in exclude]
        if len(columns) < n:
            return None
        out = []
        for col in self.rng.choice(columns, n, replace=False):
            if self.rng.random() < 0.75:
                v = self.value(col, 0.03, 0.7)
                op = "RetainBy"
            else:  # dropping a category only matters if it is frequent enough
                v = self.value(col, 0.08, 0.6)
                op = "FilterBy"
            if v is None:
                return None
            out.append(f"{op}({col}={_q(v)})")
        return out

    def draw(self, depth: int, time_ok: bool) -> tuple[str, str | None, int] | None:
        """A readable statistic of exactly ``depth``: (text, output or None, depth), or None to retry."""
        rng = self.rng
        if time_ok:
            templates = [t for t in time_templates() if t[1] <= depth] or list(time_templates())
            template, d = templates[int(rng.integers(len(templates)))]
            g = self.categorical[int(rng.integers(len(self.categorical)))]
            v = self.value(g, 0.05, 0.7)
            if v is None and "{g}" in template:
                return None
            text = template.format(x=self.numerical[0], g=g, v=_q(v) if v else "", k=int(rng.choice([7, 30])))
            return text, None, d
        categorical_selection = rng.random() < 0.3
        slots = depth - 1
        # Row-operator layouts for the slots before the aggregation; GroupBy and Abs are rare.
        layouts, p = {0: ([("",)], [1.0]),
                      1: ([("f",), ("g",), ("a",)], [0.88, 0.06, 0.06]),
                      2: ([("f", "f"), ("st",), ("f", "g"), ("f", "a")], [0.5, 0.4, 0.05, 0.05]),
                      3: ([("f", "st"), ("f", "f", "g"), ("f", "f", "a")], [0.9, 0.05, 0.05])}[slots]
        layout = layouts[int(rng.choice(len(layouts), p=p))]
        if "a" in layout and (categorical_selection or self.signed is None):
            return None
        n_filters = layout.count("f")
        if categorical_selection:
            selected = self.categorical[int(rng.integers(len(self.categorical)))]
            output_value = self.value(selected, 0.03, 0.6)
            if output_value is None:
                return None
            output = f"{selected}={output_value}"
        else:
            selected = self.signed if "a" in layout else self.numerical[int(rng.integers(len(self.numerical)))]
            output = None
        filters = self.filters(n_filters, {selected} if categorical_selection else set())
        if filters is None:
            return None
        ops = list(filters)
        sort_column = None
        if "st" in layout:
            sort_column = self.numerical[int(rng.integers(len(self.numerical)))]
            direction = "desc" if rng.random() < 0.75 else "asc"
            ops += [f"SortBy({sort_column}, {direction})", "Top(5)"]
        if "a" in layout:
            ops.append("Abs")
        group = None
        if "g" in layout:
            fixed = {f.split("(")[1].split("=")[0] for f in filters if f.startswith("RetainBy")}
            choices = [c for c in self.categorical if c != selected and c not in fixed and len(self.freq[c]) <= 8]
            if not choices:
                return None
            group = choices[int(rng.integers(len(choices)))]
            gv = self.value(group, 0.1, 0.9)
            if gv is None:
                return None
            ops.append(f"GroupBy({group})")
            output = f"{output}, {group}={gv}" if output else f"{group}={gv}"
        # The aggregation: what an analyst would compute.
        if categorical_selection:
            agg = str(rng.choice(["Sum", "Mean", "Max"], p=[0.45, 0.4, 0.15]))
        else:
            aggs, p = ["Sum", "Mean", "Max", "Min", "Count", "Std"], [0.3, 0.25, 0.2, 0.08, 0.12, 0.05]
            agg = str(rng.choice(aggs, p=p))
            if sort_column is not None and agg == "Count":
                agg = "Sum"  # Count after Top(5) is just min(5, n)
            if sort_column == selected and agg in ("Max", "Min"):
                agg = "Mean"  # the extreme of the top 5 by itself is the extreme
            if agg == "Count" and "a" in layout:
                agg = "Sum"
        head = _count_head().format(x=selected) if agg == "Count" else f"Select({selected})"
        text = " | ".join([head, *ops, agg])
        return text, output, depth


def _q(value: str) -> str:
    from rudi_explain.statistics.operators import quote

    return quote(value)


# ---------------------------------------------------------------- scenario
def _split(n_users: int) -> np.ndarray:
    """explain()'s held-out users for random_state=SPLIT_SEED, test_size=TEST_SIZE."""
    rng = np.random.default_rng(SPLIT_SEED)
    n_test = int(round(n_users * TEST_SIZE))
    is_test = np.zeros(n_users, dtype=bool)
    is_test[rng.permutation(n_users)[:n_test]] = True
    return is_test


def _signal(values: np.ndarray, kinds: list[str], thresholds: list[float], weights: list[float]) -> np.ndarray:
    """The noiseless score: weighted threshold indicators (false where undefined) and clipped linear terms."""
    signal = np.zeros(len(values))
    for v, kind, t, w in zip(values.T, kinds, thresholds, weights):
        if kind == "threshold":
            signal += w * np.where(np.isfinite(v), v > t, False)
        else:
            lo, hi = np.nanquantile(v, [0.01, 0.99])
            z = np.clip(v, lo, hi)
            z = (z - np.nanmean(z)) / (np.nanstd(z) or 1.0)
            signal += w * np.nan_to_num(z, nan=0.0) / 2  # a unit step is about two standard deviations
    return signal


def _ranks(x: np.ndarray) -> np.ndarray:
    return pd.Series(x).rank(na_option="bottom").to_numpy()


def make_scenario(seed: int, n_users: int | None = None, time_share: float = 0.25) -> Scenario:
    """Draw one planted scenario.

    Parameters
    ----------
    seed : int
        Seeds every random step: the same seed gives the same scenario.
    n_users : int, optional
        Number of users; default drawn in [3000, 5000].
    time_share : float, default=0.25
        Share of scenarios that plant one time statistic (only when the
        engine has the time operators: see :func:`time_templates`).

    Returns
    -------
    Scenario
    """
    rng = np.random.default_rng([seed, 11])
    n_users = int(rng.integers(3000, 5001)) if n_users is None else int(n_users)
    if n_users < 50:
        raise ValueError(f"n_users must be at least 50, got {n_users}")
    events, categorical, numerical, signed = _make_events(rng, n_users)
    seqs = rx.Sequences(events, user="user_id", time="ts", categorical=categorical, numerical=numerical)
    grammar = _Grammar(rng, events, categorical, numerical, signed)
    has_time = bool(time_templates()) and rng.random() < time_share

    n_planted = int(rng.integers(2, 7))
    planted: list[tuple[str, str | None, int]] = []
    values: list[np.ndarray] = []
    keys: set[tuple] = set()
    attempts = 0
    target_depth, tries = int(rng.integers(1, 5)), 0
    while len(planted) < n_planted and attempts < 600:
        attempts += 1
        # Keep the drawn depth for a while: deep statistics fail the checks below more often, and
        # redrawing the depth at every failure would plant fewer of them.
        tries += 1
        if tries > 40:
            target_depth, tries = int(rng.integers(1, 5)), 0
        time_now = has_time and not planted  # the time statistic, when there is one, comes first
        drawn = grammar.draw(target_depth, time_now)
        if drawn is None:
            continue
        text, output, depth = drawn
        try:
            stat = rx.Statistic.parse(text).validate(seqs)
            v = _output_values(stat, output, seqs)
        except (ValueError, KeyError):
            continue
        if stat.key in keys or stat.depth != depth:
            continue
        defined = np.isfinite(v)
        # Informative: defined for most users, not nearly constant, not a copy of another planted one.
        if defined.mean() < 0.5 or len(np.unique(v[defined])) < 3:
            continue
        if np.mean(v[defined] == np.median(v[defined])) > 0.8:
            continue
        if any(abs(np.corrcoef(_ranks(v), _ranks(w))[0, 1]) > 0.9 for w in values):
            continue
        keys.add(stat.key)
        planted.append((text, output, depth))
        values.append(v)
        target_depth, tries = int(rng.integers(1, 5)), 0
    if len(planted) < 2:
        raise RuntimeError(f"scenario {seed}: could not plant two informative statistics in {attempts} draws")

    kinds, thresholds, weights = [], [], []
    for v in values:
        weights.append(float(rng.choice([-1, 1]) * rng.uniform(0.5, 1.5)))
        defined = np.isfinite(v)
        if rng.random() < 0.75:
            # A threshold at a random quantile that leaves >= 10% of all users on each side.
            for _ in range(20):
                t = float(np.quantile(v[defined], rng.uniform(0.2, 0.8)))
                if 0.1 <= np.mean(np.where(defined, v > t, False)) <= 0.9:
                    break
            else:
                t = float(np.median(v[defined]))
            kinds.append("threshold")
            thresholds.append(t)
        else:
            kinds.append("linear")
            thresholds.append(float("nan"))
    signal = _signal(np.column_stack(values), kinds, thresholds, weights)
    noise = float(rng.uniform(0.05, 0.25))
    scores = signal + noise * (signal.std() or 1.0) * rng.standard_normal(n_users)
    scenario = Scenario(
        seed=seed, events=events, categorical=categorical, numerical=numerical, users=seqs.users,
        scores=pd.Series(scores, index=pd.Index(seqs.users, name="user_id"), name="score"),
        planted=[p[0] for p in planted], outputs=[p[1] for p in planted], depths=[p[2] for p in planted],
        kinds=kinds, thresholds=thresholds, weights=weights, noise=noise, has_time=has_time,
        is_test=_split(n_users),
    )
    scenario._seqs = seqs
    return scenario


if __name__ == "__main__":  # a quick look: python benchmarks/planted.py [n]
    import sys
    import time

    for s in range(int(sys.argv[1]) if len(sys.argv) > 1 else 3):
        t = time.perf_counter()
        sc = make_scenario(s)
        print(f"scenario {s}: {len(sc.users):,} users, {len(sc.events):,} events, categorical "
              f"{[(c, sc.events[c].nunique()) for c in sc.categorical]}, numerical {sc.numerical}, "
              f"noise {sc.noise:.2f}, {time.perf_counter() - t:.1f} s")
        print(sc.summary())
