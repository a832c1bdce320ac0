"""Events ordered by user, then by a value: ``np.lexsort((key, user))``, faster on millions of events.

Two sorts of all events by user and a value run on every job of many users: the layout of the events
(by user, then time: :class:`~rudi_explain.Sequences`) and each ``SortBy`` column's order within
users (:mod:`rudi_explain.statistics.frame`). ``np.lexsort`` does both in two passes of a merge sort
over every event: 1.2 s on the 4.9M events of payments at 100,000 users. Here the users' grouping
is one sort of integers (user, place) and the values are sorted a block of users at a time, a block
small enough to stay in the CPU's cache. The order is lexsort's exactly: by user, then value (NaN
last, NaT first as its integer is the least), ties in the order given.
"""

from __future__ import annotations

import numpy as np

__all__ = ["by_user_then", "sorted_within_users"]

#: Events a block of users holds in :func:`sorted_within_users` (a user is never split).
SORT_BLOCK = 1 << 14


def by_user_then(user: np.ndarray, n_users: int, key: np.ndarray | None = None) -> np.ndarray:
    """The places of events ordered by user, then ``key``, ties in the given order.

    Parameters
    ----------
    user : ndarray of int, shape (n_events,)
        Each event's user, a code in ``[0, n_users)``.
    n_users : int
    key : ndarray, shape (n_events,), optional
        The value that orders each user's events (None: the given order).

    Returns
    -------
    ndarray of intp
        ``np.lexsort((key, user))`` (``np.argsort(user, kind="stable")`` without a key).
    """
    n = len(user)
    if n == 0:
        return np.zeros(0, dtype=np.intp)
    if int(user.min()) < 0 or n_users * n >= 2**62:  # codes this does not pack: numpy's own sort
        return np.argsort(user, kind="stable") if key is None else np.lexsort((key, user))
    pairs = user.astype(np.int64) * n + np.arange(n)  # (user, place) in one integer: one sort groups by user
    pairs.sort()
    grouped = (pairs % n).astype(np.intp, copy=False)
    if key is None:
        return grouped
    offsets = np.zeros(n_users + 1, dtype=np.int64)
    np.cumsum(np.bincount(user, minlength=n_users), out=offsets[1:])
    return grouped[sorted_within_users(key[grouped], user[grouped], offsets)]


def sorted_within_users(key: np.ndarray, event_user: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """``np.lexsort((key, event_user))`` for events laid out user by user, a block of users at a time.

    Parameters
    ----------
    key : ndarray, shape (n_events,)
    event_user : ndarray of int, shape (n_events,)
        Each event's user, ascending.
    offsets : ndarray of int, shape (n_users + 1,)
        Where each user's events start, and the count of events last.

    Returns
    -------
    ndarray of intp
        Each user's places, in the user's own places, by ``key``.

    Notes
    -----
    Within a block of some :data:`SORT_BLOCK` events, a stable argsort of the key, then one integer
    sort of (user, place in that argsort) pairs puts the users back in order and keeps each one's
    events by key. On 4M events of 80,000 users: 0.44 s against lexsort's 0.97 s.
    """
    n = len(key)
    order = np.empty(n, dtype=np.intp)
    starts = offsets[np.searchsorted(offsets, np.arange(SORT_BLOCK, n, SORT_BLOCK))]  # a user's start at or after
    bounds = np.unique(np.r_[0, starts, n])
    for start, end in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        by_key = np.argsort(key[start:end], kind="stable")
        pairs = (event_user[start:end].astype(np.int64) - int(event_user[start]))[by_key] * (end - start)
        pairs += np.arange(end - start)
        pairs.sort()
        order[start:end] = by_key[pairs % (end - start)] + start
    return order
