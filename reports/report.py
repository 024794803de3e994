"""Renders ``report.md``, ``report.html`` and ``summary.json`` from a run directory (pandas over its CSVs).

The core tables come first (the reference pages' ``Step | Users | req/s | p50 | p99 | errors`` per request type,
the knee sentence, generator-bound flags), then the plots (``throughput.png``, ``latency_over_time.png``: files
beside report.md, embedded as data URIs in report.html so it is one self-contained file), the SLO verdicts, then
one section per module in :data:`SECTION_MODULES` that is installed: each has
``section(run_dir: Path) -> Section | None``.
"""

from __future__ import annotations

import base64
import html
import importlib
import importlib.util
import json
import logging
from pathlib import Path
from typing import Any

import pandas as pd

from swarmgauge.core import hooks
from swarmgauge.files import write_atomic
from swarmgauge.reports.sections import Section

logger = logging.getLogger("swarmgauge.report")

SECTION_MODULES = ("swarmgauge.reports.resources", "swarmgauge.reports.failures", "swarmgauge.reports.mcp", "swarmgauge.reports.kneo", "swarmgauge.reports.mdk",
                   "swarmgauge.reports.workers")
KNEE_GAIN = 0.10
STYLE = ("<style>body{font-family:sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse;margin:1em 0}"
         "th,td{border:1px solid #ccc;padding:4px 10px;text-align:right}th{background:#f3f3f3}"
         "figure{margin:1em 0}img{max-width:100%}.knee{font-weight:bold}.bound{color:#a40}</style>")


def format_latency(ms: Any) -> str:
    """Latency as the reference pages write it: ``20 ms`` below a second, ``1.77 s`` above."""
    if ms is None or (isinstance(ms, float) and pd.isna(ms)) or ms == "":
        return ""
    value = float(ms)
    return f"{value / 1000.0:.2f} s" if value >= 1000.0 else f"{value:.0f} ms"


def _rate(value: Any) -> str:
    if value is None or pd.isna(value):
        return ""
    return f"{value:.2f}" if value < 10 else f"{value:.0f}"


def knee_sentence(table: pd.DataFrame) -> str | None:
    """Where throughput stops growing: gain under 10 % while users at least doubled (closed-model steps only)."""
    rows = table.dropna(subset=["rps"]).sort_values("step")
    if "target_rate" in rows:
        rows = rows[rows["target_rate"].isna() | (rows["target_rate"].astype(str) == "")]
    rows = rows[pd.to_numeric(rows["users"], errors="coerce").notna()]
    previous = None
    for _, row in rows.iterrows():
        if previous is not None:
            users_before, users_now = float(previous["users"]), float(row["users"])
            if users_before > 0 and users_now >= 2 * users_before and previous["rps"] > 0 \
                    and (row["rps"] - previous["rps"]) / previous["rps"] < KNEE_GAIN:
                little = users_now / row["rps"] * 1000.0 if row["rps"] else None
                return (f"Throughput flattens at about {previous['rps']:.0f} req/s from {int(users_before)} users on; "
                        f"more users only queue (at {int(users_now)} users Little's law gives "
                        f"{format_latency(little)}, measured p50 {format_latency(row['p50_ms'])}).")
        previous = row
    return None


def step_tables(steps: pd.DataFrame) -> list[tuple[str, pd.DataFrame, str | None]]:
    """One reference-page table per request type (and name when a type has several)."""
    tables = []
    data = steps[steps["name"] != "Aggregated"]
    for (rtype, name), group in data.groupby(["request_type", "name"], sort=True):
        group = group.sort_values("step")
        users = group.apply(lambda r: r["users"] if pd.isna(r.get("target_rate")) or r.get("target_rate") == ""
                            else f"{r['target_rate']:g}/s", axis=1)
        errors = group["failures"].astype(int)
        shown = pd.DataFrame({
            "Step": [f"{rtype} {name}" if i == 0 else "" for i in range(len(group))],
            "Users": users.astype(str).str.replace(r"\.0$", "", regex=True),
            "req/s": group["rps"].map(_rate),
            "p50": group["p50_ms"].map(format_latency),
            "p99": group["p99_ms"].map(format_latency),
            "errors": errors,
        })
        bound = group[group["generator_bound"].astype(str) == "True"]
        if not bound.empty:
            shown["generator"] = ["bound" if b == "True" else "" for b in group["generator_bound"].astype(str)]
        tables.append((f"{rtype} {name}", shown, knee_sentence(group)))
    return tables


