"""Renders ``report.md``, ``report.html`` and ``summary.json`` from a run directory (pandas over its CSVs).

The core tables come first (``Request | Step (users) | req/s | p50 | p99 | errors`` per request type, the knee
sentence, generator-bound flags), then the plots: report.md links PNG files beside it (``throughput.png``,
``latency_over_time.png``), report.html draws interactive charts (``reports/report_charts.py``: plotly.js inlined once,
so the one file works offline), the SLO verdicts with coloured cells, then
one section per module in :data:`SECTION_MODULES` that is installed: each has
``section(run_dir: Path) -> Section | None``.
"""

from __future__ import annotations

import html
import importlib
import importlib.util
import json
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pandas as pd

from swarmgauge.core import hooks, numbers
from swarmgauge.core.numbers import number
from swarmgauge.core.request_names import request_title
from swarmgauge.core.slo_units import in_unit
from swarmgauge.files import write_atomic
from swarmgauge.reports import chart_html, context, run_state, table_html, trend
from swarmgauge.reports.bounds import (
    TargetByStep,
    generator_bound_sentence,
    stalled_sentence,
    target_bound_sentence,
    target_cpu_by_step,
)
from swarmgauge.reports.reference import beside_reference, reference_rows, target_caveat
from swarmgauge.reports.sections import Section

logger = logging.getLogger("swarmgauge.report")

SECTION_MODULES = (
    "swarmgauge.reports.resources",
    "swarmgauge.reports.failures",
    "swarmgauge.reports.user_errors",
    "swarmgauge.reports.outages",
    "swarmgauge.reports.mcp",
    "swarmgauge.reports.kneo",
    "swarmgauge.reports.mdk",
    "swarmgauge.reports.workers",
    "swarmgauge.reports.aborted",
)
#: the step tables' first two columns: the request they measure, and the step (its users, or its rate)
REQUEST = "Request"
STEP_USERS = "Step (users)"
STEP_RATE = "Step (rate)"  # an open-model step is named by the rate it asked for (5/s)
STEP_COLUMNS = (STEP_USERS, STEP_RATE, "Step (users or rate)")


def step_column(rates: int, steps: int) -> str:
    """The step column's name for a table with ``rates`` open-model steps out of ``steps``."""
    return STEP_USERS if rates == 0 else STEP_RATE if rates == steps else STEP_COLUMNS[2]


def format_latency(ms: Any) -> str:
    """Latency as the reference pages write it, with 3 significant digits: ``0.627 ms``, ``20.4 ms``, ``1.77 s``."""
    return numbers.format_latency(number(ms))


def format_rate_cell(value: Any) -> str:
    return numbers.format_rate(number(value))


def _closed_rows(table: pd.DataFrame) -> pd.DataFrame:
    rows = table.dropna(subset=["rps"]).sort_values("step")
    if "target_rate" in rows:
        rows = rows[rows["target_rate"].isna() | (rows["target_rate"].astype(str) == "")]
    return rows[pd.to_numeric(rows["users"], errors="coerce").notna()]


def step_spreads(timeline: pd.DataFrame | None) -> dict[int, float]:
    """Per step, the in-step variation of throughput as a fraction of its mean (std / mean of per-interval req/s).

    The first and last interval of a step are left out: they hold the ramp and a partial bucket, not the step.
    """
    if timeline is None or timeline.empty or not {"time", "step", "requests"} <= set(timeline):
        return {}
    spreads = {}
    for step, group in timeline.sort_values("time").groupby("step"):
        inner = group["requests"].iloc[1:-1]
        if len(inner) >= 2 and inner.mean() > 0:
            spreads[int(step)] = float(inner.std(ddof=1) / inner.mean())
    return spreads


