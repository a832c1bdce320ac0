"""Event attributions by occlusion: drop one event, re-score the user; for any teacher.

All leave-one-out variants of many users are built as one :class:`Sequences` and scored in one
teacher call per chunk. Bounded: only each user's most recent ``max_events`` events are occluded
(the others get NaN), and a ``time_budget`` stops between chunks (the users not reached get NaN,
and the batch's note says so). See :mod:`rudi_explain.audit.attributions`.
"""

from __future__ import annotations

import time

import numpy as np

from rudi_explain.audit.event_batch import EventBatch
from rudi_explain.audit.event_sets import sequences_of_events
from rudi_explain.data.alignment import name_users
from rudi_explain.data.sequences import Sequences
from rudi_explain.teachers.adapters import Teacher, TeacherError

__all__ = ["occlusion", "OCCLUSION_CHUNK_EVENTS", "MAX_OCCLUDED"]

#: Events occluded per user by default: the most recent ones (the demo GRU reads 64).
MAX_OCCLUDED = 64
#: Events of leave-one-out variants scored in one teacher call (bounds memory).
OCCLUSION_CHUNK_EVENTS = 1_000_000


def occlusion(teacher: Teacher, seqs: Sequences, idx: np.ndarray, max_events: int | None,
               time_budget: float | None, chunk_events: int = OCCLUSION_CHUNK_EVENTS) -> EventBatch:
    n = seqs.lengths[idx].astype(np.int64)
    positions, segment = seqs.batch_positions(idx)
    block_start = np.zeros(len(idx), dtype=np.int64)
    np.cumsum(n[:-1], out=block_start[1:])
    local = np.arange(len(positions), dtype=np.int64) - block_start[segment]
    attribution = np.full(len(positions), np.nan)
    score = np.full(len(idx), np.nan)
    # Occluded: the most recent m events; a single-event user has no non-empty variant.
    m = np.where(n >= 2, n if max_events is None else np.minimum(n, max_events), 0)
    cost = (m + 1) * n
    start, notes, reached = time.perf_counter(), [], len(idx)
    b0 = 0
    while b0 < len(idx):
        # Users [b0, b1): at least one, then as many as fit in chunk_events.
        b1 = b0 + max(1, int(np.searchsorted(np.cumsum(cost[b0:]), chunk_events, side="right")))
        users = np.arange(b0, b1)
        # Variant v: batch user var_b[v] without its event var_drop[v] (-1: the user as is).
        var_b = np.repeat(users, m[users] + 1)
        first = np.repeat(np.cumsum(m[users] + 1) - (m[users] + 1), m[users] + 1)
        k = np.arange(len(var_b)) - first                    # 0 = original, then the occluded events
        var_drop = np.where(k == 0, -1, n[var_b] - m[var_b] + k - 1)
        pos, seg = seqs.batch_positions(idx[var_b])
        within = pos - seqs.offsets[idx[var_b]][seg]
        keep = within != var_drop[seg]
        variants = sequences_of_events(seqs, pos[keep], seg[keep], len(var_b))
        try:
            s = teacher.score(variants, allow_constant=True)
        except TeacherError as err:  # its user ids are variant numbers: name the real users
            raise TeacherError(f"scoring the leave-one-out variants of users {name_users(seqs.users[idx[users]])} "
                               f"failed: {err}") from err.__cause__
        original = k == 0
        score[var_b[original]] = s[original]
        dropped = ~original
        # A user's variants come together, the user as is first (at chunk offset `first`).
        attribution[block_start[var_b[dropped]] + var_drop[dropped]] = s[first[dropped]] - s[dropped]
        b0 = b1
        if time_budget is not None and b0 < len(idx) and time.perf_counter() - start > time_budget:
            reached = b0
            notes.append(f"time budget of {time_budget:g} s spent after {b0} of {len(idx)} users: "
                         f"the other {len(idx) - b0} users were not occluded (NaN)")
            break
    if max_events is not None and (n[:reached] > max_events).any():
        notes.append(f"only the most recent {max_events} events of a user are occluded (max_events); "
                     "older events have NaN")
    if (n[:reached] == 1).any():
        notes.append("a user with a single event has no variant without it: NaN")
    return EventBatch(idx, segment, local, attribution, {}, score, None, None, "; ".join(notes))
