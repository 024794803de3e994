"""The kneo page's reference profile (its sync sweeps) for the demo index, graded by the shape the page states.

The page was measured on a 64-core Threadripper and says its numbers "show ratios and shape, not a sizing table";
here one kneo-serv process spends about 22 ms of CPU a run on two shared cores, so every absolute is off by the
machine. The table keeps the absolutes and their ratios to the page's (shown, not graded) and grades two shape
figures per row, each beside the page's own: runs/s against the concurrency-1 steps just before and after the step
(``index_kneo_anchor``; the page: flat, ~1.0) and p50 against concurrency x their p50 (the page: linear growth, ~1.0
to 1.27). The concurrency-1 row pools every concurrency-1 step of the sweep: both figures are 1 by definition there,
so it has no ratio of its own (the store comparison at 1 is graded in ``index_kneo_rows``). p95 comes from each step's HDR histogram (``percentiles.csv``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from swarmgauge.reports.index_figures import MIB, SAMPLES, as_number, beside, figure, ms, rate, times
from swarmgauge.reports.index_grades import ratio_of
from swarmgauge.reports.index_kneo_anchor import (
    STEPS,
    anchor_at,
    anchor_blocks,
    bracket_note,
    bracket_why,
    cpu_ms_a_run,
    fold_anchor,
    pooled_sides,
)

#: how far a sweep's runs/s against its concurrency-1 row may stray from the page's and be flat: the page calls a
#: 5 % drift flat (PostgreSQL 79 at 1 to 75 at 32), and a ratio of two such figures carries that drift twice
FLAT_TOLERANCE = 0.10
#: how far p50 / (concurrency x the concurrency-1 p50) may stray from the page's: the page calls linear a growth whose
#: own figure spans 1.00 (PostgreSQL at 32) to 1.27 (SQLite at 4), a 27 % scatter between rows it reads the same way
LINEAR_TOLERANCE = 0.25
#: the page's p95 (ms) per store / mode and concurrency (its table's p95 column)
PAGE_P95 = {
    "sqlite / sync": {1: 11.6, 4: 71.7, 8: 170.4, 16: 415.9},
    "postgres / sync": {1: 8.6, 8: 99.6, 16: 220.5, 32: 626.5},
}
CAPTION = (
    "Reference profile: the absolutes are this machine's (two shared cores against the page's 64: shown with their "
    "ratio to the page's, not graded); the colour is the shape's, each step against the concurrency-1 steps just before "
    "and after it (read against): runs/s flat, p50 growing with concurrency, beside the page's same figures"
)
FLAT = "runs/s ÷ c=1"
LINEAR = "p50 ÷ (c × p50 at 1)"
ANCHOR = "anchor"
#: the column saying which concurrency-1 steps of the run a row was read against
READ_AGAINST = "read against"


def shown_ratio(value: Any) -> str:
    number = pd.to_numeric(value, errors="coerce")
    return "" if number is None or pd.isna(number) else f"{float(number):.2f}"


def absolute(row: dict[str, Any], label: str, measured: Any, page: Any, shown: Callable[[Any], str]) -> None:
    """A figure beside the page's with their ratio, under a name the grading does not read (``÷ page``)."""
    row[label] = "" if pd.isna(pd.to_numeric(measured, errors="coerce")) else shown(measured)
    row[f"page {label}"] = "" if page is None else shown(page)
    row[f"{label} ÷ page"] = times(measured, page)


def p95_by_step(run: Path | None, request_type: str) -> dict[int, float]:
    """Each step's p95 (ms) of ``request_type`` from ``percentiles.csv`` (empty when the run wrote none)."""
    if run is None or not (run / "percentiles.csv").is_file():
        return {}
    try:
        table = pd.read_csv(run / "percentiles.csv")
    except (ValueError, pd.errors.EmptyDataError):
        return {}
    rows = table[(table["request_type"] == request_type) & (pd.to_numeric(table["percentile"]) == 95.0)]
    return {int(step): float(value) for step, value in rows.groupby("step")["ms"].max().items()}


