"""Report tables as HTML: verdicts as coloured cells, words left-aligned and wrapped, every table in a scroll box.

A verdict column (``status``, ``colour``) colours its cell green, amber or red by the row's colour, so a reader sees
the verdicts without reading a word; the word stays in the cell for a screen reader and for copying.
"""

from __future__ import annotations

import html
from typing import Any

import pandas as pd

from swarmgauge.reports.chart_html import box

#: a verdict cell's background by the verdict's colour (the index uses the same three)
BACKGROUND = {"green": "#cdeccf", "amber": "#fbe3a1", "red": "#f4bcc0"}
#: a status word's colour when the row names none
STATUS_COLOUR = {"pass": "green", "warn": "amber", "fail": "red", "changed": "amber", "regressed": "red"}
#: columns of free text, left-aligned and wrapped instead of kept on one line
WORDS = ("SLO", "why", "reason", "what", "request", "Request", "note")


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ""
    return html.escape(str(value))


def colour_of(row: dict[str, Any], column: str) -> str | None:
    """The verdict colour of ``row``'s ``column`` cell, or None for a cell that is no verdict."""
    if column == "colour":
        return str(row.get("colour")) if str(row.get("colour")) in BACKGROUND else None
    if column in ("status", "base", "new", "change"):
        if column == "status" and str(row.get("colour")) in BACKGROUND:
            return str(row["colour"])
        return STATUS_COLOUR.get(str(row.get(column)))
    return None


def table(
    frame: pd.DataFrame,
    coloured: tuple[str, ...] = ("status", "colour"),
    cell_colours: dict[tuple[int, str], str] | None = None,
) -> str:
    """``frame`` as a boxed table; the ``coloured`` columns get their verdict's background, and so does each cell
    of ``cell_colours`` (keyed by row number and column: a verdict the cell's text alone does not carry)."""
    head = "".join(f"<th>{_cell(c)}</th>" for c in frame.columns)
    rows = []
    for number, row in enumerate(frame.to_dict(orient="records")):
        cells = []
        for column in frame.columns:
            colour = colour_of(row, str(column)) if column in coloured else None
            colour = (cell_colours or {}).get((number, str(column)), colour)
            style = f" style='background:{BACKGROUND[colour]}'" if colour else ""
            kind = " class='words'" if column in WORDS else ""
            cells.append(f"<td{kind}{style}>{_cell(row[column])}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return box(f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")
