"""The kneo-serv page's rows beyond the sync sweeps, for the demo index: the queue row as the page's harness runs it,
PostgreSQL against SQLite with the CPU of each side, the 0.5 s provider delay, the soak, and the rows not attempted.

Each figure sits beside the page's with its ratio, a tolerance and, where a stand-in setting fixes it, that setting.
The CPU of each side is the mean per step of the resource sampler's ``cpu_percent`` (percent of one core): the
generator (Locust), kneo-serv (every service process summed) and PostgreSQL (its postmaster and backends).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd

from swarmgauge.reports.index_figures import (
    MIB,
    Check,
    PageSection,
    figure,
    ms,
    rate,
    read_json,
    read_steps,
    run_json,
    times,
)
from swarmgauge.reports.index_grades import MACHINE, MACHINE_SHARE

SIDES = ("generator", "kneo-serv", "PostgreSQL")
#: the page's profile shapes whose peak RSS it calls flat: each sync step and the queue batch (one process each)
RSS_SHAPES = ("sqlite-sync", "postgres-sync", "postgres-queue")
#: the page's queue row: postgres / queue at 8, runs/s, p50, p95, p99 (ms) and peak RSS (MiB)
QUEUE_PAGE = (44.0, 5039.0, 5830.0, 6233.0, 57.0)
QUEUE_PAGE_BATCH = 500  # the page's --total-runs
#: the page's sync rows the store comparison stands on: (store, concurrency) -> runs/s
STORE_PAGE = {("sqlite", 1): 51.0, ("sqlite", 8): 50.0, ("postgres", 1): 79.0, ("postgres", 8): 77.0}
DELAY_PAGE = (15.0, 513.0)  # runs/s and p50 ms at 0.5 s provider delay, postgres / sync, 8 concurrent
DELAY_S = 0.5
#: PostgreSQL / SQLite against the page's: its own ratio spans 1.49 (at 16) to 1.55 (at 1), ±2 %, in both ratios
STORE_RATIO_TOLERANCE = 0.1
#: kneo-serv runs a sync run inside its async route, one at a time per process: a process busy computing above half
#: of a core spends more of each run on its own CPU than waiting on anything (its store included), so the store's
#: difference is diluted more than 2x and the ratio of two stores is a ratio of CPU time
STORE_BOUND_CPU_SHARE = 50.0
BOUND_BY = "bound by"

NOT_ATTEMPTED = [
    (
        "reliability lanes run beside the soak (postgres_integration CAS writes, double-claim, prune liveness, "
        "durable-queue, MCP transports)",
        "kneo-serv's own pytest suites, not load figures: they belong to its repository's CI",
    ),
    (
        "minimum sizing (512 MiB container, 1 vCPU, pool sized to worker concurrency)",
        "advice derived from the measured rows, not a measurement of its own",
    ),
]


def side_of(source: str) -> str | None:
    """Which side a resource sampler source is: the generator, a kneo-serv process or the PostgreSQL cluster."""
    if source == "generator":
        return "generator"
    if source.startswith("psutil:pidfile=") and "kneo-serv-" in source:
        return "kneo-serv"
    if source.startswith("psutil:match=") and "swarmgauge" in source and "pg" in source:
        return "PostgreSQL"
    return None


def read_resources(run: Path | None) -> pd.DataFrame:
    if run is None or not (run / "resources.csv").is_file():
        return pd.DataFrame()
    try:
        return pd.read_csv(run / "resources.csv")
    except (ValueError, pd.errors.EmptyDataError):
        return pd.DataFrame()


def cpu_by_side(resources: pd.DataFrame) -> dict[int, dict[str, float]]:
    """Per step, each side's mean CPU over the sampling rounds (kneo-serv's processes summed per round)."""
    if resources.empty:
        return {}
    cpu = resources[resources["metric"] == "cpu_percent"].copy()
    cpu["side"] = cpu["source"].map(side_of)
    cpu = cpu[cpu["side"].notna() & cpu["step"].notna()].sort_values(["source", "round"])
    # a CPU sample covers the interval before it: the first one of a step measured the step before
    cpu = cpu[cpu.groupby("source")["step"].shift() == cpu["step"]]
    per_round = cpu.groupby(["step", "side", "round"])["value"].sum().reset_index()
    means = per_round.groupby(["step", "side"])["value"].mean()
    out: dict[int, dict[str, float]] = {}
    for (step, side), value in means.items():
        out.setdefault(int(step), {})[str(side)] = float(value)
    return out


def cpu_text(sides: dict[str, float]) -> str:
    return ", ".join(f"{side} {sides[side]:.0f} %" for side in SIDES if side in sides)


def service_series(resources: pd.DataFrame, metric: str) -> pd.Series:
    """The kneo-serv processes' ``metric`` summed per sampling round, in round order."""
    if resources.empty:
        return pd.Series(dtype=float)
    rows = resources[(resources["metric"] == metric) & (resources["source"].map(side_of) == "kneo-serv")]
    return rows.groupby("round")["value"].sum().sort_index()


