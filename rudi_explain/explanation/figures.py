"""The figures of an explanation: fidelity, AUC and their warnings (``exp.report()``), and the fidelity curve.

Pure functions of a :class:`~rudi_explain.explanation.result.FittedState`; only the bootstrap
interval of the held-out fidelity is kept (:class:`Figures`), since it costs a few hundred
fidelities and a result never changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from rudi_explain import metrics
from rudi_explain.exceptions import InputError, InputTypeError
from rudi_explain.explanation.config import DEFAULTS
from rudi_explain.explanation.result import FittedState

__all__ = ["report", "fidelity_curve", "fidelity_by", "user_categories", "slice_groups", "Figures", "held_out_fidelity",
           "FIDELITY_MEANING", "MIN_HELD_OUT", "MIN_SLICE"]

#: What fidelity measures, in one line (report, widget, HTML report).
FIDELITY_MEANING = ("fidelity: of all pairs of held-out users, the share that the rules put in the same order "
                    "as the model does (0.5 is chance, 1 is the model's own order)")
#: Fewer held-out users than this, and the held-out figures get a warning.
MIN_HELD_OUT = 30
#: Fewer held-out users than this in a slice, and :func:`fidelity_by` gives no fidelity for it (too few pairs).
MIN_SLICE = 10
#: What a user without events (or with the column missing on all of them) is filed under in :func:`user_categories`.
NO_VALUE = "(no value)"


class Figures:
    """The held-out fidelity's bootstrap interval and a constant score's fidelity, computed once per result."""

    def __init__(self) -> None:
        self._for: FittedState | None = None
        self._values: tuple[tuple[float, float], float] = ((np.nan, np.nan), np.nan)

    def interval(self, state: FittedState, random_state: Any) -> tuple[tuple[float, float], float]:
        """``(ci, constant)`` of ``state``'s held-out fidelity (see :func:`report`)."""
        if self._for is not state:
            test = state.is_test
            y = state.teacher_scores.to_numpy()[test]
            s = state.student_scores.to_numpy()[test]
            self._values = (metrics.fidelity_interval(y, s, random_state=random_state),
                            metrics.fidelity(y, np.zeros(int(test.sum()))))
            self._for = state
        return self._values


def held_out_fidelity(state: FittedState) -> float:
    """The fidelity of ``state``'s rules on its held-out users (``report``'s ``fidelity_test``)."""
    test = state.is_test
    return metrics.fidelity(state.teacher_scores.to_numpy()[test], state.student_scores.to_numpy()[test])


def report(state: FittedState, params: Mapping[str, Any], figures: Figures) -> dict:
    """The dict :meth:`Explanation.report` returns (see there)."""
    y = state.teacher_scores.to_numpy()
    s = state.student_scores.to_numpy()
    test, train = state.is_test, ~state.is_test
    labels = state.labels
    auc_teacher = auc_student = None
    if labels is not None and len(np.unique(labels[test])) == 2:
        auc_teacher = metrics.auc(labels[test], y[test])
        auc_student = metrics.auc(labels[test], s[test])
    fidelity_test = held_out_fidelity(state)
    ci, constant = figures.interval(state, params.get("random_state", DEFAULTS.random_state))
    rules = state.rules
    return {
        "fidelity_train": metrics.fidelity(y[train], s[train]),
        "fidelity_test": fidelity_test,
        "fidelity_test_ci": ci,
        "fidelity_constant": constant,
        "auc_teacher": auc_teacher,
        "auc_student": auc_student,
        "auc_users": "held-out" if auc_teacher is not None else None,
        "warnings": _figure_warnings(y, test, fidelity_test, ci, constant),
        "n_users": int(len(y)),
        "n_train": int(train.sum()),
        "n_test": int(test.sum()),
        "n_statistics": len(state.statistics),
        "n_literals": int(state.literals.n_literals),
        "n_rules": len(rules),
        # the scorecard's units (the max_rules budget): None for a rule list, which has no scorecard
        "n_cards": len(state.scorecard.cards) if state.scorecard is not None else None,
        "n_interactions": len(state.scorecard.interactions) if state.scorecard is not None else None,
        "max_literals": int(rules.max_literals) if len(rules) else 0,
        "teacher": state.teacher_kind,
        "student": params["student"] if isinstance(params["student"], str) else type(state.student).__name__,
        "seconds": {k: round(v, 3) for k, v in state.seconds.items()},
        "score_unit": state.score_unit,
        "fidelity_meaning": FIDELITY_MEANING,
        **_unpruned_figures(state),
    }


def _unpruned_figures(state: FittedState) -> dict:
    """Rules and held-out fidelity of the student before pruning, when it was pruned."""
    if state.pruning is None:
        return {}
    unpruned = state.pruning.unpruned
    y = state.teacher_scores.to_numpy()[state.is_test]
    return {"n_rules_unpruned": len(unpruned),
            "fidelity_test_unpruned": metrics.fidelity(y, unpruned.score(state.literal_matrix[state.is_test]))}


