"""The report's interactive charts as plotly figures: data in, figure out (no I/O, no HTML; ``chart_html`` embeds).

Throughput and p50/p99 against users with the knee marked and a reference page's figures beside the measured;
latency over time with each step as a shaded band (the distribution per step is in ``distribution_chart``, memory
in ``memory_chart``). Every
hover shows the figure as the tables write it (3 significant digits and its unit), so a chart and a table never
disagree. Each builder returns None when the data has nothing to draw.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from swarmgauge.core.numbers import format_latency, format_rate
from swarmgauge.core.request_names import request_title
from swarmgauge.reports.trend import StepPoint, knee_index

COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")
HEIGHT = 420
LOG_RANGE = 8  # users spanning 8x or more are drawn on a log axis
#: steps.csv's percentile columns, for a run folder without percentiles.csv


def layout(figure: go.Figure, title: str, height: int = HEIGHT) -> go.Figure:
    figure.update_layout(
        title={"text": title, "x": 0.0, "xanchor": "left"},
        height=height,
        margin={"l": 60, "r": 20, "t": 60, "b": 50},
        legend={"orientation": "h", "yanchor": "top", "y": -0.18, "x": 0.0},
        hovermode="closest",
        template="plotly_white",
    )
    return figure


def closed_rows(steps: pd.DataFrame) -> pd.DataFrame:
    """Named closed-model rows (users set, no target rate) with a numeric ``users_n``."""
    rows = steps[steps["name"] != "Aggregated"].copy()
    rows["users_n"] = pd.to_numeric(rows["users"], errors="coerce")
    if "target_rate" in rows:
        rows = rows[rows["target_rate"].isna() | (rows["target_rate"].astype(str) == "")]
    return rows.dropna(subset=["users_n", "rps"])


def _users_axis(figure: go.Figure, users: list[float], row: int = 1, col: int | None = None) -> None:
    log = len(users) > 1 and max(users) / max(min(users), 1.0) >= LOG_RANGE
    axis: dict[str, Any] = {"title": "users", "tickvals": users, "ticktext": [f"{u:g}" for u in users]}
    if log:
        axis["type"] = "log"
    if col is None:
        figure.update_xaxes(**axis)
    else:
        figure.update_xaxes(**axis, row=row, col=col)


def knee_of(group: pd.DataFrame) -> int | None:
    """Index (in ``group``'s order) of the knee the trend sentence names, None while throughput still rises."""
    points = [StepPoint(users=float(u), rps=float(r)) for u, r in zip(group["users_n"], group["rps"])]
    if len(points) < 2 or not all(b.users > a.users for a, b in zip(points, points[1:])):
        return None
    return knee_index(points)


def _page_points(title: str, reference: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The page's closed-model rows for one request title (a row named ``FETCH`` belongs to ``FETCH /path``)."""
    mine = [
        r
        for r in reference
        if r.get("users") is not None
        and r.get("rate") is None
        and (title == str(r.get("name")) or title.startswith(f"{r.get('name')} "))
    ]
    return sorted(mine, key=lambda r: float(r["users"]))


def throughput_figure(
    steps: pd.DataFrame,
    reference: list[dict[str, Any]] | None = None,
    runs: list[tuple[str, pd.DataFrame]] | None = None,
) -> go.Figure | None:
    """Throughput (left) and p50/p99 (right) against users, one colour per request title; the knee a star; a page's
    figures hollow and dotted. ``runs`` draws several runs (compare: BASE dashed, NEW solid) instead of ``steps``."""
    sides = runs if runs is not None else [("", steps)]
    rows_by_side = [(label, closed_rows(frame)) for label, frame in sides]
    users = sorted({float(u) for _label, rows in rows_by_side for u in rows["users_n"]})
    if len(users) < 2:
        return None
    figure = make_subplots(rows=1, cols=2, subplot_titles=("Throughput", "Latency p50 / p99"), horizontal_spacing=0.1)
    titles = sorted(
        {request_title(t, n) for _l, rows in rows_by_side for t, n in zip(rows["request_type"], rows["name"])}
    )
    colour_of = {title: COLOURS[i % len(COLOURS)] for i, title in enumerate(titles)}
    for number, (label, rows) in enumerate(rows_by_side):
        dash = "dash" if len(rows_by_side) > 1 and number == 0 else "solid"
        for (rtype, name), group in rows.groupby(["request_type", "name"], sort=True):
            group = group.sort_values("users_n")
            title = request_title(rtype, name)
            shown = f"{label}: {title}" if label else title
            unit = "runs/s" if str(rtype).startswith("run ") else "req/s"
            _measured_traces(figure, group, shown, unit, colour_of[title], dash)
            knee = knee_of(group)
            if knee is not None:
                at = group.iloc[knee]
                figure.add_trace(
                    go.Scatter(
                        x=[at["users_n"]],
                        y=[at["rps"]],
                        mode="markers+text",
                        marker={"symbol": "star", "size": 16, "color": colour_of[title], "line": {"width": 1}},
                        text=[f"{label} knee" if label else "knee"],
                        textposition="bottom right" if number else "top center",  # two runs' labels never overlap
                        name=f"{shown}: knee",
                        hovertext=[f"knee at {at['users_n']:g} users: {format_rate(at['rps'])} {unit}"],
                        hoverinfo="text",
                    ),
                    row=1,
                    col=1,
                )
    for title in titles:
        page = _page_points(title, reference or [])
        _page_traces(figure, title, page, colour_of[title])
        users = sorted(set(users) | {float(p["users"]) for p in page})
    _users_axis(figure, users, col=1)
    _users_axis(figure, users, col=2)
    figure.update_yaxes(title="req/s", rangemode="tozero", row=1, col=1)
    figure.update_yaxes(title="ms", rangemode="tozero", row=1, col=2)
    return layout(figure, "Throughput and latency against users")


def _measured_traces(figure: go.Figure, group: pd.DataFrame, shown: str, unit: str, colour: str, dash: str) -> None:
    figure.add_trace(
        go.Scatter(
            x=group["users_n"],
            y=group["rps"],
            mode="lines+markers",
            name=f"{shown} {unit}",
            line={"color": colour, "dash": dash},
            hovertext=[
                f"{shown}<br>{u:g} users: {format_rate(v)} {unit}" for u, v in zip(group["users_n"], group["rps"])
            ],
            hoverinfo="text",
            meta="throughput",
        ),
        row=1,
        col=1,
    )
    for column, symbol, line in (
        ("p50_ms", "circle", dash),
        ("p99_ms", "square", "dot" if dash == "solid" else "dashdot"),
    ):
        if column not in group:
            continue
        figure.add_trace(
            go.Scatter(
                x=group["users_n"],
                y=group[column],
                mode="lines+markers",
                name=f"{shown} {column[:3]}",
                marker={"symbol": symbol},
                line={"color": colour, "dash": line},
                hovertext=[
                    f"{shown}<br>{u:g} users: {column[:3]} {format_latency(v)}"
                    for u, v in zip(group["users_n"], group[column])
                ],
                hoverinfo="text",
            ),
            row=1,
            col=2,
        )


def _page_traces(figure: go.Figure, title: str, points: list[dict[str, Any]], colour: str) -> None:
    """The reference page's figures for ``title``: hollow markers on a dotted line, 'page' in the legend."""
    if not points:
        return
    users = [float(p["users"]) for p in points]
    page = str(points[0].get("page") or "the page")
    for column, col, shown in (("rps", 1, "req/s"), ("p50_ms", 2, "p50"), ("p99_ms", 2, "p99")):
        values = [p.get(column) for p in points]
        if all(v is None for v in values):
            continue
        text = [
            f"page ({page}) {title}<br>{u:g} users: "
            + (f"{format_rate(v)} req/s" if column == "rps" else f"{shown} {format_latency(v)}")
            for u, v in zip(users, values)
        ]
        figure.add_trace(
            go.Scatter(
                x=users,
                y=values,
                mode="lines+markers",
                name=f"page: {title} {shown}",
                marker={"symbol": "circle-open" if column != "p99_ms" else "square-open", "size": 10, "color": colour},
                line={"color": colour, "dash": "dot", "width": 1},
                opacity=0.7,
                hovertext=text,
                hoverinfo="text",
            ),
            row=1,
            col=col,
        )


def timeline_figure(timeline: pd.DataFrame, steps: pd.DataFrame | None = None) -> go.Figure | None:
    """p50/p99 per interval over the run (left axis) and requests per interval (bars, right), each step a band."""
    if timeline.empty or "time" not in timeline:
        return None
    timeline = timeline.sort_values("time")
    start = float(timeline["time"].min())
    began = pd.DataFrame()
    if steps is not None and "started_at" in steps:
        began = steps.drop_duplicates("step")[["step", "started_at", "label"]].copy()
        began["started_at"] = pd.to_numeric(began["started_at"], errors="coerce")
        began = began.dropna(subset=["started_at"]).sort_values("started_at")
        if not began.empty:
            start = min(start, float(began["started_at"].min()))
    seconds = timeline["time"] - start
    figure = make_subplots(specs=[[{"secondary_y": True}]])
    figure.add_trace(
        go.Bar(
            x=seconds,
            y=timeline["requests"],
            name="requests per interval",
            marker={"color": "rgba(120,120,120,0.25)"},
            hovertemplate="%{x:.0f} s: %{y} requests<extra></extra>",
        ),
        secondary_y=True,
    )
    for column, colour, dash in (("p50_ms", COLOURS[0], "solid"), ("p99_ms", COLOURS[1], "dash")):
        xs, ys = with_gaps(list(seconds), list(timeline[column]))
        figure.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines+markers",
                marker={"size": 4},
                name=column[:3],
                line={"color": colour, "dash": dash},
                hovertext=[
                    None if s is None else f"{s:.0f} s: {column[:3]} {format_latency(v)}" for s, v in zip(xs, ys)
                ],
                hoverinfo="text",
            ),
            secondary_y=False,
        )
    end = float(seconds.max()) + 1.0
    edges = [float(t) - start for t in began["started_at"]] if not began.empty else []
    for index, (left, label) in enumerate(zip(edges, began["label"] if not began.empty else [])):
        right = edges[index + 1] if index + 1 < len(edges) else end
        figure.add_vrect(
            x0=left,
            x1=right,
            fillcolor="#4c78a8" if index % 2 == 0 else "#f58518",
            opacity=0.08,
            line_width=0,
            annotation_text=str(label),
            annotation_position="top left",
            annotation_textangle=-90 if len(edges) > 6 else 0,
            annotation_font_size=11,
        )
    figure.update_xaxes(title="seconds since start")
    figure.update_yaxes(title="ms", rangemode="tozero", secondary_y=False)
    figure.update_yaxes(
        title="requests per interval", rangemode="tozero", showgrid=False, tickmode="auto", nticks=5, secondary_y=True
    )
    figure.update_layout(bargap=0.0)
    return layout(figure, "Latency over time (shaded: the steps)")


def with_gaps(xs: list[float], ys: list[Any]) -> tuple[list[Any], list[Any]]:
    """The points with a break (None) where the interval between two is over twice the usual one: a step's warm-up
    is left out of timeline.csv, and a line drawn across it would show figures that were never measured."""
    gaps = sorted(b - a for a, b in zip(xs, xs[1:]) if b > a)
    usual = gaps[len(gaps) // 2] if gaps else 1.0
    out_x: list[Any] = []
    out_y: list[Any] = []
    for index, (x, y) in enumerate(zip(xs, ys)):
        if index and x - xs[index - 1] > 2 * usual:
            out_x.append(None)
            out_y.append(None)
        out_x.append(x)
        out_y.append(y)
    return out_x, out_y
