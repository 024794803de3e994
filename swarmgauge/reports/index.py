"""The demo's index: one section per reference page, from the workloads' run folders only.

Input is a demo folder as ``swarmgauge demo`` leaves it: ``demo.json`` (which pages and workloads ran, into which
folder, the exit each declares and the one it ended with, why a page was skipped) and one run folder per workload.
Each section shows the page's table layout with the measured rows beside the page's published figures, their ratio
and each row's colour against its tolerance (``index_grades``), the rows no workload attempts and why, a verdict no
kinder than the rows, the shape checks apart from it, one plot (``index_plots``) and each workload's exit and report.
Output: ``report.md``, ``report.html`` (the plots embedded) and ``index_plots/<page>.png`` (linked from the Markdown).
"""

from __future__ import annotations

import html
import json
import logging
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from swarmgauge.core.host_speed import REFERENCE_MS, slowdown
from swarmgauge.files import write_atomic
from swarmgauge.reports import chart_html
from swarmgauge.reports.index_grades import (
    AMBER,
    FEW,
    GREEN,
    MACHINE,
    NO_RATIO,
    RED,
    RULE,
    SET,
    GradedTable,
    exit_state,
    grade_table,
    tally,
    worst,
)
from swarmgauge.reports.index_pages import SECTIONS, PageSection
from swarmgauge.reports.index_plots import PLOTS, describe
from swarmgauge.reports.index_render import (
    STYLE,
    graded_html,
    legend_html,
    markdown_table,
    marked,
    page_html,
    page_markdown,
)
from swarmgauge.reports.index_scale import BUDGET_MIN, budget_minutes, scale_note
from swarmgauge.run_folders import resolve

logger = logging.getLogger("swarmgauge.index")

MANIFEST = "demo.json"
PLOTS_DIR = "index_plots"
#: the pages the issue's row count and budgets cover
ISSUE_PAGES = ("demarkus", "kneo", "mdk", "brain")
#: the issue's count of the four pages' rows (issue 30: "attempts 36 of the pages' 73 rows")
ISSUE_ROWS = 73


class IndexInputError(ValueError):
    """The folder is not a demo folder (no readable ``demo.json``)."""


#: when the demo probed the host's speed, as the index says it
WHEN = {"start": "before the first workload", "end": "after the last"}
#: a probe within this share of the reference is the reference machine's speed (its rounds spread about this much)
SAME_SPEED = 0.05


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


def _workloads(folder: Path, page: dict[str, Any], runs: dict[str, Path | None]) -> list[dict[str, Any]]:
    """Each workload's exit (graded against the exit it declares), time taken and report link."""
    items = []
    for workload in page.get("workloads") or []:
        state, label = exit_state(workload.get("exit_code"), workload.get("expected_exit", 0))
        run = runs.get(workload["name"])
        report = ""
        if run is None:
            state = RED
        else:
            target = run / "report.html"
            report = str(target.relative_to(folder)) if target.is_relative_to(folder) else str(target)
        took = workload.get("elapsed_s")
        items.append(
            {
                "name": workload["name"],
                "what": workload.get("what", ""),
                "took": f"{took:.0f} s" if isinstance(took, int | float) else "",
                "exit": label,
                "state": state,
                "report": report,
            }
        )
    return items


def verdict(grades: list[str], section: PageSection, workloads: list[dict[str, Any]]) -> tuple[str, str]:
    """(state, the one-line verdict): the rows' tally, the workloads that did not end as declared or left no run.

    The page takes its worst row or workload; with no row measured at all it is red."""
    line = tally(grades, len(section.not_reproducible))
    broken = [f"{w['name']} ({w['exit']})" for w in workloads if w["state"] == RED and w["report"]]
    lost = [w["name"] for w in workloads if not w["report"]]
    if broken:
        line += f"; workloads not ending as declared: {', '.join(broken)}"
    if lost:
        line += f" (no run folder: {', '.join(lost)})"
    if workloads and not broken and not lost:
        line += f"; {len(workloads)} workload{'s' if len(workloads) != 1 else ''} ended as declared"
    if not grades:
        return RED, "no rows measured: " + line
    return worst(grades + [w["state"] for w in workloads]), line