def service_rss_by_step(run: Path | None) -> dict[int, float]:
    """kneo-serv's own highest RSS (MiB) per step, its processes summed per sampling round: not the generator's, and
    not the PostgreSQL cluster's (which the sampler also watches, and whose shared buffers grow with the load)."""
    if run is None or not (run / "resources.csv").is_file():
        return {}
    samples = pd.read_csv(run / "resources.csv")
    service = samples[
        (samples["metric"] == "rss_bytes")
        & samples["source"].astype(str).str.startswith("psutil:pidfile=")
        & samples["source"].astype(str).str.contains("kneo-serv-", regex=False)
    ]
    if service.empty:
        return {}
    per_round = service.groupby(["step", "round"])["value"].sum().reset_index()
    return {int(step): float(value) / MIB for step, value in per_round.groupby("step")["value"].max().items()}


def shape_of(points: dict[int, tuple[float, float]]) -> dict[int, tuple[float, float]]:
    """Per concurrency: (runs/s ÷ the concurrency-1 runs/s, p50 ÷ (concurrency x the concurrency-1 p50))."""
    if 1 not in points or points[1][0] <= 0 or points[1][1] <= 0:
        return {}
    rps_1, p50_1 = points[1]
    return {users: (rps / rps_1, p50 / (users * p50_1)) for users, (rps, p50) in points.items()}


def profile_rows(
    rows: pd.DataFrame, run: Path | None, store_mode: str, page: dict[int, tuple[float, ...]]
) -> pd.DataFrame:
    """One sweep in the page's layout (rows: the end-to-end steps with users, rps, p50_ms, p99_ms and step)."""
    if rows.empty:
        return pd.DataFrame()
    raw, raw_sides = rows, sides_cpu_by_step(run)
    p95, rss = anchor_pooled(rows, p95_by_step(run, str(rows.iloc[0]["request_type"])), service_rss_by_step(run))
    by_side, load = pooled_sides(raw_sides, rows), load_average(run)
    rows = fold_anchor(rows).sort_values("users")
    page_shape = shape_of({users: (figures[0], figures[1]) for users, figures in page.items()})
    cpu = {step: sides["kneo-serv"] for step, sides in by_side.items() if "kneo-serv" in sides}
    page_p95 = PAGE_P95.get(store_mode, {})
    out = []
    for position, (_, step) in enumerate(rows.iterrows()):
        users = int(step["users"])
        figures = page.get(users, (None, None, None, None))
        row: dict[str, Any] = {"Store / mode": store_mode if position == 0 else "", "Concurrency": users}
        row[SAMPLES] = as_number(step.get("requests"))  # under what the shape's tolerance needs: "few samples"
        absolute(row, "runs/s", step["rps"], figures[0], rate)
        absolute(row, "p50", step["p50_ms"], figures[1], ms)
        absolute(row, "p95", p95.get(int(step["step"])), page_p95.get(users), ms)
        absolute(row, "p99", step["p99_ms"], figures[2], ms)
        absolute(row, "Peak RSS", rss.get(int(step["step"])), figures[3], lambda v: f"{float(v):.0f} MiB")
        if users == 1:
            for label in (FLAT, LINEAR):  # the order ``beside`` writes, so the columns line up with the other rows
                row[label], row[f"page {label}"], row[f"{label} x"] = ANCHOR, ANCHOR, ""
            steps = str(step.get(STEPS, "")).split()
            row[READ_AGAINST] = f"c=1 steps {', '.join(steps)} pooled" if len(steps) > 1 else ""
        else:
            anchor = anchor_at(raw, raw_sides, int(step["step"]))
            mine: tuple[float | None, float | None] = (None, None)
            if anchor is not None and anchor.rps > 0 and anchor.p50_ms > 0:
                mine = (float(step["rps"]) / anchor.rps, float(step["p50_ms"]) / (users * anchor.p50_ms))
            theirs = page_shape.get(users, (None, None))
            beside(row, FLAT, mine[0], theirs[0], shown_ratio, tolerance=FLAT_TOLERANCE)
            beside(row, LINEAR, mine[1], theirs[1], shown_ratio, tolerance=LINEAR_TOLERANCE)
            row[READ_AGAINST] = "" if anchor is None else anchor.text()
            strays = outside(mine[0], theirs[0], FLAT_TOLERANCE) or outside(mine[1], theirs[1], LINEAR_TOLERANCE)
            if strays and anchor is not None:
                at_step = (cpu.get(int(step["step"])), float(step["rps"]))
                at_1 = (anchor.sides.get("kneo-serv"), anchor.rps)
                why = cpu_why(users, at_step, at_1, load, others_1=other_sides(anchor.sides))
                if anchor.bracket is not None and anchor.bracket.drifted(FLAT_TOLERANCE):
                    why = bracket_why(anchor.bracket) + (f"; {why}" if why else "")
                row[WHY] = why
        out.append(row)
    return pd.DataFrame(out)


