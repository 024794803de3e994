"""The demarkus page's MCP session churn rows in the index, apart from its write rows: the churn reads its own run."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pandas as pd

from swarmgauge.reports.index_demarkus_mcp import run_resources
from swarmgauge.reports.index_figures import Check, aggregated, figure, ms, rate, read_steps, run_json

CHURN_RATE = 11_999 / 2400
CALLS_P50_MS = 10.0
HEAP_PER_SESSION = 9.6 * 1000  # bytes of Go live heap (the page's "about 9.6 KB")
PEAK_OVER_RATE_TTL = 13_500 / 9_000  # "up to 13,500 sessions" at 5/s with a 30-minute TTL
LARGEST_SWEEP_SHARE = 4_500 / (5 * 900)  # the idle sweep removed 4,500: 5/s over half the TTL
WARN_PER_NEW_SESSION = 5_307 / (5 * 1200)  # 5,307 lines in 20 minutes at 5 new sessions a second


def _options(runs: dict[str, Path | None], workload: str) -> dict[str, Any]:
    doc = run_json(runs, workload, "run.json")
    return (doc or {}).get("options") or {}


def _flag(text: str, flag: str) -> str | None:
    words = shlex.split(text or "")
    return words[words.index(flag) + 1] if flag in words[:-1] else None


def _seconds(text: str | None) -> float | None:
    found = re.fullmatch(r"([0-9.]+)(ms|s)?", (text or "").strip())
    if not found:
        return None
    value = float(found.group(1))
    return value / 1000 if found.group(2) == "ms" else value


def gateway_metric(resources: pd.DataFrame, metric: str) -> float | None:
    """The largest sample of one gateway metric (its counters only grow; the live gauge's peak)."""
    if resources.empty:
        return None
    rows = resources[resources["metric"] == metric]
    return float(rows["value"].max()) if not rows.empty else None


def _kilobytes(value: float) -> str:
    return f"{value / 1000:.1f} KB"


def memory_row(per_session: float, metric: str) -> dict[str, Any]:
    """Memory per live session beside the page's, with their ratio shown but not graded: the gateway process's
    memory (Python objects, the SDK's per-session streams and tasks) over its live sessions against Go's live heap
    is a comparison of two languages' object sizes, not of the system's shape. The shape (memory bounded by the
    TTL, freed at the sweeps) is graded elsewhere: the sweeps' rows and the drop at the TTL."""
    return {
        "figure": f"memory per live session: the Python gateway's {metric} against the page's Go live heap "
        "(compares the languages, not graded)",
        "measured": _kilobytes(per_session),
        "page": _kilobytes(HEAP_PER_SESSION),
        "x": f"{per_session / HEAP_PER_SESSION:.1f} times (Python / Go)",
    }


def churn_rows(runs: dict[str, Path | None], checks: list[Check]) -> list[dict[str, Any]]:
    run = runs.get("churn")
    summary = (run_json(runs, "churn", "summary.json") or {}).get("MCP sessions") or {}
    if run is None or not summary:
        return []
    rows: list[dict[str, Any]] = []
    steps = aggregated(read_steps(run))
    churn = steps[steps["label"].astype(str) == "churn"] if not steps.empty else steps
    started = (summary.get("sessions") or {}).get("sessions_started")
    if not churn.empty and started is not None:
        seconds = float(churn["duration_s"].iloc[0])
        # the plan's rate: only a generator that falls behind strays from it
        rows.append(
            figure(
                f"new sessions a second ({int(started):,} started)",
                int(started) / seconds,
                CHURN_RATE,
                rate,
                tolerance=0.05,
                set_by="plan rate 5/s",
            )
        )
        rows.append({**figure("errors", int(churn["failures"].sum()), None, str), "page": "0"})
        # the same three calls, but the page's each crossed kube-proxy and the pod network to a Go gateway and here
        # they cross loopback to a Python one: the same order is the shape; graded, and said why when it strays
        rows.append(
            figure(
                "p50 of the session's calls (page: through kube-proxy and the pod network; here loopback)",
                churn["p50_ms"].iloc[0],
                CALLS_P50_MS,
                ms,
                tolerance=0.5,
            )
        )
    memory = summary.get("memory_per_session") or {}
    if memory:
        rows.append(memory_row(float(memory["bytes"]), str(memory.get("metric"))))
    options = _options(runs, "churn")
    gateway_args = str(options.get("mcp_embedded_args") or "")
    ttl = _seconds(_flag(gateway_args, "--session-idle-timeout"))
    resources = run_resources(run)
    swept_by = f"--session-idle-timeout {ttl:g} (swept every TTL/2)" if ttl else None
    peak = gateway_metric(resources, "mcp_gateway_sessions_live")
    if ttl and peak is not None:
        # the sampler reads the gauge once a second: a peak just before a sweep can be missed by up to rate x 1 s
        rows.append(
            figure(
                f"peak live sessions over rate x TTL ({peak:.0f} / {CHURN_RATE * ttl:.0f})",
                peak / (CHURN_RATE * ttl),
                PEAK_OVER_RATE_TTL,
                lambda v: f"{float(v):.2f}",
                tolerance=0.15,
                set_by=swept_by,
            )
        )
    idle_min = gateway_metric(resources, "mcp_gateway_swept_idle_min_seconds")
    idle_max = gateway_metric(resources, "mcp_gateway_swept_idle_max_seconds")
    if ttl and idle_min is not None and idle_max is not None:
        # sweeps tick on the gateway's clock: a session's idle age at its sweep lies in [TTL, 1.5 TTL] by design
        rows.append(
            figure(
                "shortest idle life at a sweep, x TTL",
                idle_min / ttl,
                1.0,
                lambda v: f"{float(v):.2f}",
                tolerance=0.1,
                set_by=swept_by,
            )
        )
        rows.append(
            figure(
                "longest idle life at a sweep, x TTL",
                idle_max / ttl,
                1.5,
                lambda v: f"{float(v):.2f}",
                tolerance=0.1,
                set_by=swept_by,
            )
        )
        checks.append(
            Check(
                idle_min >= ttl and idle_max <= 1.5 * ttl + 1.0,
                f"sessions lived {idle_min / ttl:.2f} to {idle_max / ttl:.2f} x the idle TTL after their "
                "last request (page: 30 to 45 minutes for 30)",
            )
        )
    largest = gateway_metric(resources, "mcp_gateway_sweep_largest")
    if ttl and largest is not None:
        rows.append(
            figure(
                f"largest sweep over rate x TTL/2 ({largest:.0f} / {CHURN_RATE * ttl / 2:.0f})",
                largest / (CHURN_RATE * ttl / 2),
                LARGEST_SWEEP_SHARE,
                lambda v: f"{float(v):.2f}",
                tolerance=0.2,
                set_by=swept_by,
            )
        )
    drop = summary.get("ttl_drop")
    if drop:
        rows.append(
            {
                "figure": "live sessions at the idle TTL",
                "page": "swept 1,906 then 4,500",
                "x": "",
                "measured": f"{drop['peak_live']:.0f} fell to {drop['low_live']:.0f}",
            }
        )
    checks.append(
        Check(bool(drop), "live sessions dropped at the idle TTL" if drop else "no drop at the idle TTL seen")
    )
    warns = gateway_metric(resources, "mcp_gateway_dedup_warn_lines")
    after_full = gateway_metric(resources, "mcp_gateway_dedup_sessions_after_full")
    cap = _flag(gateway_args, "--dedup-cap")
    if warns is not None and after_full:
        # one line per new session, less those that found room after a sweep: the page's 0.88 came from one run
        rows.append(
            figure(
                f"dedup WARN lines per new session past the cap ({warns:.0f} / {after_full:.0f})",
                warns / after_full,
                WARN_PER_NEW_SESSION,
                lambda v: f"{float(v):.2f}",
                tolerance=0.2,
                set_by=f"--dedup-cap {cap} (the page's 4,096 of 9,000 live)" if cap else None,
            )
        )
        checks.append(Check(warns > 0, f"{warns:.0f} dedup WARN lines past a cap of {cap} (page: one per new session)"))
    return rows
