"""The demo index's interactive chart per page: the same data as ``index_plots``' PNGs (which report.md links),
drawn with plotly for report.html so a reader hovers a point for its figure and zooms into a step.

demarkus and kneo: throughput and p50 against users, the page's points hollow on a dotted line beside the measured;
brain: the target's RSS against searches beside the page's two lines; MDK: reads/s by fleet, page beside measured.
"""

from __future__ import annotations

from collections.abc import Callable

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from swarmgauge.core.numbers import format_latency, format_rate, significant
from swarmgauge.reports.charts import COLOURS
from swarmgauge.reports.index_plots import (
    BRAIN_PAGE_LINES,
    MDK_READS_PER_S,
    Runs,
    Series,
    demarkus_series,
    fleet_order,
    fleets_measured,
    kneo_series,
    rss_by_searches,
    straight,
)

HEIGHT = 420


def _layout(figure: go.Figure, title: str) -> go.Figure:
    figure.update_layout(
        title={"text": title, "x": 0.0, "xanchor": "left"},
        height=HEIGHT,
        margin={"l": 60, "r": 20, "t": 60, "b": 50},
        legend={"orientation": "h", "yanchor": "top", "y": -0.2, "x": 0.0},
        template="plotly_white",
    )
    return figure


def ramp_figure(title: str, unit: str, series: list[Series]) -> go.Figure | None:
    """Throughput (left) and p50 (right, log) against users: per series the page's points and the measured."""
    series = [(name, page, rows) for name, page, rows in series if not rows.empty]
    if not series:
        return None
    figure = make_subplots(rows=1, cols=2, subplot_titles=(f"{title}: throughput", f"{title}: p50"))
    for colour, (name, page, rows) in zip(COLOURS, series):
        users = sorted(page)
        for col, column, index in ((1, "rps", 0), (2, "p50_ms", 1)):
            shown = format_rate if column == "rps" else format_latency
            suffix = f" {unit}" if column == "rps" else ""
            figure.add_trace(
                go.Scatter(
                    x=users,
                    y=[page[u][index] for u in users],
                    mode="lines+markers",
                    name=f"{name}: page",
                    legendgroup=f"{name}: page",
                    showlegend=col == 1,
                    marker={"symbol": "circle-open", "size": 10, "color": colour},
                    line={"color": colour, "dash": "dot"},
                    hovertext=[f"{name}, page: {u:g} users, {shown(page[u][index])}{suffix}" for u in users],
                    hoverinfo="text",
                ),
                row=1,
                col=col,
            )
            figure.add_trace(
                go.Scatter(
                    x=list(rows["users"]),
                    y=list(rows[column]),
                    mode="lines+markers",
                    name=f"{name}: measured",
                    legendgroup=f"{name}: measured",
                    showlegend=col == 1,
                    marker={"symbol": "square", "color": colour},
                    line={"color": colour},
                    hovertext=[
                        f"{name}, measured: {u:g} users, {shown(v)}{suffix}"
                        for u, v in zip(rows["users"], rows[column])
                    ],
                    hoverinfo="text",
                ),
                row=1,
                col=col,
            )
    ticks = sorted({float(u) for _n, page, rows in series for u in [*page, *rows["users"]]})
    figure.update_xaxes(
        type="log", title="users (concurrent workers)", tickvals=ticks, ticktext=[f"{u:g}" for u in ticks]
    )
    figure.update_yaxes(title=unit, rangemode="tozero", row=1, col=1)
    figure.update_yaxes(title="p50 (ms, log)", type="log", dtick="D2", row=1, col=2)
    return _layout(figure, title)


def demarkus_chart(runs: Runs) -> go.Figure | None:
    return ramp_figure("demarkus reads", "req/s", demarkus_series(runs))


def kneo_chart(runs: Runs) -> go.Figure | None:
    return ramp_figure("kneo-serv sync runs", "runs/s", kneo_series(runs))


def brain_chart(runs: Runs) -> go.Figure | None:
    lines = {name: rss_by_searches(runs.get(name)) for name in BRAIN_PAGE_LINES}
    if all(frame.empty for frame in lines.values()):
        return None
    figure = make_subplots(
        rows=1, cols=2, subplot_titles=("brain stand-in: RSS against searches", "the page's RSS lines (its two ends)")
    )
    for colour, (name, frame) in zip(COLOURS, lines.items()):
        if not frame.empty:
            figure.add_trace(
                go.Scatter(
                    x=list(frame["searches"]),
                    y=list(frame["rss"]),
                    mode="lines+markers",
                    name=f"{name}: measured",
                    marker={"size": 4, "color": colour},
                    hovertext=[
                        f"{name}: {s:g} searches, {significant(r)} MiB" for s, r in zip(frame["searches"], frame["rss"])
                    ],
                    hoverinfo="text",
                ),
                row=1,
                col=1,
            )
        xs, ys = straight(BRAIN_PAGE_LINES[name])
        figure.add_trace(
            go.Scatter(
                x=xs, y=ys, mode="lines", name=f"{name}: page", line={"color": colour, "dash": "dot"}, hoverinfo="skip"
            ),
            row=1,
            col=2,
        )
    figure.update_xaxes(type="log", title="searches done")
    figure.update_yaxes(title="RSS (MiB)", rangemode="tozero")
    return _layout(figure, "brain: RSS before and after the fix")


def mdk_chart(runs: Runs) -> go.Figure | None:
    measured = fleets_measured(runs)
    if not measured:
        return None
    fleets = fleet_order(measured)
    names = [f"{f.replace('x', ' devices / ')} Workers" for f in fleets]
    best = [max((v for _n, v in measured.get(f, [])), default=None) for f in fleets]
    page = [MDK_READS_PER_S.get(f) for f in fleets]
    figure = go.Figure()
    for label, values, colour in (("page", page, "rgba(31,119,180,0.45)"), ("measured (best run)", best, COLOURS[1])):
        figure.add_trace(
            go.Bar(
                x=names,
                y=values,
                name=label,
                marker={"color": colour},
                hovertext=[
                    f"{n}, {label}: " + ("not run" if v is None else f"{format_rate(v)} reads/s")
                    for n, v in zip(names, values)
                ],
                hoverinfo="text",
            )
        )
    figure.update_layout(barmode="group")
    figure.update_yaxes(title="telemetry reads/s", rangemode="tozero")
    return _layout(figure, "MDK: reads/s by fleet (a missing bar: not run, or not on the page)")


CHARTS: dict[str, Callable[[Runs], go.Figure | None]] = {
    "demarkus": demarkus_chart,
    "kneo": kneo_chart,
    "brain": brain_chart,
    "mdk": mdk_chart,
}