def anchor_pooled(
    rows: pd.DataFrame, p95: dict[int, float], rss: dict[int, float]
) -> tuple[dict[int, float], dict[int, float]]:
    """Per-step p95 and peak RSS with a sweep's concurrency-1 steps pooled under the first one's step: p95 weighted by
    each step's runs (as ``fold_anchor`` pools p50), the peak the higher."""
    blocks = anchor_blocks(rows)
    steps = [int(step) for step in blocks["step"]] if not blocks.empty else []
    if len(steps) < 2:
        return p95, rss
    p95, rss = dict(p95), dict(rss)
    runs = dict(zip(steps, pd.to_numeric(blocks["requests"]).astype(float), strict=True))
    if all(step in p95 for step in steps) and sum(runs.values()) > 0:
        p95[steps[0]] = sum(p95[step] * runs[step] for step in steps) / sum(runs.values())
    if any(step in rss for step in steps):
        rss[steps[0]] = max(rss[step] for step in steps if step in rss)
    return p95, rss


def anchor_note(rows: pd.DataFrame, run: Path | None, store_mode: str) -> str | None:
    """The sweep's anchor said once: its concurrency-1 steps and whether neighbouring ones agree (None with one)."""
    if len(anchor_blocks(rows)) < 2:
        return None
    return bracket_note(store_mode, rows, sides_cpu_by_step(run), FLAT_TOLERANCE)


WHY = "why it does not hold"
#: kneo-serv's one process at or above this share of a core at both steps: its CPU is the ceiling at both
CPU_CEILING_SHARE = 75.0


def outside(mine: Any, theirs: Any, tolerance: float) -> bool:
    """The ratio as the index shows and grades it (``1.10x``) past ``tolerance``: a row graded amber says why."""
    shown = ratio_of(times(mine, theirs)) if mine is not None and theirs is not None else None
    return shown is not None and abs(shown - 1.0) > tolerance


def sides_cpu_by_step(run: Path | None) -> dict[int, dict[str, float]]:
    """Each step's CPU per side (% of a core; kneo-serv's processes summed): the resource sampler's, as the store
    rows'."""
    from swarmgauge.reports.index_kneo_rows import cpu_by_side, read_resources

    return cpu_by_side(read_resources(run))


def other_sides(sides: dict[str, float]) -> dict[str, float]:
    """The generator's and PostgreSQL's CPU (% of a core) of ``sides``, those the sampler saw."""
    return {side: sides[side] for side in ("generator", "PostgreSQL") if side in sides}


def idle_at_1(users: int, share_1: float, rps_1: float, others_1: dict[str, float]) -> str:
    """A concurrency-1 run split into kneo-serv's CPU and the time it waited, and that wait into the generator's CPU
    and PostgreSQL's (``others_1``: % of a core at 1, each side the sampler saw) and the rest: at 1 each is on every
    run's path, at ``users`` other runs fill the wait. ``benchmarks/kneo_c1_gap.py`` splits the rest further: a
    ``/livez`` round trip waits about 0.3 ms, so on SQLite most of it is the store's commit."""
    if "generator" not in others_1 or rps_1 <= 0:
        return ""
    wall, cost = 1000.0 / rps_1, cpu_ms_a_run(share_1, rps_1)
    idle = wall - cost
    parts = {"the generator's": cpu_ms_a_run(others_1["generator"], rps_1)}
    if "PostgreSQL" in others_1:
        parts["PostgreSQL's"] = cpu_ms_a_run(others_1["PostgreSQL"], rps_1)
    shown = ", ".join(f"{value:.1f} {side} CPU" for side, value in parts.items())
    rest = max(0.0, idle - sum(parts.values()))
    return (
        f"; at 1 a run took {wall:.1f} ms, kneo-serv computing {cost:.1f} and waiting {idle:.1f} of them ({shown}, "
        f"{rest:.1f} no side computing: loopback, the store's I/O, hand-offs, a wait for a core), a wait the runs in "
        f"flight at {users} fill"
    )


