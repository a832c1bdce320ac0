"""Sequences made of chosen events: the variants occlusion scores, a user with events dropped.

Built through :meth:`Sequences.to_arrays` and :meth:`Sequences.from_arrays` (the public layout
round trip, which checks what it builds): the vocabularies, units and reference time are the
original's, so statistics and teachers read the new users as they read the real ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rudi_explain.data.sequences import Sequences

__all__ = ["sequences_of_events"]


def sequences_of_events(seqs: Sequences, positions: np.ndarray, segment: np.ndarray, n_users: int,
                        users: Sequence[Any] | None = None) -> Sequences:
    """A Sequences of ``n_users`` users made of the events of ``seqs`` at ``positions``.

    Parameters
    ----------
    seqs : Sequences
        Where the events come from.
    positions : ndarray of int
        Event positions in ``seqs``; an event may be taken more than once (by several users).
    segment : ndarray of int
        The new user of each event, in ``range(n_users)``, non-decreasing (each user's events
        together, in time order).
    n_users : int
    users : sequence, optional
        The new users' ids (default: ``0 .. n_users - 1``).

    Returns
    -------
    Sequences
        Its input rows number its events in layout order.
    """
    meta, arrays = seqs.to_arrays()
    positions = np.asarray(positions, dtype=np.int64)
    offsets = np.zeros(n_users + 1, dtype=np.int64)
    np.cumsum(np.bincount(segment, minlength=n_users), out=offsets[1:])
    taken: dict[str, np.ndarray] = {"offsets": offsets, "event_user": np.asarray(segment, dtype=np.int32),
             "input_row": np.arange(len(positions), dtype=np.int64)}
    for name, array in arrays.items():
        if name == "times" or name.startswith(("codes_", "values_")):
            taken[name] = array[positions]
    ids = list(range(n_users)) if users is None else [u.item() if isinstance(u, np.generic) else u for u in users]
    return Sequences.from_arrays(dict(meta, users=ids), taken)
