"""The demo index's page sections as Markdown and HTML: coloured rows, the workloads' exits, checks, the plot.

The HTML colours a row's grade cell and each ratio cell by its state (cell background); the Markdown puts a marker
(🟢 🟡 🔴 ⚙️ ⚪) before the grade, so either reads without the other. Input is ``index.page_parts``'s dictionary.
"""

from __future__ import annotations

import base64
import html
import re
from typing import Any

import pandas as pd

from swarmgauge.reports.chart_html import box
from swarmgauge.reports.index_grades import GRADE, MARK, GradedTable

NOT_REPRODUCIBLE = ["the page's row", "why not here"]
#: said above a table of figures the page gives none for
MEASURED_ONLY = "Measured here; the page gives no figure for these, so they are not graded and not among its rows."
#: a cell that reads as a figure is right-aligned, words are left-aligned
NUMBER = re.compile(r"^[-+±<>~]?\s?[\d.,]+\s?(x|%|ms|s|MiB|KB|req/s|runs/s)?$")
BACKGROUND = {
    "green": "#cdeccf",
    "amber": "#fbe3a1",
    "red": "#f4bcc0",
    "set by the stand-in": "#d6e0f5",
    "no ratio": "#ececec",
    "machine-bound": "#e3d4ef",
    "few samples": "#e4dcef",
}
#: the index's own rules, after the report pages' (``chart_html.STYLE``): smaller cells, the rule and legend boxes
STYLE = (
    "table{border-collapse:collapse;margin:.4em 0 1em}"
    "td,th{border:1px solid #ccc;padding:2px 7px;font-size:13px;text-align:right}th{background:#f3f3f3}"
    "td:first-child,th:first-child{text-align:left}.note{color:#555;font-size:13px}.rule{font-size:13px;"
    "background:#f7f7f7;border-left:4px solid #999;padding:.4em .8em}.verdict{padding:3px 8px;font-weight:bold}"
    ".legend span{padding:1px 6px;margin-right:6px;font-size:12px}img{max-width:100%;border:1px solid #ddd}"
)


def marked(state: str, text: str) -> str:
    return f"{MARK.get(state, '')} {text}".strip()


