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

#: One Worker's time per read (the demo's ``--worker-read-us``): one Worker serves at most about 960 reads/s, the
#: page's 926 at 1,000 devices and 994 at 2,000, where its one core limits the saturation.
WORKER_READ_US = 1040
LANE_READS_PER_S = int(round(1e6 / WORKER_READ_US, -1))
#: The Gateway's time per device read (the demo's ``--gateway-read-us``): one process serves every Worker's reads, so
#: past one Worker it caps them, at about 1,610 reads/s. Fitted between the page's 2- and 4-Worker figures (1,479 and
#: 1,766: 0.92x and 1.10x of it); the page names no cause past one Worker, and its Kernel stayed under 32 % of a core.
#: Without it the rate past one Worker was what the stand-in got of the 2 cores: 1,537 reads/s at 2,000 / 4 on a host
#: at about the reference's speed, 2,244 to 2,312 at 0.7x (1.27x to 1.31x the page's).
GATEWAY_READ_US = 620
GATEWAY_READS_PER_S = int(round(1e6 / GATEWAY_READ_US, -1))
WORKER_LANE = (
    f"--worker-read-us {WORKER_READ_US}: one Worker serves at most about {LANE_READS_PER_S} reads/s, as the page's "
    "one core"
)
GATEWAY_LANE = (
    f"--gateway-read-us {GATEWAY_READ_US}: the Gateway serves at most about {GATEWAY_READS_PER_S:,} reads/s whatever "
    "the Workers, fitted between the page's 2- and 4-Worker figures (the page names no cause past one Worker)"
)
GAIN_LANES = (
    f"the ratio of the stand-in's two caps: --gateway-read-us {GATEWAY_READ_US} over --worker-read-us "
    f"{WORKER_READ_US} (about {GATEWAY_READS_PER_S:,} / {LANE_READS_PER_S} reads/s)"
)


def workers_of(run: str) -> int:
    """The Workers of a fleet or reads run, from its name (``fleet-2000x4``, ``reads-1000x2``)."""
    return int(run.rsplit("x", 1)[1])


def read_cap(run: str) -> tuple[int, str, str]:
    """(reads/s, the setting, the lane's name) that caps a run's saturation reads: one Worker's lane, or past one
    the Gateway's."""
    workers = workers_of(run)
    if workers == 1:
        return LANE_READS_PER_S, WORKER_LANE, "one Worker's lane"
    return min(workers * LANE_READS_PER_S, GATEWAY_READS_PER_S), GATEWAY_LANE, "the Gateway's lane"


def short_of_cap_why(rps: float, cap: int, load: dict[str, Any]) -> str:
    """Why a capped rate strays with the machine not bound: it read below or above what its setting lets through."""
    side = "below" if rps < cap else "above"
    return (
        f"{rps:,.0f} reads/s is {side} the setting's cap of about {cap:,}, with the machine not bound "
        f"({machine_text(load)}): the stand-in's own processes, not its lanes, set this rate"
    )


GAIN_WHY = "a side of the pair strayed from its cap (its row above says why)"


#: saturation reads/s -> the page's figure
THROUGHPUT = {
    "reads-1000x1": ("1,000 devices / 1 Worker", 926.0),
    "reads-1000x2": ("1,000 devices / 2 Workers", 1479.0),
    "fleet-2000x1": ("2,000 devices / 1 Worker", 994.0),
    "fleet-2000x4": ("2,000 devices / 4 Workers", 1766.0),
}
SCALING = (
    ("reads-1000x1", "reads-1000x2", "1,000 devices, 2 Workers over 1"),
    ("fleet-2000x1", "fleet-2000x4", "2,000 devices, 4 Workers over 1"),
)


def _bound_text(run: str, reads: pd.Series, load: dict[str, Any]) -> str:
    """What bounded the saturation reads: the machine, the lane that caps them (reads wait their turn there), the
    readers (each waits its read, and a closed loop's rate is always readers over wait: the lane comes first), or
    neither (the stand-in)."""
    users = int(pd.to_numeric(reads.get("users"), errors="coerce") or 0)
    p50 = float(pd.to_numeric(reads.get("p50_ms"), errors="coerce") or 0.0)
    rps = float(reads["rps"])
    cap, _, lane = read_cap(run)
    if load["bound"]:
        return machine_text(load)
    if rps >= 0.9 * cap:
        return f"{lane} (about {cap:,} reads/s; reads waited {p50:.0f} ms at p50), " + machine_text(load)
    if users and p50 and rps >= 0.9 * users / (p50 / 1000.0):
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
        # one run each on the page, a single workstation: a quarter either way; the cap is a lane's setting
        cap, set_by, _ = read_cap(name)
        label = f"{label}: saturation reads/s ({readers:,} readers)"
        row = figure(label, reads["rps"], page, rate, tolerance=0.25, set_by=set_by)
        row["bound by"] = (
            needs_text(needs, page, "reads/s", load) if short and needs else _bound_text(name, reads, load)
        )
        if bound[name] and misses(row):
            row = unjudged(row, "machine-bound")
        elif misses(row):
            row[WHY] = short_of_cap_why(rps, cap, load)
        rows.append(row)
    for one, more, label in SCALING:
        if one not in measured or more not in measured:
            continue
        gain = measured[more] / measured[one] if measured[one] else None
        page_gain = THROUGHPUT[more][1] / THROUGHPUT[one][1]
        machine = bound[one] or bound[more]
        # the page's gains (1.60x, 1.78x) from one run each: a quarter either way
        row = figure(label, gain, page_gain, lambda v: f"{float(v):.2f}x", tolerance=0.25, set_by=GAIN_LANES)
        row["bound by"] = "machine-bound (a run of the pair)" if machine else ""
        if machine and misses(row):
            row = unjudged(row, "machine-bound")
        elif misses(row):
            row[WHY] = GAIN_WHY
        rows.append(row)
        holds = gain is not None and gain >= 1.2 and not (machine and misses(row))
        checks.append(
            Check(holds, f"{label}: {gain or 0:.2f}x (page {page_gain:.2f}x){', machine-bound' if machine else ''}")
        )
    return rows, checks
