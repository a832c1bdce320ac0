"""Event attributions by occlusion: drop one event, re-score the user; for any teacher.

The teacher sees each user under the user's real id, once per call: a teacher that joins
per-user data by id (a dict of profiles, a feature store) looks up the right user. So the
leave-one-out variants of a chunk of users are scored in rounds, every round one teacher
call over all of the chunk's users at once: round 0 scores the users as they are, round
``j`` each user without its ``j``-th occluded event (the users with fewer occluded events sit
that round out). A chunk costs ``1 + max_events`` calls, however many users it holds.

A teacher that cannot see ids skips the rounds: a PyTorch module behind the default encoding
(tensors only) and a scikit-learn pipeline whose first step is a
:class:`~rudi_explain.teachers.aggregator.SequenceAggregator` (an array, one row per user).
For those, all variants of a chunk go in one call, under stand-in ids ``0, 1, ...`` that
nothing downstream reads: per-call overhead is what dominates there (the demo pipeline,
one user, 64 events: 65 calls take 15.8 s, one call 0.16 s).

Bounded: only each user's most recent ``max_events`` events are occluded (the others get
NaN), and a ``time_budget`` stops between chunks (the users not reached get NaN, and the
batch's note says so). See :mod:`rudi_explain.audit.attributions`.
"""

from __future__ import annotations

import time

import numpy as np
from sklearn.pipeline import Pipeline

from rudi_explain.audit.event_batch import EventBatch
from rudi_explain.audit.event_sets import sequences_of_events
from rudi_explain.data.alignment import name_users
from rudi_explain.data.sequences import Sequences
from rudi_explain.exceptions import InputError
from rudi_explain.teachers.adapters import SklearnTeacher, Teacher, TeacherError, TorchTeacher
from rudi_explain.teachers.aggregator import SequenceAggregator

__all__ = ["occlusion", "OCCLUSION_CHUNK_EVENTS", "MAX_OCCLUDED"]

#: Events occluded per user by default: the most recent ones (the demo GRU reads 64).
MAX_OCCLUDED = 64
#: Events of leave-one-out variants per chunk of users (bounds memory; the time budget is checked between chunks).
OCCLUSION_CHUNK_EVENTS = 1_000_000


def occlusion(teacher: Teacher, seqs: Sequences, idx: np.ndarray, max_events: int | None,
              time_budget: float | None, chunk_events: int = OCCLUSION_CHUNK_EVENTS) -> EventBatch:
    """Leave-one-out attributions of the events of users ``idx`` (indices into ``seqs.users``, distinct).

    The attribution of an event is ``score(user) - score(user without the event)``. Every
    teacher call holds each user at most once, under its real id, unless no id can reach the
    model (see the module notes).

    Raises
    ------
    InputError
        ``idx`` repeats a user; or the teacher's scores are not finite numbers (the message
        names the user and the event left out: "during occlusion of user 'u000654' ...").
    TeacherError
        The teacher raised (its exception is the ``__cause__``), named the same way.
    """
    idx = np.asarray(idx, dtype=np.int64)
    if len(np.unique(idx)) != len(idx):
        values, counts = np.unique(idx, return_counts=True)
        raise InputError(f"occlusion scores each user once; user_indices repeat users "
                         f"{name_users(seqs.users[values[counts > 1]])}")
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
    at_once = _ids_unseen(teacher)
    b0 = 0
    while b0 < len(idx):
        # Users [b0, b1): at least one, then as many as fit in chunk_events.
        b1 = b0 + max(1, int(np.searchsorted(np.cumsum(cost[b0:]), chunk_events, side="right")))
        chunk = np.arange(b0, b1)
        if at_once:
            _score_at_once(teacher, seqs, idx, chunk, n, m, block_start, score, attribution)
        for j in range(0 if at_once else int(m[chunk].max()) + 1):  # over event ranks: one call over the users each
            rows = chunk if j == 0 else chunk[m[chunk] >= j]
            # Round j >= 1 drops each user's j-th occluded event (position n - m + j - 1 in time order).
            drop = np.full(len(rows), -1) if j == 0 else n[rows] - m[rows] + j - 1
            s = _score_round(teacher, seqs, idx[rows], drop, n[rows])
            if j == 0:
                score[rows] = s
            else:
                attribution[block_start[rows] + drop] = score[rows] - s
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


