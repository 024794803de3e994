"""The index sections of the MDK benchmark results and the 2dph brain PERF page (see ``index_pages``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from swarmgauge.reports.index_figures import (
    Check,
    PageSection,
    aggregated,
    beside,
    figure,
    ms,
    read_json,
    read_steps,
    run_json,
    seconds,
    times,
)

# --- MDK benchmark results -----------------------------------------------------------------------------------------

MDK_ACTION_P99_LIMIT_MS = 2000.0
#: drill figure -> (the page's figure as shown, the number the ratio is taken against, in s)
MDK_DRILL_PAGE = {
    "READY": ("3.4 to 8.5 s", 6.0),
    "read after READY": ("< 3.5 s (29 of 32)", 3.5),
    "snap failed": ("about 0.03 s", 0.03),
    "cached channels failed": ("about 4.7 s", 4.7),
    "reads again after devices back": ("about 0.35 s", 0.35),
}


def _drill_order(drill: dict[str, Any]) -> Check:
    name = drill.get("drill", "?")
    if not drill.get("recovered"):
        return Check(False, f"{name} did not recover ({drill.get('note') or 'no note'})")
    if name == "device-outage":
        snap, cached, back = drill.get("snap_failed_s"), drill.get("cached_failed_s"), drill.get("restored_read_s")
        holds = snap is not None and cached is not None and back is not None and snap <= cached < back
        return Check(
            holds, f"outage: snap failed {seconds(snap)}, cached channels {seconds(cached)}, reads {seconds(back)}"
        )
    ready, read = drill.get("ready_s"), drill.get("first_read_s")
    holds = ready is not None and read is not None and read >= ready
    return Check(holds, f"{name}: READY {seconds(ready)}, first device read {seconds(read)}")


def _drill_rows(drill: dict[str, Any]) -> list[dict[str, Any]]:
    restored, restored_read = drill.get("restored_s"), drill.get("restored_read_s")
    back = None if restored is None or restored_read is None else restored_read - restored
    figures = {
        "READY": drill.get("ready_s"),
        "read after READY": drill.get("read_after_ready_s"),
        "snap failed": drill.get("snap_failed_s"),
        "cached channels failed": drill.get("cached_failed_s"),
        "reads again after devices back": back,
    }
    rows = []
    for event, value in figures.items():
        if value is None:
            continue
        page, against = MDK_DRILL_PAGE[event]
        rows.append(
            {
                "drill": drill.get("drill"),
                "event": event,
                "measured": seconds(value),
                "page": page,
                "x": times(value, against),
            }
        )
    return rows


def mdk(runs: dict[str, Path | None]) -> PageSection:
    from swarmgauge.reports.mdk import verdict_table

    section = PageSection()
    bench = runs.get("benchmark")
    doc = read_json(bench / "mdk.json") if bench else None
    if bench is not None and isinstance(doc, dict):
        verdicts = verdict_table(bench, doc)
        section.tables.append(("Verdict table (the page's thresholds)", verdicts))
        worst = [c for c, v in zip(verdicts["criterion"], verdicts["verdict"]) if v not in ("green", "unknown")]
        section.checks.append(
            Check(not worst, "every threshold green" if not worst else f"not green: {', '.join(worst)}")
        )
        steps = read_steps(bench)
        burst = steps[(steps["target_rate"].notna()) & (steps["name"] != "Aggregated")] if not steps.empty else steps
        if not burst.empty:
            row = burst.iloc[0]
            rows = [
                figure("submits at 1,000/s for 3 s", row["requests"], 3000, lambda v: f"{int(v):,}"),
                figure("acceptance p50", row["p50_ms"], None, ms),
                figure("acceptance p99 (threshold 2,000 ms)", row["p99_ms"], MDK_ACTION_P99_LIMIT_MS, ms),
                figure(
                    "rejected or timed out", (doc.get("rejected_ratio") or 0) * 100, None, lambda v: f"{float(v):.2f} %"
                ),
            ]
            section.tables.append(("Action burst", pd.DataFrame(rows)))
    drills: list[dict[str, Any]] = []
    for name in ("worker-restart", "kernel-restart", "device-outage"):
        saved = run_json(runs, name, "mdk_drills.json")
        drills += (saved or {}).get("drills") or []
    if drills:
        section.tables.append(
            ("Failure drills (every time from the kill)", pd.DataFrame([r for d in drills for r in _drill_rows(d)]))
        )
        section.checks += [_drill_order(d) for d in drills]
    section.notes.append(
        "The MDK stand-in (Kernel, Gateway, Workers and CGMiner mocks as processes) at 100 devices on one Worker for "
        "the verdict table and 50 for the drills; the page's own per-profile tables are not in the copy we have, so "
        "its TL;DR figures and thresholds are the reference."
    )
    return section


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
