"""``explain()``, the background job that runs it, the read-only result and its file format.

One job per module: :mod:`~rudi_explain.explanation.config` (the settings),
:mod:`~rudi_explain.explanation.pipeline` (``explain()`` and the stages),
:mod:`~rudi_explain.explanation.job` (the worker thread, progress, cancel, wait),
:mod:`~rudi_explain.explanation.result` (what the job computed, frozen),
:mod:`~rudi_explain.explanation.figures` (``report()`` and the fidelity curve),
:mod:`~rudi_explain.explanation.explanation` (the read-only :class:`Explanation`) and
:mod:`~rudi_explain.explanation.archive` (save and load).
"""

from rudi_explain.explanation.archive import FORMAT, FORMAT_VERSION
from rudi_explain.explanation.config import DEFAULTS, STUDENTS, ExplainConfig
from rudi_explain.explanation.explanation import Explanation
from rudi_explain.explanation.job import ExplanationCancelled, JobInputs, JobProgress, running
from rudi_explain.explanation.loading import load
from rudi_explain.explanation.pipeline import explain
from rudi_explain.explanation.result import FittedState

__all__ = ["explain", "Explanation", "JobProgress", "ExplanationCancelled", "load", "running",
           "STUDENTS", "FORMAT", "FORMAT_VERSION", "ExplainConfig", "DEFAULTS", "FittedState", "JobInputs"]
