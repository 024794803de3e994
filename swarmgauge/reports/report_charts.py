"""The run report's chart section: which charts a run folder has data for, as HTML fragments with their captions.

Reads the run's files (``steps.csv``, ``timeline.csv``, ``percentiles.csv``) and the reference
page's rows from run.json; the figures themselves are built in :mod:`swarmgauge.reports.charts`. A chart that
cannot be drawn is left out with a warning: the tables above it still hold every figure.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import pandas as pd

from swarmgauge.reports import charts, distribution_chart
from swarmgauge.reports.chart_html import chart

logger = logging.getLogger("swarmgauge.report")

THROUGHPUT_ID = "chart-throughput"
TIMELINE_ID = "chart-timeline"


def _read(path: Path) -> pd.DataFrame | None:
    if not path.is_file():
        return None
    try:
        frame = pd.read_csv(path)
    except (OSError, ValueError) as exc:
        logger.warning("report charts: %s not read: %s", path.name, exc)
        return None
    return None if frame.empty else frame


def chart_id(prefix: str, title: str) -> str:
    return prefix + "-" + re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def run_charts(run_dir: Path, steps: pd.DataFrame | None, reference: list[dict[str, Any]]) -> list[str]:
    """The chart fragments for ``run_dir``, in reading order: throughput, latency over time, distributions (memory
    is drawn in the Target memory section, beside its verdict: ``reports/resources.py``)."""
    fragments: list[str] = []
    try:
        if steps is not None:
            figure = charts.throughput_figure(steps, reference)
            if figure is not None:
                caption = "Hover a point for its figure; the star marks the knee"
                caption += ", hollow markers on a dotted line are the reference page's figures." if reference else "."
                fragments.append(chart(figure, THROUGHPUT_ID, caption))
        timeline = _read(run_dir / "timeline.csv")
        if timeline is not None:
            figure = charts.timeline_figure(timeline, steps)
            if figure is not None:
                fragments.append(chart(figure, TIMELINE_ID, "Drag to zoom into a step; double-click to zoom out."))
        if steps is not None:
            points = distribution_chart.percentile_points(_read(run_dir / "percentiles.csv"), steps)
            source = "percentiles.csv" if (run_dir / "percentiles.csv").is_file() else "steps.csv's p50/p90/p99/p99.9"
            for title, figure in distribution_chart.distribution_figures(points):
                fragments.append(
                    chart(
                        figure, chart_id("chart-distribution", title), f"Each step's latency by percentile ({source})."
                    )
                )
    except Exception as exc:  # noqa: BLE001 - a chart that fails must not lose the report's tables
        logger.warning("report charts: %s", exc)
    return fragments
