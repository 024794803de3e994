"""One index section per reference page: the page's table layout, measured rows beside its published figures.

Every measured figure comes from a workload's run folder (``steps.csv``, ``summary.json``, ``kneo.json``,
``mdk.json``, ``mdk_drills.json``, ``resources.csv``); the published ones are transcribed here from
``../shared/docs/reference-pages/``. A verdict is a list of shape checks (the ceiling, flat against linear scaling,
the memory slope, the order of drill events), each saying what it saw, so a reader can judge it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from swarmgauge.reports.index_brain import brain
from swarmgauge.reports.index_figures import (
    MIB,
    Check,
    PageSection,
    aggregated,
    beside,
    figure,
    flat,
    ms,
    rate,
    read_steps,
    requests_of,
    run_json,
    step_table,
)
from swarmgauge.reports.index_kneo_rows import add_kneo_rows
from swarmgauge.reports.index_mdk import mdk

# --- demarkus kind bench -------------------------------------------------------------------------------------------

DEMARKUS_POOLED: dict[int, tuple[float, ...]] = {
    1: (53, 20, 26),
    4: (160, 21, 45),
    16: (159, 100, 166),
    64: (158, 423, 486),
    256: (151, 1770, 1790),
}
DEMARKUS_FRESH: dict[int, tuple[float, ...]] = {16: (157, 23, 323), 64: (159, 343, 1160)}
DEMARKUS_CEILING = 160.0
DEMARKUS_WRITES_PER_S = 0.67
DEMARKUS_SECONDS_PER_WRITE = 1.51
DEMARKUS_HEAP_PER_SESSION = 9.6 * 1000  # bytes of live heap (the page's "about 9.6 KB")
DEMARKUS_CALLS_P50_MS = 10.0


def demarkus(runs: dict[str, Path | None]) -> PageSection:
    section = PageSection()
    pooled = requests_of(read_steps(runs.get("reads")), "FETCH")
    fresh = requests_of(read_steps(runs.get("fresh")), "FETCH")
    tables = []
    if not pooled.empty:
        tables.append(step_table(pooled, DEMARKUS_POOLED, "QUIC FETCH, pooled connections", "Step"))
    if not fresh.empty:
        tables.append(step_table(fresh, DEMARKUS_FRESH, "QUIC FETCH, fresh connection per request", "Step"))
    if tables:
        section.tables.append(("Reads", pd.concat(tables, ignore_index=True)))
    past_knee = pooled[pooled["users"] >= 4] if not pooled.empty else pooled
    if not past_knee.empty:
        rps = [float(v) for v in past_knee["rps"]]
        mean = sum(rps) / len(rps)
        holds = flat(rps, 0.15) and abs(mean - DEMARKUS_CEILING) <= 0.2 * DEMARKUS_CEILING
        section.checks.append(
            Check(holds, f"ceiling {min(rps):.0f} to {max(rps):.0f} req/s from 4 workers on (page: about 160)")
        )
        top = past_knee.iloc[-1]
        little = 1000.0 * float(top["users"]) / float(top["rps"])
        mean = float(top.get("avg_ms", top["p50_ms"]))
        section.checks.append(
            Check(
                abs(mean - little) <= 0.25 * little,
                f"mean latency at {int(top['users'])} workers {ms(mean)}, Little's law ({int(top['users'])} / "
                f"{float(top['rps']):.0f} req/s) says {ms(little)}",
            )
        )
    rows = []
    writes = requests_of(read_steps(runs.get("writes")), "PUBLISH")
    if not writes.empty:
        per_write = float(writes["p50_ms"].iloc[0])
        rows.append(figure("writes/s, one writer back to back", writes["rps"].iloc[0], DEMARKUS_WRITES_PER_S, rate))
        rows.append(figure("p50 per publish", per_write, DEMARKUS_SECONDS_PER_WRITE * 1000, ms))
        paced = 1000.0 / per_write if per_write > 0 else 0.0
        section.checks.append(
            Check(
                abs(paced - DEMARKUS_WRITES_PER_S) <= 0.15 * DEMARKUS_WRITES_PER_S,
                f"writes paced at {ms(per_write)} a publish, {paced:.2f}/s (page: 1.51 s, 0.67/s)",
            )
        )
    churn = run_json(runs, "churn", "summary.json")
    sessions = (churn or {}).get("MCP sessions") or {}
    if sessions:
        churn_steps = aggregated(read_steps(runs.get("churn")))
        started = (sessions.get("sessions") or {}).get("sessions_started")
        rows.append(figure("MCP sessions started (5/s)", started, None, lambda v: f"{int(v):,}"))
        if not churn_steps.empty:
            rows.append(figure("p50 of the session's calls", churn_steps["p50_ms"].iloc[0], DEMARKUS_CALLS_P50_MS, ms))
        memory = sessions.get("memory_per_session") or {}
        if memory:
            per = float(memory["bytes"])
            rows.append(
                figure(
                    f"memory per live session ({memory.get('metric')}; page: live heap)",
                    per,
                    DEMARKUS_HEAP_PER_SESSION,
                    lambda v: f"{float(v) / 1000:.1f} KB",
                )
            )
        drop = sessions.get("ttl_drop")
        if drop:
            rows.append(
                {
                    "figure": "live sessions at the idle TTL",
                    "measured": f"{drop['peak_live']:.0f} fell to {drop['low_live']:.0f}",
                    "page": "swept 1,906 then 4,500",
                    "x": "",
                }
            )
        section.checks.append(
            Check(bool(drop), "live sessions dropped at the idle TTL" if drop else "no drop at the idle TTL seen")
        )
    if rows:
        section.tables.append(("Writes and MCP session churn", pd.DataFrame(rows)))
    section.notes.append(
        "The embedded Mark server simulates the page's bottleneck (fake-gcs-server): two 10 ms bucket round trips "
        "per read and 160 reads/s of capacity; writes wait for 1.5 s commit pacing. Memory per MCP session is the "
        "gateway process's memory over the live sessions, the page's is Go's live heap."
    )
    return section


# --- kneo-serv performance -----------------------------------------------------------------------------------------

#: store / mode -> concurrency -> (runs/s, p50 ms, p99 ms, peak RSS MiB)
KNEO: dict[str, dict[int, tuple[float, ...]]] = {
    "sqlite / sync": {
        1: (51, 10.7, 12.4, 56),
        4: (51, 54.5, 84.0, 56),
        8: (50, 105.9, 230.3, 57),
        16: (51, 197.3, 634.9, 58),
    },
    "postgres / sync": {
        1: (79, 8.1, 8.9, 57),
        8: (77, 72.3, 139.0, 58),
        16: (76, 149.9, 324.6, 58),
        32: (75, 260.4, 804.5, 57),
    },
    "postgres / queue": {8: (44, 5039, 6233, 57)},
}
KNEO_END_TO_END = ("run sync", "run queued")
#: the sync sweeps; the queue row (a batch drained, figures from the store) is in ``index_kneo_rows``
KNEO_RUNS = {"sqlite-sync": "sqlite / sync", "postgres-sync": "postgres / sync"}


def end_to_end(steps: pd.DataFrame) -> pd.DataFrame:
    """The rows the page's table is about: a sync run, or a queued run from submit to terminal (not submit, poll)."""
    return steps[steps["request_type"].isin(KNEO_END_TO_END) & (steps["requests"] > 0)]


