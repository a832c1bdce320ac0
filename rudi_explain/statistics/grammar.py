"""What a pipeline has done so far, and the columns it may use.

The validity rules of SEMANTICS.md are stated by each operator (its
``check``) against the :class:`PipelineState` of the operators before it and
the :class:`Schema` of the data; this module holds those two plain records.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from rudi_explain.exceptions import InputTypeError
from rudi_explain.statistics.records import replaced

__all__ = ["Schema", "PipelineState"]


@dataclass(frozen=True)
class Schema:
    """Column names and vocabularies: all that validity depends on.

    Parameters
    ----------
    vocabularies : mapping of str to tuple of str
        Categorical columns and their sorted categories.
    numerical : tuple of str
        Numerical columns.
    time : str or None, default=None
        The time column, or None without one (time operators are then invalid).
    time_unit : {'datetime', 'number'} or None, default=None
        'datetime' for a datetime (or timedelta) time column, whose time
        statistics are in days and windows in units like ``7d``; 'number'
        for a numerical one, measured in its own units.
    """

    vocabularies: Mapping[str, tuple[str, ...]]
    numerical: tuple[str, ...]
    time: str | None = None
    time_unit: str | None = None
    #: Numerical columns that take negative values in the data (the readable
    #: grammar allows ``Abs`` on these only).
    signed: frozenset[str] = frozenset()

    @classmethod
    def of(cls, data: Schema | object) -> Schema:
        """The schema of a Sequences (or a Schema, returned as is)."""
        if isinstance(data, Schema):
            return data
        cache = getattr(data, "_cache", None)
        if cache is not None and "schema" in cache:
            return cache["schema"]
        vocab = getattr(data, "vocabularies", None)
        numerical = getattr(data, "numerical", None)
        if vocab is None or numerical is None:
            raise InputTypeError(f"expected Sequences or Schema, got {type(data).__name__}")
        times = getattr(data, "times", None)
        time = getattr(data, "time_column", None) if times is not None else None
        time_unit = None if time is None or times is None else ("datetime" if times.dtype.kind in "mM" else "number")
        values = getattr(data, "values", {})
        signed = frozenset(c for c in numerical if c in values and bool(np.any(values[c] < 0)))
        schema = cls(dict(vocab), tuple(numerical), time=time, time_unit=time_unit, signed=signed)
        if cache is not None:
            cache["schema"] = schema
        return schema

    def kind(self, column: str) -> str | None:
        """'categorical', 'numerical', or None for an unknown column."""
        if column in self.vocabularies:
            return "categorical"
        if column in self.numerical:
            return "numerical"
        return None

    def to_json(self) -> dict:
        return {"vocabularies": {k: list(v) for k, v in self.vocabularies.items()}, "numerical": list(self.numerical),
                "time": self.time, "time_unit": self.time_unit, "signed": sorted(self.signed)}

    @classmethod
    def from_json(cls, data: dict) -> Schema:
        return cls({k: tuple(v) for k, v in data["vocabularies"].items()}, tuple(data["numerical"]),
                   time=data.get("time"), time_unit=data.get("time_unit"), signed=frozenset(data.get("signed", ())))


@dataclass(frozen=True)
class PipelineState:
    """A summary of a partial pipeline, enough to judge the next operator."""

    selected: str | None = None
    selected_kind: str | None = None
    filtered: frozenset[str] = field(default_factory=frozenset)
    retained: frozenset[str] = field(default_factory=frozenset)
    sorted_by: str | None = None
    top_after_sort: bool = False
    has_top: bool = False
    has_abs: bool = False
    group: str | None = None
    aggregated: bool = False
    #: A time window (``Within``) was applied.
    windowed: bool = False
    depth: int = 0

    def but(self, **changes) -> PipelineState:
        """This state with some fields changed (:func:`~rudi_explain.statistics.records.replaced`)."""
        return replaced(self, **changes)

    @property
    def needs_order_use(self) -> bool:
        """A SortBy with no Top after it: only First can still use the order."""
        return self.sorted_by is not None and not self.top_after_sort

