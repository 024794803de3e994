"""Memory as a plotly figure: RSS against time (the target's sampled processes summed, and the generator), and the
target's RSS against live sessions when the run sampled a ``*sessions_live`` metric (the MCP churn run)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from swarmgauge.core.numbers import significant
from swarmgauge.reports.charts import COLOURS, layout

MIB = 1024.0 * 1024.0


def memory_frames(resources: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(RSS in MiB by elapsed second and source, RSS against live sessions by sampling round) from resources.csv.

    The target's RSS is the sum over its sampled processes (every source but ``generator`` and ``locust``); live
    sessions are a ``*sessions_live`` metric (the MCP gateway's), empty when the run sampled none.
    """
    rss = resources[resources["metric"] == "rss_bytes"].copy()
    rss["who"] = ["generator" if s == "generator" else "target" for s in rss["source"]]
    over_time = rss.groupby(["who", "round"]).agg(elapsed_s=("elapsed_s", "min"), value=("value", "sum")).reset_index()
    over_time["mib"] = over_time["value"] / MIB
    live = resources[resources["metric"].astype(str).str.endswith("sessions_live")]
    target = over_time[over_time["who"] == "target"].set_index("round")["mib"]
    sessions = live.groupby("round")["value"].sum()
    against = pd.DataFrame({"sessions": sessions, "mib": target}).dropna().reset_index()
    return over_time, against


def memory_figure(resources: pd.DataFrame) -> go.Figure | None:
    """RSS against time (left) and, when the run sampled live sessions, the target's RSS against them (right)."""
    if resources.empty or not {"metric", "source", "round", "elapsed_s", "value"} <= set(resources):
        return None
    over_time, against = memory_frames(resources)
    if over_time.empty:
        return None
    both = not against.empty
    figure = make_subplots(
        rows=1,
        cols=2 if both else 1,
        subplot_titles=("RSS over time", "Target RSS against live sessions") if both else ("RSS over time",),
        horizontal_spacing=0.1,
    )
    for index, (who, rows) in enumerate(over_time.groupby("who", sort=False)):
        rows = rows.sort_values("elapsed_s")
        figure.add_trace(
            go.Scatter(
                x=rows["elapsed_s"],
                y=rows["mib"],
                mode="lines",
                name=f"{who} RSS",
                line={"color": COLOURS[index % len(COLOURS)]},
                hovertext=[f"{who} at {s:.0f} s: {significant(v)} MiB" for s, v in zip(rows["elapsed_s"], rows["mib"])],
                hoverinfo="text",
            ),
            row=1,
            col=1,
        )
    figure.update_xaxes(title="seconds since sampling started", row=1, col=1)
    figure.update_yaxes(title="MiB", row=1, col=1)  # not from zero: a leak's slope is what this chart shows
    if both:
        figure.add_trace(
            go.Scatter(
                x=against["sessions"],
                y=against["mib"],
                mode="markers",
                name="target RSS at a sample",
                marker={"color": COLOURS[2], "size": 6, "opacity": 0.7},
                hovertext=[
                    f"{s:g} live sessions: {significant(v)} MiB" for s, v in zip(against["sessions"], against["mib"])
                ],
                hoverinfo="text",
            ),
            row=1,
            col=2,
        )
        figure.update_xaxes(title="live sessions", rangemode="tozero", row=1, col=2)
        figure.update_yaxes(title="MiB", row=1, col=2)
    return layout(figure, "Memory")
