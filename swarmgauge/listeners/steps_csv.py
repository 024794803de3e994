"""Rows of ``steps.csv`` and ``timeline.csv`` from the master's merged step statistics."""

from __future__ import annotations

import csv
import io
import math
from array import array
from collections.abc import Iterable
from typing import Any

from swarmgauge.core.run_files import STEPS_BASE, STEPS_TAIL, TIMELINE, names
from swarmgauge.listeners.step_stats import AGGREGATED, NameStats, StepMerge, TimelinePoint

GENERATOR_BOUND_CPU = 90.0
STALLED_SHARE = 0.01  # a step is generator-stalled when the stall hit enough of its requests to reach its p99
BASE_COLUMNS = names(STEPS_BASE)  # declared once, with their meanings, in swarmgauge/core/run_files.py
TAIL_COLUMNS = names(STEPS_TAIL)
MIXED_BLANK = ("rps", "p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms", "avg_ms")
TIMELINE_COLUMNS = names(TIMELINE)


def _round(value: float | None, digits: int = 3) -> float | str:
    return "" if value is None else round(value, digits)


def _figures(stats: NameStats, duration: float | None) -> dict[str, Any]:
    rps = stats.requests / duration if duration and duration > 0 else None
    at = stats.percentiles_ms((50, 90, 99, 99.9))
    return {
        "requests": stats.requests,
        "failures": stats.failures,
        "unfinished": stats.unfinished,
        "fail_ratio": _round(stats.failures / stats.requests if stats.requests else None, 6),
        "rps": _round(rps),
        "p50_ms": _round(at.get(50)),
        "p90_ms": _round(at.get(90)),
        "p99_ms": _round(at.get(99)),
        "p999_ms": _round(at.get(99.9)),
        "max_ms": _round(stats.max_ms if stats.requests - stats.none_times else None),
        "avg_ms": _round(stats.avg_ms),
    }


def step_durations(infos: list[Any], stopped_at: float | None) -> dict[int, float | None]:
    """Measured seconds of each step, warm-up excluded: from its start to the next one (or the end of the run)."""
    durations: dict[int, float | None] = {}
    for position, info in enumerate(infos):
        end = infos[position + 1].started_at if position + 1 < len(infos) else stopped_at
        if not end:
            durations[info.index] = None
            continue
        span = end - info.started_at
        if info.duration:
            span = min(span, info.duration)
        durations[info.index] = max(0.0, span - (info.warmup or 0.0))
    return durations


def stalled_step(stalled_requests: int, requests: int) -> bool:
    """At least 1 % of a step's requests were in flight during a generator stall: its p99 may be the stall's."""
    return stalled_requests > 0 and stalled_requests >= STALLED_SHARE * requests


def step_rows(
    merged: StepMerge,
    infos: list[Any],
    stopped_at: float | None,
    counters: list[str],
    only_steps: set[int] | None = None,
) -> list[dict[str, Any]]:
    """The rows of every step, or of ``only_steps`` (a percentile is a walk over a histogram: a step that ended
    while others run is worked out alone)."""
    by_index = {info.index: info for info in infos}
    durations = step_durations(infos, stopped_at)
    counter_names = list(dict.fromkeys(list(counters) + sorted({name for (_s, name) in merged.counters})))
    rows: list[dict[str, Any]] = []
    chosen = set(merged.steps()) | set(by_index)
    for step in sorted(chosen if only_steps is None else chosen & only_steps):
        info = by_index.get(step)
        duration = durations.get(step)
        cpu = merged.cpu_max.get(step)
        common = {
            "step": step,
            "label": info.label if info else f"step {step}",
            "users": info.users if info and info.users is not None else "",
            "target_rate": info.rate if info and info.rate is not None else "",
            "started_at": _round(info.started_at if info else None),
            "duration_s": _round(duration),
            "warmup_requests": merged.warmup.get(step, 0),
        }
        tail = {
            **{name: merged.counter(step, name) for name in counter_names},
            "workers": merged.workers(step),
            "generator_cpu_max": _round(cpu, 1),
            "generator_bound": bool(cpu is not None and cpu > GENERATOR_BOUND_CPU),
            "generator_stall_ms": _round(merged.stall_ms.get(step), 1),
            "stalled_requests": merged.stalled.get(step, 0),
            "generator_stalled": stalled_step(merged.stalled.get(step, 0), merged.aggregated(step).requests),
        }
        for rtype, name in merged.names(step):
            stats = merged.entries[(step, rtype, name)]
            rows.append({**common, "request_type": rtype, "name": name, **_figures(stats, duration), **tail})
        rtype, name = AGGREGATED
        rows.append({**common, "request_type": rtype, "name": name, **_aggregate(merged, step, duration), **tail})
    return rows


