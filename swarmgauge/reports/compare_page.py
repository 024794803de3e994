"""compare.html's charts: both runs on one throughput/latency chart (BASE dashed, NEW solid), or NEW beside the
reference page's figures when BASE is a plan; see :mod:`swarmgauge.reports.compare` for the gate itself."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from swarmgauge.reports.chart_html import chart

if TYPE_CHECKING:
    from swarmgauge.reports.compare import Side

logger = logging.getLogger("swarmgauge.compare")

COMPARE_ID = "chart-compare"


def charts(base: Side, new: Side) -> list[str]:
    """The chart fragments (none when NEW has no steps.csv frame or fewer than two closed-model steps)."""
    from swarmgauge.reports import charts as figures  # plotly: only where a page is rendered

    if new.steps is None:
        return []
    try:
        if base.reference is not None:
            rows = [dict(r, page=base.reference.get("page", "")) for r in base.reference.get("rows") or []]
            figure = figures.throughput_figure(new.steps, rows)
            caption = "NEW solid; the reference page's figures hollow on a dotted line."
        elif base.steps is not None:
            figure = figures.throughput_figure(new.steps, runs=[("BASE", base.steps), ("NEW", new.steps)])
            caption = "BASE dashed, NEW solid, one colour per request; hover a point for its figure."
        else:
            return []
    except Exception as exc:  # noqa: BLE001 - the tables still hold every figure
        logger.warning("compare chart: %s", exc)
        return []
    return [] if figure is None else ["<h2>Both runs</h2>", chart(figure, COMPARE_ID, caption)]
