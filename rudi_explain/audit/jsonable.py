"""Numbers as the JSON payloads of the audit and the views hold them."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["json_float"]


def json_float(x: Any, digits: int = 6) -> float | None:
    """A JSON-safe float: None for None, NaN or infinity, rounded to ``digits`` significant digits."""
    if x is None:
        return None
    x = float(x)
    if not math.isfinite(x):
        return None
    return float(f"{x:.{digits}g}")
