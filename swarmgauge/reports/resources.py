"""The report's memory section, from ``resources.csv``: a table like the demarkus churn table, slopes, the verdict, a plot.

The table has one row per sampled moment (thinned to about a dozen), one column per target series (live heap,
working set, RSS, ... per source) in MiB; the trends after warm-up (MiB/h, MiB per 1,000 requests) come from the same
code the live leak verdict uses, so the report and the run's printed verdict never disagree.
"""

from __future__ import annotations

import base64
import dataclasses
import html
import io
import json
import logging
from pathlib import Path

import pandas as pd

from swarmgauge.core.sources import embedded_targets, source_title
from swarmgauge.core.trend import MIB, parse_warmup
from swarmgauge.core.verdict import (
    HEAP_METRICS,
    OWN_SOURCES,
    RSS_METRICS,
    WORKING_SET_METRICS,
    Row,
    leak_verdict,
    trends,
)
from swarmgauge.files import write_atomic
from swarmgauge.reports.sections import Section

MEMORY_METRICS = (*HEAP_METRICS, *WORKING_SET_METRICS, *RSS_METRICS)
TABLE_ROWS = 12
logger = logging.getLogger("swarmgauge.report")
PLOT_NAME = "resources.png"
MEMORY_ID = "chart-memory"


def load_rows(path: Path) -> list[Row]:
    frame = pd.read_csv(path, keep_default_na=False)
    return [
        Row(
            float(r.time),
            float(r.elapsed_s),
            None if r.step == "" else int(r.step),
            str(r.node),
            str(r.source),
            str(r.metric),
            float(r.value),
            int(r.round),
        )
        for r in frame.itertuples(index=False)
    ]


def memory_table(rows: list[Row]) -> pd.DataFrame:
    """Elapsed time × (source metric) in MiB, the target's memory series only, thinned to ``TABLE_ROWS`` rows."""
    picked = [r for r in rows if r.metric in MEMORY_METRICS and r.source not in OWN_SOURCES]
    if not picked:
        return pd.DataFrame()
    frame = pd.DataFrame(
        {
            "elapsed": [round(r.elapsed_s) for r in picked],
            "series": [f"{r.source} {r.metric.removesuffix('_bytes')}" for r in picked],
            "MiB": [r.value / MIB for r in picked],
        }
    )
    table = frame.pivot_table(index="elapsed", columns="series", values="MiB", aggfunc="last").sort_index()
    if len(table) > TABLE_ROWS:
        return _thinned(table)
    table.index = [f"{int(t)} s" for t in table.index]
    table.index.name = "time"
    return table.round(1)


def _thinned(table: pd.DataFrame) -> pd.DataFrame:
    """``TABLE_ROWS`` rows, each covering consecutive samples with their highest value: no sample's peak is lost."""
    bounds = [round(i * len(table) / TABLE_ROWS) for i in range(TABLE_ROWS + 1)]
    parts = [table.iloc[start:end] for start, end in zip(bounds, bounds[1:]) if end > start]
    thinned = pd.DataFrame([part.max() for part in parts])
    thinned.index = [
        f"{int(p.index[0])} s" if len(p) == 1 else f"{int(p.index[0])}-{int(p.index[-1])} s (max)" for p in parts
    ]
    thinned.index.name = "time"
    return thinned.round(1)


def readable_source(source: str) -> str:
    """``psutil:pidfile=/tmp/x/worker-1.pid`` -> ``worker-1``: a column name a reader can place."""
    return source_title(source)


def trend_table(rows: list[Row], warmup_text: str) -> pd.DataFrame:
    warmup = parse_warmup(warmup_text)
    found = trends(rows, MEMORY_METRICS, warmup)
    return pd.DataFrame(
        [
            {
                "series": s.name,
                "first MiB": round(s.trend.first / MIB, 1),
                "last MiB": round(s.trend.last / MIB, 1),
                "delta MiB": round(s.trend.delta / MIB, 1),
                "MiB/h": None if s.trend.slope_per_hour is None else round(s.trend.slope_per_hour / MIB, 1),
                "MiB per 1,000 requests": (
                    None if s.trend.slope_per_1k_requests is None else round(s.trend.slope_per_1k_requests / MIB, 3)
                ),
            }
            for s in found
        ]
    )


