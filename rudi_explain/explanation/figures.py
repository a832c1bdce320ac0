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
from rudi_explain.exceptions import InputError
from rudi_explain.explanation.config import DEFAULTS
from rudi_explain.explanation.result import FittedState

__all__ = ["report", "fidelity_curve", "Figures", "FIDELITY_MEANING", "MIN_HELD_OUT"]

#: What fidelity measures, in one line (report, widget, HTML report).
FIDELITY_MEANING = ("fidelity: of all pairs of held-out users, the share that the rules put in the same order "
                    "as the model does (0.5 is chance, 1 is the model's own order)")
#: Fewer held-out users than this, and the held-out figures get a warning.
MIN_HELD_OUT = 30


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
    fidelity_test = metrics.fidelity(y[test], s[test])
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
