"""From sample rows to per-series trends, SLO term values and the one-line leak verdict.

Shared by the live listener (rows in memory) and the report (rows read back from ``resources.csv``). A series is
one (node, source, metric); the target's series are every source but the load generators' own (``generator``),
Locust's request counter (``locust``) and the whole machine's CPU (``machine``): ``OWN_SOURCES``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from swarmgauge.core.run_files import RESOURCES, names
from swarmgauge.core.trend import MIB, Trend, Warmup, format_bytes, trend

COLUMNS = tuple(names(RESOURCES))  # resources.csv, declared with meanings in swarmgauge/core/run_files.py
GENERATOR_SOURCE = "generator"
REQUESTS_SOURCE = "locust"
#: the whole machine's busy CPU (% of one core, every process together): who else used the cores a run shared
MACHINE_SOURCE = "machine"
#: the rows that are not a target's: never judged, never a target's CPU or memory
OWN_SOURCES = (GENERATOR_SOURCE, REQUESTS_SOURCE, MACHINE_SOURCE)
RSS_METRICS = ("rss_bytes", "process_resident_memory_bytes")
HEAP_METRICS = ("live_heap_bytes", "heap_inuse_bytes", "go_memstats_heap_inuse_bytes", "heap_alloc_bytes")
WORKING_SET_METRICS = ("working_set_bytes",)
LEAK_DELTA_BYTES = 50 * MIB  # the 2dph page's criterion: under 50 MiB growth after warm-up
GCTRACE_SOURCE = "gctrace:"
MIN_GCS_FOR_VERDICT = 8  # a gctrace series' points are GCs: fewer after warm-up and the fit is the GC timing


@dataclass(frozen=True)
class Row:
    """One sample of one metric; ``step`` is the step index or None, ``round`` the node's sampling round."""

    time: float
    elapsed_s: float
    step: int | None
    node: str
    source: str
    metric: str
    value: float
    round: int

    def as_csv(self) -> list:
        return [
            f"{self.time:.3f}",
            f"{self.elapsed_s:.3f}",
            "" if self.step is None else self.step,
            self.node,
            self.source,
            self.metric,
            repr(float(self.value)),
            self.round,
        ]


@dataclass(frozen=True)
class SeriesTrend:
    node: str
    source: str
    metric: str
    trend: Trend

    @property
    def name(self) -> str:
        return f"{self.source} {self.metric}" + ("" if self.node in ("local", "master") else f" on {self.node}")


def series(
    rows: list[Row], metrics: tuple[str, ...], *, target_only: bool = True, step: int | None = None
) -> dict[tuple[str, str, str], tuple[list[float], list[float]]]:
    """``{(node, source, metric): (elapsed, values)}`` for the given metrics, sorted by time."""
    out: dict[tuple[str, str, str], tuple[list[float], list[float]]] = {}
    for row in sorted(rows, key=lambda r: r.elapsed_s):
        if row.metric not in metrics or (step is not None and row.step != step):
            continue
        if target_only and row.source in OWN_SOURCES:
            continue
        ts, vs = out.setdefault((row.node, row.source, row.metric), ([], []))
        ts.append(row.elapsed_s)
        vs.append(row.value)
    return out


def request_counts(rows: list[Row]) -> tuple[list[float], list[float]]:
    """The run's cumulative request count over time, as recorded by the master (or the local runner)."""
    picked = sorted((r.elapsed_s, r.value) for r in rows if r.source == REQUESTS_SOURCE)
    return [t for t, _ in picked], [v for _, v in picked]


def trends(
    rows: list[Row], metrics: tuple[str, ...], warmup: Warmup, *, step: int | None = None, target_only: bool = True
) -> list[SeriesTrend]:
    """Trend of each matching series after warm-up (the warm-up cut is taken over the whole run)."""
    req_t, req_n = request_counts(rows)
    found = []
    whole = series(rows, metrics, target_only=target_only)
    for key, (ts, vs) in series(rows, metrics, target_only=target_only, step=step).items():
        run_ts = whole[key][0]
        cut = warmup.cut(run_ts[0], run_ts[-1])
        kept = [(t, v) for t, v in zip(ts, vs) if t >= cut]
        result = trend([t for t, _ in kept], [v for _, v in kept], request_elapsed=req_t, request_counts=req_n)
        if result is not None:
            found.append(SeriesTrend(*key, result))
    return found


