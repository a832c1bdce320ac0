"""Stage 1: the statistics search (a short readable catalog, then MCTS-SG for what it leaves)."""

from rudi_explain.search.catalog import single_aggregations
from rudi_explain.search.progress import SearchCancelled, SearchProgress
from rudi_explain.search.run import search_statistics
from rudi_explain.search.statistics_search import METHODS, StatisticsSearch

__all__ = ["search_statistics", "StatisticsSearch", "SearchProgress", "SearchCancelled", "METHODS",
           "single_aggregations"]
