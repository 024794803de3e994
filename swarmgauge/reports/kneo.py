"""Report section for kneo-serv runs: the reconciliation table (``kneo.json``) and the backlog over time.

The backlog comes from the service's own gauges that the resource sampler scraped from ``/metrics``
(``kneo_runs_queued``, ``kneo_runs_running``, ``kneo_worker_count``, summed over service processes) plus the
service processes' RSS (``psutil:`` sources), binned by elapsed time so a long run stays a short table.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import pandas as pd

from swarmgauge.reports.sections import Section

RESULT_NAME = "kneo.json"
BACKLOG_METRICS = ("kneo_runs_queued", "kneo_runs_running", "kneo_worker_count")
MAX_ROWS = 24


def _reconciliation(doc: dict[str, Any]) -> tuple[str, str, pd.DataFrame | None]:
    tag = doc.get("tag", "")
    if doc.get("error"):
        text = f"Run `{tag}`: reconciliation not done: {doc['error']}. Every other result of the run is kept."
        return text, html.escape(text.replace("`", "")), None
    checks = doc.get("checks") or []
    if not checks:
        text = f"Run `{tag}`: no store given (`--kneo-store`), so nothing was reconciled."
        return text, html.escape(text.replace("`", "")), None
    mismatches = int(doc.get("mismatches") or 0)
    verdict = "every check matches" if not mismatches else f"{mismatches} check(s) do not match (SLO failure)"
    text = f"Run `{tag}` against store `{doc.get('store')}`: {verdict}."
    frame = pd.DataFrame(
        [
            {
                "check": c["check"],
                "Locust": c["locust"],
                "store": c["store"],
                "ok": "yes" if c["ok"] else "NO",
                "note": c.get("note", ""),
            }
            for c in checks
        ]
    )
    return text, html.escape(text.replace("`", "")), frame


def backlog_table(resources: pd.DataFrame, max_rows: int = MAX_ROWS) -> pd.DataFrame | None:
    """Per time bin: the gauges' maximum (summed over processes) and the service's peak RSS in MiB."""
    prom = resources[
        resources["source"].astype(str).str.startswith("prom:") & resources["metric"].isin(BACKLOG_METRICS)
    ]
    if prom.empty:
        return None
    span = float(resources["elapsed_s"].max() or 0.0)
    width = max(1.0, span / max_rows)
    binned = resources.assign(bin=(resources["elapsed_s"] // width).astype(int))
    prom = binned.loc[prom.index]
    gauges = (
        prom.groupby(["bin", "round", "metric"])["value"]
        .sum()
        .reset_index()
        .groupby(["bin", "metric"])["value"]
        .max()
        .unstack("metric")
    )
    rss = binned[binned["source"].astype(str).str.startswith("psutil:") & (binned["metric"] == "rss_bytes")]
    table = pd.DataFrame(index=gauges.index)
    table["from s"] = [f"{b * width:.0f}" for b in gauges.index]
    steps = binned.groupby("bin")["step"].max()
    table["step"] = [("" if pd.isna(steps.get(b)) else str(int(steps.get(b)))) for b in gauges.index]
    for metric, title in (
        ("kneo_runs_queued", "queued (max)"),
        ("kneo_runs_running", "running (max)"),
        ("kneo_worker_count", "workers"),
    ):
        if metric in gauges:
            table[title] = gauges[metric].fillna(0).astype(int)
    if not rss.empty:
        peak = rss.groupby(["bin", "round"])["value"].sum().groupby("bin").max() / 2**20
        table["service RSS MiB (peak)"] = [f"{peak[b]:.1f}" if b in peak else "" for b in gauges.index]
    return table.reset_index(drop=True)


def section(run_dir: Path) -> Section | None:
    run_dir = Path(run_dir)
    result = run_dir / RESULT_NAME
    if not result.is_file():
        return None
    doc = json.loads(result.read_text())
    text, text_html, frame = _reconciliation(doc)
    md = [text, ""]
    body = [f"<p>{text_html}</p>"]
    summary: dict[str, Any] = {
        "tag": doc.get("tag"),
        "mismatches": doc.get("mismatches"),
        "error": doc.get("error"),
        "ledger": doc.get("ledger"),
    }
    if frame is not None:
        md += [frame.to_markdown(index=False), ""]
        body.append(frame.to_html(index=False, escape=True))
    resources = run_dir / "resources.csv"
    backlog = backlog_table(pd.read_csv(resources)) if resources.is_file() else None
    if backlog is not None:
        md += ["Backlog over time (the service's /metrics gauges):", "", backlog.to_markdown(index=False), ""]
        body += ["<h3>Backlog over time</h3>", backlog.to_html(index=False, escape=True)]
        summary["backlog_peak_queued"] = int(backlog["queued (max)"].max()) if "queued (max)" in backlog else None
    return Section(
        title="kneo-serv runs", markdown="\n".join(md).rstrip() + "\n", html="\n".join(body), summary=summary
    )
