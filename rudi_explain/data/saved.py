"""Checks of a saved file's event arrays before any Sequences is rebuilt from them (vectorised)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from rudi_explain.data.alignment import name_users
from rudi_explain.exceptions import InputError

__all__ = ["check_saved_event_arrays"]


def check_saved_event_arrays(sm: dict, arrays: Mapping[str, np.ndarray], path: Path) -> None:
    """Refuse category codes outside the vocabulary, missing event times and times out of order, naming the entry."""
    for i, column in enumerate(sm["categorical"]):
        codes, size = arrays[f"seq_codes_{i}"], len(sm["vocabularies"][column])
        bad = np.flatnonzero((codes < 0) | (codes >= size))
        if len(bad):
            raise InputError(f"{path} is damaged: arrays/seq_codes_{i}.npy holds {int(codes[bad[0]])} at position "
                             f"{int(bad[0])}: category codes of column {column!r} must be 0 .. {size - 1}")
    times = arrays.get("seq_times")
    if times is None or not len(times):
        return
    kind = np.dtype(sm["time_dtype"]).kind
    if kind in "mM":  # saved as whole numbers: NaT is the smallest int64
        missing = times.astype(np.int64, copy=False) == np.iinfo(np.int64).min
    else:
        missing = ~np.isfinite(times.astype(np.float64, copy=False))
    if missing.any():
        at = int(np.flatnonzero(missing)[0])
        raise InputError(f"{path} is damaged: arrays/seq_times.npy holds a missing or infinite event time at "
                         f"position {at}: every event needs a time")
    offsets = arrays["seq_offsets"]
    step = np.diff(times.astype(np.float64) if kind == "f" else times.astype(np.int64))
    same_user = np.ones(len(step), dtype=bool)
    starts = offsets[1:-1]
    starts = starts[(starts > 0) & (starts < len(times))]
    same_user[starts - 1] = False  # step from one user's last event to the next user's first
    back = np.flatnonzero((step < 0) & same_user)
    if len(back):
        at = int(back[0]) + 1
        user = int(np.searchsorted(offsets, at, side="right")) - 1
        raise InputError(f"{path} is damaged: arrays/seq_times.npy is out of order at position {at} (user "
                         f"{name_users([sm['users'][user]])}): each user's event times must never decrease")