def page_parts(folder: Path, page: dict[str, Any]) -> dict[str, Any]:
    """One page's section as data: graded tables, verdict, checks, notes, plot and workloads (or why it was skipped)."""
    title = f"{page.get('name')}: {page.get('title', '')}"
    if page.get("skipped"):
        return {"title": title, "skipped": page["skipped"], "reference": page.get("reference", "")}
    runs = {w["name"]: run_folder(folder, w) for w in page.get("workloads") or []}
    build = SECTIONS.get(str(page.get("name")))
    section = build(runs) if build else PageSection()
    tables = [(caption, grade_table(table)) for caption, table in section.tables]
    grades = [grade for _caption, graded in tables for grade in graded.grades]
    workloads = _workloads(folder, page, runs)
    state, line = verdict(grades, section, workloads)
    plot_png, caption = None, ""
    draw = PLOTS.get(str(page.get("name")))
    if draw is not None:
        try:
            plot_png = draw(runs)
            caption = describe(str(page.get("name"))) if plot_png else "the runs left nothing to plot"
        except (KeyError, ValueError, TypeError, IndexError) as exc:
            caption = f"the plot could not be drawn ({type(exc).__name__}: {exc})"
    interactive = _chart(str(page.get("name")), runs) if plot_png else ""
    return {
        "name": str(page.get("name")),
        "title": title,
        "reference": page.get("reference", ""),
        "tables": tables,
        "grades": grades,
        "state": state,
        "verdict": line,
        "checks": section.checks,
        "notes": section.notes,
        "not_reproducible": section.not_reproducible,
        "measured_only": section.measured_only,
        "workloads": workloads,
        "plot_png": plot_png,
        "plot": f"{PLOTS_DIR}/{page.get('name')}.png" if plot_png else "",
        "plot_caption": caption,
        "chart": interactive,
        "elapsed": {w["name"]: w.get("elapsed_s") for w in page.get("workloads") or []},
    }


def _chart(name: str, runs: dict[str, Path | None]) -> str:
    """The page's interactive chart as an HTML fragment ('' when it has none, or it could not be drawn: the PNG
    stays in report.md either way)."""
    from swarmgauge.reports.chart_html import chart
    from swarmgauge.reports.index_charts import CHARTS

    draw = CHARTS.get(name)
    try:
        figure = draw(runs) if draw is not None else None
    except Exception as exc:  # noqa: BLE001 - the PNG in report.md and the tables stay
        logger.warning("index chart %s: %s", name, exc)
        return ""
    return "" if figure is None else chart(figure, f"chart-index-{name}", describe(name))


def overview_table(sections: list[dict[str, Any]]) -> tuple[pd.DataFrame, list[str]]:
    """One row per page: its rows' tally (no kinder than its rows), its shape checks apart, and its time; with each
    page's state for the colour."""
    rows, states = [], []
    for parts in sections:
        if "skipped" in parts:
            rows.append({"page": parts["title"], "rows": "skipped", "shape checks": "", "workloads": "", "took": ""})
            states.append("skipped")  # no marker: a skipped page is neither graded nor hidden
            continue
        elapsed = [float(v) for v in parts["elapsed"].values() if isinstance(v, int | float)]
        checks = parts["checks"]
        held = sum(check.holds for check in checks)
        rows.append(
            {
                "page": parts["title"],
                "rows": parts["verdict"],
                "shape checks": f"{held} of {len(checks)} hold" if checks else "none",
                "workloads": str(len(parts["workloads"])),
                "took": f"{sum(elapsed) / 60:.1f} min" if elapsed else "",
            }
        )
        states.append(parts["state"])
    return pd.DataFrame(rows, columns=["page", "rows", "shape checks", "workloads", "took"]), states


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
        f"The reference pages reproduced on embedded targets{took}.{shared}{speed_text(machine.get('probe_ms'))} Each "
        "figure comes from its workload's run folder; `x` is measured / published. The machine is not the pages' "
        "machines: read the shapes, not the absolutes."
    )


