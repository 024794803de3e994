"""The demarkus page's write rows, MCP tool tables and MCP session churn in the index, beside the page's figures.

From the run folders of ``swarmgauge/demo_demarkus_writes.py``'s workloads: ``steps.csv`` (publish latency, lost
writes, tool-call latency), ``resources.csv`` (the gateway's /metrics: live sessions, sweeps, dedup WARN lines; the
Mark server's RSS), ``run.json`` (the options that set a figure) and ``summary.json`` (memory per session, the TTL
drop). Each tolerance says in a comment what noise or model it allows for.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pandas as pd

from swarmgauge.reports.index_demarkus_mcp import mcp_over_quic, mcp_tables, run_resources
from swarmgauge.reports.index_figures import (
    MIB,
    Check,
    PageSection,
    aggregated,
    figure,
    ms,
    rate,
    read_steps,
    requests_of,
    run_json,
)

WRITES_PER_S = 0.67
SECONDS_PER_WRITE = 1.51
CONCURRENT_WAIT_S = 6.0
BURST_LOST, BURST_WRITES = 49, 200
SPACED_WRITE_MS = 60.0
SOAK_WRITES_PER_S = 899 / 1800
SOAK_P50_MS, SOAK_P99_MS = 58.0, 86.0
CHURN_RATE = 11_999 / 2400
CALLS_P50_MS = 10.0
HEAP_PER_SESSION = 9.6 * 1000  # bytes of Go live heap (the page's "about 9.6 KB")
PEAK_OVER_RATE_TTL = 13_500 / 9_000  # "up to 13,500 sessions" at 5/s with a 30-minute TTL
LARGEST_SWEEP_SHARE = 4_500 / (5 * 900)  # the idle sweep removed 4,500: 5/s over half the TTL
WARN_PER_NEW_SESSION = 5_307 / (5 * 1200)  # 5,307 lines in 20 minutes at 5 new sessions a second

NOT_REPRODUCIBLE: list[tuple[str, str]] = [
    ("all writes landed on one pod", "one server process here: no pods, no kube-proxy"),
    ("every churn session landed on one pod", "one gateway process here: no kube-proxy balancing per connection"),
    ("writer pod working set 25-54 MiB, other pods 24-36 MiB", "pods' cgroup memory of a Go binary: no Kubernetes"),
    ("before the writer memory fix, 25 to 357 MiB over 630 writes", "the pre-fix Go binary is not here"),
    (
        "churn table: live heap and working set at start, +10, +20, +30 min and at load end",
        "Go live heap and pod working set over 40 minutes; memory per live session (a slope) stands for them",
    ),
    ("live heap falling with each sweep (112 to 99 MB, 107 to 64 MB)", "a Go heap; Python keeps freed memory"),
    (
        "production 40-99 sessions an hour under 1 MB; 2,700 sessions per subject; 1 GiB at 15-20 new sessions/s",
        "arithmetic on the page's own figures, not a measurement",
    ),
    ("dedup WARN only above about 1.5 new sessions/s", "the cap over 1.5 TTL; here the cap is scaled with the TTL"),
    ("kubelet rotated the pod log every 10 MB", "no kubelet; the gateway's log is not rotated"),
]


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


def _target_rss(resources: pd.DataFrame) -> pd.Series:
    if resources.empty:
        return pd.Series(dtype=float)
    rows = resources[(resources["metric"] == "rss_bytes") & ~resources["source"].isin(("generator", "locust"))]
    return rows.sort_values("time")["value"].astype(float).reset_index(drop=True)


def _seconds_shown(value: Any) -> str:
    return ms(float(value) * 1000)


def write_rows(runs: dict[str, Path | None], checks: list[Check]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    pacing = "--commit-interval 1.5s"
    single = requests_of(read_steps(runs.get("writes")), "PUBLISH")
    if not single.empty:
        per_write = float(single["p50_ms"].iloc[0])
        # one writer against a fixed pacing: the figure is the stand-in's interval, 2 % of client round trips on top
        rows.append(
            figure(
                "writes/s, one writer back to back",
                single["rps"].iloc[0],
                WRITES_PER_S,
                rate,
                tolerance=0.1,
                set_by=pacing,
            )
        )
        rows.append(
            figure(
                "p50 per publish, one writer back to back",
                per_write,
                SECONDS_PER_WRITE * 1000,
                ms,
                tolerance=0.1,
                set_by=pacing,
            )
        )
        checks.append(
            Check(
                abs(1000 / per_write - WRITES_PER_S) <= 0.1 * WRITES_PER_S,
                f"one writer paced at {ms(per_write)} a publish (page: 1.51 s, 0.67/s)",
            )
        )
    concurrent = requests_of(read_steps(runs.get("writes-concurrent")), "PUBLISH")
    if not concurrent.empty:
        mean = float(concurrent["avg_ms"].iloc[0])
        # the mean over every publish, lost ones at the timeout too. Slots go to whichever writer races first (the
        # burst's losses need it); with every slot used, 4 writers then wait 4 x 1.5 s x (1 - share lost), 4.5-5 s,
        # not the 6 s of writers served in order (who never lose one); and a dozen writes make one run
        rows.append(
            figure(
                "mean wait per publish, 4 concurrent writers",
                mean,
                CONCURRENT_WAIT_S * 1000,
                ms,
                tolerance=0.3,
                set_by=f"{pacing} --commit-order random",
            )
        )
        checks.append(
            Check(
                mean > 2 * SECONDS_PER_WRITE * 1000,
                f"4 concurrent writers queue: mean {ms(mean)} a publish (page: about 6 s)",
            )
        )
    burst = requests_of(read_steps(runs.get("writes-burst")), "PUBLISH")
    if not burst.empty:
        sent, lost = int(burst["requests"].sum()), int(burst["failures"].sum())
        share = lost / sent if sent else None
        # one burst of 200 on the page (binomial noise about +-12 % of its 24.5 %) and a race model fitted to none
        # of its figures: half either way still shows "some, not most, lost"
        rows.append(
            figure(
                f"share of a 4-writer burst lost to the timeout ({lost} of {sent})",
                share,
                BURST_LOST / BURST_WRITES,
                lambda v: f"{float(v):.1%}",
                tolerance=0.5,
                set_by="--commit-interval 0.3s --request-timeout 2s (the page's 1.5 s and 10 s at a fifth)",
            )
        )
        checks.append(
            Check(
                share is not None and 0 < share < 0.5,
                f"a 4-writer burst lost {lost} of {sent} to the request timeout (page: 49 of 200)",
            )
        )
    soak_run = runs.get("writes-soak")
    soak_steps = read_steps(soak_run)
    soak = requests_of(soak_steps, "PUBLISH")
    if not soak.empty:
        cost = "--commit-cost 56ms"
        # spaced writes pay only the commit's own cost, a stand-in setting; p99 on a few dozen writes: wider
        rows.append(
            figure(
                "p50 of a write spaced below the pacing",
                soak["p50_ms"].iloc[0],
                SPACED_WRITE_MS,
                ms,
                tolerance=0.15,
                set_by=cost,
            )
        )
        rows.append(
            figure(
                "soak: writes/s (one writer at 0.5/s)",
                soak["rps"].iloc[0],
                SOAK_WRITES_PER_S,
                rate,
                tolerance=0.05,
                set_by="--mark-write-rate 0.5",
            )
        )
        rows.append({**figure("soak: errors", int(soak["failures"].sum()), None, str), "page": "0"})
        rows.append(figure("soak: p50", soak["p50_ms"].iloc[0], SOAK_P50_MS, ms, tolerance=0.15, set_by=cost))
        rows.append(figure("soak: p99", soak["p99_ms"].iloc[0], SOAK_P99_MS, ms, tolerance=0.3, set_by=cost))
        checks.append(
            Check(
                int(soak["failures"].sum()) == 0,
                f"soak: {int(soak['requests'].sum())} writes, "
                f"{int(soak['failures'].sum())} errors (page: 899 writes, 0 errors)",
            )
        )
        rss = _target_rss(run_resources(soak_run))
        if len(rss) >= 4:
            half = rss.iloc[len(rss) // 2 :]
            growth = (float(half.iloc[-1]) - float(half.iloc[0])) / MIB
            rows.append(
                {
                    "figure": "soak: writer memory over the second half (RSS)",
                    "measured": f"{growth:+.1f} MiB",
                    "page": "flat (live heap 9 MB from minute 15)",
                    "x": "",
                }
            )
            checks.append(
                Check(growth <= 2.0, f"writer RSS {growth:+.1f} MiB over the soak's second half (page: flat)")
            )
    return rows


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


def add_writes_and_mcp(runs: dict[str, Path | None], section: PageSection) -> None:
    """The page's MCP tool tables, its Writes and its MCP session churn, and the rows not reproducible here."""
    tables = mcp_tables(runs, section.checks)
    over_quic = mcp_over_quic(runs, section.checks)
    if tables:
        section.tables.append(("Reads: the MCP tools", pd.concat(tables, ignore_index=True)))
    if over_quic:
        section.tables.append(("The MCP gateway adds nothing visible over direct QUIC", pd.DataFrame([over_quic])))
    writes = write_rows(runs, section.checks)
    if writes:
        section.tables.append(("Writes", pd.DataFrame(writes)))
    churn = churn_rows(runs, section.checks)
    if churn:
        section.tables.append(("MCP session churn", pd.DataFrame(churn)))
    section.notes.append(
        "Writes wait for the embedded Mark server's commit pacing: one commit start per 1.5 s, each commit 56 ms, "
        "the next slot to whichever waiting writer races first (writers served in order would wait exactly 6 s "
        "and never lose one to a 10 s timeout, as the page's burst did). The burst runs at a fifth of the page's "
        "times. The MCP gateway sweeps idle sessions every TTL/2 as the page's mcp-go does, with a TTL and a "
        "dedup cap scaled to the run; memory per MCP session is the gateway process's memory over the live "
        "sessions, the page's is Go's live heap."
    )
    section.not_reproducible.extend(NOT_REPRODUCIBLE)
