"""The index section of the MDK benchmark results page: the five fleets' verdicts, each figure beside the page's,
the read throughput pairs, the action burst and the three drills, and the page's rows not reproducible here.

A fleet's run (``swarmgauge/demo_mdk.py``) has the steps "one at a time", "saturation reads", "discover" and
"action burst"; its ``mdk.json`` holds the verdict inputs, each step's CPU per process (``cpu_by_step``, the
generator as ``generator``) and the load average. A fleet is "machine-bound" when the generator hit its own CPU
bound, the generator and the stand-in together used nearly the whole machine in a measured step, or the load average
less our own processes filled every core (others loading the shared machine). A bound machine only slows a fleet:
a verdict no worse than the page's, and not red, is graded as any; a worse or a red one says "machine-bound".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from swarmgauge.reports.index_figures import Check, PageSection, figure, ms, read_json, read_steps, run_json
from swarmgauge.reports.index_grades import MACHINE, RED, VERDICT_STEPS, misses
from swarmgauge.reports.index_mdk_burst import LANE_SETTING, WHY, burst_rows, percent, verdict_lag
from swarmgauge.reports.index_mdk_drills import drill_checks, drill_table
from swarmgauge.reports.index_mdk_machine import (
    BURST,
    PAGE_WORKER_CPU,
    machine_load,
    machine_text,
    step_row,
    unjudged,
    worker_cpu_why,
)
from swarmgauge.reports.index_mdk_notes import STAND_IN, TEN_DEVICE_WHY, WHY_ROWS
from swarmgauge.reports.index_mdk_reads import WORKER_LANE, throughput_rows
from swarmgauge.reports.index_mdk_unreproduced import NOT_REPRODUCIBLE
from swarmgauge.reports.mdk import ORDER, verdict_table

#: fleet run -> (the page's label, the page's verdict)
FLEETS = {
    "fleet-10x1": ("10 / 1", "amber"),
    "fleet-2000x1": ("2,000 / 1", "green"),
    "fleet-5000x1": ("5,000 / 1", "red"),
    "fleet-2000x4": ("2,000 / 4", "green"),
    "fleet-5000x5": ("5,000 / 5 (run 1)", "green"),
    "fleet-5000x5-ping": ("5,000 / 5 (run 2)", "red"),
}
#: set by the stand-in, per fleet (the settings that decide its verdict rather than a measurement)
FLEET_SET_BY = {
    "fleet-10x1": "200 readers on 10 devices against the stand-in's 10 s request timeout",
    "fleet-2000x1": "--query-concurrency 123 x --read-cost-ms 220-390: a 2,000-device sweep takes about 5 s",
    "fleet-5000x1": "--query-concurrency 123 x --read-cost-ms 220-390: a 5,000-device sweep takes about 12.4 s",
    "fleet-5000x5": "--health-phase-s 600: no health ping meets the burst (the page's green run by chance)",
    "fleet-5000x5-ping": "--health-ping-s 0.5: a health ping surely meets the burst (the page's red run by chance)",
}
#: why a fleet's verdict other than the page's cannot hold here, where the page's own figures say so
FLEET_WHY = {"fleet-10x1": TEN_DEVICE_WHY}
ONE_AT_A_TIME = "one at a time"
#: the one-at-a-time figures' tolerances (the demo's one-at-a-time mix gives each the requests these need): "about 220
#: to 390 ms at p50 in every profile" is +-28 % around its middle; a single accept's "about 3 to 4 ms", +-50 %; the
#: 2,000-device summary's one figure on a page whose one-at-a-time columns rest on 50 samples, a third either way
READ_TOLERANCE, ACCEPT_TOLERANCE, SUMMARY_TOLERANCE = 0.28, 0.5, 0.33
#: the page's one Worker CPU figure (one run, a Node.js process's): only its order of magnitude is comparable
WORKER_CPU_TOLERANCE = 0.5
READ_COST = "--read-cost-ms 220-390 (the stand-in mock's live snap read)"


#: the rows a fleet's verdict cannot do without (the RSS slope of a short run may be missing and not decide it)
DECIDING = ("Telemetry freshness (headroom)", "Action submit p99", "Rejected + timed out")


def _overall(verdicts: pd.DataFrame) -> str:
    """The worst measured row; "unknown" when a deciding row has no data (no collection cycle ended, no submits)."""
    by_row = dict(zip(verdicts["criterion"], verdicts["verdict"]))
    if any(by_row.get(name, "unknown") == "unknown" for name in DECIDING):
        return "unknown"
    known = [v for v in by_row.values() if v != "unknown"]
    return str(max(known, key=lambda c: ORDER.get(c, 1)))


def fleet_rows(runs: dict[str, Path | None]) -> tuple[list[dict[str, Any]], list[Check], dict[str, str]]:
    """The verdict table (one row per fleet run), a check per fleet, and each fleet's measured verdict."""
    rows, checks, measured = [], [], {}
    for name, (label, page) in FLEETS.items():
        run = runs.get(name)
        doc = read_json(run / "mdk.json") if run is not None else None
        if run is None or not isinstance(doc, dict):
            continue
        verdicts = verdict_table(run, doc)
        overall = _overall(verdicts)
        measured[name] = overall
        load = machine_load(run, doc)
        observed = dict(zip(verdicts["criterion"], verdicts["observed"]))
        cpu = doc.get("cpu_percent") or {}
        found, of = devices_read(run)
        # a machine that bounded the run only slows a fleet: a verdict no worse than the page's, and not red, stands;
        # a worse one or a red may be the machine's own, and is machine-bound
        machine_made = load["bound"] and (VERDICT_STEPS.get(overall, 2) > VERDICT_STEPS[page] or overall == RED)
        lag = verdict_lag(name, verdicts, doc, step_row(read_steps(run), BURST, "action")) if overall != page else ""
        machine_made = machine_made or bool(lag)
        holds = overall == page and not machine_made and found >= of
        rows.append(
            {
                "Devices / Workers": label,
                "page verdict": page,
                "verdict": overall,
                # graded against the page's verdict (``index_grades``): the same holds, a step off is amber
                "verdict x": MACHINE if machine_made else "",
                "headroom": observed.get("Telemetry freshness (headroom)", ""),
                "action p99": observed.get("Action submit p99", ""),
                "busiest process": observed.get("Steady CPU, busiest process", ""),
                "rejected + timed out": observed.get("Rejected + timed out", ""),
                "Kernel CPU": f"{cpu['kernel']:.0f} %" if "kernel" in cpu else "",
                "devices read": f"{found:,} of {of:,}{LISTED if listed_by_kernel(run) else ''}" if of else "",
                "machine": lag or machine_text(load),
                "set by": FLEET_SET_BY.get(name, ""),
            }
        )
        if overall != page and name in FLEET_WHY:
            rows[-1][WHY] = FLEET_WHY[name]
        text = f"{label}: {overall} (page {page})"
        if found < of:
            rows[-1]["verdict x"] = MACHINE
            text += f", only {found:,} of {of:,} devices answered the discovery before the load"
        checks.append(Check(holds, text + (f", {lag or machine_text(load)}" if machine_made else "")))
    return rows, checks, measured


