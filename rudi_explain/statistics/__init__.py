"""The statistic language of SEMANTICS.md: operators, grammar, text, evaluation, the plain-English describer."""

from rudi_explain.statistics.grammar import PipelineState, Schema
from rudi_explain.statistics.operators import (
    OPERATORS,
    PERCENTILES,
    Abs,
    Aggregation,
    Count,
    FilterBy,
    First,
    GroupBy,
    Max,
    Mean,
    Min,
    Operator,
    Percentile,
    Ptp,
    RetainBy,
    RowOperator,
    Select,
    SortBy,
    Std,
    Sum,
    Top,
    register_operator,
)
from rudi_explain.statistics.readable import GRAMMARS, MAX_FILTERS, is_readable, readable_reason
from rudi_explain.statistics.statistic import Pipeline, Statistic, candidate_operators, next_operators
from rudi_explain.statistics.time_operators import MaxGap, MeanGap, Recency, Tenure, TimeAggregation, Within

__all__ = [
    "Statistic", "Pipeline", "next_operators", "candidate_operators", "Schema", "PipelineState", "Operator",
    "RowOperator",
    "Aggregation", "Select", "RetainBy", "FilterBy", "SortBy", "Top", "Abs", "GroupBy", "Mean", "Max",
    "Min", "Sum", "Std", "Ptp", "Count", "First", "Percentile", "PERCENTILES", "OPERATORS",
    "register_operator", "GRAMMARS", "MAX_FILTERS", "is_readable", "readable_reason",
    "Within", "Recency", "Tenure", "MeanGap", "MaxGap", "TimeAggregation",
]
