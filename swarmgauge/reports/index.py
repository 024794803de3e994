"""The demo's index: one section per reference page, from the workloads' run folders only.

Input is a demo folder as ``swarmgauge demo`` leaves it: ``demo.json`` (which pages and workloads ran, into which
folder, and why a page was skipped) and one run folder per workload. Each section shows the page's table layout
with the measured rows beside the page's published figures and their ratio, a one-line verdict on whether the
page's shape holds, and links to each workload's own full report. Output: ``report.md`` and ``report.html``.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import pandas as pd

from swarmgauge.files import write_atomic
from swarmgauge.reports.index_pages import SECTIONS, PageSection
from swarmgauge.run_folders import resolve

MANIFEST = "demo.json"
STYLE = (
    "<style>body{font-family:sans-serif;margin:1.5em;max-width:1350px}table{border-collapse:collapse;margin:.4em 0 1em}"
    "td,th{border:1px solid #ccc;padding:2px 7px;font-size:13px;text-align:right}th{background:#f3f3f3}"
    "td:first-child,th:first-child{text-align:left}.holds{color:#176b2c;font-weight:bold}"
    ".fails{color:#a4161a;font-weight:bold}.skipped{color:#8a6d00;font-weight:bold}.note{color:#555;font-size:13px}"
    "</style>"
)


class IndexInputError(ValueError):
    """The folder is not a demo folder (no readable ``demo.json``)."""


def load_manifest(folder: Path) -> dict[str, Any]:
    path = folder / MANIFEST
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise IndexInputError(f"{path}: not a demo folder's manifest ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("pages"), list):
        raise IndexInputError(f"{path}: no list of pages")
    return doc


def run_folder(folder: Path, workload: dict[str, Any]) -> Path | None:
    """A workload's run folder when it holds ``steps.csv`` (the ``latest`` run of its ``--run-dir``)."""
    found = resolve(folder / str(workload.get("folder", "")))
    return found if (found / "steps.csv").is_file() else None


def verdict(section: PageSection) -> tuple[str, str]:
    """(css class, the one-line verdict)."""
    if not section.checks:
        return "fails", "no figures measured: the workloads left no run folder"
    holds = all(check.holds for check in section.checks)
    parts = [check.text if check.holds else f"NOT: {check.text}" for check in section.checks]
    return ("holds" if holds else "fails"), ("shape holds: " if holds else "shape does not hold: ") + "; ".join(parts)


def _links(folder: Path, page: dict[str, Any], runs: dict[str, Path | None]) -> list[tuple[str, str]]:
    """(label, relative path of the workload's report.html); the label carries a non-zero exit code."""
    links = []
    for workload in page.get("workloads") or []:
        code = workload.get("exit_code")
        label = workload["name"] + (f" (exit {code})" if code not in (None, 0) else "")
        run = runs.get(workload["name"])
        if run is None:
            links.append((label, ""))
            continue
        target = run / "report.html"
        links.append((label, str(target.relative_to(folder)) if target.is_relative_to(folder) else str(target)))
    return links


def page_parts(folder: Path, page: dict[str, Any]) -> dict[str, Any]:
    """One page's section as data: tables, verdict, notes and links (or why it was skipped)."""
    title = f"{page.get('name')}: {page.get('title', '')}"
    if page.get("skipped"):
        return {"title": title, "skipped": page["skipped"], "reference": page.get("reference", "")}
    runs = {w["name"]: run_folder(folder, w) for w in page.get("workloads") or []}
    build = SECTIONS.get(str(page.get("name")))
    section = build(runs) if build else PageSection()
    css, line = verdict(section)
    missing = [name for name, run in runs.items() if run is None]
    if missing:
        line += f" (no run folder: {', '.join(missing)})"
    return {
        "title": title,
        "reference": page.get("reference", ""),
        "tables": section.tables,
        "verdict": line,
        "css": css,
        "notes": section.notes,
        "links": _links(folder, page, runs),
        "elapsed": {w["name"]: w.get("elapsed_s") for w in page.get("workloads") or []},
    }


