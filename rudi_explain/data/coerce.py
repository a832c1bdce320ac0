"""Typing the columns of an event table: numbers with a few bad cells, category codes, complex numbers.

Three mistakes of real tables that :class:`~rudi_explain.Sequences` catches here, before any
work, naming the column:

* **A numeric column spoiled by a few cells.** One cell such as ``'12,5'`` or ``'n/a?'`` in a
  column read from a CSV makes pandas keep the whole column as text. A column whose present
  cells are numbers but for at most :data:`MAX_BAD_CELLS` cells and at most
  :data:`MAX_BAD_SHARE` of them is read as numerical, with those cells missing (NaN), and
  one warning names the column, the count and the first few cells with their rows. More bad
  cells than that (in a column that is still at least :data:`MOSTLY_NUMBERS` numbers, or
  in a column listed in ``numerical=``) are an error naming the first bad cells: the column
  is not clean enough to guess. A column of text with some numbers in it stays categorical,
  and a column whose every cell is a number written as text (zip codes kept as text on
  purpose) stays as it was: categorical.
* **Category codes stored as integers** (``0/1/2/3`` for four kinds of channel) read as
  numbers, so statistics would speak of their average. They are not turned into categories
  behind the caller's back: a count with a few values (items in a basket, 1 to 5) is a
  number, and the two cannot be told apart from the data. An integer column inferred as
  numerical with :data:`FEW_CODES` distinct values or fewer (at least three, so that 0/1
  flags, whose mean is a share, do not count) and at least ten events per value is kept
  numerical, and one warning names such columns and the ``categorical=`` or ``numerical=``
  that says what they are (and silences it). The demo data has no such column.
* **Complex numbers** have no order, so no threshold: a complex column would lose its
  imaginary part (numpy only warns). It is refused, naming every such column.

Also here: the typing of user ids (:func:`user_ids`: text or whole numbers, uint64 ids past
int64 kept exact) and what a column with too many categories looks like (:func:`looks_like`).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

from rudi_explain.exceptions import InputError, InputTypeError

__all__ = ["MAX_BAD_CELLS", "MAX_BAD_SHARE", "MOSTLY_NUMBERS", "FEW_CODES", "numbers_but_a_few",
           "read_numbers", "warn_code_columns", "refuse_complex", "user_ids", "looks_like",
           "warn_if_mostly_numeric"]

#: The most cells of a numerical column that may be read as missing because they are not numbers.
MAX_BAD_CELLS = 20
#: ... and at most this share of the column's present cells.
MAX_BAD_SHARE = 0.01
#: A text column whose present cells are at least this share numbers is taken for a numeric column.
MOSTLY_NUMBERS = 0.9
#: An integer column with at most this many distinct values may hold category codes.
FEW_CODES = 10
#: ... when it has at least this many events per distinct value.
_EVENTS_PER_CODE = 10
#: Bad cells shown in a message.
_N_SHOWN = 3


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _is_text_like(column: pd.Series) -> bool:
    dtype = column.dtype
    return pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype)


def _numbers(column: pd.Series) -> pd.Series | None:
    """``pd.to_numeric(..., errors='coerce')``; None when cells are lists or dicts (refused later)."""
    try:
        return pd.to_numeric(column, errors="coerce")
    except (TypeError, ValueError):
        return None


def _bad_cells(column: pd.Series, converted: pd.Series) -> np.ndarray:
    """Positions of present cells that are not numbers."""
    return np.flatnonzero(converted.isna().to_numpy() & column.notna().to_numpy())


def _shown(column: pd.Series, bad: np.ndarray, users: pd.Series | None) -> str:
    parts = []
    for i in bad[:_N_SHOWN]:
        who = f", user {_plain(users.iloc[i])!r}" if users is not None else ""
        parts.append(f"{_plain(column.iloc[i])!r} (row {_plain(column.index[i])!r}{who})")
    more = len(bad) - _N_SHOWN
    return ", ".join(parts) + (f" and {more:,} more" if more > 0 else "")


def _counted(bad: np.ndarray) -> str:
    return "a non-numeric value" if len(bad) == 1 else f"{len(bad):,} non-numeric values"



def _allowed(n_present: int) -> int:
    """How many bad cells a column of ``n_present`` present cells may have."""
    return int(min(MAX_BAD_CELLS, np.floor(MAX_BAD_SHARE * n_present)))


def numbers_but_a_few(column: pd.Series) -> bool:
    """Whether a text column is a numeric column with some cells that are not numbers.

    At least :data:`MOSTLY_NUMBERS` of its present cells are numbers and at least one is
    not. A sample is looked at first, so that a column of words costs no full conversion.
    """
    if not _is_text_like(column):
        return False
    present = column.notna().to_numpy()
    n_present = int(present.sum())
    if n_present == 0:
        return False
    sample = column[present].iloc[:: max(1, n_present // 1000)]
    converted = _numbers(sample)
    if converted is None or converted.notna().mean() < MOSTLY_NUMBERS:
        return False
    converted = _numbers(column)
    if converted is None:
        return False
    n_bad = len(_bad_cells(column, converted))
    return 0 < n_bad <= (1 - MOSTLY_NUMBERS) * n_present


def read_numbers(column: pd.Series, name: str, users: pd.Series | None = None, *, stacklevel: int = 2) -> np.ndarray:
    """The values of a numerical column held as text or objects, as float64.

    A few cells that are not numbers (see the module notes) become NaN with one warning;
    more are an :class:`~rudi_explain.exceptions.InputError` naming the column and the first
    of them. Infinite values are left to the caller's check.
    """
    converted = _numbers(column)
    if converted is None:
        bad = np.flatnonzero(column.map(lambda v: isinstance(v, (list, dict, set, tuple))).to_numpy())
        i = int(bad[0]) if len(bad) else 0
        raise InputTypeError(f"numerical column {name!r} holds a {type(column.iloc[i]).__name__} at row "
                             f"{_plain(column.index[i])!r} ({str(column.iloc[i])[:60]}); cells must be numbers")
    if converted.dtype.kind == "c":
        refuse_complex(pd.DataFrame({name: converted}), [name])
    bad = _bad_cells(column, converted)
    if len(bad):
        n_present = int(column.notna().sum())
        if len(bad) > _allowed(n_present):
            raise InputError(
                f"numerical column {name!r} has {_counted(bad)} {_shown(column, bad, users)} in {n_present:,} "
                f"cells: more than can be read as missing ({_allowed(n_present)} here: {MAX_BAD_SHARE:.0%} of the "
                f"cells, {MAX_BAD_CELLS} at most); fix them, or list the column in categorical= if it holds "
                "categories"
            )
        warnings.warn(
            f"numerical column {name!r} has {_counted(bad)} {_shown(column, bad, users)}, read as missing (NaN); "
            f"fix {'it' if len(bad) == 1 else 'them'} to silence this warning",
            UserWarning, stacklevel=stacklevel,
        )
    return converted.to_numpy(dtype=np.float64, na_value=np.nan)


def warn_code_columns(frame: pd.DataFrame, inferred: list[str], categorical: list[str], numerical: list[str],
                      *, stacklevel: int = 2) -> None:
    """One warning naming the integer columns inferred as numerical that look like category codes.

    ``inferred`` are the columns inferred as numerical; ``categorical`` and ``numerical``
    the final lists, for the advice.
    """
    found = []
    for name in inferred:
        column = frame[name]
        if pd.api.types.is_bool_dtype(column.dtype) or not pd.api.types.is_integer_dtype(column.dtype):
            continue
        n_present = int(column.notna().sum())
        if n_present < 3 * _EVENTS_PER_CODE:
            continue
        if column.iloc[: 10 * FEW_CODES].nunique() > FEW_CODES:  # cheap for most number columns
            continue
        n_values = int(column.nunique())
        if 3 <= n_values <= FEW_CODES and n_present >= _EVENTS_PER_CODE * n_values:
            values = sorted(_plain(v) for v in column.dropna().unique())
            shown = ", ".join(repr(v) for v in values[:5]) + (", ..." if len(values) > 5 else "")
            found.append((name, n_values, shown))
    if not found:
        return
    names = [n for n, _, _ in found]
    what = "; ".join(f"{n!r} has {k} values ({shown})" for n, k, shown in found)
    as_categories = [c for c in categorical if c not in names] + names
    as_numbers = list(numerical)
    warnings.warn(
        f"integer columns with few distinct values are read as numbers, so statistics would take their "
        f"average: {what}. If they are codes of categories, say categorical={as_categories!r}; if they are "
        f"numbers (counts), say numerical={as_numbers!r} to silence this warning",
        UserWarning, stacklevel=stacklevel,
    )


def refuse_complex(frame: pd.DataFrame, numerical: list[str]) -> None:
    """Refuse numerical columns of complex numbers, naming every one."""
    bad = [name for name in numerical if frame[name].dtype.kind == "c"]
    if bad:
        raise InputTypeError(
            f"columns {bad!r} hold complex numbers, which have no order (no threshold can split them); "
            "use their real part, imaginary part or magnitude as numerical columns instead"
        )


# ------------------------------------------------------------------ user ids; what a column looks like
def user_ids(column: pd.Series, name: str) -> pd.Series:
    """User ids as text or int64: whole floats become integers, other kinds are refused."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        column = column.astype(object)
    dtype = column.dtype

    def refuse(what: str, example: Any) -> None:
        raise InputTypeError(
            f"user column {name!r} holds {what} ids such as {_plain(example)!r}; user ids must be text or whole "
            "numbers: convert them first (for example with .astype(str))"
        )

    def whole(values: pd.Series) -> pd.Series:
        floats = values.to_numpy(dtype=np.float64)
        bad = (floats != np.round(floats)) | (np.abs(floats) >= 2.0**63)
        if bad.any():
            refuse("fractional", values.iloc[int(np.flatnonzero(bad)[0])])
        return pd.Series(floats.astype(np.int64), index=values.index, name=values.name)

    if pd.api.types.is_bool_dtype(dtype):
        refuse("boolean", column.iloc[0])
    if pd.api.types.is_integer_dtype(dtype):
        if pd.api.types.is_unsigned_integer_dtype(dtype) and column.max() >= 2**63:
            return column.astype(np.uint64)  # past int64: kept exact, as uint64
        return column.astype(np.int64)
    if pd.api.types.is_float_dtype(dtype):
        return whole(column)
    if not (pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype)):
        refuse(str(dtype), column.iloc[0])
    kind = pd.api.types.infer_dtype(column, skipna=False)
    if kind == "string":
        return column
    if kind == "integer":
        try:
            return column.astype(np.int64)
        except OverflowError:
            try:
                return column.astype(np.uint64)  # all in [0, 2**64): kept exact, as uint64
            except OverflowError:
                refuse("oversized integer", max(column, key=abs))
    if kind in ("floating", "mixed-integer-float"):
        return whole(column)
    if kind in ("mixed-integer", "mixed"):
        is_str = column.map(lambda v: isinstance(v, str)).to_numpy()
        if is_str.any() and (~is_str).any():
            a, b = column[is_str].iloc[0], column[~is_str].iloc[0]
            raise InputTypeError(
                f"user column {name!r} mixes ids of different types ({_plain(a)!r} and {_plain(b)!r}); "
                "convert them to one type first"
            )
        odd = column[~is_str].iloc[0]
        refuse(type(odd).__name__, odd)
    refuse(kind, column.iloc[0])
    return column  # not reached: refuse raises