def _ids_unseen(teacher: Teacher) -> bool:
    """Whether no user id can reach the model: see the module notes."""
    if isinstance(teacher, TorchTeacher):
        return teacher.encode is None
    if isinstance(teacher, SklearnTeacher) and isinstance(teacher.model, Pipeline):
        return type(teacher.model.steps[0][1]) is SequenceAggregator
    return False


def _score_at_once(teacher: Teacher, seqs: Sequences, idx: np.ndarray, chunk: np.ndarray, n: np.ndarray,
                   m: np.ndarray, block_start: np.ndarray, score: np.ndarray, attribution: np.ndarray) -> None:
    """All variants of the chunk's users in one call, under stand-in ids (for a teacher that reads none)."""
    # Variant v: batch user var_b[v] without its event var_drop[v] (-1: the user as is).
    var_b = np.repeat(chunk, m[chunk] + 1)
    first = np.repeat(np.cumsum(m[chunk] + 1) - (m[chunk] + 1), m[chunk] + 1)
    k = np.arange(len(var_b)) - first                    # 0 = original, then the occluded events
    var_drop = np.where(k == 0, -1, n[var_b] - m[var_b] + k - 1)
    pos, seg = seqs.batch_positions(idx[var_b])
    keep = pos - seqs.offsets[idx[var_b]][seg] != var_drop[seg]
    variants = sequences_of_events(seqs, pos[keep], seg[keep], len(var_b))
    try:
        s = teacher.score(variants, allow_constant=True)
    except (TeacherError, InputError) as err:  # the stand-in ids mean nothing to the reader: name the real users
        ids = seqs.users[idx[chunk]]
        who = f"user {name_users(ids)}" if len(chunk) == 1 else f"{len(chunk)} users {name_users(ids)}"
        raise type(err)(f"during occlusion of {who}: scoring the variants with one event left out (stand-in "
                        f"ids 0, 1, ...) failed: {err}") from (err.__cause__ or err)
    original = k == 0
    score[var_b[original]] = s[original]
    dropped = ~original
    attribution[block_start[var_b[dropped]] + var_drop[dropped]] = s[first[dropped]] - s[dropped]


def _score_round(teacher: Teacher, seqs: Sequences, users: np.ndarray, drop: np.ndarray,
                 n: np.ndarray) -> np.ndarray:
    """The teacher's scores of ``users`` (indices into ``seqs``, distinct), each without its event ``drop``
    (position in time order; -1: none), under their real ids."""
    pos, seg = seqs.batch_positions(users)
    keep = pos - seqs.offsets[users][seg] != drop[seg]
    variants = sequences_of_events(seqs, pos[keep], seg[keep], len(users), seqs.users[users])
    try:
        return teacher.score(variants, allow_constant=True)
    except (TeacherError, InputError) as err:
        ids = seqs.users[users]
        if drop[0] < 0:
            what = "scoring it as it is" if len(users) == 1 else "scoring them as they are"
        elif len(users) == 1:
            what = f"scoring it without its event {int(drop[0])} (of {int(n[0])}, in time order from 0)"
        else:
            what = "scoring each without one of its most recent events"
        who = f"user {name_users(ids)}" if len(users) == 1 else f"{len(users)} users {name_users(ids)}"
        # The same kind of error, with where it happened; the model's own exception stays the cause.
        raise type(err)(f"during occlusion of {who}: {what} failed: {err}") from (err.__cause__ or err)
