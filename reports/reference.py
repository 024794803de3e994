"""A reference page's published figures beside the measured rows, with the difference in %.

A plan for a reference page carries the page's rows (``reference:`` in the plan YAML, kept in run.json's plan), so a
run's report shows at a glance how far this machine's shape is from the page's: ``page req/s`` next to ``req/s`` and
``Δ req/s`` = (measured - page) / page.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

FIGURES = (("rps", "req/s"), ("p50_ms", "p50"), ("p99_ms", "p99"))


def reference_rows(info: dict[str, Any]) -> list[dict[str, Any]]:
    """The reference rows of the run's plan (run.json), or an empty list."""
    plan = info.get("plan") or {}
    reference = plan.get("reference") or {}
    return [dict(row, page=reference.get("page", "")) for row in reference.get("rows") or []]


def matches(title: str, name: str) -> bool:
    """A reference row named ``FETCH`` belongs to the table ``FETCH /corpus/{topic}/{doc}`` (type, then name)."""
    return title == name or title.startswith(f"{name} ")


def _key(row: dict[str, Any]) -> str:
    return f"{float(row['rate']):g}/s" if row.get("rate") is not None else f"{float(row['users']):g}"


def percent_change(measured: float | None, reference: float | None) -> float | None:
    if measured is None or reference in (None, 0):
        return None
    return (measured - reference) / reference * 100.0


def _measured(text: str) -> float | None:
    """A shown cell back to a number in the reference's unit (req/s, ms): ``1.77 s`` -> 1770."""
    parts = str(text).split()
    try:
        value = float(parts[0])
    except (IndexError, ValueError):
        return None
    return value * 1000.0 if len(parts) > 1 and parts[1] == "s" else value


def beside_reference(table: pd.DataFrame, title: str, rows: list[dict[str, Any]]) -> pd.DataFrame:
    """``table`` (a step table as shown) with the page's figures and the % difference, when the page has the rows."""
    from swarmgauge.reports.report import _rate, format_latency

    mine = {_key(r): r for r in rows if matches(title, str(r["name"]))}
    if not mine:
        return table
    table = table.copy()
    for figure, column in FIGURES:
        column = "runs/s" if column == "req/s" and "runs/s" in table else column
        if not any(figure in r for r in mine.values()):
            continue
        shown, delta = [], []
        for users, cell in zip(table["Users"], table[column]):
            page = mine.get(str(users), {}).get(figure)
            shown.append("" if page is None else (_rate(page) if figure == "rps" else format_latency(page)))
            change = percent_change(_measured(cell), page)
            delta.append("" if change is None else f"{change:+.0f} %")
        table[f"page {column}"] = shown
        table[f"Δ {column}"] = delta
    return table
