"""``explain()``, the background job that runs it, the read-only result and its file format."""

from rudi_explain.explanation._explanation import (
    FORMAT,
    FORMAT_VERSION,
    STUDENTS,
    Explanation,
    ExplanationCancelled,
    JobProgress,
    UserView,
    explain,
    load,
    running,
)

__all__ = ["explain", "Explanation", "UserView", "JobProgress", "ExplanationCancelled", "load", "running",
           "STUDENTS", "FORMAT", "FORMAT_VERSION"]
