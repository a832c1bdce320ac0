"""Checks of arguments at the public edge, worded one way.

Built on scikit-learn's :func:`~sklearn.utils.check_scalar` (the ecosystem's check, and the
wording scikit-learn users know); each error is an :class:`~rudi_explain.exceptions.InputError`
or :class:`~rudi_explain.exceptions.InputTypeError` naming the parameter and the value given.
"""

from __future__ import annotations

import numbers
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.utils import check_scalar

from rudi_explain.exceptions import InputError, InputTypeError, MissingFileError, WriteError

__all__ = ["check_whole", "check_real", "check_random_state_seed", "check_one_of", "check_writable"]


def check_whole(value: Any, name: str, *, min_value: int | None = 1, max_value: int | None = None,
                allow_none: bool = False) -> int | None:
    """A whole number (never a bool) within ``[min_value, max_value]``, as a Python int.

    Parameters
    ----------
    value : object
        The value given.
    name : str
        The parameter's name, for the message.
    min_value, max_value : int or None
        Bounds, inclusive; None for no bound.
    allow_none : bool
        Whether None is accepted (and returned as is).

    Returns
    -------
    int or None

    Raises
    ------
    InputTypeError
        Not a whole number (a bool, a float, a string).
    InputError
        Out of bounds.
    """
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, np.integer)):
        bounds = _bounds_text(min_value, max_value)
        also = " or None" if allow_none else ""
        raise InputTypeError(f"{name} must be a whole number{bounds}{also}, got {value!r}")
    try:
        check_scalar(int(value), name, numbers.Integral, min_val=min_value, max_val=max_value)
    except ValueError:
        raise InputError(f"{name} must be a whole number{_bounds_text(min_value, max_value)}, got {value!r}") \
            from None
    return int(value)


def check_real(value: Any, name: str, *, min_value: float | None = None, max_value: float | None = None,
               include_min: bool = True, include_max: bool = True, allow_none: bool = False) -> float | None:
    """A finite real number (never a bool) within the bounds, as a Python float.

    Parameters are as for :func:`check_whole`; ``include_min`` and ``include_max`` say whether
    the bounds themselves are allowed.
    """
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        raise InputTypeError(f"{name} must be a number, got {value!r}")
    x = float(value)
    if not np.isfinite(x):
        raise InputError(f"{name} must be a finite number, got {value!r}")
    try:
        check_scalar(x, name, numbers.Real, min_val=min_value, max_val=max_value,
                     include_boundaries=_boundaries(include_min and min_value is not None,
                                                        include_max and max_value is not None))
    except ValueError as err:
        raise InputError(str(err)) from None
    return x


def check_random_state_seed(value: Any, name: str = "random_state") -> int | None:
    """A seed: None or a whole number in [0, 2**32 - 1] (what numpy and torch both take)."""
    return check_whole(value, name, min_value=0, max_value=2**32 - 1, allow_none=True)


def check_one_of(value: Any, name: str, choices: tuple[Any, ...] | list[Any]) -> Any:
    """One of ``choices``, compared with ``==``; the message lists them."""
    if isinstance(value, str) or not isinstance(value, (list, dict, set)):
        for choice in choices:
            if type(value) is type(choice) and value == choice:
                return value
    raise InputError(f"{name} must be one of {', '.join(repr(c) for c in choices)}; got {value!r}")


def check_writable(path: Any, what: str = "the file") -> Path:
    """A path a file can be written to, checked before any work: not a folder nor a device, in a
    folder that exists and takes new files.

    Raises
    ------
    MissingFileError
        The folder does not exist (naming it and the path).
    WriteError
        The path is a folder or not a regular file, or the folder takes no new file.
    """
    path = Path(path)
    if path.is_dir():
        raise WriteError(f"cannot save {what} to {path}: it is a folder; give the path of a file")
    if path.exists() and not path.is_file():
        raise WriteError(f"cannot save {what} to {path}: it is not a regular file")
    folder = path.parent
    if not folder.is_dir():
        raise MissingFileError(f"cannot save {what} to {path}: the folder {folder} does not exist")
    try:
        tempfile.NamedTemporaryFile(dir=folder, prefix=".rudi-explain-probe-", delete=True).close()
    except OSError as err:
        raise WriteError(f"cannot save {what} to {path}: cannot write in {folder} ({err.strerror or err})") from None
    return path


def _bounds_text(min_value: float | None, max_value: float | None) -> str:
    if min_value is not None and max_value is not None:
        return f" from {min_value} to {max_value}"
    if min_value is not None:
        return f" >= {min_value}"
    if max_value is not None:
        return f" <= {max_value}"
    return ""


def _boundaries(include_min: bool, include_max: bool) -> str:
    return {(True, True): "both", (True, False): "left", (False, True): "right", (False, False): "neither"}[
        (include_min, include_max)]
