"""rudi-explain: distil black-box models over behaviour sequences into weighted rules."""

from rudi_explain.sequences import Sequences
from rudi_explain.statistics import Statistic
from rudi_explain import datasets
from rudi_explain.search import SearchCancelled, SearchProgress, search_statistics

# --- stage 2 exports (literals, students, rules, metrics) ---
from rudi_explain import metrics
from rudi_explain.literals import Literals
from rudi_explain.rules import Rule, RuleSet
from rudi_explain.students import GSNLN, CARTRules, LassoLiterals, LassoStatistics, BayesianRuleList, HKLRuleEnsemble, SumOfTrees

_STAGE2 = ["metrics", "Literals", "Rule", "RuleSet", "GSNLN", "LassoStatistics", "LassoLiterals", "CARTRules",
           "BayesianRuleList", "HKLRuleEnsemble", "SumOfTrees"]
# --- end stage 2 exports ---

from rudi_explain.teachers import as_teacher
from rudi_explain.aggregator import SequenceAggregator
from rudi_explain.explanation import Explanation, ExplanationCancelled, JobProgress, UserView, explain, load, running
from rudi_explain.warehouse import EventTable
from rudi_explain.compare import Comparison, compare

__version__ = "0.1.0"

__all__ = ["Sequences", "Statistic", "datasets", "search_statistics", "SearchProgress", "SearchCancelled",
           "as_teacher", "SequenceAggregator", "explain", "Explanation", "ExplanationCancelled", "JobProgress",
           "UserView", "load", "running", "EventTable", "compare", "Comparison", *_STAGE2]
