"""The MDK index's saturation read throughput: reads/s per fleet beside the page's, what bounded each, and the
Workers' gain over one; a row the machine bounded is shown, not judged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from swarmgauge.reports.index_figures import Check, figure, rate, read_json, read_steps
from swarmgauge.reports.index_grades import misses
from swarmgauge.reports.index_mdk_burst import WHY
from swarmgauge.reports.index_mdk_machine import (
    SATURATION,
    machine_load,
    machine_text,
    needs_text,
    rate_needs,
    short_of_cores,
    step_row,
    unjudged,
)

#: what one Worker's lane lets through (``--worker-read-us 1040``): the cap of a one-Worker fleet's reads
LANE_READS_PER_S = 960


def open_lanes_why(workers: int, load: dict[str, Any]) -> str:
    """Why a many-Worker saturation rate strays from the page's with the machine not bound: no setting caps it (its
    lanes allow several times the page's), so it is what the stand-in's processes get of the 2 cores beside the
    generator, and it moves with the host's speed (at 2,000 / 4: 1,537 reads/s in a quiet run at about the reference's
    speed, 2,244 in a clean clone's run at 0.71x the reference's CPU)."""
    return (
        f"no setting caps {workers} Workers' reads (their lanes allow about {workers * LANE_READS_PER_S:,} reads/s "
        f"together), so the rate is what the stand-in's processes get of this machine's cores beside the generator "
        f"({machine_text(load)}): it moves with the host's speed (the opening's probe) and other load, and the "
        "page's figure is its own machine's"
    )


def workers_of(run: str) -> int:
    """The Workers of a fleet or reads run, from its name (``fleet-2000x4``, ``reads-1000x2``)."""
    return int(run.rsplit("x", 1)[1])


def gain_why(workers: int) -> str:
    """Why a Workers-over-one gain strays: its one-Worker side is the lane's setting, its other side is not capped."""
    return (
        f"one Worker's side is the lane's setting (about {LANE_READS_PER_S} reads/s) and {workers} Workers' side is "
        f"not capped (its row above says why), so the gain moves with the host's speed as that row does"
    )


#: saturation reads/s -> the page's figure
THROUGHPUT = {
    "reads-1000x1": ("1,000 devices / 1 Worker", 926.0),
    "reads-1000x2": ("1,000 devices / 2 Workers", 1479.0),
    "fleet-2000x1": ("2,000 devices / 1 Worker", 994.0),
    "fleet-2000x4": ("2,000 devices / 4 Workers", 1766.0),
}
#: one Worker's reads/s cap: the stand-in's lane per read (the demo's --worker-read-us), the page's one-core Worker
WORKER_LANE = (
    f"--worker-read-us 1040: one Worker serves at most about {LANE_READS_PER_S} reads/s, as the page's one core"
)
ONE_WORKER = ("reads-1000x1", "fleet-2000x1")
SCALING = (
    ("reads-1000x1", "reads-1000x2", "1,000 devices, 2 Workers over 1"),
    ("fleet-2000x1", "fleet-2000x4", "2,000 devices, 4 Workers over 1"),
)


def _bound_text(steps: pd.DataFrame, reads: pd.Series, load: dict[str, Any]) -> str:
    """What bounded the saturation reads: the machine, the readers (each waits its read), or neither (the stand-in)."""
    users = int(pd.to_numeric(reads.get("users"), errors="coerce") or 0)
    p50 = float(pd.to_numeric(reads.get("p50_ms"), errors="coerce") or 0.0)
    if load["bound"]:
        return machine_text(load)
    if users and p50 and float(reads["rps"]) >= 0.9 * users / (p50 / 1000.0):
        return f"{users} readers at {p50:.0f} ms a read: the readers, " + machine_text(load)
    return machine_text(load)


def throughput_rows(runs: dict[str, Path | None]) -> tuple[list[dict[str, Any]], list[Check]]:
    """Saturation reads/s per fleet and the Workers' gain, beside the page's; what bounded each beside it, and a
    machine-bound row shown, not judged."""
    rows, checks, measured, bound = [], [], {}, {}
    for name, (label, page) in THROUGHPUT.items():
        run = runs.get(name)
        steps = read_steps(run)
        reads = step_row(steps, SATURATION, "telemetry")
        if run is None or reads is None:
            continue
        doc = read_json(run / "mdk.json") or {}
        load = machine_load(run, doc)
        rps = float(reads["rps"])
        needs = rate_needs(run, doc, SATURATION, rps, page)
        short = short_of_cores(needs, rps, page, int(load["cores"]))
        measured[name], bound[name] = rps, load["bound"] or short
        readers = int(pd.to_numeric(reads.get("users"), errors="coerce") or 0)
        # one run each on the page, a single workstation: a quarter either way; one Worker's cap is the lane's setting
        set_by = WORKER_LANE if name in ONE_WORKER else None
        label = f"{label}: saturation reads/s ({readers:,} readers)"
        row = figure(label, reads["rps"], page, rate, tolerance=0.25, set_by=set_by)
        row["bound by"] = (
            needs_text(needs, page, "reads/s", load) if short and needs else _bound_text(steps, reads, load)
        )
        if bound[name] and misses(row):
            row = unjudged(row, "machine-bound")
        elif set_by is None and misses(row):
            row[WHY] = open_lanes_why(workers_of(name), load)
        rows.append(row)
    for one, more, label in SCALING:
        if one not in measured or more not in measured:
            continue
        gain = measured[more] / measured[one] if measured[one] else None
        page_gain = THROUGHPUT[more][1] / THROUGHPUT[one][1]
        machine = bound[one] or bound[more]
        # the page's gains (1.60x, 1.78x) from one run each: a quarter either way
        row = figure(label, gain, page_gain, lambda v: f"{float(v):.2f}x", tolerance=0.25, set_by=WORKER_LANE)
        row["bound by"] = "machine-bound (a run of the pair)" if machine else ""
        if machine and misses(row):
            row = unjudged(row, "machine-bound")
        elif misses(row):
            row[WHY] = gain_why(workers_of(more))
        rows.append(row)
        holds = gain is not None and gain >= 1.2 and not (machine and misses(row))
        checks.append(
            Check(holds, f"{label}: {gain or 0:.2f}x (page {page_gain:.2f}x){', machine-bound' if machine else ''}")
        )
    return rows, checks