def gauge_series(resources: pd.DataFrame, metric: str) -> pd.Series:
    if resources.empty:
        return pd.Series(dtype=float)
    rows = resources[resources["metric"] == metric]
    return rows.groupby("round")["value"].max().sort_index()


def queue_row(runs: dict[str, Path | None], section: PageSection) -> None:
    """postgres / queue at 8: the batch's drain rate and queue wait from the store, in the page's layout."""
    doc = run_json(runs, "postgres-queue", "kneo.json")
    drain = (doc or {}).get("queue_drain") or {}
    if not drain:
        return
    peaks = service_series(read_resources(runs.get("postgres-queue")), "rss_bytes")
    peak = float(peaks.max()) / MIB if not peaks.empty else None
    # queue wait is half the batch's drain time: it moves with the drain rate, which is this machine's fsync, and
    # with the batch's length, so a batch shortened by --scale is read against the page's waits shortened alike
    batch = int(drain.get("batch") or QUEUE_PAGE_BATCH)
    share = batch / QUEUE_PAGE_BATCH
    dispatched, waits = "runs dispatched (the page's --total-runs)", ""
    if batch != QUEUE_PAGE_BATCH:
        dispatched = f"runs dispatched (the page's --total-runs {QUEUE_PAGE_BATCH}, {batch} at this run's --scale)"
        waits = f" (page × {batch}/{QUEUE_PAGE_BATCH}, the batch's share)"
    rows = [
        figure(dispatched, drain.get("dispatched"), batch, lambda v: f"{int(v):,}", tolerance=0.0),
        figure(
            "throughput (runs/s, the one worker's drain)", drain.get("runs_per_s"), QUEUE_PAGE[0], rate, tolerance=0.5
        ),
        figure(f"p50 (queue wait){waits}", drain.get("wait_p50_ms"), QUEUE_PAGE[1] * share, ms, tolerance=0.5),
        figure(f"p95{waits}", drain.get("wait_p95_ms"), QUEUE_PAGE[2] * share, ms, tolerance=0.5),
        figure(f"p99{waits}", drain.get("wait_p99_ms"), QUEUE_PAGE[3] * share, ms, tolerance=0.5),
        # the absolute is the build's (see the RSS note), shown beside the page's as in the profile; its shape is
        # graded in the RSS table
        {
            "figure": "Peak RSS",
            "measured": "" if peak is None else f"{peak:.0f} MiB",
            "page": "57 MiB",
            "÷ page": times(peak, QUEUE_PAGE[4]),
        },
        figure("runs left unfinished", drain.get("unfinished"), 0, lambda v: f"{int(v)}", tolerance=0.0),
    ]
    section.tables.append(("postgres / queue, 8: the whole batch dispatched, then drained", pd.DataFrame(rows)))
    wait, sync_wait = drain.get("wait_p50_ms"), 1000.0 / max(float(drain.get("runs_per_s") or 0.0), 1e-9)
    section.checks.append(
        Check(
            bool(drain.get("dispatched") == drain.get("batch") and wait and wait > 10 * sync_wait),
            f"queue wait dominates: {drain.get('dispatched')} of {drain.get('batch')} runs dispatched, p50 wait "
            f"{ms(wait)} against {ms(sync_wait)} a run at the drain rate",
        )
    )


