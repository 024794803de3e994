"""One plot per page of the demo index: what the runs measured beside the page's own figures.

demarkus and kneo: the ramp's throughput and p50 against users, the page's points dashed and the measured solid;
brain: the memory lines before and after the fix (the stand-in's beside the page's, each on its own scale, since the
stand-in's leak per search is a setting); MDK: reads/s by fleet, the page's saturation throughput beside the runs'.
The data come from the workloads' run folders only; each function returns PNG bytes, or None when nothing ran.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from swarmgauge.reports.index_demarkus_reads import FRESH, LOOKUP, POOLED
from swarmgauge.reports.index_figures import MIB, read_json, read_steps, requests_of
from swarmgauge.reports.index_kneo_anchor import fold_anchor
from swarmgauge.reports.index_pages import KNEO, KNEO_RUNS, end_to_end
from swarmgauge.reports.plots import label_users_as_run

Runs = dict[str, Path | None]
#: (name, page's users -> figures (rate first, p50 second), measured rows with users, rps and p50_ms)
Series = tuple[str, dict[int, tuple[float, ...]], pd.DataFrame]

#: the MDK page's saturation reads/s by fleet (devices x Workers), from "Capacity and throughput"
MDK_READS_PER_S = {"1000x1": 926.0, "1000x2": 1479.0, "2000x1": 994.0, "2000x4": 1766.0}
#: the brain page's RSS lines: before the fix 13 searches took RSS from 147 MB to 6.8 GB; after it 1.79 to 1.82 GiB
#: over about 39,000 searches once warm (MiB)
BRAIN_PAGE_LINES = {"before-fix": ([0.0, 13.0], [140.2, 6485.0]), "after-fix": ([0.0, 39000.0], [1833.0, 1864.0])}
COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red")


def _png(figure: Figure) -> bytes:
    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    return buffer.getvalue()


def ramp_plot(title: str, unit: str, series: list[Series]) -> bytes | None:
    """Throughput (left) and p50 (right) against users: the page's points dashed, the measured solid, per series."""
    series = [(name, page, rows) for name, page, rows in series if not rows.empty]
    if not series:
        return None
    figure = Figure(figsize=(10.0, 3.8))
    rate_axis, latency_axis = figure.subplots(1, 2)
    for colour, (name, page, rows) in zip(COLOURS, series):
        users = sorted(page)
        for axis, column, index in ((rate_axis, "rps", 0), (latency_axis, "p50_ms", 1)):
            axis.plot(users, [page[u][index] for u in users], "o--", color=colour, mfc="none", label=f"{name}: page")
            axis.plot(rows["users"], rows[column], "s-", color=colour, label=f"{name}: measured")
    ticks = sorted({float(u) for _n, page, rows in series for u in [*page, *rows["users"]]})
    rate_axis.set(xscale="log", xlabel="users (concurrent workers)", ylabel=unit, title=f"{title}: throughput")
    latency_axis.set(xscale="log", yscale="log", xlabel="users (concurrent workers)", ylabel="p50 (ms)")
    latency_axis.set_title(f"{title}: p50")
    rate_axis.set_ylim(bottom=0)
    rate_axis.legend(fontsize=8)
    for axis in (rate_axis, latency_axis):
        label_users_as_run(axis, ticks)
        axis.grid(alpha=0.3)
    return _png(figure)


def demarkus_series(runs: Runs) -> list[Series]:
    """The reads ramp's series: pooled FETCH, a fresh connection per FETCH (dial included), LOOKUP."""
    pooled = requests_of(read_steps(runs.get("reads")), "FETCH")
    fresh = requests_of(read_steps(runs.get("fresh")), "FETCH+dial")  # dial included, as the page's tool times it
    lookup = requests_of(read_steps(runs.get("lookup")), "LOOKUP")
    return [("pooled FETCH", POOLED, pooled), ("fresh connection", FRESH, fresh), ("LOOKUP", LOOKUP, lookup)]


def demarkus_plot(runs: Runs) -> bytes | None:
    return ramp_plot("demarkus reads", "req/s", demarkus_series(runs))


def kneo_series(runs: Runs) -> list[Series]:
    """The sync sweeps' series, one per store, end to end (a run's whole request)."""
    series = []
    for workload, store_mode in KNEO_RUNS.items():
        steps = read_steps(runs.get(workload))
        if store_mode.endswith("/ sync") and not steps.empty and store_mode in KNEO:
            series.append((store_mode, KNEO[store_mode], fold_anchor(end_to_end(steps)).sort_values("users")))
    return series


def kneo_plot(runs: Runs) -> bytes | None:
    return ramp_plot("kneo-serv sync runs", "runs/s", kneo_series(runs))


def rss_by_searches(run: Path | None) -> pd.DataFrame:
    """The target's RSS (MiB) at each sampling round beside the searches done by then (``resources.csv``)."""
    if run is None or not (run / "resources.csv").is_file():
        return pd.DataFrame()
    samples = pd.read_csv(run / "resources.csv")
    rss = samples[(samples["metric"] == "rss_bytes") & ~samples["source"].isin(("generator", "locust"))]
    done = samples[(samples["source"] == "locust") & (samples["metric"] == "requests")]
    if rss.empty or done.empty:
        return pd.DataFrame()
    rss = rss.groupby("round")["value"].sum() / MIB
    done = done.groupby("round")["value"].max()
    return pd.DataFrame({"searches": done, "rss": rss}).dropna().sort_values("searches")


