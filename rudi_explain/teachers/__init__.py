"""Teachers: the black-box models explained, behind one interface that returns a score per user.

The demo teachers (:mod:`rudi_explain.teachers.demo_gru`) import PyTorch and are not imported here.
"""

from rudi_explain.teachers.adapters import (
    CallableTeacher,
    GivenScores,
    SklearnTeacher,
    Teacher,
    TeacherError,
    TorchTeacher,
    as_teacher,
    check_scores,
    encode_padded,
    given_scores,
)
from rudi_explain.teachers.aggregator import SequenceAggregator

__all__ = ["Teacher", "TorchTeacher", "SklearnTeacher", "CallableTeacher", "GivenScores", "TeacherError",
           "as_teacher", "given_scores", "check_scores", "encode_padded", "SequenceAggregator"]