def _sync_by_users(run: Path | None) -> dict[int, tuple[float, float, int]]:
    steps = read_steps(run)
    if steps.empty:
        return {}
    rows = steps[(steps["request_type"] == "run sync") & (steps["requests"] > 0)]
    return {int(r["users"]): (float(r["rps"]), float(r["p50_ms"]), int(r["step"])) for _, r in rows.iterrows()}


def cpu_per_run_ms(sides: dict[str, float], rps: float) -> float | None:
    """kneo-serv's CPU a run (ms): its processes' share of a core over the runs each second."""
    cpu = sides.get("kneo-serv")
    return cpu / 100.0 * 1000.0 / rps if cpu is not None and rps > 0 else None


def store_rows(runs: dict[str, Path | None], section: PageSection, cores: int | None = None) -> None:
    """SQLite (one writer, one process) against PostgreSQL on one and on two service processes, fsync on, with the
    CPU of the generator, kneo-serv and PostgreSQL per row and kneo-serv's CPU a run: which side is the ceiling shows
    in the row. The page's figure is the ratio PostgreSQL / SQLite, graded where it is measured at 1 and at 8."""
    variants = (
        ("SQLite", "sqlite", "sqlite-sync"),
        ("PostgreSQL", "postgres", "postgres-sync"),
        ("PostgreSQL, 2 service processes", "postgres", "postgres-x2-sync"),
    )
    rows: list[dict[str, Any]] = []
    found: dict[tuple[str, int], tuple[float, float | None]] = {}
    sides_of: dict[tuple[str, int], dict[str, float]] = {}
    for label, store, workload in variants:
        run = runs.get(workload)
        sync, cpu = _sync_by_users(run), cpu_by_side(read_resources(run))
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
    loads = {workload: load_average_of(runs.get(workload)) for _, _, workload in variants}
    rows += _store_ratios(found, sides_of, section, cores, loads)
    section.tables.append(("PostgreSQL against SQLite where the store is the ceiling (fsync on)", pd.DataFrame(rows)))


def processes_of(workload: str) -> int:
    return 2 if workload == "postgres-x2-sync" else 1


def load_average_of(run: Path | None) -> float | None:
    """The load average ``swarmgauge demo`` recorded as this run's workload ended (``demo.json``, a few folders up),
    None outside a demo."""
    if run is None:
        return None
    for folder in list(run.parents)[:4]:
        manifest = read_json(folder / "demo.json")
        if not isinstance(manifest, dict):
            continue
        for page in manifest.get("pages") or []:
            for workload in page.get("workloads") or []:
                found = workload.get("run_folder")
                if found and (folder / found).resolve() == run.resolve():
                    return workload.get("load_avg")
        return None
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
        each = f"in each of {processes} processes" if processes > 1 else "(1 process)"
        return f"kneo-serv {service / processes:.0f} % of a core {each}, a run computing longer than it waits"
    if sum(sides.values()) >= MACHINE_SHARE * 100 * cores:
        return f"every side together {sum(sides.values()):.0f} % of {cores} cores"
    return None


