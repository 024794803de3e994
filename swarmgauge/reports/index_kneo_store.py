"""PostgreSQL against SQLite where the store is the ceiling, for the kneo page's index section: each store's sync
runs at 1 and 8 concurrent with the CPU of each side, and their ratio beside the page's, "machine-bound" where a side's
kneo-serv computed longer than it waited.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd

from swarmgauge.reports.index_figures import Check, PageSection, figure, ms, rate, times
from swarmgauge.reports.index_grades import MACHINE, MACHINE_SHARE
from swarmgauge.reports.index_kneo_rows import (
    cpu_per_run_ms,
    cpu_text,
    load_average_of,
    sync_by_users,
    sync_cpu_by_side,
)

#: the page's sync rows the store comparison stands on: (store, concurrency) -> runs/s
STORE_PAGE = {("sqlite", 1): 51.0, ("sqlite", 8): 50.0, ("postgres", 1): 79.0, ("postgres", 8): 77.0}
#: PostgreSQL / SQLite against the page's: its own ratio spans 1.49 (at 16) to 1.55 (at 1), ±2 %, in both ratios
STORE_RATIO_TOLERANCE = 0.1
#: kneo-serv runs a sync run inside its async route, one at a time per process: a process busy computing above half
#: of a core spends more of each run on its own CPU than waiting on anything (its store included), so the store's
#: difference is diluted more than 2x and the ratio of two stores is a ratio of CPU time
STORE_BOUND_CPU_SHARE = 50.0
BOUND_BY = "bound by"


#: the store workloads: (label, store, workload, service processes); the two-process pair runs each store as a user
#: scaling kneo-serv would, several processes on the one store
VARIANTS = (
    ("SQLite", "sqlite", "sqlite-sync", 1),
    ("PostgreSQL", "postgres", "postgres-sync", 1),
    ("SQLite, 2 service processes", "sqlite", "sqlite-x2-sync", 2),
    ("PostgreSQL, 2 service processes", "postgres", "postgres-x2-sync", 2),
)


def store_rows(runs: dict[str, Path | None], section: PageSection, cores: int | None = None) -> None:
    """SQLite against PostgreSQL on one and on two service processes each, fsync on, with the CPU of the generator,
    kneo-serv and PostgreSQL per row and kneo-serv's CPU a run: which side is the ceiling shows in the row. The page's
    figure is the ratio PostgreSQL / SQLite, graded where it is measured at 1 and at 8."""
    rows: list[dict[str, Any]] = []
    found: dict[tuple[str, int], tuple[float, float | None]] = {}
    sides_of: dict[tuple[str, int], dict[str, float]] = {}
    for label, store, workload, _ in VARIANTS:
        run = runs.get(workload)
        sync, cpu = sync_by_users(run), sync_cpu_by_side(run)
        for users in (1, 8):
            if users not in sync:
                continue
            rps, p50, step = sync[users]
            per_run = cpu_per_run_ms(cpu.get(step, {}), rps)
            found[(workload, users)] = (rps, per_run)
            sides_of[(workload, users)] = cpu.get(step, {})
            # the absolute runs/s is this machine's (shown, not graded, as in the reference profile): the page's
            # figure is the ratio PostgreSQL / SQLite, graded below
            row = {"figure": f"{label} at {users}", "measured": rate(rps), "page": rate(STORE_PAGE[(store, users)])}
            row["÷ page"] = times(rps, STORE_PAGE[(store, users)])
            row["p50"] = ms(p50)
            row["CPU (% of a core)"] = cpu_text(cpu.get(step, {}))
            row["kneo-serv CPU a run"] = ms(per_run) if per_run is not None else ""
            rows.append(row)
    if not rows:
        return
    loads = {workload: load_average_of(runs.get(workload)) for _, _, workload, _ in VARIANTS}
    rows += _store_ratios(found, sides_of, section, cores, loads)
    section.tables.append(("PostgreSQL against SQLite where the store is the ceiling (fsync on)", pd.DataFrame(rows)))
    note = scaling_note(found, sides_of)
    if note:
        section.notes.append(note)


def pair_at(found: dict[tuple[str, int], Any], users: int) -> tuple[int, str, str] | None:
    """The runs a ratio at ``users`` compares: (processes, SQLite's workload, PostgreSQL's), the most service
    processes both stores ran at ``users``, each store on as many as the other."""
    for processes in sorted({n for *_, n in VARIANTS}, reverse=True):
        sqlite, postgres = (w for _, store, w, n in VARIANTS if n == processes)
        if (sqlite, users) in found and (postgres, users) in found:
            return processes, sqlite, postgres
    return None


def cpu_bound(sides: dict[str, float], processes: int, cores: int, load: float | None = None) -> str | None:
    """Why a store row measured the CPU and not the store (None when the store can be the bottleneck there): others
    filling the cores (the load average less our own sides: a process waiting for a core is off its CPU too, and
    would pass for one waiting on its store), each kneo-serv process above ``STORE_BOUND_CPU_SHARE`` of a core, or
    every side together filling the machine."""
    service = sides.get("kneo-serv")
    if service is None:
        return None
    if load is not None and load - sum(sides.values()) / 100 >= cores:
        return (
            f"others filled the machine (load average {load:.1f} on {cores} cores), and a run waiting for a core "
            "looks like one waiting on its store"
        )
    if service / processes > STORE_BOUND_CPU_SHARE:
        return (
            f"kneo-serv {service / processes:.0f} % of a core {each(processes)}, a run computing longer than it waits"
        )
    if sum(sides.values()) >= MACHINE_SHARE * 100 * cores:
        return f"every side together {sum(sides.values()):.0f} % of {cores} cores"
    return None


def each(processes: int) -> str:
    return f"in each of {processes} processes" if processes > 1 else "(1 process)"


def store_side(sides: dict[str, float], processes: int) -> str:
    """A side whose kneo-serv waited longer than it computed: its store is what it waited on."""
    service = sides.get("kneo-serv")
    shown = "" if service is None else f", kneo-serv {service / processes:.0f} % of a core {each(processes)}"
    return f"its store{shown}, a run waiting longer than it computes"


def bound_text(ratio: float, page: float, bounds: dict[str, str]) -> tuple[str, bool]:
    """What bounds the ratio, and whether the row is graded. A side held by kneo-serv's CPU (or the machine) ran below
    its store's rate: PostgreSQL's there makes the measured ratio a floor of the stores', SQLite's a ceiling. Where
    that floor is already above the page's tolerance (or the ceiling below it), the stores' ratio is outside it
    whatever the CPU, and the row is graded; otherwise, with any side held, it is this machine's ("machine-bound")."""
    low, high = page * (1 - STORE_RATIO_TOLERANCE), page * (1 + STORE_RATIO_TOLERANCE)
    sides = "; ".join(f"{name}: {why}" for name, why in bounds.items())
    held = [name for name, why in bounds.items() if not why.startswith("its store")]
    if not held:
        return f"the stores: {sides}", True
    if held == ["PostgreSQL"] and ratio > high:
        return (
            f"{sides}: PostgreSQL held below its store's rate, so the stores' ratio is at least {ratio:.2f}, above "
            f"the page's {page:.2f} whatever kneo-serv's CPU",
            True,
        )
    if held == ["SQLite"] and ratio < low:
        return (
            f"{sides}: SQLite held below its store's rate, so the stores' ratio is at most {ratio:.2f}, below the "
            f"page's {page:.2f} whatever kneo-serv's CPU",
            True,
        )
    return f"{MACHINE}: {sides}: the ratio is this machine's, not the stores'", False