def _aggregate(merged: StepMerge, step: int, duration: float | None) -> dict[str, Any]:
    """The Aggregated row: counts over the step's operations, and a rate and latencies only where they mean one
    thing - a single request type. Handshakes riding along are never in it; FETCH + LOOKUP, or kneo's submit + poll
    + "run queued" (parts of one run), add up to a rate of nothing, so those cells stay empty."""
    figures = _figures(merged.aggregated(step), duration)
    if len(merged.operation_types(step)) > 1:
        figures.update({column: "" for column in MIXED_BLANK})
    return figures


def columns_of(rows: list[dict[str, Any]]) -> list[str]:
    extra = [c for row in rows for c in row if c not in BASE_COLUMNS and c not in TAIL_COLUMNS]
    return BASE_COLUMNS + list(dict.fromkeys(extra)) + TAIL_COLUMNS


def write_rows(rows: list[dict[str, Any]], columns: Iterable[str] | None = None) -> str:
    buffer = io.StringIO()
    fields = (
        list(columns)
        if columns is not None
        else (columns_of(rows) if rows and "step" in rows[0] else list(rows[0]) if rows else BASE_COLUMNS)
    )
    writer = csv.DictWriter(buffer, fieldnames=fields, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


class Timeline:
    """Closed ``timeline.csv`` buckets as columns of machine numbers, about 50 bytes a bucket.

    A run keeps one bucket a second for as long as it lasts; as objects in dicts they were ~310 bytes each, the
    generator's memory growing by ~27 MB a day (~4 MB a day as columns). A missing percentile is stored as NaN and
    read back as None.
    """

    def __init__(self) -> None:
        self.buckets = array("q")
        self.steps = array("q")
        self.requests = array("q")
        self.failures = array("q")
        self.p50_ms = array("d")
        self.p99_ms = array("d")

    def add(self, bucket: int, step: int, point: TimelinePoint) -> None:
        self.buckets.append(bucket)
        self.steps.append(step)
        self.requests.append(point.requests)
        self.failures.append(point.failures)
        self.p50_ms.append(math.nan if point.p50_ms is None else point.p50_ms)
        self.p99_ms.append(math.nan if point.p99_ms is None else point.p99_ms)

    def __len__(self) -> int:
        return len(self.buckets)

    def points(self) -> list[tuple[int, int, TimelinePoint]]:
        """(bucket, step, figures) of every closed bucket, in bucket order."""
        order = sorted(range(len(self.buckets)), key=self.buckets.__getitem__)
        return [
            (
                self.buckets[i],
                self.steps[i],
                TimelinePoint(self.requests[i], self.failures[i], _number(self.p50_ms[i]), _number(self.p99_ms[i])),
            )
            for i in order
        ]


def _number(value: float) -> float | None:
    return None if math.isnan(value) else value


def timeline_rows(timeline: Timeline, bucket_seconds: float) -> list[dict[str, Any]]:
    return [
        {
            "time": bucket * bucket_seconds,
            "step": step,
            "requests": point.requests,
            "failures": point.failures,
            "p50_ms": _round(point.p50_ms),
            "p99_ms": _round(point.p99_ms),
        }
        for bucket, step, point in timeline.points()
    ]
