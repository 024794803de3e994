"""The queue row's figures from the store itself: how fast a dispatched batch drained, and how long each run waited.

The kneo-serv page's queue mode dispatches a batch and watches the worker pool drain it; its per-run latency is
submit to terminal, so mostly queue wait. Polling hundreds of runs from the generator would load the one service
process that also drains them, so the times come from the rows: ``created_at`` (stamped when the run is saved at
dispatch) and ``completed_at`` (stamped when it reaches a terminal status), both ISO-8601 in ``runs.payload``.

The backlog comes from the rows too: a run's first trace event is stamped when a worker starts executing it (its
``started_at`` is stamped at dispatch, before the enqueue), so a run is queued from ``created_at`` to that stamp,
and the highest count of such overlaps is the backlog's peak at every instant, not only where a sampler read the
``kneo_runs_queued`` gauge.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from swarmgauge.targets.kneo.store import query

_SQLITE_TIMES = (
    "SELECT json_extract(payload, '$.created_at'), json_extract(payload, '$.completed_at'), status, "
    "json_extract(payload, '$.metadata.trace.events[0].timestamp') FROM runs "
    "WHERE json_extract(payload, '$.metadata.caller_metadata.swarmgauge_run') = ?"
)
_POSTGRES_TIMES = (
    "SELECT payload::jsonb ->> 'created_at', payload::jsonb ->> 'completed_at', status, "
    "payload::jsonb #>> '{metadata,trace,events,0,timestamp}' FROM runs "
    "WHERE payload::jsonb #>> '{metadata,caller_metadata,swarmgauge_run}' = %s"
)

#: (created_at, completed_at, status) and, when the store has it, the first trace event's stamp (execution start)
Times = tuple[str | None, ...]


def read_times(locator: str, tag: str, *, connect_timeout: float = 5.0) -> list[Times]:
    """(created_at, completed_at, status, first trace event's stamp) of every row tagged ``tag``."""
    return [tuple(row) for row in query(locator, (_SQLITE_TIMES, _POSTGRES_TIMES), tag, connect_timeout)]


def _stamp(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _percentile(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def peak_queued(queued: list[tuple[float, float]]) -> int:
    """The most runs queued at once: each (saved, started) span counts from its save until its start."""
    edges = sorted([(start, 1) for start, _ in queued] + [(begun, -1) for _, begun in queued])
    peak = waiting = 0
    for _, step in edges:  # at equal stamps a start (-1) sorts before a save (+1): a run handed over is not queued
        waiting += step
        peak = max(peak, waiting)
    return peak


def drain_figures(times: Iterable[Times]) -> dict[str, Any]:
    """Runs finished, the drain's length and rate (first save to last terminal stamp), the per-run wait (save to
    terminal) at p50/p95/p99 in ms, and the peak of runs saved but not yet started (``peak_queued``, None when the
    store keeps no start stamp); rows without both stamps are counted as ``unfinished``."""
    spans = []
    queued = []
    unfinished = 0
    for created, completed, *more in times:
        start, end = _stamp(created), _stamp(completed)
        begun = _stamp(more[1]) if len(more) > 1 else None
        if start is not None and begun is not None:
            queued.append((start, max(start, begun)))
        if start is None or end is None:
            unfinished += 1
            continue
        spans.append((start, end))
    figures: dict[str, Any] = {
        "runs": len(spans),
        "unfinished": unfinished,
        "drain_s": None,
        "runs_per_s": None,
        "wait_p50_ms": None,
        "wait_p95_ms": None,
        "wait_p99_ms": None,
        "peak_queued": peak_queued(queued) if queued else None,
    }
    if not spans:
        return figures
    drain_s = max(end for _, end in spans) - min(start for start, _ in spans)
    waits = sorted((end - start) * 1000 for start, end in spans)
    figures.update(
        drain_s=drain_s,
        runs_per_s=len(spans) / drain_s if drain_s > 0 else None,
        wait_p50_ms=_percentile(waits, 0.50),
        wait_p95_ms=_percentile(waits, 0.95),
        wait_p99_ms=_percentile(waits, 0.99),
    )
    return figures
