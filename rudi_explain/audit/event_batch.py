"""Event attributions of many users at once, flat over their events: what every method returns."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["EventBatch"]


@dataclass
class EventBatch:
    """Attributions of many users, flat over their events (``Sequences.batch_positions`` order)."""

    user_indices: np.ndarray
    segment: np.ndarray            # user (position in user_indices) of each event
    local: np.ndarray              # event position within its user, time order
    attribution: np.ndarray        # NaN where not attributed
    columns: dict = field(default_factory=dict)   # column name -> per-event attribution
    score: np.ndarray | None = None
    reference: np.ndarray | None = None
    delta: np.ndarray | None = None
    note: str = ""
