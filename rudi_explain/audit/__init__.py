"""Auditing one explanation: a user's drill-down, event attributions, counterfactuals, what-if, compare."""

from rudi_explain.audit.compare import Comparison, compare

__all__ = ["compare", "Comparison"]
