"""Interactive charts and tables inside one self-contained HTML page: plotly.js inlined once, in the page's head.

No CDN and no network: a report opened from a CI artifact, a laptop offline or a browser's ``file://`` draws the
same charts. Each chart is a ``<div>`` with its figure as JSON and a call to ``Plotly.newPlot``; the tables sit in a
box that scrolls sideways when they are wider than the page, so the page itself never does.
"""

from __future__ import annotations

import html
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import plotly.graph_objects as go

CONFIG = {"displaylogo": False, "responsive": True, "toImageButtonOptions": {"format": "png", "scale": 2}}
STYLE = (
    "body{font-family:sans-serif;margin:1.5em auto;max-width:1400px;padding:0 1.5em;color:#222}"
    ".table-box{width:fit-content;max-width:100%;overflow-x:auto;margin:.5em 0 1em;border:1px solid #e3e3e3}"
    "table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:3px 9px;text-align:right;white-space:nowrap;"
    "font-size:13px}th{background:#f3f3f3;position:sticky;top:0}td:first-child,th:first-child{text-align:left}"
    "td.words{text-align:left;white-space:normal;min-width:16em}"
    "figure{margin:1em 0}img{max-width:100%}.chart{width:100%;min-height:380px}"
    ".knee{font-weight:bold}.bound{color:#a40}.note{color:#555;font-size:13px}"
)


@lru_cache(maxsize=1)
def plotly_script() -> str:
    """plotly.js as one inline ``<script>`` (its own source, read from the installed package).

    plotly is imported here, not with the module: the summary a headless run prints imports the report's tables.
    """
    from plotly.offline import get_plotlyjs

    return f"<script type='text/javascript'>{get_plotlyjs()}</script>"


def head(title: str, extra_style: str = "") -> str:
    """``<!doctype html>`` to ``<body>``: the title, the style and plotly.js (once per page)."""
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{STYLE}{extra_style}</style>{plotly_script()}</head><body>"
    )


def chart(figure: go.Figure, chart_id: str, caption: str = "") -> str:
    """One figure as a ``<figure>`` whose chart div is ``chart_id`` (the tests hover it by that id)."""
    import plotly.io as pio

    div = pio.to_html(
        figure, include_plotlyjs=False, full_html=False, div_id=chart_id, config=CONFIG, default_width="100%"
    )
    shown = f"<figcaption class='note'>{html.escape(caption)}</figcaption>" if caption else ""
    return f"<figure class='chart'>{div}{shown}</figure>"


def box(table_html: str) -> str:
    """A table in a box that scrolls sideways when the table is wider than the page."""
    return f"<div class='table-box'>{table_html}</div>"


def page(title: str, body: list[str], extra_style: str = "") -> str:
    return head(title, extra_style) + "".join(body) + "</body></html>"


def figure_json(figure: go.Figure) -> dict[str, Any]:
    """The figure as plain data (what the page embeds), for tests and tools that read traces."""
    return figure.to_plotly_json()