def speed_text(probe: Any) -> str:
    """How fast the host ran against the reference measured on it (``core/host_speed.py``)."""
    if not isinstance(probe, dict):
        return ""
    measured = {when: float(probe[when]) for when in WHEN if isinstance(probe.get(when), int | float)}
    if not measured:
        return ""
    said = [f"{ms:g} ms of CPU {WHEN[when]}" for when, ms in measured.items()]
    worst = max(slowdown(ms) for ms in measured.values())
    if worst > 1 + SAME_SPEED:
        pace = f"{worst:.2f}x the reference's CPU at worst"
    elif worst >= 1 - SAME_SPEED:
        pace = f"as fast, within {SAME_SPEED:.0%}"
    else:
        pace = f"{worst:.2f}x the reference's CPU: faster than it"
    return (
        f" Host speed: a fixed piece of Python work took {' and '.join(said)}, against {REFERENCE_MS:g} ms on "
        f"this host when the reference was measured ({pace}): the embedded targets and the generator share these cores, so "
        "their CPU a request moves the same way, and their rates where a core bounds them."
    )


def whole_run(manifest: dict[str, Any], sections: list[dict[str, Any]]) -> str:
    """One line for the whole run: the rows attempted and not reproducible over every page, their colours, and the
    time taken against the budget of ``demo --all`` at the run's ``--scale``."""
    graded = [parts for parts in sections if "skipped" not in parts]
    grades = [grade for parts in graded for grade in parts["grades"]]
    listed = sum(len(parts["not_reproducible"]) for parts in graded)
    shown_states = (GREEN, AMBER, RED, SET, *([MACHINE] if MACHINE in grades else []), NO_RATIO)
    counts = ", ".join(f"{grades.count(state)} {state}" for state in shown_states)
    if FEW in grades:
        counts += f", {grades.count(FEW)} {FEW}"
    pages = f"{len(graded)} of {len(sections)}" if len(graded) != len(sections) else f"{len(sections)}"
    pages += " page" if len(sections) == 1 else " pages"
    line = (
        f"The whole run ({pages}): {len(grades)} rows attempted ({counts}) and {listed} rows not reproducible "
        f"here: {len(grades)} + {listed} = {len(grades) + listed} rows. The issue counted {ISSUE_ROWS} rows on the "
        "four pages; these tables split a page's row into a row per figure, step or route, so their count is not "
        "the issue's."
    )
    note = scale_note(manifest.get("scale"))
    return f"{line} {took_line(manifest)}" + (f" {note}" if note else "")


def took_line(manifest: dict[str, Any]) -> str:
    """``Took 17.9 min, within the 20 min budget of --all at --scale 1 on 2 cores.``, or why no budget applies."""
    started, ended = manifest.get("started_at"), manifest.get("ended_at")
    if not isinstance(started, int | float) or not isinstance(ended, int | float):
        return "Took: not finished (demo.json has no end time)."
    took = (ended - started) / 60
    budgets = ", ".join(f"{minutes:g} min at --scale {scale:g}" for scale, minutes in BUDGET_MIN.items())
    names = [str(page.get("name")) for page in manifest["pages"]]
    if not set(ISSUE_PAGES) <= set(names):
        return f"Took {took:.1f} min for {', '.join(names)} (the budgets are for --all: {budgets})."
    scale = manifest.get("scale")
    if not isinstance(scale, int | float):
        return f"Took {took:.1f} min at a scale demo.json does not record (the budgets of --all: {budgets})."
    budget = budget_minutes(float(scale))
    verdict = "within" if took <= budget else "OVER"
    # the seconds beside the minutes: 362 s reads "6.0 min" and is over a 6 min budget
    return (
        f"Took {took:.1f} min ({took * 60:.0f} s), {verdict} the {budget:.3g} min budget of --all at --scale "
        f"{scale:g} on 2 cores."
    )


