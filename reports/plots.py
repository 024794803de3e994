"""The report's plots as PNG bytes: throughput and p50/p99 against users, and latency over time.

matplotlib's object API with the Agg canvas (no pyplot), so rendering a report never touches a global backend or
opens a window. Each function returns None when the data has nothing to plot.
"""

from __future__ import annotations

import io

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

DPI = 100
SIZE = (9.0, 4.0)


def _png(figure: Figure) -> bytes:
    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    return buffer.getvalue()


def _closed_model_rows(steps: pd.DataFrame) -> pd.DataFrame:
    rows = steps[steps["name"] != "Aggregated"].copy()
    rows["users_n"] = pd.to_numeric(rows["users"], errors="coerce")
    rows = rows[rows["target_rate"].isna() | (rows["target_rate"].astype(str) == "")] \
        if "target_rate" in rows else rows
    return rows.dropna(subset=["users_n", "rps"])


def throughput_vs_users(steps: pd.DataFrame) -> bytes | None:
    """req/s (left) and p50/p99 (right) per step, one line per request type and name, against users."""
    rows = _closed_model_rows(steps)
    if rows["users_n"].nunique() < 2:
        return None
    figure = Figure(figsize=SIZE)
    rate_axis, latency_axis = figure.subplots(1, 2)
    for (rtype, name), group in rows.groupby(["request_type", "name"], sort=True):
        group = group.sort_values("users_n")
        label = f"{rtype} {name}"
        rate_axis.plot(group["users_n"], group["rps"], marker="o", label=label)
        latency_axis.plot(group["users_n"], group["p50_ms"], marker="o", label=f"{label} p50")
        latency_axis.plot(group["users_n"], group["p99_ms"], marker="s", linestyle="--", label=f"{label} p99")
    for axis, title, unit in ((rate_axis, "Throughput", "req/s"), (latency_axis, "Latency", "ms")):
        axis.set_title(title)
        axis.set_xlabel("users")
        axis.set_ylabel(unit)
        if rows["users_n"].max() / max(rows["users_n"].min(), 1.0) >= 8:
            axis.set_xscale("log", base=2)
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize="small")
    rate_axis.set_ylim(bottom=0)
    latency_axis.set_ylim(bottom=0)
    return _png(figure)


def latency_over_time(timeline: pd.DataFrame, steps: pd.DataFrame | None = None) -> bytes | None:
    """p50/p99 and requests per interval over the run, with a line where each step began."""
    if timeline.empty or "time" not in timeline:
        return None
    timeline = timeline.sort_values("time")
    start = float(timeline["time"].min())
    if steps is not None and "started_at" in steps and steps["started_at"].notna().any():
        start = min(start, float(pd.to_numeric(steps["started_at"], errors="coerce").min()))
    seconds = timeline["time"] - start
    figure = Figure(figsize=SIZE)
    latency_axis = figure.subplots()
    latency_axis.plot(seconds, timeline["p50_ms"], marker=".", label="p50")
    latency_axis.plot(seconds, timeline["p99_ms"], marker=".", linestyle="--", label="p99")
    latency_axis.set_xlabel("seconds since start")
    latency_axis.set_ylabel("ms")
    latency_axis.set_ylim(bottom=0)
    latency_axis.set_title("Latency over time")
    latency_axis.grid(True, alpha=0.3)
    count_axis = latency_axis.twinx()
    gaps = seconds.diff().dropna()
    width = float(gaps[gaps > 0].min()) if (gaps > 0).any() else 1.0
    count_axis.bar(seconds, timeline["requests"], width=width, align="edge", alpha=0.15, color="grey",
                   label="requests")
    count_axis.set_ylabel("requests per interval")
    if steps is not None and "started_at" in steps:
        for began in sorted(set(pd.to_numeric(steps["started_at"], errors="coerce").dropna())):
            latency_axis.axvline(began - start, color="black", alpha=0.2, linewidth=1)
    latency_axis.legend(loc="upper left", fontsize="small")
    return _png(figure)