def looks_like(column: pd.Series) -> str:
    """'time-like', 'numeric' or 'id-like', from a sample of the column's values."""
    sample = column.dropna()
    sample = sample.iloc[:: max(1, len(sample) // 200)].astype(str)
    if len(sample) == 0:
        return "id-like"
    if pd.to_numeric(sample, errors="coerce").notna().mean() >= 0.9:
        return "numeric"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            parsed = pd.to_datetime(sample, errors="coerce", format="mixed")
        except (ValueError, TypeError, OverflowError):
            return "id-like"
    return "time-like" if parsed.notna().mean() >= 0.9 else "id-like"


def warn_if_mostly_numeric(frame: pd.DataFrame, name: str, user: str) -> None:
    """Warn when a column inferred as categorical is mostly numbers: a few bad cells spoil it."""
    column = frame[name]
    if not (pd.api.types.is_object_dtype(column.dtype) or pd.api.types.is_string_dtype(column.dtype)):
        return
    present = column.notna().to_numpy()
    n_present = int(present.sum())
    if n_present == 0:
        return
    # A sample first, so that text columns cost no full conversion.
    sample = column[present].iloc[:: max(1, n_present // 1000)]
    try:
        if pd.to_numeric(sample, errors="coerce").notna().mean() < 0.9:
            return
        numbers = pd.to_numeric(column, errors="coerce").notna().to_numpy()
    except (TypeError, ValueError):  # cells that are lists or dicts: refused with their column later
        return
    bad = np.flatnonzero(present & ~numbers)
    if len(bad) == 0 or len(bad) > 0.1 * n_present:
        return
    i = int(bad[0])
    warnings.warn(
        f"column {name!r} is mostly numbers but {len(bad):,} cells are not (such as {_plain(column.iloc[i])!r} at "
        f"row {_plain(column.index[i])!r}, user {_plain(frame[user].iloc[i])!r}), so it is read as categorical; "
        "fix those cells or list the column in numerical=",
        UserWarning, stacklevel=5,
    )
