"""Reading a figure out of a CSV cell, a JSON value or a pandas cell, and showing one as the report does.

The report and the live views (the web UI's tab and ``/swarmgauge/``) show figures with these functions, so a rate
reads ``546 req/s`` and a latency ``20.4 ms`` in every view.
"""

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


def significant(value: float, digits: int = 3) -> str:
    """``value`` with ``digits`` significant digits, whole numbers kept whole (1396, not 1.4e+03)."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    if abs(value) >= 10 ** (digits - 1):
        return f"{value:.0f}"
    decimals = digits - 1 - math.floor(math.log10(abs(value)))
    return f"{value:.{max(decimals, 0)}f}"


def format_latency(ms: Any) -> str:
    """Latency with 3 significant digits: ``0.627 ms``, ``20.4 ms``, ``423 ms``, ``1.77 s``; empty for none."""
    figure = number(ms)
    if figure is None:
        return ""
    return f"{significant(figure / 1000.0)} s" if figure >= 1000.0 else f"{significant(figure)} ms"


def format_rate(rps: Any) -> str:
    """A rate with 3 significant digits and no unit (the report's tables name it in the column): ``546``."""
    figure = number(rps)
    return "" if figure is None else significant(figure)
