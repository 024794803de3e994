"""The report's plots as PNG bytes: throughput and p50/p99 against users, and latency over time.

matplotlib's object API with the Agg canvas (no pyplot), so rendering a report never touches a global backend or
opens a window. Each function returns None when the data has nothing to plot.
"""

from __future__ import annotations

import io
from typing import Any

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FixedFormatter, FixedLocator, NullLocator

DPI = 100
SIZE = (9.0, 4.0)
SPIKE_FACTOR = 3.0  # a p99 point over 3x the 90th percentile of the points is a spike
SPIKE_HEADROOM = 1.5


def _png(figure: Figure) -> bytes:
    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    return buffer.getvalue()


def _closed_model_rows(steps: pd.DataFrame) -> pd.DataFrame:
    rows = steps[steps["name"] != "Aggregated"].copy()
    rows["users_n"] = pd.to_numeric(rows["users"], errors="coerce")
    rows = rows[rows["target_rate"].isna() | (rows["target_rate"].astype(str) == "")] if "target_rate" in rows else rows
    return rows.dropna(subset=["users_n", "rps"])


def label_users_as_run(axis: Any, users: list[float]) -> None:
    """Ticks at the users the run had, written as numbers (1, 4, 16, 64), never as powers (2⁰ ... 2⁶)."""
    axis.xaxis.set_major_locator(FixedLocator(users))
    axis.xaxis.set_major_formatter(FixedFormatter([f"{u:g}" for u in users]))
    axis.xaxis.set_minor_locator(NullLocator())


def readable_top(values: pd.Series) -> float | None:
    """A y-axis top that keeps the bulk of the points readable when a few spike (None: no clipping needed)."""
    values = pd.to_numeric(values, errors="coerce").dropna()
    if len(values) < 5:
        return None
    typical = float(values.quantile(0.9, interpolation="lower"))
    return typical * SPIKE_HEADROOM if typical > 0 and float(values.max()) > typical * SPIKE_FACTOR else None


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
        label_users_as_run(axis, sorted(rows["users_n"].unique()))
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
    count_axis.bar(seconds, timeline["requests"], width=width, align="edge", alpha=0.15, color="grey", label="requests")
    count_axis.set_ylabel("requests per interval")
    top = readable_top(timeline["p99_ms"])
    if top is not None:
        latency_axis.set_ylim(0, top)
        for moment, value in zip(seconds, timeline["p99_ms"]):
            if value > top:
                latency_axis.annotate(
                    f"{value:.0f} ms ↑",
                    (moment, top),
                    xytext=(0, -12),
                    textcoords="offset points",
                    ha="center",
                    fontsize="small",
                    color="C1",
                )
    if steps is not None and "started_at" in steps:
        began = steps.drop_duplicates("step")[["started_at", "label"]].dropna(subset=["started_at"])
        for moment, label in zip(pd.to_numeric(began["started_at"], errors="coerce"), began["label"]):
            latency_axis.axvline(moment - start, color="black", alpha=0.3, linewidth=1)
            latency_axis.text(
                moment - start,
                1.0,
                f" {label}",
                transform=latency_axis.get_xaxis_transform(),
                rotation=90,
                va="top",
                ha="left",
                fontsize="small",
                alpha=0.7,
            )
    latency_axis.legend(loc="upper right", fontsize="small")
    return _png(figure)