def straight(ends: tuple[list[float], list[float]], points: int = 60) -> tuple[list[float], list[float]]:
    """A straight line between two points, sampled densely so a log axis draws its true shape."""
    (x0, x1), (y0, y1) = ends
    xs = [x0 + (x1 - x0) * (i / (points - 1)) ** 3 for i in range(points)]
    return xs, [y0 + (y1 - y0) * (x - x0) / (x1 - x0) for x in xs]


def brain_plot(runs: Runs) -> bytes | None:
    lines = {name: rss_by_searches(runs.get(name)) for name in BRAIN_PAGE_LINES}
    if all(frame.empty for frame in lines.values()):
        return None
    figure = Figure(figsize=(10.0, 3.8))
    measured_axis, page_axis = figure.subplots(1, 2)
    for colour, (name, frame) in zip(COLOURS, lines.items()):
        if not frame.empty:
            measured_axis.plot(frame["searches"], frame["rss"], "s-", color=colour, ms=3, label=f"{name}: measured")
        xs, ys = straight(BRAIN_PAGE_LINES[name])
        page_axis.plot(xs, ys, "--", color=colour, label=f"{name}: page")
        page_axis.plot(*BRAIN_PAGE_LINES[name], "o", color=colour, mfc="none")
    measured_axis.set(ylabel="target RSS (MiB)", title="brain stand-in: RSS against searches")
    page_axis.set(ylabel="RSS (MiB)", title="the page's RSS lines (its two ends, joined)")
    for axis in (measured_axis, page_axis):
        axis.set(xscale="symlog", xlabel="searches done")
        axis.legend(fontsize=8)
        axis.grid(alpha=0.3)
        axis.set_ylim(bottom=0)
    return _png(figure)


def fleet_reads(run: Path) -> tuple[str, float] | None:
    """(devices x Workers, the run's highest telemetry reads/s of a step) of one MDK run folder."""
    doc = read_json(run / "mdk.json") or {}
    options = (read_json(run / "run.json") or {}).get("options") or {}
    profile = str(doc.get("profile") or options.get("mdk_profile") or "")
    steps = read_steps(run)
    if not profile or steps.empty or "name" not in steps:
        return None
    reads = steps[(steps["request_type"] == "MDK") & (steps["name"] == "telemetry")]
    if reads.empty:
        return None
    return profile.replace("cap-", "").replace("devices-", "x").replace("workers", ""), float(reads["rps"].max())


def fleets_measured(runs: Runs) -> dict[str, list[tuple[str, float]]]:
    """devices x Workers -> (workload, its highest reads/s) of each MDK run that read telemetry."""
    measured: dict[str, list[tuple[str, float]]] = {}
    for name, run in runs.items():
        found = fleet_reads(run) if run is not None else None
        if found:
            measured.setdefault(found[0], []).append((name, found[1]))
    return measured


def fleet_order(measured: dict[str, list[tuple[str, float]]]) -> list[str]:
    return sorted(set(measured) | set(MDK_READS_PER_S), key=lambda f: tuple(int(p) for p in f.split("x")))


def mdk_plot(runs: Runs) -> bytes | None:
    measured = fleets_measured(runs)
    if not measured:
        return None
    fleets = fleet_order(measured)
    figure = Figure(figsize=(10.0, 3.8))
    axis = figure.subplots()
    positions = range(len(fleets))
    axis.bar([p - 0.2 for p in positions], [MDK_READS_PER_S.get(f, 0.0) for f in fleets], 0.4, label="page", alpha=0.5)
    best = [max((v for _n, v in measured.get(f, [])), default=0.0) for f in fleets]
    axis.bar([p + 0.2 for p in positions], best, 0.4, label="measured (best run of the fleet)")
    axis.set_xticks(list(positions), [f"{f.replace('x', ' dev / ')} W" for f in fleets], fontsize=8)
    axis.set(ylabel="telemetry reads/s", title="MDK: reads/s by fleet (a missing bar: not run, or not on the page)")
    axis.legend(fontsize=8)
    axis.grid(alpha=0.3, axis="y")
    return _png(figure)


PLOTS: dict[str, Callable[[Runs], bytes | None]] = {
    "demarkus": demarkus_plot,
    "kneo": kneo_plot,
    "brain": brain_plot,
    "mdk": mdk_plot,
}


def describe(name: str) -> str:
    return {
        "demarkus": "the reads ramp: req/s and p50 against users, the page's points (dashed) beside the measured",
        "kneo": "the sync sweeps: runs/s and p50 against concurrency, the page's points (dashed) beside the measured",
        "brain": "the target's RSS before and after the fix: the stand-in's lines beside the page's",
        "mdk": "telemetry reads/s by fleet, the page's saturation figures beside the measured",
    }.get(name, "measured beside the page")
