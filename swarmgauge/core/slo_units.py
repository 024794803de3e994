"""SLO units: what a threshold's unit means in base units, and a base-unit value shown back in that unit.

Shared by the SLO listener (which parses thresholds) and the reports (which show verdicts), so both read a
``45.2 MiB`` the same way.
"""

from __future__ import annotations

from typing import Any

#: unit -> base units (ms for time, bytes for memory, 1 for counts and ratios).
UNITS: dict[str, float] = {
    "": 1.0,
    "ms": 1.0,
    "s": 1000.0,
    "%": 0.01,
    "B": 1.0,
    "KiB": 1024.0,
    "MiB": 1024.0**2,
    "GiB": 1024.0**3,
    "KB": 1e3,
    "MB": 1e6,
    "GB": 1e9,
    "MiB/h": 1024.0**2,
    "GiB/h": 1024.0**3,
    "KiB/h": 1024.0,
    "B/h": 1.0,
    "/s": 1.0,
}
#: latency metric -> its percentile.
LATENCY_METRICS = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0, "p99.9": 99.9, "p999": 99.9}


def in_unit(value: float | None, unit: str, metric: str = "") -> str:
    """A base-unit value in the threshold's own unit, 3 significant digits: ``45.2 MiB``, ``1.5 %``, ``12.3 ms``."""
    if value is None:
        return "no data"
    shown_unit = unit or ("ms" if metric in LATENCY_METRICS or metric in ("max", "avg") else "")
    number = float(value) / UNITS.get(unit, 1.0)
    text = f"{number:.0f}" if abs(number) >= 100 else f"{number:.3g}"
    return f"{text} {shown_unit}".rstrip() if shown_unit != "%" else f"{text} %"


def verdict_text(verdict: dict[str, Any]) -> str:
    """A verdict with its figures in the threshold's unit: ``fail (80.1 ms > 50 ms)``, ``pass (20.4 ms < 50 ms)``.

    A failing figure is compared with the threshold as it stands (``>`` where ``p99<50ms`` failed), a passing one
    with the threshold's own operator; a verdict without a figure says ``no data``.
    """
    status = str(verdict.get("status") or "")
    observed, threshold = verdict.get("observed"), verdict.get("value")
    if observed is None or threshold is None:
        return f"{status} (no data)" if status and status != "no data" else "no data"
    unit, metric = str(verdict.get("unit") or ""), str(verdict.get("metric") or "")
    if status == "fail":
        op = ">" if observed > threshold else "<" if observed < threshold else "="
    else:
        op = str(verdict.get("op") or "")
    return f"{status} ({in_unit(observed, unit, metric)} {op} {in_unit(threshold, unit, metric)})"
