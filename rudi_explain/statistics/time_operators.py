"""Time operators: event windows, recency, tenure and gaps between events.

What the time column already knows, as operators of the statistic language
(see ``TIME.md`` next to this module for the contract):

* ``Within(7d)`` keeps the events of the last 7 days before the reference
  time (``Within(30)`` on a numerical time column: its own units);
* ``Recency``, ``Tenure``, ``MeanGap`` and ``MaxGap`` aggregate the times of
  the events left: time since the last and the first of them, mean and
  longest time between consecutive ones. Like ``Count`` they ignore the
  selected column: one value per user (per group with ``GroupBy``).

Times are measured at ``Sequences.reference_time`` (the latest event in the
data unless given), in days for a datetime time column and in the column's
own units for a numerical one. Every kernel works on all users at once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from rudi_explain.data.sequences import Sequences
from rudi_explain.exceptions import InputError, InputTypeError
from rudi_explain.statistics import kernels
from rudi_explain.statistics.frame import EventFrame
from rudi_explain.statistics.grammar import PipelineState, Schema
from rudi_explain.statistics.operators import Aggregation, RowOperator, register_operator
from rudi_explain.validation import check_real

__all__ = [
    "Within",
    "TimeAggregation",
    "Recency",
    "Tenure",
    "MeanGap",
    "MaxGap",
    "TIME_UNITS",
    "WINDOWS",
]

#: Window units of a datetime time column, in nanoseconds.
TIME_UNITS: dict[str, int] = {
    "s": 1_000_000_000,
    "min": 60_000_000_000,
    "h": 3_600_000_000_000,
    "d": 86_400_000_000_000,
    "w": 604_800_000_000_000,
}
_UNIT_WORDS = {"s": "second", "min": "minute", "h": "hour", "d": "day", "w": "week"}
#: Time aggregations on a datetime column are in days.
_NS_PER_DAY = TIME_UNITS["d"]
#: The windows the search tries on a datetime time column.
WINDOWS: tuple[tuple[int, str], ...] = ((1, "d"), (7, "d"), (30, "d"), (90, "d"))

_WINDOW_TEXT = re.compile(r"(?P<length>\d+(?:\.\d+)?)(?P<unit>[a-z]*)\Z")


def _no_time_reason(op: str, schema: Schema) -> str | None:
    if schema.time is None:
        return f"{op} needs a time column, and these data have none"
    return None


def _number_text(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def _times(seqs: Sequences) -> np.ndarray:
    """The time column of the layout; an error if it has none."""
    times = seqs.times
    if times is None:
        raise InputError("time operators need a time column, and these sequences have none")
    return times


def _event_times(frame: EventFrame) -> np.ndarray:
    """Times of the events left, as int64 nanoseconds (datetime, timedelta) or float."""
    times = _times(frame.seqs)
    if times.dtype.kind in "mM":
        times = times.view(np.int64)
    return times if frame.positions is None else times[frame.positions]


def _reference(seqs: Sequences) -> Any:
    """The reference time in the domain of :func:`_event_times`."""
    times = _times(seqs)
    ref = getattr(seqs, "reference_time", None)
    if ref is None:  # layouts built without one: the latest event, as documented
        ref = times.max()
    if times.dtype.kind in "mM":
        return int(np.asarray(ref).astype(times.dtype).view(np.int64))
    return float(ref)


def _scale(seqs: Sequences) -> float:
    """Divisor from the time domain to output units: days, or raw units."""
    return float(_NS_PER_DAY) if _times(seqs).dtype.kind in "mM" else 1.0


# --------------------------------------------------------------------------- Within
@register_operator
@dataclass(frozen=True)
class Within(RowOperator):
    """Keep the events in the last ``length`` units before the reference time.

    An event at time ``t`` is kept when ``reference - length < t <= reference``.

    Parameters
    ----------
    length : float
        The window's length, > 0.
    unit : {'s', 'min', 'h', 'd', 'w'} or None, default=None
        Its unit on a datetime time column (``Within(7d)``, ``Within(24h)``);
        None on a numerical time column, whose own units are used
        (``Within(30)``).
    """

    length: float
    unit: str | None = None
    name: ClassVar[str] = "Within"
    #: A filter on events: commutes with RetainBy/FilterBy and keeps the order.
    event_filter: ClassVar[bool] = True

    def __post_init__(self):
        check_real(self.length, "Within's window length", min_value=0, include_min=False)
        if self.unit is not None and self.unit not in TIME_UNITS:
            raise InputError(f"Within: unknown time unit {self.unit!r}; use one of {sorted(TIME_UNITS)} or none")

    def arguments(self) -> list[str]:
        return [f"{_number_text(self.length)}{self.unit or ''}"]

    @classmethod
    def from_arguments(cls, positional, keyword):
        m = _WINDOW_TEXT.match(str(positional[0])) if len(positional) == 1 and not keyword else None
        if m is None:
            raise InputError("Within takes one window: Within(7d), Within(24h), "
                             "or Within(30) on a numerical time column")
        length = float(m["length"])
        return cls(int(length) if length.is_integer() else length, m["unit"] or None)

    def check(self, state: PipelineState, schema: Schema) -> str | None:
        reason = super().check(state, schema) or _no_time_reason(self.name, schema)
        if reason:
            return reason
        if self.unit is None and schema.time_unit == "datetime":
            return (f"{self} on the datetime time column {schema.time!r} needs a unit: "
                    f"Within({_number_text(self.length)}d) or Within({_number_text(self.length)}h)")
        if self.unit is not None and schema.time_unit == "number":
            return (f"{self} needs a datetime time column; {schema.time!r} holds numbers: "
                    f"write Within({_number_text(self.length)}) in its units")
        if state.windowed:
            return "Within can be used only once"
        return None

    def advance(self, state, schema):
        return state.but(depth=state.depth + 1, windowed=True)

    @classmethod
    def candidates(cls, schema):
        # A numerical column's span is not in the schema: no window to propose there.
        if schema.time_unit == "datetime":
            for length, unit in WINDOWS:
                yield cls(length, unit)

    @property
    def span(self) -> float:
        """The window in the time domain of the engine: nanoseconds, or raw units."""
        return self.length * TIME_UNITS[self.unit] if self.unit is not None else float(self.length)

    def canonical(self) -> Within:
        """The same window in the largest unit that states it exactly (``24h`` -> ``1d``)."""
        if self.unit is None:
            return self
        ns = round(self.span)
        for unit in ("w", "d", "h", "min", "s"):
            if ns % TIME_UNITS[unit] == 0:
                return Within(ns // TIME_UNITS[unit], unit)
        return self

    def apply(self, frame: EventFrame) -> EventFrame:
        t = _event_times(frame)
        ref = _reference(frame.seqs)
        if _times(frame.seqs).dtype.kind in "mM":
            start = ref - int(round(self.span))  # exact integer nanoseconds
        else:
            start = ref - self.span
        return frame.keep((t > start) & (t <= ref))

    def window_words(self) -> str:
        """ "the last 7 days", "the last hour", "the last 30 time units"."""
        length = _number_text(self.length)
        if self.unit is None:
            noun = "time unit"
        else:
            noun = _UNIT_WORDS[self.unit]
        if length == "1":
            return f"the last {noun}"
        return f"the last {length} {noun}s"


# --------------------------------------------------------------------------- aggregations
class TimeAggregation(Aggregation):
    """An aggregation of the times of the events left, whatever the selection.

    Subclasses implement :meth:`reduce_extremes` when the earliest and the
    latest time of each key are enough (``Recency``, ``Tenure``,
    ``MeanGap``), or set ``sorted_times = True`` and implement
    :meth:`reduce_times`, which sees every time in time order (``MaxGap``).
    The engine calls :meth:`reduce_events`.
    """

    ignores_selection: ClassVar[bool] = True
    #: Whether :meth:`reduce_times` needs all the times, sorted by key then time.
    sorted_times: ClassVar[bool] = False

    def check(self, state, schema):
        return super().check(state, schema) or _no_time_reason(self.name, schema)

    def reduce(self, values, keys, n_keys):
        raise InputTypeError(f"{self.name} aggregates event times, not values: evaluate it with Statistic.evaluate")

    def reduce_onehot(self, codes, keys, n_keys, n_categories):
        raise InputTypeError(f"{self.name} aggregates event times, not values: evaluate it with Statistic.evaluate")

    def reduce_events(self, frame: EventFrame, rows: np.ndarray | None, keys: np.ndarray,
                      n_keys: int) -> np.ndarray:
        """One value per key from the times of the events left.

        Parameters
        ----------
        frame : EventFrame
            The events left.
        rows : ndarray of int or None
            The places, among them, of the events ``keys`` labels (GroupBy drops unseen
            groups); None for all.
        keys : ndarray of int
            The key (segment, or segment x group) of each of those events.
        n_keys : int
        """
        t = _event_times(frame)
        if rows is not None:
            t = t.take(rows)
        keys = np.asarray(keys, dtype=np.int64)
        reference, scale = _reference(frame.seqs), _scale(frame.seqs)
        count = np.bincount(keys, minlength=n_keys)
        # In layout order, with keys ascending (no GroupBy), the events of a
        # key already ascend in time: nothing to sort.
        in_order = frame.layout_order and not (len(keys) > 1 and (np.diff(keys) < 0).any())
        if not self.sorted_times and not in_order:
            # Only the earliest and latest time of each key matter: no sort needed.
            big = np.iinfo(np.int64).max if t.dtype.kind == "i" else np.inf
            first = np.full(n_keys, big, dtype=t.dtype)
            last = np.full(n_keys, -big if t.dtype.kind == "f" else np.iinfo(np.int64).min, dtype=t.dtype)
            np.minimum.at(first, keys, t)
            np.maximum.at(last, keys, t)
            return self.reduce_extremes(first, last, count, reference, scale)
        if not in_order:
            if frame.layout_order:  # GroupBy: a stable sort by key keeps the time order
                order = np.argsort(keys, kind="stable")
            else:
                # After SortBy. Within a user, layout position ascends with time, so one
                # sort by (key, position) restores time order: faster than lexsort by time.
                positions = frame.event_positions() if rows is None else frame.event_positions()[rows]
                order = np.argsort(keys * np.int64(frame.seqs.n_events) + positions)
            t, keys = t[order], keys[order]
        end = np.cumsum(count)
        start = end - count
        return self.reduce_times(t, keys, count, start, end, reference, scale)

    def reduce_times(self, t: np.ndarray, keys: np.ndarray, count: np.ndarray, start: np.ndarray,
                     end: np.ndarray, reference: Any, scale: float) -> np.ndarray:
        """The aggregate from times ``t`` sorted by key then time.

        The times of key ``j`` are ``t[start[j]:end[j]]`` (``count[j]`` of
        them); ``reference`` is in the domain of ``t`` (int64 nanoseconds or
        raw numbers) and ``scale`` turns a difference of times into output
        units. The default hands the first and last time of each key to
        :meth:`reduce_extremes`.
        """
        has = count > 0
        first = np.zeros(len(count), dtype=t.dtype)
        last = np.zeros(len(count), dtype=t.dtype)
        first[has], last[has] = t[start[has]], t[end[has] - 1]
        return self.reduce_extremes(first, last, count, reference, scale)

    def reduce_extremes(self, first: np.ndarray, last: np.ndarray, count: np.ndarray, reference: Any,
                        scale: float) -> np.ndarray:
        """The aggregate from the earliest and latest time of each key (where ``count > 0``)."""
        raise NotImplementedError


@register_operator
@dataclass(frozen=True)
class Recency(TimeAggregation):
    """Time from the last event left to the reference time; NaN when none is left."""

    name: ClassVar[str] = "Recency"
    words: ClassVar[str] = "time since the last event"

    def reduce_extremes(self, first, last, count, reference, scale):
        out = np.full(len(count), np.nan)
        has = count > 0
        out[has] = (reference - last[has]) / scale  # exact in int64 nanoseconds, then scaled
        return out


@register_operator
@dataclass(frozen=True)
class Tenure(TimeAggregation):
    """Time from the first event left to the reference time; NaN when none is left."""

    name: ClassVar[str] = "Tenure"
    words: ClassVar[str] = "time since the first event"

    def reduce_extremes(self, first, last, count, reference, scale):
        out = np.full(len(count), np.nan)
        has = count > 0
        out[has] = (reference - first[has]) / scale
        return out


@register_operator
@dataclass(frozen=True)
class MeanGap(TimeAggregation):
    """Mean time between consecutive events left; NaN with fewer than 2."""

    name: ClassVar[str] = "MeanGap"
    words: ClassVar[str] = "mean time between events"

    def reduce_extremes(self, first, last, count, reference, scale):
        # The gaps of a key add up to its last time minus its first.
        out = np.full(len(count), np.nan)
        has = count > 1
        out[has] = (last[has] - first[has]) / scale / (count[has] - 1)
        return out


@register_operator
@dataclass(frozen=True)
class MaxGap(TimeAggregation):
    """Longest time between consecutive events left; NaN with fewer than 2."""

    name: ClassVar[str] = "MaxGap"
    words: ClassVar[str] = "longest time between events"
    sorted_times: ClassVar[bool] = True

    def reduce_times(self, t, keys, count, start, end, reference, scale):
        if len(t) < 2:
            return np.full(len(count), np.nan)
        same = keys[1:] == keys[:-1]
        gaps = (t[1:] - t[:-1])[same] / scale
        return kernels.segment_max(gaps, keys[1:][same], len(count))