def load_average(run: Path | None) -> float | None:
    from swarmgauge.reports.index_kneo_rows import load_average_of

    return load_average_of(run)


def cpu_why(
    users: int,
    at_step: tuple[float | None, float],
    at_1: tuple[float | None, float],
    load: float | None = None,
    cores: int | None = None,
    *,
    others_1: dict[str, float] | None = None,
) -> str:
    """Why a sweep row strays from the page's shape, from kneo-serv's CPU at the step and at concurrency 1: where its
    one process is near a core at both, runs/s is its share of a core over its CPU a run, and those are what moved
    (this machine's, not the store's shape): "machine-bound" with both figures. With the other sides' CPU at 1
    (``others_1``), the concurrency-1 run's wait is split too (``idle_at_1``)."""
    (share, rps), (share_1, rps_1) = at_step, at_1
    if share is None or share_1 is None or rps <= 0 or rps_1 <= 0:
        return ""
    cost, cost_1 = cpu_ms_a_run(share, rps), cpu_ms_a_run(share_1, rps_1)
    shown = (
        f"kneo-serv {share:.0f} % of a core, {cost:.1f} ms of CPU a run at {users}; {share_1:.0f} %, "
        f"{cost_1:.1f} ms at 1"
    )
    waited = idle_at_1(users, share_1, rps_1, others_1 or {})
    cores = cores or os.cpu_count() or 1
    if load is not None and load - max(share, share_1) / 100 >= cores:
        return f"machine-bound: others filled the machine (load average {load:.1f} on {cores} cores): {shown}{waited}"
    if min(share, share_1) < CPU_CEILING_SHARE:
        return shown + waited
    return (
        f"machine-bound: {shown}: its one process runs one sync run at a time near a full core at both, so runs/s is "
        f"its share of a core over its CPU a run; between the steps the share moved {share / share_1 - 1:+.0%} and "
        f"the CPU a run {cost / cost_1 - 1:+.0%}, both this machine's, not the store's shape{waited}"
    )


def sweep_note(rows: pd.DataFrame, run: Path | None, store_mode: str) -> str | None:
    """When a sweep's best step's runs/s rises past half the flat tolerance over its anchor (the concurrency-1 steps
    just before and after it), what kneo-serv's CPU did: its share of a core and its CPU a run at both (the one
    process is the ceiling throughout)."""
    from swarmgauge.reports.index_kneo_rows import cpu_by_side, read_resources

    if rows.empty or 1 not in set(rows["users"].astype(int)):
        return None
    by_side = cpu_by_side(read_resources(run))
    top = max((r for _, r in rows.iterrows() if int(r["users"]) != 1), key=lambda r: float(r["rps"]), default=None)
    anchor = None if top is None else anchor_at(rows, by_side, int(top["step"]))
    if top is None or anchor is None or anchor.rps <= 0 or float(top["rps"]) / anchor.rps <= 1 + FLAT_TOLERANCE / 2:
        return None
    text = (
        f"{store_mode}: runs/s rises {float(top['rps']) / anchor.rps - 1:.0%} from concurrency 1 to "
        f"{int(top['users'])} ({anchor.text()}) where the page's stays flat (the page's harness calls the platform "
        "in-process; here each run is an HTTP request to one kneo-serv process)"
    )
    sides = [
        (1, anchor.sides.get("kneo-serv"), anchor.rps),
        (int(top["users"]), by_side.get(int(top["step"]), {}).get("kneo-serv"), float(top["rps"])),
    ]
    known = [(users, share, rps) for users, share, rps in sides if share is not None]
    if len(known) == len(sides):
        shown = [
            f"{share:.0f} % of a core, {cpu_ms_a_run(share, rps):.1f} ms of CPU a run at {users}"
            for users, share, rps in known
        ]
        text += f": kneo-serv at {'; '.join(shown)}"
    return text + "."