def knee_sentence(
    table: pd.DataFrame, spreads: dict[int, float] | None = None, target_cpu: TargetByStep | None = None
) -> str | None:
    """The trend sentence (rising, flat with the knee, falling, noisy) for one request type's closed-model steps."""
    rows = _closed_rows(table)
    points = []
    for _, r in rows.iterrows():
        target = (target_cpu or {}).get(int(r["step"]))
        points.append(
            trend.StepPoint(
                users=float(r["users"]),
                rps=float(r["rps"]),
                p50_ms=number(r.get("p50_ms")),
                spread=float(r["rps"]) * (spreads or {}).get(int(r["step"]), 0.0),
                generator_cpu=number(r.get("generator_cpu_max")),
                target_cpu=target.cpu_percent if target else None,
                target=target,
            )
        )
    return trend.trend_sentence(points)


def _cpu(value: Any, bound: bool = False) -> str:
    """CPU as % of one core; ``(bound)`` when a generator ran above 90 %: the step may measure the generator."""
    figure = number(value)
    return "" if figure is None else f"{figure:.0f} %" + (" (bound)" if bound else "")


def _target_cell(target: trend.TargetCPU | None) -> str:
    """The target's CPU as % of a core, ``(bound)`` above 90 % of its ceiling (a core, or its cgroup's limit)."""
    if target is None:
        return ""
    limit = "" if target.limit_percent == 100.0 else f" of {target.limit_percent:.0f} %"
    return f"{target.cpu_percent:.0f} %{limit}" + (" (bound)" if target.bound else "")


def waited_on(request_type: str, name: str) -> bool:
    """Request types a user waits on; a QUIC handshake rides along with them and gets no trend sentence."""
    return not (str(request_type) == "QUIC" and str(name) == "handshake")


def rate_unit(request_type: str) -> str:
    """``runs/s`` for kneo's run request types (the page's unit), ``req/s`` for everything else."""
    return "runs/s" if str(request_type).startswith("run ") else "req/s"


def step_tables(
    steps: pd.DataFrame, spreads: dict[int, float] | None = None, target_cpu: TargetByStep | None = None
) -> list[tuple[str, pd.DataFrame, str | None]]:
    """One reference-page table per request type (and name when a type has several)."""
    tables = []
    data = steps[steps["name"] != "Aggregated"]
    for (rtype, name), group in data.groupby(["request_type", "name"], sort=True):
        group = group.sort_values("step")
        users = group.apply(
            lambda r: (
                r["users"] if pd.isna(r.get("target_rate")) or r.get("target_rate") == "" else f"{r['target_rate']:g}/s"
            ),
            axis=1,
        )
        errors = group["failures"].astype(int)
        shown = pd.DataFrame(
            {
                REQUEST: [request_title(rtype, name) if i == 0 else "" for i in range(len(group))],
                step_column(int(users.astype(str).str.endswith("/s").sum()), len(users)): users.astype(str).str.replace(
                    r"\.0$", "", regex=True
                ),
                rate_unit(rtype): group["rps"].map(format_rate_cell),
                "p50": group["p50_ms"].map(format_latency),
                "p99": group["p99_ms"].map(format_latency),
                "errors": errors,
            }
        )
        unfinished = pd.to_numeric(group.get("unfinished", pd.Series(dtype=float)), errors="coerce").fillna(0)
        if unfinished.any():  # of the errors: requests cut off by their user's stop (steps.csv ``unfinished``)
            shown["unfinished"] = unfinished.astype(int).to_numpy()
        if "generator_cpu_max" in group and pd.to_numeric(group["generator_cpu_max"], errors="coerce").notna().any():
            shown["generator CPU"] = [
                _cpu(v, str(b) == "True") for v, b in zip(group["generator_cpu_max"], group["generator_bound"])
            ]
        if "generator_stalled" in group and (group["generator_stalled"].astype(str) == "True").any():
            shown["generator stall"] = [
                format_latency(ms) + (" (stalled)" if str(flag) == "True" else "")
                for ms, flag in zip(group["generator_stall_ms"], group["generator_stalled"])
            ]
        if target_cpu:
            shown["target CPU"] = [_target_cell(target_cpu.get(int(step))) for step in group["step"]]
        sentence = knee_sentence(group, spreads, target_cpu) if waited_on(rtype, name) else None
        tables.append((request_title(rtype, name), shown, sentence))
    return tables


