"""A locustfile the soak benchmark adds next to the real one with ``--tracemalloc``: where locust's memory goes.

It defines no users and no shape, only an init listener whose greenlet starts ``tracemalloc`` after the settle time
(so imports and warm-up are not traced), snapshots at ``start + BASELINE_SECONDS`` and near the end, and writes the
top growths by file and line plus the growth of ``gc`` object counts by type into the JSON file the benchmark named
in ``SWARMGAUGE_SOAK_PROBE``. Tracing costs CPU and memory: a traced run's RSS figures are not the benchmark's.
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import re
import sys
import tempfile
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

import gevent
from locust import events

PROBE_PATH_ENV = "SWARMGAUGE_SOAK_PROBE"
PROBE_START_ENV = "SWARMGAUGE_SOAK_PROBE_START"
PROBE_END_ENV = "SWARMGAUGE_SOAK_PROBE_END"
BASELINE_SECONDS = 60.0  # the first snapshot is a minute after tracing starts: minute 2 of a run settled at 1
TOP = 25
FRAMES = 1


def type_counts() -> Counter[str]:
    """How many objects ``gc`` tracks, by type name."""
    return Counter(type(o).__name__ for o in gc.get_objects())


def top_growths(before: tracemalloc.Snapshot, after: tracemalloc.Snapshot, top: int = TOP) -> list[dict[str, Any]]:
    """The ``top`` file:line sites whose live allocations grew most between the snapshots."""
    rows = []
    for stat in after.compare_to(before, "lineno")[:top]:
        frame = stat.traceback[0]
        rows.append(
            {
                "site": f"{frame.filename}:{frame.lineno}",
                "growth_kib": round(stat.size_diff / 1024, 1),
                "size_kib": round(stat.size / 1024, 1),
                "count_growth": stat.count_diff,
            }
        )
    return rows


def count_growths(before: Counter[str], after: Counter[str], top: int = TOP) -> list[dict[str, Any]]:
    """The ``top`` types whose live object count grew most."""
    diff = Counter({name: after[name] - before.get(name, 0) for name in after})
    return [{"type": name, "growth": n, "count": after[name]} for name, n in diff.most_common(top) if n > 0]


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks")
    ] + [("keepcost", ctypes.c_size_t)]


def allocator_figures() -> dict[str, float]:
    """glibc malloc's heap (in use, free inside it, mmapped) and pymalloc's arenas, in MiB: where RSS sits."""
    figures: dict[str, float] = {}
    try:
        mallinfo2 = ctypes.CDLL("libc.so.6").mallinfo2
        mallinfo2.restype = _MallInfo2
        info = mallinfo2()
        figures.update(
            malloc_heap_mib=info.arena / 2**20,
            malloc_in_use_mib=info.uordblks / 2**20,
            malloc_free_in_heap_mib=info.fordblks / 2**20,
            malloc_mmapped_mib=info.hblkhd / 2**20,
        )
    except (OSError, AttributeError):
        pass
    with tempfile.TemporaryFile() as captured:
        saved = os.dup(2)
        try:
            sys.stderr.flush()
            os.dup2(captured.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        captured.seek(0)
        text = captured.read().decode("ascii", "replace")
    for key, pattern in (
        ("pymalloc_arenas", r"# arenas allocated current\s*=\s*([\d,]+)"),
        ("pymalloc_blocks_mib", r"# bytes in allocated blocks\s*=\s*([\d,]+)"),
    ):
        found = re.search(pattern, text)
        if found:
            value = int(found.group(1).replace(",", ""))
            figures[key] = value / 2**20 if key.endswith("_mib") else value
    return {key: round(value, 3) for key, value in figures.items()}


def _probe(path: Path, start: float, end: float) -> None:
    gevent.sleep(start)
    tracemalloc.start(FRAMES)
    baseline = min(BASELINE_SECONDS, max(0.0, end - start) / 2)
    gevent.sleep(baseline)
    first, first_counts, first_allocator = tracemalloc.take_snapshot(), type_counts(), allocator_figures()
    gevent.sleep(max(0.0, end - start - baseline))
    last, last_counts, last_allocator = tracemalloc.take_snapshot(), type_counts(), allocator_figures()
    traced, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    result = {
        "traced_from_s": start,
        "baseline_at_s": start + baseline,
        "snapshot_at_s": end,
        "traced_mib": round(traced / 2**20, 2),
        "traced_peak_mib": round(peak / 2**20, 2),
        "top_growths": top_growths(first, last),
        "type_count_growths": count_growths(first_counts, last_counts),
        "allocator_at_baseline": first_allocator,
        "allocator_at_end": last_allocator,
    }
    path.write_text(json.dumps(result, indent=2))


@events.init.add_listener
def _start_probe(environment: Any, **_kwargs: Any) -> None:
    path = os.environ.get(PROBE_PATH_ENV)
    if path:
        start = float(os.environ.get(PROBE_START_ENV, "60"))
        end = float(os.environ.get(PROBE_END_ENV, "300"))
        gevent.spawn(_probe, Path(path), start, end)
