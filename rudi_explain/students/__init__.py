"""Rule students: models that learn weighted rules over literals to mimic a teacher.

Every student has ``fit(X, y)`` (``X`` the literal matrix, or the value
matrix for :class:`LassoStatistics`; ``y`` the teacher's scores) and
``rules(literals)``, which returns a :class:`~rudi_explain.rules.RuleSet`.
Every student is a scikit-learn regressor (keyword-only hyper-parameters,
``get_params``/``set_params``/``clone``, learned state in attributes ending
in ``_``); used before ``fit`` it raises :class:`NotFittedError`
(:class:`rudi_explain.exceptions.NotFittedError`, a scikit-learn
``NotFittedError``).
"""

from rudi_explain.exceptions import NotFittedError
from rudi_explain.students.base import FitStopped, RuleStudent
from rudi_explain.students.baselines import CARTRules, LassoLiterals, LassoStatistics
from rudi_explain.students.brl import BayesianRuleList, RuleList
from rudi_explain.students.gsnln import GSNLN, FitProgress
from rudi_explain.students.hkl import HKLRuleEnsemble
from rudi_explain.students.trees import SumOfTrees

__all__ = [
    "RuleStudent",
    "NotFittedError",
    "GSNLN",
    "FitProgress",
    "FitStopped",
    "LassoStatistics",
    "LassoLiterals",
    "CARTRules",
    "BayesianRuleList",
    "RuleList",
    "HKLRuleEnsemble",
    "SumOfTrees",
]