def peak_rss_by_step(run: Path) -> dict[int, float]:
    """The target's highest RSS in MiB per step (every process the sampler watched but the generator)."""
    path = run / "resources.csv"
    if not path.is_file():
        return {}
    samples = pd.read_csv(path)
    target = samples[(samples["metric"] == "rss_bytes") & ~samples["source"].isin(("generator", "locust"))]
    if target.empty:
        return {}
    return {int(step): float(value) / MIB for step, value in target.groupby("step")["value"].max().items()}


def _kneo_rows(run: Path, store_mode: str) -> pd.DataFrame:
    steps = read_steps(run)
    if steps.empty:
        return pd.DataFrame()
    rows = end_to_end(steps)
    peaks = peak_rss_by_step(run)
    page = KNEO[store_mode]
    out = []
    for position, (_, measured) in enumerate(rows.sort_values("users").iterrows()):
        figures = page.get(int(measured["users"]), (None, None, None, None))
        row: dict[str, Any] = {"Store / mode": store_mode if position == 0 else "", "Concurrency": measured["users"]}
        beside(row, "runs/s", measured["rps"], figures[0], rate)
        beside(row, "p50", measured["p50_ms"], figures[1], ms)
        beside(row, "p99", measured["p99_ms"], figures[2], ms)
        beside(row, "Peak RSS", peaks.get(int(measured["step"])), figures[3], lambda v: f"{float(v):.0f} MiB")
        out.append(row)
    return pd.DataFrame(out)


