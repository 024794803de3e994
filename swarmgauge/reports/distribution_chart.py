"""The latency distribution per step as a plotly figure: each step's latency at each percentile, on an axis where
every nine is one unit (50 %, 90 %, 99 %, 99.9 % ...), so a tail reads as clearly as the median.

Read from ``percentiles.csv`` (each step's HDR histogram at a ladder of percentiles); a run folder written before it
falls back to the percentile columns of ``steps.csv``.
"""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go

from swarmgauge.core.numbers import format_latency
from swarmgauge.core.request_names import request_title
from swarmgauge.reports.charts import COLOURS, layout

#: steps.csv's percentile columns, for a run folder without percentiles.csv
STEP_PERCENTILES = (("p50_ms", 50.0), ("p90_ms", 90.0), ("p99_ms", 99.0), ("p999_ms", 99.9))
NINES_TICKS = (50.0, 90.0, 99.0, 99.9, 99.99, 99.999)  # 0 % to 50 % is a short stretch at the left


def nines(percentile: float) -> float:
    """A percentile's place on the distribution's x axis: each nine one unit (50 % at 0.3, 99 % at 2, 99.9 % at 3)."""
    return math.log10(100.0 / max(100.0 - percentile, 1e-4))


def percentile_points(percentiles: pd.DataFrame | None, steps: pd.DataFrame) -> pd.DataFrame:
    """(step, label, request_type, name, percentile, ms) rows: ``percentiles.csv`` when the run wrote it, else the
    percentile columns of ``steps.csv`` (a run from before percentiles.csv)."""
    labels = steps.drop_duplicates("step").set_index("step")["label"].to_dict() if "label" in steps else {}
    if percentiles is not None and not percentiles.empty:
        found = percentiles[percentiles["percentile"] < 100.0].copy()
    else:
        named = steps[steps["name"] != "Aggregated"]
        found = pd.DataFrame(
            [
                {"step": r["step"], "request_type": r["request_type"], "name": r["name"], "percentile": q, "ms": r[c]}
                for r in named.to_dict(orient="records")
                for c, q in STEP_PERCENTILES
                if c in r and pd.notna(r[c])
            ],
            columns=["step", "request_type", "name", "percentile", "ms"],
        )
    found["label"] = [str(labels.get(s, f"step {s}")) for s in found["step"]]
    return found


MAX_LINES = 8  # one distribution chart holds up to 8 lines; past that, one chart per request title


def distribution_figures(points: pd.DataFrame) -> list[tuple[str, go.Figure]]:
    """The latency at each percentile, one line per step (x: the nines, y: ms on a log axis): one chart for the
    run while it has at most :data:`MAX_LINES` lines (request titles x steps), else one chart per request title."""
    if points.empty:
        return []
    points = points.assign(title=[request_title(t, n) for t, n in zip(points["request_type"], points["name"])])
    lines = points.drop_duplicates(["title", "step"])
    if len(lines) <= MAX_LINES:
        several = points["title"].nunique() > 1
        return [("all", _distribution(points, "Latency distribution per step", several))]
    return [
        (title, _distribution(group, f"Latency distribution per step: {title}", False))
        for title, group in points.groupby("title", sort=True)
    ]


def _distribution(points: pd.DataFrame, heading: str, name_lines: bool) -> go.Figure:
    figure = go.Figure()
    for index, ((title, _step), one) in enumerate(points.groupby(["title", "step"], sort=True)):
        one = one.sort_values("percentile")
        label = f"{title}: {one['label'].iloc[0]}" if name_lines else str(one["label"].iloc[0])
        figure.add_trace(
            go.Scatter(
                x=[nines(q) for q in one["percentile"]],
                y=one["ms"],
                mode="lines+markers",
                name=label,
                line={"color": COLOURS[index % len(COLOURS)]},
                hovertext=[f"{label}: p{q:g} {format_latency(v)}" for q, v in zip(one["percentile"], one["ms"])],
                hoverinfo="text",
            )
        )
    ticks = [q for q in NINES_TICKS if q <= float(points["percentile"].max())]
    figure.update_xaxes(title="percentile", tickvals=[nines(q) for q in ticks], ticktext=[f"{q:g} %" for q in ticks])
    figure.update_yaxes(title="ms (log)", type="log", dtick="D2")  # 1, 2, 5 per decade: no crowded labels
    return layout(figure, heading, height=400)
