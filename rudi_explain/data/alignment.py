"""Lining up per-user values (scores, targets, labels) with ``Sequences.users``.

One place for the checks every edge of the package needs: a Series is
reindexed by user id (missing, extra or repeated ids are errors that name
them), and every value must be finite. A bare array carries no ids, so its
order cannot be checked: the public edges refuse it unless the caller says
it is in ``users`` order (``in_users_order=True``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rudi_explain.exceptions import InputError

__all__ = ["name_users", "per_user_values", "check_order"]

_N_NAMED = 5


def name_users(users: Any, limit: int = _N_NAMED) -> str:
    """``'u1', 'u2', 'u3' and 12 more``: the first few ids of a group of users."""
    users = list(np.asarray(users, dtype=object).ravel())
    shown = ", ".join(repr(u.item() if isinstance(u, np.generic) else u) for u in users[:limit])
    more = len(users) - limit
    return shown + (f" and {more} more" if more > 0 else "")


def reindex_series(values: pd.Series, users: np.ndarray, source: str, allow_extra: bool = False) -> np.ndarray:
    """The values of a Series indexed by user id, in ``users`` order."""
    index = values.index
    if index.has_duplicates:
        dup = index[index.duplicated()].unique()
        raise InputError(f"{source} have more than one entry for {len(dup)} user ids: {name_users(dup)}")
    wanted = pd.Index(users)
    position = index.get_indexer(wanted)
    missing = wanted[position < 0]
    if len(missing):
        hint = ""
        if len(missing) == len(wanted) and len(index):
            hint = (f" (they are indexed by {index.dtype} ids such as {index[0]!r}, "
                    f"the users are ids such as {wanted[0]!r})")
        raise InputError(f"{source} lack {len(missing)} of the {len(wanted)} users: {name_users(missing)}{hint}")
    if len(index) != len(wanted) and not allow_extra:
        extra = index.difference(wanted)
        raise InputError(f"{source} have {len(extra)} user ids that the sequences lack: {name_users(extra)}")
    return values.to_numpy()[position]


def check_order(values: Any, users: np.ndarray, source: str, in_users_order: bool) -> None:
    """Refuse a bare array (no user ids) unless the caller vouches for its order.

    Labels in their natural order read by position against sorted user ids
    train a useless teacher without a word, so a bare array is an error
    unless ``in_users_order`` is true.
    """
    if in_users_order or isinstance(values, (pd.Series, pd.DataFrame)):
        return
    shown = name_users(np.asarray(users, dtype=object)[:3], limit=3)
    raise InputError(
        f"{source} are a bare {type(values).__name__} without user ids, so their order cannot be checked; "
        f"pass a pandas Series indexed by user id, or in_users_order=True if they follow the sorted user "
        f"ids of the sequences ({shown}, ...)"
    )


def per_user_values(values: Any, users: np.ndarray, source: str, *, in_users_order: bool = True) -> np.ndarray:
    """One finite float per user, in ``users`` order.

    Parameters
    ----------
    values : Series indexed by user id, or array-like of shape (n_users,)
    users : ndarray of shape (n_users,)
    source : str
        What the values are, for the messages ("the target", "the labels").
    in_users_order : bool, default=True
        Whether a bare array may be read by position in ``users`` order.
        The public edges (``explain``) pass False unless their caller says
        so; see :func:`check_order`.
    """
    check_order(values, users, source, in_users_order)
    if isinstance(values, pd.Series):
        values = reindex_series(values, users, source)
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise InputError(f"{source} are not numbers: {err}") from None
    if arr.ndim != 1 or len(arr) != len(users):
        raise InputError(f"{source} must have one value per user ({len(users)}), got shape {arr.shape}")
    bad = ~np.isfinite(arr)
    if bad.any():
        raise InputError(f"{source} have NaN or infinite values for {int(bad.sum())} users: "
                         f"{name_users(np.asarray(users, dtype=object)[bad])}")
    return arr