#: beside a fleet's devices when its run took their ids from the stand-in Kernel's worker list (``--mdk-discover``)
LISTED = ", listed by the Kernel (none read before the load)"


def listed_by_kernel(run: Path) -> bool:
    """Whether the run's discovery before its load listed the ids from the Kernel rather than reading every device."""
    found = (read_json(run / "run.json") or {}).get("mdk_discovered_before_load")
    return isinstance(found, dict) and found.get("by") == "kernel"


def devices_read(run: Path) -> tuple[int, int]:
    """(devices that answered the run's discovery before its load, the fleet's devices); (0, 0) when the run did
    none. A fleet whose stand-in could not answer for every device ran smaller than the page's: said, never silent."""
    found = (read_json(run / "run.json") or {}).get("mdk_discovered_before_load")
    if not isinstance(found, dict):
        return 0, 0
    return int(found.get("devices") or 0), int(found.get("of") or 0)


def latency_rows(runs: dict[str, Path | None]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The page's latency figures per fleet (read, summary, single accept, acceptance under the burst) beside the
    page's; and apart, the figures measured here that the page gives none for."""
    rows: list[dict[str, Any]] = []
    extra: list[dict[str, Any]] = []
    for name, (label, _page) in FLEETS.items():
        run = runs.get(name)
        steps = read_steps(run)
        before = len(rows)
        doc = read_json(run / "mdk.json") if run is not None else None
        if name == "fleet-5000x1" and isinstance(doc, dict) and run is not None:
            rows += red_fleet_rows(label, doc, machine_load(run, doc))
        # a fleet whose one-at-a-time step ran has the page's rows even when a kind sent nothing in it (a discovery
        # that outlasted the step on a loaded machine): the page's figure, not measured, is red, never left out
        ran = not steps.empty and "label" in steps and bool((steps["label"] == ONE_AT_A_TIME).any())
        read = step_row(steps, ONE_AT_A_TIME, "telemetry")
        if read is not None or ran:
            rows.append(
                figure(
                    f"{label}: device read p50",
                    _p50(read),
                    305.0,
                    ms,
                    tolerance=READ_TOLERANCE,
                    set_by=READ_COST,
                    samples=_requests(read),
                    statistic="p50",
                )
            )
        summary = step_row(steps, ONE_AT_A_TIME, "summary")
        if summary is not None or (ran and name in SUMMARY_2000):
            rows_or_extra = rows if name in SUMMARY_2000 else extra
            rows_or_extra.append(
                summary_row(name, f"{label}: fleet summary p50", _p50(summary), samples=_requests(summary))
            )
        elif (discovery := step_row(steps, ONE_AT_A_TIME, "discover")) is not None:
            # a fleet whose step sends no summary past its users' discovery (5,000 devices): that one, cold, alone
            extra.append(figure(f"{label}: fleet summary, the users' first (cold)", discovery["p50_ms"], None, ms))
        accept = step_row(steps, ONE_AT_A_TIME, "action")
        if accept is not None or ran:
            # "about 3 to 4 ms" at every fleet size: the lane turn is a setting; the rest is Gateway and RPC hops
            rows.append(
                figure(
                    f"{label}: single action accept p50",
                    _p50(accept),
                    3.5,
                    ms,
                    tolerance=ACCEPT_TOLERANCE,
                    set_by=f"{LANE_SETTING} (the Kernel's lane turn)",
                    samples=_requests(accept),
                    statistic="p50",
                )
            )
        page_rows, measured_rows = burst_rows(name, label, steps, doc if isinstance(doc, dict) else None)
        rows += page_rows
        extra += measured_rows
        load = machine_load(run, doc) if isinstance(doc, dict) and run is not None else None
        for row in rows[before:]:
            row["machine"] = machine_text(load) if load and load["bound"] else row.get("machine", "")
            if ((load and load["bound"]) or row["machine"]) and misses(row):
                unjudged(row, "machine-bound")  # a figure that held on a full machine held: it keeps its grade
    return rows, extra


def _p50(measured: pd.Series | None) -> Any:
    return None if measured is None else measured["p50_ms"]


def _requests(measured: pd.Series | None) -> Any:
    return 0 if measured is None else measured.get("requests")


#: "A fleet summary at 2,000 devices took about 1.3 s at p50 on one site": the page names no Worker count, and its own
#: figures place it on the 4-Worker site. A summary is 2,000 parallel device reads (the harness's fleet-summary route:
#: listWorkers, then pullTelemetry(id, 'metrics') for every device at once, each through the Kernel to the device's
#: Worker, the snap channel read live, no cache of the summary), so it takes about 2,000 / the site's reads/s + one
#: read: at the page's 1,766 reads/s (2,000 / 4) 1.1 + 0.3 = 1.4 s, its "about 1.3 s"; at one Worker's 994 reads/s
#: (2,000 / 1) 2.0 + 0.3 = 2.3 s, a figure the page does not print, derived from its own and shown as derived.
SUMMARY_2000 = {
    "fleet-2000x4": ("about 1.3 s", 1300.0, None),
    "fleet-2000x1": ("2.32 s, derived: 2,000 reads at the page's 994 reads/s + one 305 ms read", 2320.0, WORKER_LANE),
}


def summary_row(name: str, label: str, measured: Any, *, samples: Any = None) -> dict[str, Any]:
    """A fleet summary's p50 beside the page's figure for that fleet (graded), or alone (the page gives none)."""
    if name not in SUMMARY_2000:
        return figure(label, measured, None, ms)
    shown, against, set_by = SUMMARY_2000[name]
    # a page whose one-at-a-time columns rest on 50 samples: a third either way; one Worker's figure follows from the
    # stand-in's Worker lane (fitted to the page's 994 reads/s), so it is set by that setting
    row = figure(
        label, measured, against, ms, tolerance=SUMMARY_TOLERANCE, set_by=set_by, samples=samples, statistic="p50"
    )
    row["page"] = shown
    return row


def red_fleet_rows(label: str, doc: dict[str, Any], load: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The page's red 5,000 / 1 figures: a 12.4 s cycle against the 10 s interval, its Worker at 108 % of a core;
    a Worker CPU short of the page's tolerance says why, with the run's numbers (``worker_cpu_why``)."""
    headroom = (doc.get("headroom") or {}).get("value")
    worker = max((v for k, v in (doc.get("cpu_percent") or {}).items() if k.startswith("worker")), default=None)
    # a Python stand-in's CPU, not Node.js's: only its order of magnitude is comparable
    cpu = figure(f"{label}: Worker CPU", worker, PAGE_WORKER_CPU, percent, tolerance=WORKER_CPU_TOLERANCE)
    if worker is not None and float(worker) < PAGE_WORKER_CPU * (1 - WORKER_CPU_TOLERANCE):
        cpu[WHY] = worker_cpu_why(doc, load, float(worker))
    return [
        # one run on the page; the stand-in's sweep is its concurrency x read cost, so a third either way
        figure(f"{label}: headroom", headroom, 1.24, _ratio, tolerance=0.33, set_by=FLEET_SET_BY["fleet-5000x1"]),
        cpu,
    ]


def _ratio(value: Any) -> str:
    return f"{float(value):.2f}"


def kernel_cpu_row(runs: dict[str, Path | None]) -> dict[str, Any] | None:
    """The Kernel's highest mean CPU over the fleets beside the page's "never more than about 32 % of one core"."""
    found = []
    for name in FLEETS:
        run = runs.get(name)
        doc = read_json(run / "mdk.json") if run is not None else None
        if isinstance(doc, dict) and "kernel" in (doc.get("cpu_percent") or {}):
            found.append(float(doc["cpu_percent"]["kernel"]))
    if not found:
        return None
    # the page's figure is a ceiling: anything from none to twice it is green; the stand-in is Python, not Node.js
    return figure("Kernel CPU, highest over the fleets", max(found), 32.0, percent, tolerance=1.0)


def mdk(runs: dict[str, Path | None]) -> PageSection:
    section = PageSection()
    fleets, checks, measured = fleet_rows(runs)
    if fleets:
        section.tables.append(("Capacity: the verdict per fleet (the page's thresholds)", pd.DataFrame(fleets)))
        section.checks += checks
    if "fleet-5000x5" in measured and "fleet-5000x5-ping" in measured:
        pair = sorted({measured["fleet-5000x5"], measured["fleet-5000x5-ping"]})
        text = f"5,000 / 5: {' and '.join(pair)} (page: one green, one red)"
        section.checks.append(Check(pair == ["green", "red"], text))
    latency, measured_here = latency_rows(runs)
    if latency:
        section.tables.append(("Latency: one at a time, and acceptance under 1,000 submits/s", pd.DataFrame(latency)))
    if measured_here:
        frame = pd.DataFrame(measured_here)[["figure", "measured"]]
        section.measured_only.append(("Latency measured here, the page gives none", frame))
    kernel = kernel_cpu_row(runs)
    if kernel is not None:
        section.tables.append(("Resource use", pd.DataFrame([kernel])))
    throughput, scaling = throughput_rows(runs)
    if throughput:
        section.tables.append(("Saturation read throughput", pd.DataFrame(throughput)))
        section.checks += scaling
    drills: list[dict[str, Any]] = []
    for name in ("worker-restart", "kernel-restart", "device-outage"):
        drills += (run_json(runs, name, "mdk_drills.json") or {}).get("drills") or []
    if drills:
        section.tables.append(("Failure drills (every time from the kill)", drill_table(drills)))
        section.checks += drill_checks(drills)
    section.notes.append(WHY_ROWS)
    section.not_reproducible += NOT_REPRODUCIBLE
    section.notes.append(STAND_IN)
    return section