#: ru_maxrss (MiB) after each import, measured once in kneo-serv 1.2.0's venv (CPython 3.12.1, psycopg 3.3.9 with its
#: binary libpq, FastAPI 0.140.0, uvicorn 0.55.0), in this order: what the process holds before it serves anything
IMPORT_RSS_MIB = {
    "the bare interpreter": 9,
    "the stdlib it uses": 21,
    "psycopg and libpq": 35,
    "pydantic and kneo-agent": 42,
    "the platform with both stores (the page's harness path)": 54,
    "FastAPI and uvicorn": 62,
    "the service app": 67,
}
#: the page's Peak RSS column: every shape of its profile between these (MiB), a 3.6 % spread; its text says
#: "~56–59 MiB across every shape" and calls that flat: a spread of at most 5.4 % (59 / 56) is the page's flat, a
#: flatter one too; past it amber to twice that, red beyond (``index_grades``' rule for a page's own bound)
PAGE_RSS_RANGE = (56.0, 58.0)
PAGE_RSS_FLAT_SPREAD = round((59.0 / 56.0 - 1.0) * 100, 1)


def service_rss_series(run: Path | None) -> pd.Series:
    """kneo-serv's own RSS (MiB) per sampling round, its processes summed, in round order (the first sample is taken
    before the first run)."""
    if run is None or not (run / "resources.csv").is_file():
        return pd.Series(dtype=float)
    samples = pd.read_csv(run / "resources.csv")
    service = samples[
        (samples["metric"] == "rss_bytes") & samples["source"].astype(str).str.contains("kneo-serv-", regex=False)
    ]
    return service.groupby("round")["value"].sum().sort_index() / MIB


def rss_shape_rows(runs: dict[str, Path | None], workloads: tuple[str, ...]) -> pd.DataFrame:
    """The page's RSS claim is a shape, "flat (~56–59 MiB) across every shape": kneo-serv's peak per shape (each sync
    step, the queue batch), their spread beside the page's 58 / 56 (graded against its text's 59 / 56), and the growth
    under load (peak over the RSS before the first run; the page gives no idle figure, so it has no ratio)."""
    peaks: list[float] = []
    first: list[float] = []
    for workload in workloads:
        run = runs.get(workload)
        peaks += list(service_rss_by_step(run).values())
        series = service_rss_series(run)
        if not series.empty:
            first.append(float(series.iloc[0]))
    if not peaks:
        return pd.DataFrame()
    low, high = min(peaks), max(peaks)
    rows = [
        figure(
            f"Peak RSS spread over {len(peaks)} shapes, highest ÷ lowest - 1 ({low:.0f} to {high:.0f} MiB)",
            (high / low - 1.0) * 100,
            (PAGE_RSS_RANGE[1] / PAGE_RSS_RANGE[0] - 1.0) * 100,
            lambda v: f"{float(v):.1f} %",
            at_most=PAGE_RSS_FLAT_SPREAD,
        )
    ]
    if first:
        idle = min(first)
        rows.append(
            {
                "figure": f"growth under load: highest peak over the RSS before the first run ({idle:.0f} MiB)",
                "measured": f"+{high - idle:.0f} MiB",
                "page": "",
            }
        )
    return pd.DataFrame(rows)


def rss_note(run: Path | None) -> str | None:
    """What the Peak RSS column's difference from the page's is: the page's harness drives the platform in-process,
    here the whole HTTP service runs; the served process's RSS before its first run (the sampler's first sample)."""
    if run is None or not (run / "resources.csv").is_file():
        return None
    samples = pd.read_csv(run / "resources.csv")
    service = samples[
        (samples["metric"] == "rss_bytes") & samples["source"].astype(str).str.contains("kneo-serv-", regex=False)
    ].sort_values("round")
    if service.empty:
        return None
    before, peak = float(service["value"].iloc[0]) / MIB, float(service["value"].max()) / MIB
    imports = ", ".join(f"{what} {mib} MiB" for what, mib in IMPORT_RSS_MIB.items())
    return (
        f"Peak RSS is kneo-serv's own process (the PostgreSQL cluster, sampled beside it, is left out), and it is the "
        f"build, not the load: {before:.0f} MiB before the first run against the page's 56-58 MiB peak. The page's "
        "harness drives PlatformManager in-process (CPython 3.12.3); here `kneo service serve` runs the whole HTTP "
        f"service (CPython 3.12.1). Imports alone in kneo-serv's venv, each figure with all before it: {imports}; the "
        "rest is the served process's start-up (event loop, worker pool, store connection). Its runs added "
        f"{peak - before:.0f} MiB, so the absolute is shown beside the page's, not graded; the page's shape, flat "
        "across every shape, is graded."
    )