def _esc(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def markdown_table(frame: pd.DataFrame) -> str:
    return frame.to_markdown(index=False, disable_numparse=True)


def graded_markdown(graded: GradedTable) -> str:
    shown = graded.table.copy()
    if GRADE in shown:
        shown[GRADE] = [marked(state, state) for state in graded.grades]
    return markdown_table(shown)


def graded_html(
    graded: GradedTable, states: dict[tuple[int, str], str] | None = None, markup: tuple[str, ...] = ()
) -> str:
    """The table with each graded cell's background; ``states`` adds cells to colour (e.g. a workload's exit), and
    the ``markup`` columns hold HTML already escaped (the report links)."""
    cells = {**graded.cells, **(states or {})}
    columns = [str(c) for c in graded.table.columns]
    head = "".join(f"<th>{_esc(c)}</th>" for c in columns)
    rows = []
    for position, values in enumerate(graded.table.itertuples(index=False)):
        tds = []
        for column, value in zip(columns, values):
            ratio = (position, column) in graded.cells  # a ratio, or the figures compared as they are ("0 = 0")
            state = graded.grades[position] if column == GRADE and graded.grades else cells.get((position, column))
            style = f"background:{BACKGROUND[state]};" if state in BACKGROUND else ""
            aligned = ratio or NUMBER.match(str(value))
            style = f" style='{style}text-align:left'" if not aligned else f" style='{style}'"
            tds.append(f"<td{style}>{value if column in markup else _esc(value)}</td>")
        rows.append("<tr>" + "".join(tds) + "</tr>")
    return box(f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")


def _workloads(parts: dict[str, Any], markdown: bool) -> tuple[pd.DataFrame, dict[tuple[int, str], str]]:
    rows, states = [], {}
    for position, item in enumerate(parts["workloads"]):
        target = item["report"]
        if markdown:
            report = f"[{item['name']}]({target})" if target else f"{item['name']} (no run)"
        else:
            report = (
                f"<a href='{_esc(target)}'>{_esc(item['name'])}</a>" if target else f"{_esc(item['name'])} (no run)"
            )
        exit_label = marked(item["state"], item["exit"]) if markdown else item["exit"]
        rows.append({"workload": item["name"], "what": item["what"], "took": item["took"], "exit": exit_label})
        rows[-1]["report"] = report
        states[(position, "exit")] = item["state"]
    return pd.DataFrame(rows, columns=["workload", "what", "took", "exit", "report"]), states


def page_markdown(parts: dict[str, Any]) -> list[str]:
    md = [f"## {parts['title']}", "", f"Reference page: `{parts['reference']}`", ""]
    if "skipped" in parts:
        return md + [f"**Skipped:** {parts['skipped']}", ""]
    md += [f"**Verdict:** {marked(parts['state'], parts['verdict'])}", ""]
    for caption, graded in parts["tables"]:
        md += [f"### {caption}", "", graded_markdown(graded), ""]
    for caption, frame in parts.get("measured_only") or []:
        md += [f"### {caption}", "", MEASURED_ONLY, "", markdown_table(frame.fillna("")), ""]
    if parts["not_reproducible"]:
        frame = pd.DataFrame(parts["not_reproducible"], columns=NOT_REPRODUCIBLE)
        md += [f"### Not reproducible here ({len(frame)} rows)", "", markdown_table(frame), ""]
    if parts["plot"]:
        md += [f"![{parts['plot_caption']}]({parts['plot']})", "", f"*Plot: {parts['plot_caption']}.*", ""]
    elif parts["plot_caption"]:
        md += [f"*No plot: {parts['plot_caption']}.*", ""]
    if parts["checks"]:
        md += ["### Shape checks (read beside the rows; they are not the verdict)", ""]
        md += [f"- {'holds' if check.holds else 'does NOT hold'}: {check.text}" for check in parts["checks"]] + [""]
    md += [note for note in parts["notes"]] + [""]
    frame, _states = _workloads(parts, markdown=True)
    return md + ["### Workloads", "", markdown_table(frame), ""]


def page_html(parts: dict[str, Any]) -> str:
    title = f"<h2>{_esc(parts['title'])}</h2><p class='note'>Reference page: {_esc(parts['reference'])}</p>"
    if "skipped" in parts:
        return (
            title + f"<p class='verdict' style='background:{BACKGROUND['amber']}'>Skipped: {_esc(parts['skipped'])}</p>"
        )
    colour = BACKGROUND.get(parts["state"], "#fff")
    body = [title, f"<p class='verdict' style='background:{colour}'>Verdict: {_esc(parts['verdict'])}</p>"]
    for caption, graded in parts["tables"]:
        body += [f"<h3>{_esc(caption)}</h3>", graded_html(graded)]
    for caption, frame in parts.get("measured_only") or []:
        table = graded_html(GradedTable(frame.fillna(""), []))
        body += [f"<h3>{_esc(caption)}</h3>", f"<p class='note'>{_esc(MEASURED_ONLY)}</p>", table]
    if parts["not_reproducible"]:
        frame = pd.DataFrame(parts["not_reproducible"], columns=NOT_REPRODUCIBLE)
        body += [f"<h3>Not reproducible here ({len(frame)} rows)</h3>", graded_html(GradedTable(frame, []))]
    if parts.get("chart"):
        body.append(parts["chart"])
    elif parts["plot_png"]:
        data = base64.b64encode(parts["plot_png"]).decode("ascii")
        body.append(
            f"<figure><img alt='{_esc(parts['plot_caption'])}' src='data:image/png;base64,{data}'>"
            f"<figcaption class='note'>{_esc(parts['plot_caption'])}</figcaption></figure>"
        )
    elif parts["plot_caption"]:
        body.append(f"<p class='note'>No plot: {_esc(parts['plot_caption'])}.</p>")
    if parts["checks"]:
        items = "".join(
            f"<li>{'holds' if check.holds else '<b>does NOT hold</b>'}: {_esc(check.text)}</li>"
            for check in parts["checks"]
        )
        body.append(f"<h3>Shape checks (read beside the rows; they are not the verdict)</h3><ul>{items}</ul>")
    body += [f"<p class='note'>{_esc(note)}</p>" for note in parts["notes"]]
    frame, states = _workloads(parts, markdown=False)
    body += ["<h3>Workloads</h3>", graded_html(GradedTable(frame, []), states, markup=("report",))]
    return "".join(body)


def legend_html() -> str:
    spans = "".join(f"<span style='background:{colour}'>{_esc(state)}</span>" for state, colour in BACKGROUND.items())
    return f"<p class='legend'>{spans}</p>"
