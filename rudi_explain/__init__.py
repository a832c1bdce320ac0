"""rudi-explain: distil black-box models over behaviour sequences into weighted rules.

The sub-packages follow the flow, each importing only those below it (the layers contract in
``pyproject.toml``, checked by ``lint-imports``), lowest first: ``exceptions`` and
``validation`` -> ``correlation`` -> ``metrics`` -> ``data`` -> ``statistics`` -> ``teachers``
-> ``search`` (stage 1) -> ``rules`` -> ``students`` (stage 2) -> ``sql`` -> ``explanation``
(the job and its result) -> ``audit`` -> ``views`` -> ``datasets`` -> ``cli``. The names
below come from each sub-package's public API.
"""

from rudi_explain import datasets, metrics
from rudi_explain._version import __version__ as __version__
from rudi_explain.audit import Comparison, compare
from rudi_explain.audit.user import UserView
from rudi_explain.data import Sequences
from rudi_explain.exceptions import RudiExplainError
from rudi_explain.explanation import Explanation, ExplanationCancelled, JobProgress, explain, load, running
from rudi_explain.rules import Literals, Rule, RuleSet
from rudi_explain.search import SearchCancelled, SearchProgress, search_statistics
from rudi_explain.sql import EventTable
from rudi_explain.statistics import Statistic
from rudi_explain.students import (
    GSNLN,
    BayesianRuleList,
    CARTRules,
    HKLRuleEnsemble,
    LassoLiterals,
    LassoStatistics,
    SumOfTrees,
)
from rudi_explain.teachers import SequenceAggregator, as_teacher

__all__ = [
    "Sequences",
    "Statistic",
    "datasets",
    "metrics",
    "search_statistics",
    "SearchProgress",
    "SearchCancelled",
    "Literals",
    "Rule",
    "RuleSet",
    "GSNLN",
    "LassoStatistics",
    "LassoLiterals",
    "CARTRules",
    "BayesianRuleList",
    "HKLRuleEnsemble",
    "SumOfTrees",
    "as_teacher",
    "SequenceAggregator",
    "explain",
    "Explanation",
    "ExplanationCancelled",
    "JobProgress",
    "UserView",
    "load",
    "running",
    "EventTable",
    "compare",
    "Comparison",
    "RudiExplainError",
]