def memory_plot(rows: list[Row], step_starts: list[float]) -> bytes | None:
    """Each memory series over time, steps marked as vertical lines."""
    from matplotlib.figure import Figure

    picked = [r for r in rows if r.metric in MEMORY_METRICS and r.source not in OWN_SOURCES]
    if not picked:
        return None
    figure = Figure(figsize=(9, 4))
    axes = figure.subplots()
    frame = pd.DataFrame(
        {
            "t": [r.elapsed_s for r in picked],
            "v": [r.value / MIB for r in picked],
            "s": [f"{r.source} {r.metric}" for r in picked],
        }
    )
    for name, group in frame.groupby("s"):
        axes.plot(group["t"], group["v"], label=name)
    for start in step_starts:
        axes.axvline(start, color="#999", linestyle=":", linewidth=1)
    axes.set_xlabel("seconds since start")
    axes.set_ylabel("MiB")
    axes.legend(fontsize="small")
    axes.grid(alpha=0.3)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    return buffer.getvalue()


def _step_starts(run_dir: Path, rows: list[Row]) -> list[float]:
    steps = run_dir / "steps.csv"
    if not steps.is_file() or not rows:
        return []
    frame = pd.read_csv(steps)
    origin = min(r.time - r.elapsed_s for r in rows)
    return sorted({float(t) - origin for t in frame["started_at"].dropna().unique()})


def warmup_of(run_dir: Path) -> str:
    try:
        info = json.loads((run_dir / "run.json").read_text()).get("resources", {})
    except (OSError, ValueError):
        return "10%"
    text = str(info.get("warmup") or "10%")
    # run.json keeps the warm-up as the sampler shows it: "2 s" or "10% of the run"
    return text.split("%")[0] + "%" if "%" in text else text.replace(" ", "")


def source_names(run_dir: Path) -> dict[str, str]:
    """Each embedded target's ``psutil:pid=N`` -> its name in every view (:func:`core.sources.source_title`)."""
    try:
        info = json.loads((run_dir / "run.json").read_text())
    except (OSError, ValueError):
        return {}
    pids = [f"psutil:pid={t['pid']}" for t in embedded_targets(info).values()]
    return {source: source_title(source, info) for source in pids}


def memory_chart(path: Path) -> str:
    """report.html's memory chart: RSS against time, and against live sessions when the run sampled them (the PNG
    stays for report.md); '' when resources.csv has no RSS."""
    from swarmgauge.reports.chart_html import chart
    from swarmgauge.reports.memory_chart import memory_figure

    try:
        figure = memory_figure(pd.read_csv(path))
    except Exception as exc:  # noqa: BLE001 - the verdict and the tables above it stay
        logger.warning("memory chart: %s", exc)
        return ""
    if figure is None:
        return ""
    return chart(figure, MEMORY_ID, "Resident memory: the target's sampled processes summed, and the generator.")


def section(run_dir: Path) -> Section | None:
    path = run_dir / "resources.csv"
    if not path.is_file():
        return None
    names = source_names(run_dir)
    rows = [dataclasses.replace(r, source=names.get(r.source, readable_source(r.source))) for r in load_rows(path)]
    table = memory_table(rows)
    if table.empty:
        return None
    warmup = warmup_of(run_dir)
    slopes = trend_table(rows, warmup)
    status, verdict = leak_verdict(rows, parse_warmup(warmup))
    png = memory_plot(rows, _step_starts(run_dir, rows))
    markdown = [f"{verdict}", "", table.to_markdown(), ""]
    parts = [f"<p>{html.escape(verdict)}</p>", table.to_html()]
    if not slopes.empty:
        markdown += [f"Trends after a warm-up of {warmup}:", "", slopes.to_markdown(index=False), ""]
        parts.append(slopes.to_html(index=False))
    interactive = memory_chart(path)
    if interactive:
        parts.append(interactive)
    if png:
        write_atomic(run_dir / PLOT_NAME, png)
        markdown.append(f"![Memory over time]({PLOT_NAME})")
        if not interactive:
            parts.append(
                f'<figure><img alt="Memory over time" src="data:image/png;base64,'
                f'{base64.b64encode(png).decode()}"><figcaption>Memory over time</figcaption></figure>'
            )
    return Section(
        "Target memory",
        "\n".join(markdown),
        "\n".join(parts),
        {"leak_verdict": status, "verdict": verdict, "trends": slopes.to_dict(orient="records")},
    )
