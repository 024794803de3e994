"""The kneo-serv page's rows beyond the sync sweeps, for the demo index: the queue row as the page's harness runs it,
PostgreSQL against SQLite with the CPU of each side (``index_kneo_store``), the 0.5 s provider delay, the soak, and
the rows not attempted.

Each figure sits beside the page's with its ratio, a tolerance and, where a stand-in setting fixes it, that setting.
The CPU of each side is the mean per step of the resource sampler's ``cpu_percent`` (percent of one core): the
generator (Locust), kneo-serv (every service process summed) and PostgreSQL (its postmaster and backends).
"""

from __future__ import annotations

from pathlib import Path

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
from swarmgauge.reports.index_kneo_anchor import fold_anchor, pooled_sides

SIDES = ("generator", "kneo-serv", "PostgreSQL")
#: the page's profile shapes whose peak RSS it calls flat: each sync step and the queue batch (one process each)
RSS_SHAPES = ("sqlite-sync", "postgres-sync", "postgres-queue")
#: the page's queue row: postgres / queue at 8, runs/s, p50, p95, p99 (ms) and peak RSS (MiB)
QUEUE_PAGE = (44.0, 5039.0, 5830.0, 6233.0, 57.0)
QUEUE_PAGE_BATCH = 500  # the page's --total-runs
DELAY_PAGE = (15.0, 513.0)  # runs/s and p50 ms at 0.5 s provider delay, postgres / sync, 8 concurrent
DELAY_S = 0.5

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


def queue_row(runs: dict[str, Path | None], section: PageSection, cores: int | None = None) -> None:
    """postgres / queue at 8: the batch's drain rate and queue wait from the store, in the page's layout; a figure
    that strays says why from kneo-serv's CPU over the drain (``index_kneo_bounds``)."""
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
    from swarmgauge.reports.index_kneo_bounds import queue_bounds, why_last, window_cpu  # it reads these helpers

    run = runs.get("postgres-queue")
    cpu = window_cpu(read_resources(run), float(drain.get("drain_s") or 0.0), load_average_of(run))
    read = {"p50": (rows[2], QUEUE_PAGE[1]), "p95": (rows[3], QUEUE_PAGE[2]), "p99": (rows[4], QUEUE_PAGE[3])}
    queue_bounds(rows[1], read, drain, cpu, (QUEUE_PAGE[0], QUEUE_PAGE_BATCH), cores)
    section.tables.append(("postgres / queue, 8: the whole batch dispatched, then drained", why_last(rows)))
    wait, sync_wait = drain.get("wait_p50_ms"), 1000.0 / max(float(drain.get("runs_per_s") or 0.0), 1e-9)
    section.checks.append(
        Check(
            bool(drain.get("dispatched") == drain.get("batch") and wait and wait > 10 * sync_wait),
            f"queue wait dominates: {drain.get('dispatched')} of {drain.get('batch')} runs dispatched, p50 wait "
            f"{ms(wait)} against {ms(sync_wait)} a run at the drain rate",
        )
    )


def sync_rows(run: Path | None) -> pd.DataFrame:
    """A run's sync-run rows, one per step (a sweep's two concurrency-1 steps apart)."""
    steps = read_steps(run)
    if steps.empty:
        return steps
    return steps[(steps["request_type"] == "run sync") & (steps["requests"] > 0)]


def sync_by_users(run: Path | None) -> dict[int, tuple[float, float, int]]:
    """Runs/s, p50 and step per concurrency; a sweep's concurrency-1 steps pooled into its anchor
    (``index_kneo_anchor``) under the first one's step, as :func:`sync_cpu_by_side` pools their CPU."""
    rows = fold_anchor(sync_rows(run))
    return {int(r["users"]): (float(r["rps"]), float(r["p50_ms"]), int(r["step"])) for _, r in rows.iterrows()}


def sync_cpu_by_side(run: Path | None) -> dict[int, dict[str, float]]:
    """:func:`cpu_by_side` with a sweep's concurrency-1 steps pooled under the first one's step."""
    return pooled_sides(cpu_by_side(read_resources(run)), sync_rows(run))


def cpu_per_run_ms(sides: dict[str, float], rps: float) -> float | None:
    """kneo-serv's CPU a run (ms): its processes' share of a core over the runs each second."""
    cpu = sides.get("kneo-serv")
    return cpu / 100.0 * 1000.0 / rps if cpu is not None and rps > 0 else None


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


def delay_rows(runs: dict[str, Path | None], section: PageSection, cores: int | None = None) -> None:
    run = runs.get("provider-delay")
    sync = sync_by_users(run)
    if 8 not in sync:
        return
    rps, p50, step = sync[8]
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
    # kneo-serv's CPU over the step's measured part: the plan's warm-up and the run's end left out
    from swarmgauge.reports.index_kneo_bounds import delay_bound, step_start, why_last, window_cpu
    from swarmgauge.reports.index_kneo_soak import plan_of, plan_seconds

    measured, resources = sync_rows(run), read_resources(run)
    measured = measured[measured["step"] == step].iloc[0]
    start = step_start(resources, measured.get("started_at"), plan_seconds(plan_of(run).get("warmup")))
    cpu = window_cpu(resources, float(measured["duration_s"]), load_average_of(run), start)
    delay_bound(rows, cpu, rps, (8, DELAY_S, p50 - DELAY_S * 1000), DELAY_PAGE[1] - 500, cores)
    section.tables.append(("0.5 s simulated provider delay (postgres / sync, 8 concurrent)", why_last(rows)))
    section.checks.append(
        Check(
            rps >= 0.75 * 8 / DELAY_S and p50 >= DELAY_S * 1000,
            f"provider-bound: {rps:.1f} runs/s of the 16/s that 8 runs waiting 0.5 s allow, p50 {ms(p50)}",
        )
    )


def add_kneo_rows(section: PageSection, runs: dict[str, Path | None], cores: int | None = None) -> None:
    """The queue, store, provider-delay and soak rows, and the page's rows no workload attempts (``cores``: the
    machine's, this one's unless told)."""
    queue_row(runs, section, cores)
    from swarmgauge.reports.index_kneo_profile import rss_shape_rows  # it reads this module's helpers

    rss = rss_shape_rows(runs, RSS_SHAPES)
    if not rss.empty:
        section.tables.append(
            ("Peak RSS across every shape (kneo-serv's own process; the page: flat, ~56–59 MiB)", rss)
        )
    from swarmgauge.reports.index_kneo_store import store_rows  # it reads this module's helpers

    store_rows(runs, section, cores)
    delay_rows(runs, section, cores)
    from swarmgauge.reports.index_kneo_soak import drain_rows, soak_rows  # it reads this module's helpers

    drain_rows(runs, section, cores)
    soak_rows(runs, section, cores)
    section.not_reproducible.extend(NOT_ATTEMPTED)