def _store_ratios(
    found: dict[tuple[str, int], tuple[float, float | None]],
    sides_of: dict[tuple[str, int], dict[str, float]],
    section: PageSection,
    cores: int | None = None,
    loads: dict[str, float | None] | None = None,
) -> list[dict]:
    """PostgreSQL / SQLite at 1 and at 8 (the best PostgreSQL of one or two processes) beside the page's ratio; the
    tolerance is the page's own scatter of that ratio (1.49 at 16 to 1.55 at 1), carried by both ratios. Where either
    side's kneo-serv computed longer than it waited (``cpu_bound``), the ratio is this machine's CPU, not the stores':
    the row is shown "machine-bound" with each side's CPU, and not graded."""
    cores = cores or os.cpu_count() or 1
    loads = loads or {}
    rows = []
    for users in (1, 8):
        sqlite = found.get(("sqlite-sync", users))
        candidates = [(w, found[(w, users)]) for w in ("postgres-sync", "postgres-x2-sync") if (w, users) in found]
        if not sqlite or not candidates:
            continue
        workload, (best, _) = max(candidates, key=lambda item: item[1][0])
        page = STORE_PAGE[("postgres", users)] / STORE_PAGE[("sqlite", users)]
        where = f"{processes_of(workload)} service process{'es' if processes_of(workload) > 1 else ''}"
        ratio = best / sqlite[0]
        row = figure(
            f"PostgreSQL ÷ SQLite runs/s at {users} ({where})",
            ratio,
            page,
            lambda v: f"{v:.2f}",
            tolerance=STORE_RATIO_TOLERANCE,
        )
        bounds = [
            (name, why)
            for name, key, processes in (
                ("SQLite", ("sqlite-sync", users), 1),
                ("PostgreSQL", (workload, users), processes_of(workload)),
            )
            if (why := cpu_bound(sides_of.get(key, {}), processes, cores, loads.get(key[0])))
        ]
        if bounds:
            row["x"] = MACHINE  # shown, not graded: the index grades a ratio only
            row[BOUND_BY] = (
                f"{MACHINE}: {'; '.join(f'{name}: {why}' for name, why in bounds)}: the ratio is this "
                "machine's, not the stores'"
            )
        rows.append(row)
        section.checks.append(
            Check(
                ratio > 1.0,
                f"at {users} concurrent PostgreSQL {best:.0f} runs/s against SQLite {sqlite[0]:.0f}: "
                f"{ratio:.2f}x (page: {page:.2f}x){f', {MACHINE}' if bounds else ''}",
            )
        )
        # the serial note reads a run as kneo-serv's CPU plus its waits: not where others held the cores
        crowded = any(why.startswith("others") for _, why in bounds)
        if users == 1 and sqlite[1] is not None and ratio < page * (1 - STORE_RATIO_TOLERANCE) and not crowded:
            section.notes.append(serial_note(sqlite, found.get(("postgres-sync", 1))))
    return rows


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


def delay_rows(runs: dict[str, Path | None], section: PageSection) -> None:
    run = runs.get("provider-delay")
    sync = _sync_by_users(run)
    if 8 not in sync:
        return
    rps, p50, _ = sync[8]
    setting = f"--kneo-embedded-provider-delay {DELAY_S:g}"
    rows = [
        # 8 runs in flight each waiting 0.5 s cap the rate at 16/s; the overhead on top is this machine's
        figure("throughput at 8 concurrent (runs/s)", rps, DELAY_PAGE[0], rate, tolerance=0.2),
        figure("p50", p50, DELAY_PAGE[1], ms, tolerance=0.2, set_by=setting),
        figure(
            "platform overhead over the delay (p50 - 500 ms)",
            p50 - DELAY_S * 1000,
            DELAY_PAGE[1] - 500,
            ms,
            tolerance=3.0,
        ),
    ]
    section.tables.append(("0.5 s simulated provider delay (postgres / sync, 8 concurrent)", pd.DataFrame(rows)))
    section.checks.append(
        Check(
            rps >= 0.75 * 8 / DELAY_S and p50 >= DELAY_S * 1000,
            f"provider-bound: {rps:.1f} runs/s of the 16/s that 8 runs waiting 0.5 s allow, p50 {ms(p50)}",
        )
    )


def add_kneo_rows(section: PageSection, runs: dict[str, Path | None], cores: int | None = None) -> None:
    """The queue, store, provider-delay and soak rows, and the page's rows no workload attempts (``cores``: the
    machine's, this one's unless told)."""
    queue_row(runs, section)
    from swarmgauge.reports.index_kneo_profile import rss_shape_rows  # it reads this module's helpers

    rss = rss_shape_rows(runs, RSS_SHAPES)
    if not rss.empty:
        section.tables.append(
            ("Peak RSS across every shape (kneo-serv's own process; the page: flat, ~56–59 MiB)", rss)
        )
    store_rows(runs, section, cores)
    delay_rows(runs, section)
    from swarmgauge.reports.index_kneo_soak import drain_rows, soak_rows  # it reads this module's helpers

    drain_rows(runs, section)
    soak_rows(runs, section)
    section.not_reproducible.extend(NOT_ATTEMPTED)
