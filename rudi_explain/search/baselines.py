"""The paper's Table 3 selection baselines: Lasso and gradient boosting over a flat table.

``search_statistics(method="lasso" | "gbm")`` ranks every single aggregation of every
column (:func:`~rudi_explain.search.catalog.single_aggregations`, the flat per-user table
the paper feeds its LightGBM teacher) by when it enters the Lasso path, or by its total split
gain in a gradient-boosted regressor, and keeps the first ``n_stats`` statistics.
"""

from __future__ import annotations

import numpy as np

from rudi_explain.correlation import design_matrix

__all__ = ["flat_selection"]


def flat_selection(values: list[np.ndarray], y: np.ndarray, method: str, n_stats: int,
                   rng: np.random.Generator, random_state: int | None) -> list[int]:
    """The statistics a Lasso path or a boosted model ranks first.

    Parameters
    ----------
    values : list of ndarray of shape (n_users,) or (n_users, k)
        Each candidate statistic's values.
    y : ndarray of shape (n_users,)
        The target.
    method : {"lasso", "gbm"}
    n_stats : int
        How many statistics to keep.
    rng : numpy.random.Generator
        Draws the 20,000 users the ranking is made on, when there are more.
    random_state : int or None
        Seeds the boosted model.

    Returns
    -------
    list of int
        Indices into ``values``, best first; at most ``n_stats``.
    """
    X, _, _ = design_matrix(values)
    owner = np.concatenate([np.full(v.reshape(len(v), -1).shape[1], i) for i, v in enumerate(values)])
    n = len(y)
    rows = rng.choice(n, min(n, 20000), replace=False) if n > 20000 else np.arange(n)
    Xs, y = X[rows], y[rows]
    scale = Xs.std(axis=0)
    usable = scale > 0
    Xs = (Xs[:, usable] - Xs[:, usable].mean(axis=0)) / scale[usable]
    owner = owner[usable]
    if method == "lasso":
        from sklearn.linear_model import lasso_path

        _, coefs, _ = lasso_path(Xs, y - y.mean(), alphas=200, eps=1e-4)
        active = np.abs(coefs) > 0
        entry = np.where(active.any(axis=1), active.argmax(axis=1), coefs.shape[1])
        # Features in order of entering the path; ties by final |coefficient|.
        order = np.lexsort((-np.abs(coefs[:, -1]), entry))
        order = order[entry[order] < coefs.shape[1]]
    else:
        order = np.argsort(-_gbm_importance(Xs, y, random_state))
    chosen: list[int] = []
    for feature in order:
        statistic = int(owner[feature])
        if statistic not in chosen:
            chosen.append(statistic)
        if len(chosen) == n_stats:
            break
    return chosen


def _gbm_importance(X: np.ndarray, y: np.ndarray, random_state: int | None) -> np.ndarray:
    """Total split gain per feature of a gradient-boosted regressor (LightGBM's 'gain')."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    model = HistGradientBoostingRegressor(max_iter=100, max_leaf_nodes=31, early_stopping=False,
                                          random_state=random_state).fit(X, y)
    gain = np.zeros(X.shape[1])
    for trees in model._predictors:  # no public importances on this model: read the splits
        for tree in trees:
            nodes = tree.nodes[~tree.nodes["is_leaf"].astype(bool)]
            np.add.at(gain, nodes["feature_idx"], nodes["gain"])
    return gain
