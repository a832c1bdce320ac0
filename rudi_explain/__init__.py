"""rudi-explain: distil black-box models over behaviour sequences into weighted rules."""

from rudi_explain.sequences import Sequences
from rudi_explain.statistics import Statistic
from rudi_explain import datasets

# --- stage 2 exports (literals, students, rules, metrics) ---
# --- end stage 2 exports ---

__version__ = "0.1.0"

__all__ = ["Sequences", "Statistic", "datasets"]