def overview_table(sections: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per page: whether its shape holds, and how long its workloads took."""
    rows = []
    for parts in sections:
        if "skipped" in parts:
            rows.append({"page": parts["title"], "shape": "skipped", "workloads": "", "took": ""})
            continue
        elapsed = [float(v) for v in parts["elapsed"].values() if isinstance(v, int | float)]
        rows.append(
            {
                "page": parts["title"],
                "shape": "holds" if parts["css"] == "holds" else "does not hold",
                "workloads": str(len(parts["links"])),
                "took": f"{sum(elapsed) / 60:.1f} min" if elapsed else "",
            }
        )
    return pd.DataFrame(rows, columns=["page", "shape", "workloads", "took"])


def _markdown(parts: dict[str, Any]) -> list[str]:
    md = [f"## {parts['title']}", "", f"Reference page: `{parts['reference']}`", ""]
    if "skipped" in parts:
        return md + [f"**Skipped:** {parts['skipped']}", ""]
    md += [f"**Verdict:** {parts['verdict']}", ""]
    for caption, table in parts["tables"]:
        md += [f"### {caption}", "", table.to_markdown(index=False, disable_numparse=True), ""]
    md += [note for note in parts["notes"]] + [""]
    links = [f"[{name}]({target})" if target else f"{name} (no run)" for name, target in parts["links"]]
    return md + ["Full reports: " + ", ".join(links), ""]


def _html(parts: dict[str, Any]) -> str:
    title = (
        f"<h2>{html.escape(parts['title'])}</h2><p class='note'>Reference page: {html.escape(parts['reference'])}</p>"
    )
    if "skipped" in parts:
        return title + f"<p class='skipped'>Skipped: {html.escape(parts['skipped'])}</p>"
    body = [title, f"<p class='{parts['css']}'>{html.escape(parts['verdict'])}</p>"]
    for caption, table in parts["tables"]:
        body += [f"<h3>{html.escape(caption)}</h3>", table.to_html(index=False, escape=True, border=0)]
    body += [f"<p class='note'>{html.escape(note)}</p>" for note in parts["notes"]]
    links = [
        f"<a href='{html.escape(target)}'>{html.escape(name)}</a>" if target else f"{html.escape(name)} (no run)"
        for name, target in parts["links"]
    ]
    return "".join(body) + f"<p>Full reports: {', '.join(links)}</p>"


def _intro(manifest: dict[str, Any]) -> str:
    started, ended = manifest.get("started_at"), manifest.get("ended_at")
    took = (
        f" in {(ended - started) / 60:.1f} min"
        if isinstance(started, int | float) and isinstance(ended, int | float)
        else ""
    )
    machine = manifest.get("machine") or {}
    loads = [w.get("load_avg") for p in manifest["pages"] for w in p.get("workloads") or [] if w.get("load_avg")]
    shared = (
        f" This machine: {machine['cpus']} CPUs, load average {min(loads):.0f} to {max(loads):.0f} at the end of the "
        "workloads (other jobs shared it, so absolute rates are low)."
        if loads and machine.get("cpus")
        else ""
    )
    return (
        f"The reference pages reproduced on embedded targets{took}.{shared} Each figure comes from its workload's run folder; "
        "`x` is measured / published. The machine is not the pages' machines: read the shapes, not the absolutes."
    )


def write_index(folder: Path | str) -> tuple[Path, Path]:
    """Write ``report.md`` and ``report.html`` into the demo folder; returns their paths."""
    folder = Path(folder).resolve()  # the run folders resolve through ``latest`` links: links are relative to this
    manifest = load_manifest(folder)
    sections = [page_parts(folder, page) for page in manifest["pages"]]
    overview = overview_table(sections)
    md = ["# swarmgauge demo: the reference pages side by side", "", _intro(manifest), ""]
    md += [overview.to_markdown(index=False, disable_numparse=True), ""]
    for parts in sections:
        md += _markdown(parts)
    body = [f"<h1>swarmgauge demo: the reference pages side by side</h1><p>{html.escape(_intro(manifest))}</p>"]
    body.append(overview.to_html(index=False, escape=True, border=0))
    body += [_html(parts) for parts in sections]
    page = f"<!doctype html><html><head><meta charset='utf-8'><title>swarmgauge demo</title>{STYLE}</head><body>"
    write_atomic(folder / "report.md", "\n".join(md) + "\n")
    write_atomic(folder / "report.html", page + "".join(body) + "</body></html>")
    return folder / "report.md", folder / "report.html"


def table_of(folder: Path | str, page: str) -> pd.DataFrame | None:
    """The first table of a page's section (for the README excerpt and the tests)."""
    folder = Path(folder).resolve()
    manifest = load_manifest(folder)
    for entry in manifest["pages"]:
        if entry.get("name") == page and not entry.get("skipped"):
            tables = page_parts(folder, entry)["tables"]
            return tables[0][1] if tables else None
    return None
