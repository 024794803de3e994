"""One index section per reference page: the page's table layout, measured rows beside its published figures.

Every measured figure comes from a workload's run folder (``steps.csv``, ``summary.json``, ``kneo.json``,
``mdk.json``, ``mdk_drills.json``, ``resources.csv``); the published ones are transcribed here from
``../shared/docs/reference-pages/``. A verdict is a list of shape checks (the ceiling, flat against linear scaling,
the memory slope, the order of drill events), each saying what it saw, so a reader can judge it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd

from swarmgauge.reports.index_brain import brain
from swarmgauge.reports.index_demarkus_reads import reads
from swarmgauge.reports.index_demarkus_writes import add_writes_and_mcp
from swarmgauge.reports.index_figures import (
    Check,
    PageSection,
    flat,
    read_steps,
    run_json,
)
from swarmgauge.reports.index_kneo_anchor import fold_anchor
from swarmgauge.reports.index_kneo_profile import CAPTION as PROFILE_CAPTION
from swarmgauge.reports.index_kneo_profile import anchor_note, profile_rows, rss_note, sweep_note
from swarmgauge.reports.index_kneo_rows import add_kneo_rows
from swarmgauge.reports.index_mdk import mdk

# --- demarkus kind bench -------------------------------------------------------------------------------------------


def demarkus(runs: dict[str, Path | None]) -> PageSection:
    section = PageSection()
    read_rows = reads(runs, section)
    if not read_rows.empty:
        section.tables.insert(0, ("Reads", read_rows))
    add_writes_and_mcp(runs, section)
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
        raw = end_to_end(steps)  # a sweep's two concurrency-1 steps apart: its anchor, pooled where it is read
        measured[workload] = fold_anchor(raw)
        tables.append(profile_rows(raw, run, store_mode, KNEO[store_mode]))
        section.notes.extend(filter(None, [anchor_note(raw, run, store_mode), sweep_note(raw, run, store_mode)]))
    if tables:
        section.tables.append((PROFILE_CAPTION, pd.concat(tables, ignore_index=True).astype(object).fillna("")))
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
        "rates."
    )
    section.notes.extend(filter(None, [rss_note(runs.get("sqlite-sync"))]))
    add_kneo_rows(section, runs)
    return section


SECTIONS: dict[str, Callable[[dict[str, Path | None]], PageSection]] = {
    "demarkus": demarkus,
    "kneo": kneo,
    "mdk": mdk,
    "brain": brain,
}