def worst(found: list[SeriesTrend], attribute: str) -> float | None:
    """The largest value of a trend attribute (slope, delta, maximum) over the series; None with no data."""
    values = [getattr(s.trend, attribute) for s in found if getattr(s.trend, attribute) is not None]
    return max(values) if values else None


def describe(item: SeriesTrend, warmup: Warmup) -> str:
    t = item.trend
    per_hour = "-" if t.slope_per_hour is None else f"{t.slope_per_hour / MIB:,.1f} MiB/h"
    per_1k = "" if t.slope_per_1k_requests is None else f", {t.slope_per_1k_requests / MIB:,.3f} MiB per 1,000 requests"
    return (
        f"{item.name}: {format_bytes(t.first)} -> {format_bytes(t.last)} (delta {format_bytes(t.delta)}) "
        f"over {t.span_s:,.0f} s after a warm-up of {warmup}; slope {per_hour}{per_1k}"
    )


def heap_trends(rows: list[Row], warmup: Warmup) -> tuple[list[SeriesTrend], str]:
    """Heap series to judge on, and a note on what was set aside.

    pprof/expvar (MemStats at every poll) are preferred to gctrace (a figure only at each GC) when both are sampled;
    a gctrace series with fewer than ``MIN_GCS_FOR_VERDICT`` GCs after warm-up is not judged at all.
    """
    found = [s for s in trends(rows, HEAP_METRICS, warmup) if s.trend.points >= 2]
    polled = [s for s in found if not s.source.startswith(GCTRACE_SOURCE)]
    if polled:
        note = "; gctrace set aside: pprof/expvar MemStats preferred" if len(polled) < len(found) else ""
        return polled, note
    enough = [s for s in found if s.trend.points >= MIN_GCS_FOR_VERDICT]
    if found and not enough:
        fewest = max(s.trend.points for s in found)
        return [], (
            f"only {fewest} GCs after warm-up in the gctrace series (a verdict needs "
            f"{MIN_GCS_FOR_VERDICT}); run longer or sample pprof/expvar"
        )
    return enough, ""


def leak_verdict(rows: list[Row], warmup: Warmup, threshold: float = LEAK_DELTA_BYTES) -> tuple[str | None, str]:
    """``("leak"|"no leak"|"inconclusive"|None, text)``: the verdict on the target's RSS (else heap), naming the slope.

    Growth under the threshold is "no leak" only when the slope would not carry it past the threshold within the
    hour; otherwise the run was too short to tell, and the verdict says "inconclusive" and how long to run."""
    found = [s for s in trends(rows, RSS_METRICS, warmup) if s.trend.points >= 2]
    note = ""
    if not found:
        found, note = heap_trends(rows, warmup)
    if not found:
        return None, "leak verdict: unknown - " + (
            note or "no target RSS or heap series with two samples after warm-up"
        )
    top = max(found, key=lambda s: s.trend.delta)
    if top.trend.delta > threshold:
        return "leak", f"leak verdict: LEAK (delta > {format_bytes(threshold)}) - {describe(top, warmup)}{note}"
    minutes = minutes_to_threshold(top.trend, threshold)
    if minutes is not None:
        return "inconclusive", (
            f"leak verdict: inconclusive (run too short to tell) - the growth so far is under "
            f"{format_bytes(threshold)}, but at this slope it passes {format_bytes(threshold)} within {minutes} min; "
            f"run longer than {minutes} min after warm-up to tell - {describe(top, warmup)}{note}"
        )
    return "no leak", f"leak verdict: no leak (delta <= {format_bytes(threshold)}) - {describe(top, warmup)}{note}"


def minutes_to_threshold(trend: Trend, threshold: float) -> int | None:
    """Minutes until the growth passes the threshold at the measured slope, when that is within the hour; else None.

    The page's criterion is growth after warm-up under the threshold; a 10 s run growing 2 MiB meets it while its
    slope, 720 MiB/h, says something else: such a run cannot tell a leak from none."""
    slope = trend.slope_per_hour
    if slope is None or slope <= 0:
        return None
    minutes = max(0.0, threshold - trend.delta) / slope * 60.0
    if minutes >= 60.0:
        return None
    return max(1, math.ceil(minutes))