def pages_ready(folder: Path | str, rendering: Collection[Path]) -> dict[int, dict[str, Any]]:
    """The sections of the pages none of whose runs is among ``rendering``, drawn now (by page number): the demo
    draws them while its last reports render. A section reads its runs' ``summary.json``, which a run's report
    writes, so a page with a run still rendering waits for :func:`index_sections` (a demarkus-only demo's index once
    drew its churn section from before the churn report's summary, and left the section out)."""
    folder = Path(folder).resolve()  # the run folders resolve through ``latest`` links: links are relative to this
    busy = {Path(run).resolve() for run in rendering}

    def renders(page: dict[str, Any]) -> bool:
        return any(
            (run := run_folder(folder, w)) is not None and run.resolve() in busy for w in page.get("workloads") or []
        )

    pages = load_manifest(folder)["pages"]
    return {number: page_parts(folder, page) for number, page in enumerate(pages) if not renders(page)}


def index_sections(folder: Path | str, drawn: Mapping[int, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Every page's section (its tables, grades and plots: the index's work, seconds of it), from the run folders and
    the manifest's workloads: those in ``drawn`` (:func:`pages_ready`) as drawn there, the others now. The manifest's
    end time is not read, so the demo draws them before it writes the index."""
    folder = Path(folder).resolve()
    drawn = drawn or {}
    pages = load_manifest(folder)["pages"]
    return [drawn[number] if number in drawn else page_parts(folder, page) for number, page in enumerate(pages)]


def write_index(folder: Path | str, sections: list[dict[str, Any]] | None = None) -> tuple[Path, Path]:
    """Write ``report.md`` and ``report.html`` (and each page's plot under ``index_plots/``) into the demo folder
    (``sections``: :func:`index_sections`, drawn before; drawn now when None)."""
    folder = Path(folder).resolve()
    manifest = load_manifest(folder)
    if sections is None:
        sections = index_sections(folder)
    for parts in sections:
        if parts.get("plot_png"):
            (folder / PLOTS_DIR).mkdir(exist_ok=True)
            (folder / parts["plot"]).write_bytes(parts["plot_png"])
    overview, states = overview_table(sections)
    shown = overview.copy()
    shown["rows"] = [marked(state, text) for state, text in zip(states, overview["rows"])]
    summary = whole_run(manifest, sections)
    md = ["# swarmgauge demo: the reference pages side by side", "", _intro(manifest), "", f"**{summary}**", ""]
    md += [f"> {RULE}", ""]
    md += [markdown_table(shown), ""]
    for parts in sections:
        md += page_markdown(parts)
    body = [
        f"<h1>swarmgauge demo: the reference pages side by side</h1><p>{html.escape(_intro(manifest))}</p>",
        f"<p class='verdict'>{html.escape(summary)}</p>",
        f"<p class='rule'>{html.escape(RULE)}</p>",
        legend_html(),
        graded_html(GradedTable(overview, [], {(i, "rows"): state for i, state in enumerate(states)})),
    ]
    body += [page_html(parts) for parts in sections]
    write_atomic(folder / "report.md", "\n".join(md) + "\n")
    write_atomic(folder / "report.html", chart_html.page("swarmgauge demo", body, STYLE))
    return folder / "report.md", folder / "report.html"


def table_of(folder: Path | str, page: str) -> pd.DataFrame | None:
    """The first table of a page's section (for the README excerpt and the tests)."""
    folder = Path(folder).resolve()
    manifest = load_manifest(folder)
    for entry in manifest["pages"]:
        if entry.get("name") == page and not entry.get("skipped"):
            tables = page_parts(folder, entry)["tables"]
            return tables[0][1].table if tables else None
    return None
