"""The index section of the 2dph brain PERF page (see ``index_pages``; the MDK page's is ``index_mdk``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from swarmgauge.reports.index_figures import (
    Check,
    PageSection,
    aggregated,
    beside,
    ms,
    read_json,
    read_steps,
)

# --- 2dph brain PERF -----------------------------------------------------------------------------------------------

#: run -> (p50 ms, MiB of RSS growth per 1,000 searches, the page's own words)
BRAIN = {
    "before-fix": (1429.0, 490.0 * 1000, "13 searches: RSS 147 MB to 6.8 GB (about 490 MB a search)"),
    "after-fix": (6.0, 36.0 / 39.0, "49,448 searches: RSS delta about 36 MiB over 39k (< 50 MiB)"),
}
BRAIN_FLAT_MIB = 50.0
#: at least 100 KiB kept per search is a leak, however short the run
BRAIN_LEAK_MIB_PER_1000 = 100.0


def _memory_trend(run: Path) -> dict[str, Any]:
    summary = read_json(run / "summary.json") or {}
    trends = (summary.get("Target memory") or {}).get("trends") or []
    rss = [t for t in trends if "rss" in str(t.get("series", ""))]
    return rss[0] if rss else {}


def brain(runs: dict[str, Path | None]) -> PageSection:
    section = PageSection()
    rows, trends = [], {}
    for name, (p50, per_thousand, words) in BRAIN.items():
        run = runs.get(name)
        total = aggregated(read_steps(run))
        if run is None or total.empty:
            continue
        trend = _memory_trend(run)
        trends[name] = trend
        row: dict[str, Any] = {"": name, "searches": int(total["requests"].sum())}
        beside(row, "p50", total["p50_ms"].iloc[0], p50, ms)
        row["RSS first to last"] = f"{trend['first MiB']:.0f} to {trend['last MiB']:.0f} MiB" if trend else ""
        beside(
            row,
            "MiB per 1,000 searches",
            trend.get("MiB per 1,000 requests"),
            per_thousand,
            lambda v: f"{float(v):,.1f}",
        )
        row["page"] = words
        rows.append(row)
    if rows:
        section.tables.append(("Memory before and after the fix", pd.DataFrame(rows)))
    before, after = trends.get("before-fix"), trends.get("after-fix")
    if before:
        per = float(before.get("MiB per 1,000 requests") or 0.0)
        section.checks.append(
            Check(
                per >= BRAIN_LEAK_MIB_PER_1000,
                f"before the fix RSS grew {before['delta MiB']:,.0f} MiB, {per:,.0f} MiB per 1,000 searches",
            )
        )
    if after:
        delta = float(after.get("delta MiB") or 0.0)
        section.checks.append(Check(delta <= BRAIN_FLAT_MIB, f"after the fix RSS moved {delta:,.1f} MiB (< 50 MiB)"))
    section.notes.append(
        "The brain stand-in with its reload-per-search fault (1 MiB kept and a 200 ms model load per search, against "
        "the page's ~490 MB and 1,429 ms), then without it."
    )
    return section
