"""The library's errors: every one derives from :class:`RudiExplainError`.

Each also derives from the built-in error a caller would expect (a bad value is a
``ValueError``, an unknown user a ``KeyError``), so ``except ValueError`` keeps working and
``except rx.RudiExplainError`` catches everything the library itself raises.
"""

from __future__ import annotations

from sklearn.exceptions import NotFittedError as _SklearnNotFitted

__all__ = ["RudiExplainError", "InputError", "InputTypeError", "UnknownUserError", "IndexOutOfRange",
           "NotFittedError", "StateError", "WaitTimeout", "MissingFileError", "WriteError"]


class RudiExplainError(Exception):
    """Base class of every error raised by rudi-explain."""


class InputError(RudiExplainError, ValueError):
    """A value the library cannot use: the message names the column, value, user or parameter."""


class InputTypeError(RudiExplainError, TypeError):
    """An argument of the wrong type: the message names it and the types accepted."""


class UnknownUserError(RudiExplainError, KeyError):
    """A user id that is not among the users at hand."""

    def __str__(self) -> str:  # KeyError quotes its message; this one is a sentence
        return str(self.args[0]) if self.args else ""


class IndexOutOfRange(RudiExplainError, IndexError):
    """A position outside the users or rules at hand."""


class NotFittedError(RudiExplainError, _SklearnNotFitted):
    """A student used before ``fit`` (scikit-learn's ``NotFittedError``, so ``check_is_fitted`` agrees)."""


class StateError(RudiExplainError, RuntimeError):
    """An operation that the object's state does not allow now (a job still running, a failed job)."""


class WaitTimeout(RudiExplainError, TimeoutError):
    """A wait that ran out of time."""


class MissingFileError(RudiExplainError, FileNotFoundError):
    """A file or folder the library needs is not there."""


class WriteError(RudiExplainError, OSError):
    """A file the library was asked to write cannot be written there: the message names the path."""