def _store_ratios(
    found: dict[tuple[str, int], tuple[float, float | None]],
    sides_of: dict[tuple[str, int], dict[str, float]],
    section: PageSection,
    cores: int | None = None,
    loads: dict[str, float | None] | None = None,
) -> list[dict]:
    """PostgreSQL / SQLite at 1 and at 8, each store on as many service processes as the other (``pair_at``), beside
    the page's ratio; the tolerance is the page's own scatter of that ratio (1.49 at 16 to 1.55 at 1), carried by
    both ratios. Each side is bound by its store or by kneo-serv's CPU (``cpu_bound``): the row says which, and is
    graded unless a side held by its CPU leaves the stores' ratio undecided (``bound_text``: "machine-bound")."""
    cores = cores or os.cpu_count() or 1
    loads = loads or {}
    rows = []
    for users in (1, 8):
        pair = pair_at(found, users)
        if pair is None:
            continue
        processes, sqlite_run, postgres_run = pair
        sqlite, (best, _) = found[(sqlite_run, users)], found[(postgres_run, users)]
        page = STORE_PAGE[("postgres", users)] / STORE_PAGE[("sqlite", users)]
        ratio = best / sqlite[0]
        row = figure(
            f"PostgreSQL ÷ SQLite runs/s at {users} ({processes} service process{'es' if processes > 1 else ''})",
            ratio,
            page,
            lambda v: f"{v:.2f}",
            tolerance=STORE_RATIO_TOLERANCE,
        )
        bounds = {
            name: cpu_bound(sides_of.get((run, users), {}), processes, cores, loads.get(run))
            or store_side(sides_of.get((run, users), {}), processes)
            for name, run in (("SQLite", sqlite_run), ("PostgreSQL", postgres_run))
        }
        row[BOUND_BY], graded = bound_text(ratio, page, bounds)
        if not graded:
            row["x"] = MACHINE  # shown, not graded: the index grades a ratio only
        rows.append(row)
        section.checks.append(
            Check(
                ratio > 1.0,
                f"at {users} concurrent PostgreSQL {best:.0f} runs/s against SQLite {sqlite[0]:.0f}: "
                f"{ratio:.2f}x (page: {page:.2f}x){'' if graded else f', {MACHINE}'}",
            )
        )
        # the serial note reads a run as kneo-serv's CPU plus its waits: not where others held the cores
        crowded = any(why.startswith("others") for why in bounds.values())
        if users == 1 and sqlite[1] is not None and ratio < page * (1 - STORE_RATIO_TOLERANCE) and not crowded:
            section.notes.append(serial_note(sqlite, found.get(("postgres-sync", 1))))
    return rows


