"""The practitioner's peers for stage 1: featuretools DFS + CART / FIGS / RuleFit.

What an analyst without rudi-explain does in a few seconds: Deep Feature
Synthesis (featuretools, ``max_depth=2``, where-clauses on the most frequent
values of every categorical column) turns the events into a per-user table
of aggregates, and an interpretable model is fitted on the training users:

* CART: ``sklearn.tree.DecisionTreeRegressor(max_leaf_nodes=20)``;
* FIGS: ``imodels.FIGSRegressor(max_rules=20)``;
* RuleFit: ``imodels.RuleFitRegressor(max_rules=20)``.

Reported per model: held-out fidelity (``rudi_explain.metrics.fidelity`` on
the held-out users), held-out correlation, seconds, and the DFS features the
fitted model uses (for recovery comparisons: a planted statistic counts as
named by a peer when a feature it uses correlates with it at |r| >= 0.99).

featuretools and imodels are benchmark-only: they live in ``.venv-peers``
(``make peers-env``), never in the project's dependencies. Run inside it::

    .venv-peers/bin/python benchmarks/peers.py --seed 0 [--users 3000]

or from Python (``sys.path`` holding ``benchmarks/``)::

    from peers import dfs_features, run_peers
    features, info = dfs_features(sc.events, sc.categorical, sc.numerical, sc.users, train_users)
    results = run_peers(features, sc.scores.to_numpy(), sc.is_test)
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from rudi_explain import metrics

__all__ = ["DFS_DEFAULTS", "PeerResult", "dfs_features", "fit_peer", "run_peers", "PEERS"]

#: DFS settings: the primitives a practitioner reaches for first.
DFS_DEFAULTS: dict = {
    "max_depth": 2,
    "agg_primitives": ["count", "sum", "mean", "max", "min", "std", "num_unique", "mode",
                       "time_since_last", "time_since_first", "avg_time_between"],
    "where_primitives": ["count", "sum", "mean", "max", "min"],
    "trans_primitives": [],
    # Where-clauses on the most frequent values of each categorical column (featuretools'
    # ``add_interesting_values``), counted on the training users' events.
    "max_interesting_values": 10,
}

PEERS = ("cart", "figs", "rulefit")


@dataclass
class PeerResult:
    """One peer's figures on one scenario.

    Attributes
    ----------
    name : str
    fidelity_test : float
        Pairwise fidelity to the teacher on the held-out users.
    r_test : float
        Pearson correlation with the teacher on the held-out users.
    seconds : float
        Fitting time (the DFS time is reported separately).
    features : list of str
        DFS features the fitted model uses.
    n_rules : int
        Leaves (CART), splits (FIGS), or rules and linear terms with a non-zero weight (RuleFit).
    """

    name: str
    fidelity_test: float
    r_test: float
    seconds: float
    features: list[str] = field(default_factory=list)
    n_rules: int = 0
    #: Its scores of the held-out users (for paired comparisons: bench_real's standard errors).
    predictions: np.ndarray | None = field(default=None, repr=False, compare=False)


def dfs_features(events: pd.DataFrame, categorical: list[str], numerical: list[str], users: np.ndarray,
                 train_users: np.ndarray | None = None, user: str = "user_id", time: str = "ts",
                 **settings) -> tuple[pd.DataFrame, dict]:
    """A per-user feature table by featuretools' Deep Feature Synthesis.

    Parameters
    ----------
    events : DataFrame
        One row per event.
    categorical, numerical : list of str
    users : array
        User ids, in the order the rows of the result follow.
    train_users : array, optional
        Users whose events choose the interesting values (the where-clauses);
        all users when omitted. No score is used, so no target leaks.
    user, time : str
        Column names.
    **settings
        Overrides of :data:`DFS_DEFAULTS`.

    Returns
    -------
    features : DataFrame of float, indexed by user id in the order of ``users``
        Categorical outputs (``MODE``) one-hot encoded; NaN where undefined.
    info : dict
        ``seconds``, ``n_features`` and the settings used.
    """
    import featuretools as ft  # benchmark-only dependency: .venv-peers

    cfg = {**DFS_DEFAULTS, **settings}
    t0 = time_now()
    ev = events[[user, time, *categorical, *numerical]].copy()
    ev.insert(0, "event_id", np.arange(len(ev)))
    for c in categorical:  # a missing category is a category of its own, as in rudi_explain
        ev[c] = ev[c].astype("string").fillna("<NA>").astype("category")
    es = ft.EntitySet("planted")
    es.add_dataframe(dataframe_name="events", dataframe=ev, index="event_id", time_index=time,
                     logical_types={**{c: "Categorical" for c in categorical},
                                    **{c: "Double" for c in numerical}})
    es.normalize_dataframe(base_dataframe_name="events", new_dataframe_name="users", index=user)
    source = ev if train_users is None else ev[ev[user].isin(train_users)]
    k = cfg["max_interesting_values"]
    values = {c: [v for v in source[c].value_counts().index[:k]] for c in categorical}
    es.add_interesting_values(dataframe_name="events", values=values)
    # Time since the last / first event at the latest event in the data (rudi_explain's reference).
    cutoff = pd.DataFrame({user: users, "time": ev[time].max() + pd.Timedelta(seconds=1)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # featuretools warns about unused primitives, dtypes, ...
        matrix, defs = ft.dfs(entityset=es, target_dataframe_name="users", cutoff_time=cutoff,
                              agg_primitives=cfg["agg_primitives"], where_primitives=cfg["where_primitives"],
                              trans_primitives=cfg["trans_primitives"], max_depth=cfg["max_depth"],
                              verbose=False)
        matrix, defs = ft.encode_features(matrix, defs, top_n=5, include_unknown=False)
    matrix = matrix.reindex(users)
    features = matrix.apply(pd.to_numeric, errors="coerce").astype(float)
    features = features.replace([np.inf, -np.inf], np.nan)
    return features, {"seconds": time_now() - t0, "n_features": features.shape[1],
                      "settings": {k: v for k, v in cfg.items()}}


def time_now() -> float:
    return time.perf_counter()


def _figs_features(model, names: list[str]) -> list[str]:
    used = set()
    stack = list(model.trees_)
    while stack:
        node = stack.pop()
        if node is None:
            continue
        if getattr(node, "left", None) is not None and node.feature is not None:
            used.add(names[node.feature])
        stack += [getattr(node, "left", None), getattr(node, "right", None)]
    return sorted(used)


def _rulefit_features(model, names: list[str]) -> tuple[list[str], int]:
    """Features named by the rules (and linear terms) with a non-zero weight."""
    import re

    used, n = set(), 0
    for rule, coef in zip(model.rules_without_feature_names_, model.coef[-len(model.rules_without_feature_names_):]
                          if hasattr(model, "coef") else []):
        if coef == 0:
            continue
        n += 1
        for j in re.findall(r"X_(\d+)", rule.rule if hasattr(rule, "rule") else str(rule)):
            used.add(names[int(j)])
    linear = getattr(model, "coef", None)
    if linear is not None and getattr(model, "include_linear", False):
        for j, c in enumerate(np.asarray(linear)[: len(names)]):
            if c != 0:  # a linear term counts as a rule: one weight on one feature
                used.add(names[j])
                n += 1
    return sorted(used), n


def fit_peer(name: str, X_train: np.ndarray, y_train: np.ndarray, names: list[str],
             random_state: int = 0, n_rules: int = 20):
    """Fit one peer on the training users.

    Parameters
    ----------
    name : {'cart', 'figs', 'rulefit'}
    X_train : array of shape (n_train, n_features)
        NaN allowed for CART (sklearn's trees route missing values); FIGS and
        RuleFit need a filled matrix (see :func:`run_peers`).
    y_train : array of shape (n_train,)
    names : list of str
        Feature names.
    random_state : int
    n_rules : int, default=20
        Leaves (CART), rules (FIGS, RuleFit).

    Returns
    -------
    model, features used (list of str), number of rules
    """
    if name == "cart":
        from sklearn.tree import DecisionTreeRegressor

        model = DecisionTreeRegressor(max_leaf_nodes=n_rules, random_state=random_state).fit(X_train, y_train)
        f = model.tree_.feature
        return model, sorted({names[j] for j in f[f >= 0]}), int(model.get_n_leaves())
    if name == "figs":
        from imodels import FIGSRegressor

        model = FIGSRegressor(max_rules=n_rules, random_state=random_state).fit(X_train, y_train)
        return model, _figs_features(model, names), int(model.complexity_)
    if name == "rulefit":
        from imodels import RuleFitRegressor

        model = RuleFitRegressor(max_rules=n_rules, random_state=random_state).fit(X_train, y_train)
        used, n = _rulefit_features(model, names)
        return model, used, n
    raise ValueError(f"unknown peer {name!r}; peers are {PEERS}")


def run_peers(features: pd.DataFrame, scores: np.ndarray, is_test: np.ndarray, peers=PEERS,
              random_state: int = 0, n_rules: int = 20) -> dict[str, PeerResult]:
    """Fit every peer on the training users and score it on the held-out ones.

    Parameters
    ----------
    features : DataFrame of shape (n_users, n_features)
        From :func:`dfs_features`, rows aligned with ``scores``.
    scores : array of shape (n_users,)
        The teacher's scores.
    is_test : array of bool, shape (n_users,)
        The held-out users.
    peers : iterable of str
    random_state, n_rules : int

    Returns
    -------
    dict of str to PeerResult
    """
    scores = np.asarray(scores, dtype=float)
    is_test = np.asarray(is_test, dtype=bool)
    if len(features) != len(scores) or len(is_test) != len(scores):
        raise ValueError(f"features ({len(features)} rows), scores ({len(scores)}) and is_test "
                         f"({len(is_test)}) must line up user by user")
    names = [str(c) for c in features.columns]
    X = features.to_numpy(dtype=float)
    train = ~is_test
    # FIGS and RuleFit need a filled matrix: medians of the training users (0 for an all-missing feature).
    medians = np.nan_to_num(np.nanmedian(np.where(train[:, None], X, np.nan), axis=0), nan=0.0) \
        if X.size else np.zeros(X.shape[1])
    X_filled = np.where(np.isnan(X), medians, X)
    out = {}
    for name in peers:
        data = X if name == "cart" else X_filled
        t0 = time_now()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model, used, n = fit_peer(name, data[train], scores[train], names, random_state, n_rules)
            pred = np.asarray(model.predict(data[is_test]), dtype=float).reshape(-1)
        seconds = time_now() - t0
        r = float(np.corrcoef(pred, scores[is_test])[0, 1]) if np.ptp(pred) > 0 else 0.0
        out[name] = PeerResult(name, metrics.fidelity(scores[is_test], pred), r, seconds, used, n, pred)
    return out


def main(argv: list[str] | None = None) -> None:
    import argparse
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from planted import make_scenario

    parser = argparse.ArgumentParser(description="DFS + CART/FIGS/RuleFit on one planted scenario")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--users", type=int, default=None, help="users (default: the scenario's 3000-5000)")
    parser.add_argument("--peers", default=",".join(PEERS))
    args = parser.parse_args(argv)
    sc = make_scenario(args.seed, n_users=args.users)
    print(f"scenario {args.seed}: {len(sc.users):,} users, {len(sc.events):,} events")
    print(sc.summary())
    features, info = dfs_features(sc.events, sc.categorical, sc.numerical, sc.users,
                                  train_users=sc.users[~sc.is_test])
    print(f"DFS: {info['n_features']} features in {info['seconds']:.1f} s")
    for name, res in run_peers(features, sc.scores.to_numpy(), sc.is_test, peers=args.peers.split(",")).items():
        print(f"{name:8s} fidelity {res.fidelity_test:.3f}  r {res.r_test:.3f}  {res.seconds:6.1f} s  "
              f"{res.n_rules} rules, {len(res.features)} features")
        for f in res.features[:12]:
            print(f"           {f}")


if __name__ == "__main__":
    main()
