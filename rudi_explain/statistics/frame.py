"""The events a pipeline is working on, as views into a Sequences layout."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from rudi_explain.data.sequences import Sequences
from rudi_explain.data.sorting import sorted_within_users
from rudi_explain.statistics.records import replaced

__all__ = ["EventFrame", "FrameCache"]


@dataclass(frozen=True)
class EventFrame:
    """Events left after the row operators so far, in the current order.

    Parameters
    ----------
    seqs : Sequences
        The columnar layout the positions index into.
    positions : ndarray of int64 or None
        Positions of the events left, in the current order; ``None`` means
        every event in layout order (no copy made, the common case).
    segment : ndarray of int
        The segment (user, or user in a batch) of each event. Events of a
        segment are contiguous and segments ascend.
    n_segments : int
        Number of segments (users evaluated).
    absolute : bool
        Whether ``Abs`` was applied to the selected values.
    group : str or None
        The ``GroupBy`` column, if any.
    """

    seqs: Sequences
    positions: np.ndarray | None
    segment: np.ndarray
    n_segments: int
    absolute: bool = False
    group: str | None = None
    #: Segments are all users of ``seqs`` (not a batch).
    all_users: bool = False
    #: Positions ascend in layout (time) order: no SortBy applied yet.
    layout_order: bool = True

    @classmethod
    def of_all_users(cls, seqs: Sequences) -> EventFrame:
        return cls(seqs, None, seqs.event_user, seqs.n_users, all_users=True)

    @classmethod
    def batch(cls, seqs: Sequences, user_indices: np.ndarray) -> EventFrame:
        positions, segment = seqs.batch_positions(user_indices)
        return cls(seqs, positions, segment, len(user_indices))

    def __len__(self) -> int:
        return len(self.segment)

    def event_positions(self) -> np.ndarray:
        """Positions of the events left, in the current order (every position when ``positions`` is None)."""
        return np.arange(self.seqs.n_events, dtype=np.int64) if self.positions is None else self.positions

    def codes(self, column: str) -> np.ndarray:
        """Category codes of the events left."""
        codes = self.seqs.codes[column]
        return codes if self.positions is None else codes[self.positions]

    def values(self, column: str) -> np.ndarray:
        """Numerical values of the events left (not affected by ``Abs``)."""
        values = self.seqs.values[column]
        return values if self.positions is None else values[self.positions]

    def keep(self, mask: np.ndarray) -> EventFrame:
        """Only the events where ``mask`` holds, order kept."""
        # The kept places once, then gathers: numpy's boolean indexing took 4-8x as long as
        # flatnonzero + take on a mask of mixed trues and falses (numpy 2.4, 250,000 events).
        kept = np.flatnonzero(mask)
        positions = kept if self.positions is None else self.positions.take(kept)
        return replaced(self, positions=positions, segment=self.segment.take(kept))

    def reorder(self, order: np.ndarray) -> EventFrame:
        """The events in a new order (must keep segments contiguous and ascending)."""
        positions = order if self.positions is None else self.positions[order]
        return replaced(self, positions=positions.astype(np.int64, copy=False), segment=self.segment[order],
                         layout_order=False)

    def sorted_by(self, column: str, descending: bool = False, absolute: bool = False) -> EventFrame:
        """Events reordered within each segment by a numerical column: stable, NaN last.

        Over all users in layout order, a per-column permutation is computed
        once per Sequences and filtered, instead of sorting millions of events
        for every statistic; a batch is small enough to sort directly. The whole
        permutation is made even for one filtered frame: later stages evaluate the
        statistics kept on the same users again and read it (explain()'s literals).
        """
        if self.all_users and self.layout_order:
            order = _within_user_order(self.seqs, column, descending, absolute)
            if self.positions is not None and len(self.positions) * _FEW < len(order):
                # Few events left (a narrow filter): sort their places in the whole order, not
                # a mask over every event. The same events in the same order either way.
                places = _within_user_rank(self.seqs, column, descending, absolute, order)[self.positions]
                places.sort()
                order = order[places]
            elif self.positions is not None:
                member = np.zeros(self.seqs.n_events, dtype=bool)
                member[self.positions] = True
                order = order.take(np.flatnonzero(member.take(order)))  # not order[mask]: see keep
            # Reordered within each user only: every user keeps its events' count and place, so
            # the segments are this frame's (ascending, as layout order left them), not regathered.
            return replaced(self, positions=order, segment=self.segment, layout_order=False)
        if self.layout_order and self.positions is not None:
            # A batch (a sample's users, again and again in the search): through the whole
            # order once that is made, or once the batches sorted add up to all the events
            # (making it then costs at most what sorting batches already cost).
            cache: dict[Any, Any] = self.seqs._cache  # the layout's cache holds more than arrays
            sorted_key = ("batch_sorted_events", column, descending, absolute)
            if ("within_user_order", column, descending, absolute) in cache \
                    or cache.get(sorted_key, 0) + len(self.positions) >= self.seqs.n_events:
                order = _within_user_order(self.seqs, column, descending, absolute)
                return self._sorted_by_places(order, column, descending, absolute)
            cache[sorted_key] = cache.get(sorted_key, 0) + len(self.positions)
        key = self.values(column)
        if absolute:
            key = np.abs(key)
        if descending:
            key = -key  # NaN stays NaN and so still sorts last; ties keep their order
        # lexsort is stable: by segment first, then key, ties in current order.
        return self.reorder(np.lexsort((key, self.segment)))

    def _sorted_by_places(self, order: np.ndarray, column: str, descending: bool, absolute: bool) -> EventFrame:
        """:meth:`sorted_by` of a batch in layout order through the whole order, already made:
        each event's place in it, sorted within its segment (one integer sort, not a lexsort of
        the values: 4x faster on the search's batches). The places order each user's events as
        the lexsort does (by value, NaN last, ties in layout order); a segment's events all
        belong to one user, and a user in two segments (a batch may repeat one) is kept apart
        by the segment, which leads the sort key."""
        assert self.positions is not None, "a batch has its positions"
        places = _within_user_rank(self.seqs, column, descending, absolute, order).take(self.positions)
        shift = self.segment.astype(np.int64) * len(order)
        keyed = places + shift
        keyed.sort()
        keyed -= shift  # the segments ascend, and each keeps its count: the same segment array
        return replaced(self, positions=order.take(keyed), segment=self.segment, layout_order=False)

    def rank_in_segment(self) -> np.ndarray:
        """0-based position of each event within its segment, in the current order."""
        n = len(self.segment)
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        starts = np.flatnonzero(np.r_[True, self.segment[1:] != self.segment[:-1]])
        run = np.diff(np.r_[starts, n])
        return np.arange(n, dtype=np.int64) - np.repeat(starts, run)


#: A filtered frame with fewer than 1/_FEW of the events sorts its events' places in the whole
#: order (k log k) rather than masking all events (n): about even at 1/16 on 250,000 events.
_FEW = 16


def _within_user_rank(seqs: Sequences, column: str, descending: bool, absolute: bool,
                      order: np.ndarray) -> np.ndarray:
    """Each event's place in :func:`_within_user_order` (its inverse permutation; int32 where it
    fits), computed once per Sequences."""
    cache_key = ("within_user_rank", column, descending, absolute)
    rank = seqs._cache.get(cache_key)
    if rank is None:
        rank = np.empty(len(order), dtype=np.int32 if len(order) < 2**31 else np.int64)
        rank[order] = np.arange(len(order), dtype=rank.dtype)
        seqs._cache[cache_key] = rank
    return rank


def _within_user_order(seqs: Sequences, column: str, descending: bool, absolute: bool) -> np.ndarray:
    cache_key = ("within_user_order", column, descending, absolute)
    order = seqs._cache.get(cache_key)
    if order is None:
        key = seqs.values[column]
        if absolute:
            key = np.abs(key)
        if descending:
            key = -key
        order = sorted_within_users(key, seqs.event_user, seqs.offsets)  # np.lexsort((key, event_user))
        seqs._cache[cache_key] = order
    return order


#: The first item of the key a gathered column is kept under, apart from every frame's key.
_COLUMN = object()


class FrameCache:
    """Frames over all users of one Sequences by the row operators that made them, within a byte budget.

    The search evaluates thousands of statistics on one sample whose row operators repeat:
    the short catalog of 1,511 statistics has 59 distinct ones (a filter shared by every
    column and aggregation). A statistic evaluated with a cache (``Statistic.evaluate(...,
    frames=)``) starts from the longest prefix of its row operators already applied, so each
    filter is applied once, not once per statistic. Frames are immutable, so a shared one gives
    the same values. The least recently used frames go first once their arrays exceed
    ``max_bytes``. It may be shared by threads (the catalog's workers): a lock guards the
    store, and two threads missing the same frame both compute it, with the same result.

    Parameters
    ----------
    seqs : Sequences
        The users the frames are over (a statistic evaluated on other data does not use it).
    max_bytes : int, default=192 MiB
    """

    def __init__(self, seqs: Sequences, max_bytes: int = 192 * 2**20) -> None:
        self.seqs = seqs
        self.max_bytes = max_bytes
        #: Frames, and the columns gathered for them (:meth:`column`), with their bytes.
        self._frames: OrderedDict[Hashable, tuple[EventFrame | np.ndarray, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        """The number of entries held: frames, and the columns gathered for them."""
        return len(self._frames)

    def keys(self) -> list[Hashable]:
        """The keys of the frames held, least recently used first (the columns gathered for them not listed)."""
        with self._lock:
            return [k for k in self._frames if not (isinstance(k, tuple) and k and k[0] is _COLUMN)]

    def get(self, key: Hashable) -> EventFrame | None:
        """The frame stored under ``key`` (now the most recently used), or None."""
        with self._lock:
            hit = self._frames.get(key)
            if hit is None:
                return None
            self._frames.move_to_end(key)
            return cast("EventFrame", hit[0])

    def put(self, key: Hashable, frame: EventFrame) -> None:
        """Store ``frame`` under ``key``, dropping the least recently used beyond the budget."""
        size = sum(a.nbytes for a in (frame.positions, frame.segment)
                   if a is not None and a is not self.seqs.event_user)
        self._store(key, frame, size)

    def column(self, key: Hashable, frame: EventFrame, column: str) -> np.ndarray:
        """``frame.values(column)`` (a numerical column) or ``frame.codes(column)``, where ``frame``
        is the one stored under ``key``: kept with the frames, within the same budget. The
        statistics after one filter read the same few columns of its events (a mean, a maximum,
        7 percentiles of the amount), each a gather of every event left."""
        numerical = column in frame.seqs.values
        if frame.positions is None:  # every event in layout order: the column itself, no gather
            return frame.values(column) if numerical else frame.codes(column)
        cache_key = (_COLUMN, key, column)
        with self._lock:
            hit = self._frames.get(cache_key)
            if hit is not None:
                self._frames.move_to_end(cache_key)
                return cast("np.ndarray", hit[0])
        out = frame.values(column) if numerical else frame.codes(column)
        self._store(cache_key, out, out.nbytes)
        return out

    def _store(self, key: Hashable, item: EventFrame | np.ndarray, size: int) -> None:
        if size > self.max_bytes:
            return
        with self._lock:
            if key in self._frames:
                return
            self._frames[key] = (item, size)
            self._bytes += size
            while self._bytes > self.max_bytes:
                _, (_, dropped) = self._frames.popitem(last=False)
                self._bytes -= dropped