def _slo_frame(run_dir: Path) -> pd.DataFrame | None:
    """The SLO table with verdicts, each observed value in its threshold's own unit (45.2 MiB, not base units)."""
    path = run_dir / "slo.json"
    if not path.is_file():
        return None
    verdicts = json.loads(path.read_text()).get("verdicts", [])
    if not verdicts:
        return None
    frame = pd.DataFrame(
        [
            {
                "SLO": v["expr"],
                "scope": v["scope"],
                "observed": in_unit(v["observed"], v.get("unit", ""), v.get("metric", "")),
                "worst step": v.get("worst_step") or "",
                "status": v["status"],
                "colour": v["colour"],
                "why": v.get("reason") or "",
            }
            for v in verdicts
        ]
    )
    return frame if frame["why"].astype(bool).any() else frame.drop(columns=["why"])


def _sections(run_dir: Path) -> list[Section]:
    found = []
    for module_name in SECTION_MODULES:
        if importlib.util.find_spec(module_name) is None:
            continue
        try:
            section = importlib.import_module(module_name).section(run_dir)
        except Exception as exc:  # noqa: BLE001 - one broken section must not lose the report
            logger.warning("report section %s failed: %s", module_name, exc)
            continue
        if section is not None:
            found.append(section)
    return found


def _plots(run_dir: Path, steps: pd.DataFrame | None) -> list[tuple[str, str, bytes]]:
    """(file name, caption, PNG) for each plot there is data for; the files are written into the run dir."""
    from swarmgauge.reports.plots import latency_over_time, throughput_vs_users

    found: list[tuple[str, str, bytes | None]] = []
    if steps is not None:
        found.append(("throughput.png", "Throughput and p50/p99 against users", throughput_vs_users(steps)))
    timeline_path = run_dir / "timeline.csv"
    if timeline_path.is_file():
        timeline = pd.read_csv(timeline_path)
        found.append(("latency_over_time.png", "Latency over time", latency_over_time(timeline, steps)))
    plots = [(name, caption, png) for name, caption, png in found if png]
    for name, _caption, png in plots:
        write_atomic(run_dir / name, png)
    return plots


TABLE = re.compile(r"<table.*?</table>", re.S)


def boxed(fragment: str) -> str:
    """A section's HTML with each table in a box that scrolls sideways (a wide table never widens the page)."""
    return TABLE.sub(lambda found: chart_html.box(found.group(0)), fragment)


def _add(md: list[str], body: list[str], title: str | None, markdown: str, fragment: str) -> None:
    if title:
        md += [f"## {title}", ""]
        body.append(f"<h2>{html.escape(title)}</h2>")
    md += [markdown, ""]
    body.append(boxed(fragment) if "table-box" not in fragment else fragment)


def _read_csv(path: Path) -> pd.DataFrame | None:
    if not path.is_file():
        return None
    frame = pd.read_csv(path)
    return None if frame.empty else frame