def scaling_note(
    found: dict[tuple[str, int], tuple[float, float | None]], sides_of: dict[tuple[str, int], dict[str, float]]
) -> str | None:
    """What a second service process bought each store at 8, beside how the page's harness ran them (one process
    per store: scripts/bench drives PlatformManager in-process, its concurrency a thread pool)."""
    gains = []
    for store, one, two in (
        ("SQLite", "sqlite-sync", "sqlite-x2-sync"),
        ("PostgreSQL", "postgres-sync", "postgres-x2-sync"),
    ):
        if (one, 8) not in found or (two, 8) not in found:
            return None
        service = sides_of.get((two, 8), {}).get("kneo-serv")
        cpu = "" if service is None else f", kneo-serv {service / 2:.0f} % of a core in each"
        gains.append(f"{store} from {rate(found[(one, 8)][0])} to {rate(found[(two, 8)][0])} runs/s{cpu}")
    return (
        f"A second service process at 8 concurrent took {'; '.join(gains)}. The page's harness ran each store in one "
        "process (scripts/bench drives PlatformManager in-process, its concurrency a thread pool); two kneo-serv "
        "processes on one SQLite file are what a user scaling kneo-serv would run: each has its own connection, and "
        "SQLite lets one of them write at a time."
    )


def serial_note(sqlite: tuple[float, float | None], postgres: tuple[float, float | None] | None) -> str:
    """Why PostgreSQL does not pass SQLite at 1 here: a serial run is mostly kneo-serv's CPU, the same on either store,
    and every store wait has to fit in the time off it. When even a PostgreSQL run that were kneo-serv's CPU alone
    could not reach the page's ratio, the note says the shape cannot hold here."""
    page_ratio = STORE_PAGE[("postgres", 1)] / STORE_PAGE[("sqlite", 1)]
    parts = []
    for name, figures in (("SQLite", sqlite), ("PostgreSQL", postgres)):
        if figures and figures[1] is not None and figures[0] > 0:
            wall = 1000.0 / figures[0]
            parts.append(
                f"{name} {wall:.1f} ms a run: {figures[1]:.1f} ms kneo-serv CPU, {wall - figures[1]:.1f} ms off it"
            )
    text = (
        "PostgreSQL ÷ SQLite at 1 does not hold here: one run at a time is one kneo-serv process's CPU on either "
        f"store ({'; '.join(parts)}); every store wait, fsync included, fits in the time off that CPU"
    )
    if postgres and postgres[1]:
        bound = 1000.0 / sqlite[0] / postgres[1]
        text += f". A PostgreSQL run that cost nothing beyond kneo-serv's CPU would give {bound:.2f}x"
        if bound < page_ratio:
            text += f", below the page's {page_ratio:.2f}x: on two shared cores the store cannot set the rate at 1"
    return text + "."
