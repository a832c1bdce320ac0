"""rudi-explain: distil black-box models over behaviour sequences into weighted rules.

The sub-packages follow the flow, each importing only those before it:
``data`` -> ``statistics`` -> ``teachers`` -> ``search`` (stage 1) -> ``rules`` -> ``students``
(stage 2) -> ``sql`` -> ``explanation`` (the job and its result) -> ``audit`` -> ``views``.
"""

from rudi_explain import datasets, metrics
from rudi_explain.audit.compare import Comparison, compare
from rudi_explain.data.sequences import Sequences
from rudi_explain.exceptions import RudiExplainError
from rudi_explain.explanation import (
    Explanation,
    ExplanationCancelled,
    JobProgress,
    UserView,
    explain,
    load,
    running,
)
from rudi_explain.rules.literals import Literals
from rudi_explain.rules.ruleset import Rule, RuleSet
from rudi_explain.search.statistics_search import SearchCancelled, SearchProgress, search_statistics
from rudi_explain.sql.warehouse import EventTable
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
from rudi_explain.teachers.adapters import as_teacher
from rudi_explain.teachers.aggregator import SequenceAggregator

__version__ = "0.1.0"

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
