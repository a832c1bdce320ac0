"""Stage 1: the statistics search (a short readable catalog, then MCTS-SG for what it leaves)."""

from rudi_explain.search.statistics_search import (
    METHODS,
    SearchCancelled,
    SearchProgress,
    StatisticsSearch,
    search_statistics,
    single_aggregations,
)

__all__ = ["search_statistics", "StatisticsSearch", "SearchProgress", "SearchCancelled", "METHODS",
           "single_aggregations"]