def fidelity_curve(state: FittedState) -> pd.DataFrame:
    """The frame :attr:`Explanation.fidelity_curve` returns (see there)."""
    if state.pruning is None:
        raise InputError(state.no_pruning_reason or "this explanation was not pruned (explain(prune=False), a rule "
                         "list or linear terms): it has no fidelity curve")
    y = state.teacher_scores.to_numpy()[state.is_test]
    Z = state.literal_matrix[state.is_test]
    path = state.pruning
    return pd.DataFrame({
        "n_rules": path.n_rules.astype(int),
        "fidelity_valid": path.fidelity_valid,
        "fidelity_test": [metrics.fidelity(y, rs.score(Z)) for rs in path.rule_sets],
        "max_literals": [rs.max_literals for rs in path.rule_sets],
        "default": np.arange(len(path.rule_sets)) == path.default,
    })


def _figure_warnings(y: np.ndarray, test: np.ndarray, fidelity: float, ci: tuple[float, float],
                     constant: float) -> list[str]:
    """Sentences for people when the figures rest on too little to trust."""
    out = []
    n_test = int(test.sum())
    if n_test < MIN_HELD_OUT or ci[1] - ci[0] > 0.2:
        out.append(f"only {n_test:,} held-out users: the held-out fidelity {fidelity:.3f} is uncertain "
                   f"(95% interval {ci[0]:.2f} to {ci[1]:.2f}); explain more users or hold out more")
    spread = np.ptp(y / np.max(np.abs(y))) if np.any(y) else 0.0
    if spread == 0:
        out.append("the teacher gives every user the same score: there is nothing to explain, and the "
                   "fidelity says nothing")
    elif spread < 1e-9:
        out.append(f"the teacher's scores differ only by {spread:.1e} of their size: the rules may explain "
                   "rounding noise")
    # A constant score agrees on half of the untied pairs and on every tied one:
    # 0.75 means half of the held-out pairs are tied in the teacher.
    if spread != 0 and constant >= 0.75:
        values, counts = np.unique(y[test], return_counts=True)
        share = counts.max() / n_test
        out.append(f"{share:.0%} of the held-out teacher scores are tied at {values[counts.argmax()]:.4g}: a "
                   f"constant score already reaches fidelity {constant:.3f} (the rules: {fidelity:.3f})")
    return out


def user_categories(seqs: Any, column: str) -> np.ndarray:
    """Each user's most common value of a categorical event column (ties: the first in the column's order).

    Users with no event holding a value get :data:`NO_VALUE`. Vectorized: one sort over (user, value) pairs.
    """
    vocab = seqs.categories(column)
    codes = np.asarray(seqs.codes[column], dtype=np.int64)
    user = np.asarray(seqs.event_user, dtype=np.int64)
    known = (codes >= 0) & (codes < len(vocab))
    pairs, counts = np.unique(user[known] * len(vocab) + codes[known], return_counts=True)
    who, code = pairs // len(vocab), pairs % len(vocab)
    order = np.lexsort((code, -counts, who))  # per user: most events first, then the first value
    who, code = who[order], code[order]
    first = np.ones(len(who), dtype=bool)
    first[1:] = who[1:] != who[:-1]
    out = np.full(seqs.n_users, NO_VALUE, dtype=object)
    out[who[first]] = np.asarray(vocab, dtype=object)[code[first]]
    return out


def fidelity_by(state: FittedState, groups: np.ndarray, held_out: bool = True) -> pd.DataFrame:
    """The frame :meth:`Explanation.fidelity_by` returns (see there): one row per value of ``groups``."""
    groups = np.asarray(groups, dtype=object)
    if groups.shape != (len(state.is_test),):
        raise InputError(f"need one value per user ({len(state.is_test)}), got shape {groups.shape}")
    keep = state.is_test if held_out else np.ones(len(groups), dtype=bool)
    y = state.teacher_scores.to_numpy()[keep]
    s = state.student_scores.to_numpy()[keep]
    g = pd.Series(groups[keep]).astype(str).to_numpy()
    values, inverse = np.unique(g, return_inverse=True)
    rows = []
    for k, value in enumerate(values):  # a loop over the slices (a handful), not over users
        idx = np.flatnonzero(inverse == k)
        defined = idx.size >= MIN_SLICE and np.ptp(y[idx]) > 0
        rows.append({"value": value, "n_users": int(idx.size), "share": idx.size / max(len(g), 1),
                     "fidelity": metrics.fidelity(y[idx], s[idx]) if defined else np.nan,
                     "teacher_mean": float(y[idx].mean()), "rules_mean": float(s[idx].mean())})
    out = pd.DataFrame(rows, columns=["value", "n_users", "share", "fidelity", "teacher_mean", "rules_mean"])
    out = out.sort_values(["n_users", "value"], ascending=[False, True], kind="stable").set_index("value")
    out.attrs["fidelity_all"] = metrics.fidelity(y, s) if len(y) >= 2 else np.nan
    out.attrs["users"] = "held-out" if held_out else "all"
    return out


def slice_groups(seqs: Any, by: Any) -> np.ndarray:
    """One value per user from ``by``: a categorical column (:func:`user_categories`) or a Series by user id."""
    if isinstance(by, str):
        return user_categories(seqs, by)
    if isinstance(by, pd.Series):
        missing = pd.Index(seqs.users).difference(by.index)
        if len(missing):
            raise InputError(f"by has no value for {len(missing):,} of the {seqs.n_users:,} users, e.g. "
                             f"{missing[0]!r}: give one value per user id")
        return by.reindex(seqs.users).to_numpy(dtype=object)
    raise InputTypeError("by must be a categorical column name or a Series indexed by user id, got "
                         f"{type(by).__name__}")
