"""Reading a figure out of a CSV cell, a JSON value or a pandas cell: a float, or None when there is none."""

from __future__ import annotations

import math
from typing import Any


def number(value: Any) -> float | None:
    """``value`` as a float; None for an empty cell, text that is no number, or NaN (pandas' empty cell)."""
    if value is None or value == "":
        return None
    try:
        figure = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(figure) else figure