def render_report(run_dir: Path | str) -> dict[str, Any]:
    """Write report.md, report.html (plots embedded), the plot PNGs and summary.json into ``run_dir``.

    Order: the run's context, per request type the step table and its trend sentence, errors by class, the SLOs,
    the target's memory, lost workers, the plots, then the protocol sections.
    """
    run_dir = Path(run_dir)
    info = run_state.settle(run_dir, context.load_run_json(run_dir))
    md: list[str] = [f"# swarmgauge run report: {run_dir.name}", ""]
    body: list[str] = [f"<h1>swarmgauge run report: {html.escape(run_dir.name)}</h1>"]
    summary: dict[str, Any] = {"run_dir": run_dir.name}
    try:
        context_md, context_html = context.render(info)
    except (KeyError, TypeError, ValueError) as exc:  # an odd run.json must not lose the figures below
        logger.warning("report context: run.json not understood: %s", exc)
        context_md, context_html = "", ""
    if context_md:
        _add(md, body, None, context_md, context_html)
        summary["cut_short"] = info.get("cut_short")
    caveat = target_caveat(info)
    if caveat:
        _add(md, body, None, f"**{caveat}**", f"<p class='bound'><b>{html.escape(caveat)}</b></p>")
        summary["reference_caveat"] = caveat
        logger.warning("%s", caveat)  # the console's copy: a run's Δ against the page must not be read bare
    steps = _read_csv(run_dir / "steps.csv")
    if steps is not None:
        summary["steps"] = json.loads(steps.to_json(orient="records"))
        spreads = step_spreads(_read_csv(run_dir / "timeline.csv"))
        reference = reference_rows(info)
        target_cpu = target_cpu_by_step(run_dir)
        for title, table, sentence in step_tables(steps, spreads, target_cpu):
            table = beside_reference(table, title, reference)
            fragment = table_html.table(table)
            _add(md, body, title, table.to_markdown(index=False, disable_numparse=True), fragment)
            if sentence:
                _add(md, body, None, sentence, f"<p class='knee'>{html.escape(sentence)}</p>")
                summary.setdefault("knees", {})[title] = sentence
        bound = generator_bound_sentence(steps)
        if bound:
            _add(md, body, None, bound, f"<p class='bound'>{html.escape(bound)}</p>")
            summary["generator_bound"] = bound
        stalled = stalled_sentence(steps)
        if stalled:
            _add(md, body, None, stalled, f"<p class='bound'>{html.escape(stalled)}</p>")
            summary["generator_stalled"] = stalled
        target_bound = target_bound_sentence(steps, target_cpu)
        if target_bound:
            _add(md, body, None, target_bound, f"<p class='bound'>{html.escape(target_bound)}</p>")
            summary["target_bound"] = target_bound
    sections = {section.title: section for section in _sections(run_dir)}
    if "Failures" in sections:
        failures = sections.pop("Failures")
        _add(md, body, "Errors by class", failures.markdown, failures.html)
        summary["Failures"] = failures.summary
    if "User code exceptions" in sections:
        raised = sections.pop("User code exceptions")
        _add(md, body, raised.title, raised.markdown, raised.html)
        summary["user_errors"] = raised.summary
    slo = _slo_frame(run_dir)
    if slo is not None:
        _add(md, body, "SLOs", slo.to_markdown(index=False), table_html.table(slo))
        summary["slo"] = json.loads(slo.to_json(orient="records"))
    early = [title for title in ("Target memory", "Lost workers") if title in sections]
    for section in [sections.pop(title) for title in early]:
        _add(md, body, section.title, section.markdown, section.html)
        summary[section.title] = section.summary
    plots = _plots(run_dir, steps)
    from swarmgauge.reports.report_charts import run_charts  # plotly: only where a report is rendered

    charts = run_charts(run_dir, steps, reference_rows(info))
    if plots or charts:
        _add(md, body, "Plots", "\n".join(f"![{caption}]({name})" for name, caption, _png in plots), "".join(charts))
        summary["plots"] = [name for name, _caption, _png in plots]
    for section in sections.values():
        _add(md, body, section.title, section.markdown, section.html)
        summary[section.title] = section.summary
    write_atomic(run_dir / "report.md", "\n".join(md) + "\n")
    page = chart_html.page("swarmgauge report", body)
    write_atomic(run_dir / "report.html", page)
    write_atomic(run_dir / "summary.json", json.dumps(summary, indent=2, default=str))
    return summary


# a run directory's report at the end of the run; the hook is typed Hook[None] (its callers ignore the summary)
hooks.render_report.implement(cast(Callable[..., None], render_report))