def _slo_frame(run_dir: Path) -> pd.DataFrame | None:
    path = run_dir / "slo.json"
    if not path.is_file():
        return None
    verdicts = json.loads(path.read_text()).get("verdicts", [])
    if not verdicts:
        return None
    return pd.DataFrame([{"SLO": v["expr"], "scope": v["scope"], "observed": v["observed"], "status": v["status"],
                          "colour": v["colour"]} for v in verdicts])


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


def generator_bound_sentence(steps: pd.DataFrame) -> str | None:
    bound = steps[(steps["name"] == "Aggregated") & (steps["generator_bound"].astype(str) == "True")]
    if bound.empty:
        return None
    labels = ", ".join(str(label) for label in bound["label"])
    return (f"Generator-bound: a load generator ran above 90 % CPU during {labels}; those steps' figures may "
            "describe the generator more than the target.")


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


def _img(caption: str, png: bytes) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f"<figure><img alt='{html.escape(caption)}' src='data:image/png;base64,{data}'>" \
        f"<figcaption>{html.escape(caption)}</figcaption></figure>"


def render_report(run_dir: Path | str) -> dict[str, Any]:
    """Write report.md, report.html (plots embedded), the plot PNGs and summary.json into ``run_dir``."""
    run_dir = Path(run_dir)
    md: list[str] = [f"# swarmgauge run report: {run_dir.name}", ""]
    body: list[str] = [f"<h1>swarmgauge run report: {html.escape(run_dir.name)}</h1>"]
    summary: dict[str, Any] = {"run_dir": run_dir.name}
    steps_path = run_dir / "steps.csv"
    steps = pd.read_csv(steps_path) if steps_path.is_file() else None
    if steps is not None and not steps.empty:
        summary["steps"] = json.loads(steps.to_json(orient="records"))
        for title, table, knee in step_tables(steps):
            md += [f"## {title}", "", table.to_markdown(index=False), ""]
            body += [f"<h2>{html.escape(title)}</h2>", table.to_html(index=False, escape=True, border=0)]
            if knee:
                md += [knee, ""]
                body.append(f"<p class='knee'>{html.escape(knee)}</p>")
                summary.setdefault("knees", {})[title] = knee
        bound = generator_bound_sentence(steps)
        if bound:
            md += [bound, ""]
            body.append(f"<p class='bound'>{html.escape(bound)}</p>")
            summary["generator_bound"] = bound
    plots = _plots(run_dir, steps if steps is not None and not steps.empty else None)
    if plots:
        md += ["## Plots", ""] + [f"![{caption}]({name})" for name, caption, _png in plots] + [""]
        body += ["<h2>Plots</h2>"] + [_img(caption, png) for _name, caption, png in plots]
        summary["plots"] = [name for name, _caption, _png in plots]
    slo = _slo_frame(run_dir)
    if slo is not None:
        md += ["## SLOs", "", slo.to_markdown(index=False), ""]
        body += ["<h2>SLOs</h2>", slo.to_html(index=False, escape=True, border=0)]
        summary["slo"] = json.loads(slo.to_json(orient="records"))
    for section in _sections(run_dir):
        md += [f"## {section.title}", "", section.markdown, ""]
        body += [f"<h2>{html.escape(section.title)}</h2>", section.html]
        summary[section.title] = section.summary
    write_atomic(run_dir / "report.md", "\n".join(md) + "\n")
    page = f"<!doctype html><html><head><meta charset='utf-8'><title>swarmgauge report</title>{STYLE}</head>" \
        f"<body>{''.join(body)}</body></html>"
    write_atomic(run_dir / "report.html", page)
    write_atomic(run_dir / "summary.json", json.dumps(summary, indent=2, default=str))
    return summary


hooks.render_report.implement(render_report)  # a run directory's report at the end of the run