def _sweep_check(name: str, rows: pd.DataFrame) -> Check | None:
    if len(rows) < 2:
        return None
    rps = [float(v) for v in rows["rps"]]
    first, last = rows.iloc[0], rows.iloc[-1]
    growth = float(last["p50_ms"]) / max(float(first["p50_ms"]), 1e-9)
    users = float(last["users"]) / float(first["users"])
    holds = flat(rps, 0.25) and growth >= 0.4 * users
    return Check(
        holds,
        f"{name} {min(rps):.0f} to {max(rps):.0f} runs/s over {int(first['users'])} to {int(last['users'])} "
        f"concurrent while p50 grew {growth:.1f}x for {users:.0f}x the concurrency",
    )


def kneo(runs: dict[str, Path | None]) -> PageSection:
    section = PageSection()
    tables, measured = [], {}
    for workload, store_mode in KNEO_RUNS.items():
        run = runs.get(workload)
        steps = read_steps(run)
        if run is None or steps.empty:
            continue
        measured[workload] = end_to_end(steps)
        tables.append(_kneo_rows(run, store_mode))
    if tables:
        section.tables.append(("Reference profile", pd.concat(tables, ignore_index=True).fillna("")))
    for workload, name in (("sqlite-sync", "SQLite flat at"), ("postgres-sync", "PostgreSQL flat at")):
        check = _sweep_check(
            name,
            measured.get(workload, pd.DataFrame()).sort_values("users") if workload in measured else pd.DataFrame(),
        )
        if check:
            section.checks.append(check)
    if "sqlite-sync" in measured and "postgres-sync" in measured:
        sqlite, postgres = measured["sqlite-sync"]["rps"].mean(), measured["postgres-sync"]["rps"].mean()
        section.checks.append(
            Check(
                postgres > sqlite, f"PostgreSQL {postgres:.0f} runs/s against SQLite {sqlite:.0f} (page: 76 against 51)"
            )
        )
    doc = run_json(runs, "backpressure", "kneo.json")
    if isinstance(doc, dict):
        ledger = doc.get("ledger") or {}
        shed, mismatches = int(ledger.get("queue_full") or 0), doc.get("mismatches")
        rows = [
            {"figure": "submits shed with QueueFullError (503)", "measured": f"{shed:,}", "page": "load-sheds"},
            {"figure": "runs accepted", "measured": f"{int(ledger.get('accepted') or 0):,}", "page": ""},
            {"figure": "store rows that disagree (phantom rows)", "measured": str(mismatches), "page": "0"},
        ]
        section.tables.append(("Queue-depth backpressure", pd.DataFrame(rows)))
        section.checks.append(
            Check(shed > 0 and mismatches == 0, f"backpressure shed {shed} submits with {mismatches} phantom rows")
        )
    section.notes.append(
        "The real kneo-serv 1.2.0 with its echo agent on this machine's SQLite and a throwaway PostgreSQL "
        "(fsync on, as the page's), two shared cores against the page's 64; compare the shape, not the absolute "
        "rates. p95 is not measured in the sync rows (steps.csv has p90 and p99)."
    )
    add_kneo_rows(section, runs)
    return section


SECTIONS: dict[str, Callable[[dict[str, Path | None]], PageSection]] = {
    "demarkus": demarkus,
    "kneo": kneo,
    "mdk": mdk,
    "brain": brain,
}
