"""Statistics and rule sets compiled to SQL (DuckDB, Spark, ANSI), and event tables read through DuckDB."""

from rudi_explain.sql.ruleset import ruleset_sql
from rudi_explain.sql.statistics import DIALECTS, quote_identifier, quote_string, statistic_sql, statistics_sql
from rudi_explain.sql.warehouse import EventTable

__all__ = ["DIALECTS", "statistic_sql", "statistics_sql", "ruleset_sql", "quote_identifier", "quote_string",
           "EventTable"]
