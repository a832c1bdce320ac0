"""One card of a scorecard: a statistic output cut into bands with points, or linear.

SEMANTICS.md, "The scorecard": a card is one output of one statistic. Its
value bands are ``at most t1``, ``more than t1 and at most t2``, ...,
``more than tm`` at the literals' own round thresholds, plus an "undefined"
band where the output can be undefined. Every user is in exactly one band
and gets its points. A linear card gives ``slope x (value clipped to [lo,
hi])`` instead (plus the undefined band's points). Band edges are written by
:func:`rudi_explain.rules.values.format_value`, the one value formatter.

This module holds the card itself (which band a value falls in, its points,
its text and JSON); fitting cards is :mod:`rudi_explain.rules.scorecard_fit`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from rudi_explain.exceptions import InputError
from rudi_explain.rules.values import format_value, points_text, slope_text

__all__ = ["Band", "Linear", "Card", "UNDEFINED"]

#: Band index of the users for whom a card's output is undefined (:meth:`Card.band_index`).
UNDEFINED = -1


@dataclass(frozen=True)
class Band:
    """One band of a card: its points and what the training users in it look like.

    Attributes
    ----------
    points : float
        Added to the score of every user in the band (centred: the training
        users' mean points on a card is 0).
    share : float
        Share of the training users in the band, in [0, 1].
    teacher : float or None
        Mean teacher score of the training users in the band; None when none is.
    note : str or None
        Why the points and the band's own gap (``teacher`` minus the mean
        over all training users) differ in sign; None where they agree.
    """

    points: float
    share: float = 0.0
    teacher: float | None = None
    note: str | None = None

    def to_dict(self) -> dict:
        return {"points": self.points, "share": self.share, "teacher": self.teacher, "note": self.note}

    @classmethod
    def from_dict(cls, d: dict) -> Band:
        teacher = d.get("teacher")
        return cls(float(d["points"]), float(d.get("share", 0.0)), None if teacher is None else float(teacher),
                   d.get("note"))


@dataclass(frozen=True)
class Linear:
    """The value part of a linear card: ``offset + slope * (clip(value, lo, hi) - lo)``.

    Attributes
    ----------
    slope : float
        Points per unit of the value.
    lo, hi : float
        The range it was fitted on (the card's outer round thresholds); values
        outside count as ``lo`` or ``hi``.
    offset : float
        Points at ``lo`` and below.
    share, teacher, note
        As for :class:`Band`, over the users whose value is defined; the note
        says why the slope's sign differs from that of the teacher's
        correlation with the value.
    """

    slope: float
    lo: float
    hi: float
    offset: float = 0.0
    share: float = 0.0
    teacher: float | None = None
    note: str | None = None

    def points(self, v: np.ndarray) -> np.ndarray:
        return self.offset + self.slope * (np.clip(v, self.lo, self.hi) - self.lo)

    def to_dict(self) -> dict:
        return {"slope": self.slope, "lo": self.lo, "hi": self.hi, "offset": self.offset, "share": self.share,
                "teacher": self.teacher, "note": self.note}

    @classmethod
    def from_dict(cls, d: dict) -> Linear:
        teacher = d.get("teacher")
        return cls(float(d["slope"]), float(d["lo"]), float(d["hi"]), float(d.get("offset", 0.0)),
                   float(d.get("share", 0.0)), None if teacher is None else float(teacher), d.get("note"))


@dataclass(frozen=True, eq=False)
class Card:
    """One statistic output as bands with points (or linear), for every user exactly one band.

    Attributes
    ----------
    column : int
        The output: a column of the value matrix (``Literals.values``).
    name : str
        The output in words ("largest amount among events where industry is games").
    kind : str
        'binary', 'count', 'share' or 'value' (``Literals.output_kind``): how values are written.
    unit : str
        The output's unit ("EUR"), "" without one.
    edges : tuple of float
        Sorted band edges, the literals' own thresholds; empty for a linear card.
    bands : tuple of Band
        ``len(edges) + 1`` value bands, ascending: ``value <= edges[0]``,
        ``edges[0] < value <= edges[1]``, ..., ``value > edges[-1]``.
    undefined : Band or None
        The band of the users whose value is undefined (NaN); None where the
        output is defined for every training user (an undefined value then
        counts as below every edge, as a literal reads it).
    undefined_words : str
        Who those users are ("users with no events where industry is games").
    linear : Linear or None
        For a linear card, its value part (``edges`` and ``bands`` empty).
    monotone : bool
        Whether the points were fitted monotone (the teacher's mean is
        monotone across the bands and no validation user said otherwise).
    """

    column: int
    name: str
    kind: str = "value"
    unit: str = ""
    edges: tuple[float, ...] = ()
    bands: tuple[Band, ...] = (Band(0.0),)
    undefined: Band | None = None
    undefined_words: str = ""
    linear: Linear | None = None
    monotone: bool = False

    def __post_init__(self) -> None:
        e = np.asarray(self.edges, dtype=np.float64)
        if self.linear is None:
            if len(self.bands) != e.size + 1:
                raise InputError(f"card {self.name!r}: {e.size} edges need {e.size + 1} bands, got {len(self.bands)}")
            if e.size and (not np.isfinite(e).all() or (np.diff(e) <= 0).any()):
                raise InputError(f"card {self.name!r}: band edges must be finite and increasing, got {self.edges}")
        elif self.edges or self.bands:
            raise InputError(f"card {self.name!r}: a linear card has no band edges")

    # -- users --------------------------------------------------------------

    @property
    def n_bands(self) -> int:
        """Value bands (1 for a linear card), the undefined band not counted."""
        return 1 if self.linear is not None else len(self.bands)

    def band_index(self, v: np.ndarray) -> np.ndarray:
        """The band of each value: 0 .. len(edges) ascending, :data:`UNDEFINED` (-1) for NaN.

        Where the card has no undefined band, NaN falls in band 0 (below every
        edge, as the literals read it). A linear card has one value band, 0.
        """
        v = np.asarray(v, dtype=np.float64)
        nan = np.isnan(v)
        if self.linear is not None:
            idx = np.zeros(v.shape, dtype=np.int64)
        else:
            # side="left": edges[k-1] < v <= edges[k] is band k
            idx = np.searchsorted(np.asarray(self.edges, dtype=np.float64), v, side="left").astype(np.int64)
        idx[nan] = UNDEFINED if self.undefined is not None else 0
        return idx

    def points(self, v: np.ndarray) -> np.ndarray:
        """The points of each value (NaN: undefined), float64 array of v's shape."""
        v = np.asarray(v, dtype=np.float64)
        nan = np.isnan(v)
        if self.linear is not None:
            out = self.linear.points(np.where(nan, self.linear.lo, v))
        else:
            table = np.array([b.points for b in self.bands], dtype=np.float64)
            out = table[self.band_index(np.where(nan, -np.inf, v))]
        if self.undefined is not None:
            out[nan] = self.undefined.points
        return out

    # -- text ---------------------------------------------------------------

    def _v(self, x: float) -> str:
        return format_value(x, self.kind, self.unit, exact=True)

    def band_labels(self) -> list[str]:
        """Each value band in words, lower bound first ("more than 60 EUR and at most 360 EUR")."""
        if self.linear is not None:
            return [self.linear_text()]
        e = self.edges
        if not e:
            return ["every value"]
        if self.kind == "binary" and len(e) == 1 and 0 <= e[0] < 1:
            return ["no (0)", "yes (1)"]
        labels = []
        for k in range(len(e) + 1):
            if k == 0:
                labels.append("0" if self.kind == "count" and e[0] == 0 else f"at most {self._v(e[0])}")
            elif k == len(e):
                labels.append(f"more than {self._v(e[-1])}")
            elif self.kind == "count" and e[k] == e[k - 1] + 1 and e[k] == int(e[k]):
                labels.append(f"exactly {self._v(e[k])}")
            else:
                labels.append(f"more than {self._v(e[k - 1])} and at most {self._v(e[k])}")
        return labels

    def undefined_label(self) -> str:
        """"undefined (no events where industry is games)"."""
        who = self.undefined_words
        if who.startswith("users with "):
            return f"undefined ({who[len('users with '):]})"
        return f"undefined ({who})" if who else "undefined"

    def linear_text(self) -> str:
        """"+0.02 per 100 EUR, from 0 to 5,000 EUR"."""
        lin = self.linear
        if lin is None:
            raise InputError(f"card {self.name!r} is not linear")
        return (f"{slope_text(lin.slope, lin.lo, lin.hi, self.kind, self.unit)}, "
                f"from {format_value(lin.lo, self.kind, exact=True)} to {self._v(lin.hi)}")

    def rows(self) -> list[tuple[str, str, str, str, str | None]]:
        """``(label, points, users, teacher, note)`` per row, the undefined band first."""
        out = []
        if self.undefined is not None:
            out.append(_row(self.undefined_label(), self.undefined))
        if self.linear is not None:
            lin = self.linear
            pts = f"{points_text(lin.offset)} to {points_text(lin.offset + lin.slope * (lin.hi - lin.lo))}"
            out.append((self.linear_text(), pts, _users(lin.share), _teacher(lin.teacher), lin.note))
        else:
            out.extend(_row(label, b) for label, b in zip(self.band_labels(), self.bands))
        return out

    def text(self) -> str:
        """The card as SEMANTICS.md writes it: rows lined up, then the notes."""
        rows = self.rows()
        width = max([len(self.name)] + [2 + len(r[0]) for r in rows]) + 2
        pw = max([9] + [len(r[1]) + 3 for r in rows])
        lines = [self.name.ljust(width) + "points".rjust(pw) + "users".rjust(8) + "teacher".rjust(10)]
        for label, pts, users, teacher, _ in rows:
            lines.append(("  " + label).ljust(width) + pts.rjust(pw) + users.rjust(8) + teacher.rjust(10))
        for label, _, _, _, note in rows:
            if note:
                lines.append(f"  note on '{label}': {note}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.text()

    # -- persistence --------------------------------------------------------

    def to_dict(self) -> dict:
        """A JSON-ready dict (floats as Python floats: JSON keeps every bit)."""
        return {
            "column": self.column, "name": self.name, "kind": self.kind, "unit": self.unit,
            "edges": [float(e) for e in self.edges], "bands": [b.to_dict() for b in self.bands],
            "undefined": None if self.undefined is None else self.undefined.to_dict(),
            "undefined_words": self.undefined_words,
            "linear": None if self.linear is None else self.linear.to_dict(), "monotone": self.monotone,
        }

    @classmethod
    def from_dict(cls, d: dict) -> Card:
        return cls(
            int(d["column"]), str(d["name"]), str(d.get("kind", "value")), str(d.get("unit", "")),
            tuple(float(e) for e in d.get("edges", ())), tuple(Band.from_dict(b) for b in d.get("bands", ())),
            None if d.get("undefined") is None else Band.from_dict(d["undefined"]),
            str(d.get("undefined_words", "")),
            None if d.get("linear") is None else Linear.from_dict(d["linear"]), bool(d.get("monotone", False)),
        )

    def with_(self, **changes: Any) -> Card:
        """A copy with some fields changed."""
        fields = {**self.__dict__, **changes}
        return type(self)(**fields)


def _users(share: float) -> str:
    if 0 < share < 0.005:
        return "<1%"
    return f"{share * 100:.0f}%"


def _teacher(t: float | None) -> str:
    return "-" if t is None else f"{t:.2f}"


def _row(label: str, b: Band) -> tuple[str, str, str, str, str | None]:
    return (label, points_text(b.points), _users(b.share), _teacher(b.teacher), b.note)
