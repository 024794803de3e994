"""The MDK page's index section over hand-made fleet run folders: each fleet's verdict beside the page's, a fleet the
machine could not hold said as machine-bound with the generator's and the stand-in's CPU (and the load average when
others filled the machine), the 5,000 / 5 pair, the throughput gains, the one-at-a-time latencies, and every page
row no workload attempts listed with its reason."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from swarmgauge.reports import index_mdk
from swarmgauge.reports.index_mdk import mdk

COLUMNS = ["step", "label", "request_type", "name", "users", "target_rate", "requests", "failures", "rps"]
COLUMNS += ["p50_ms", "p99_ms", "generator_cpu_max", "generator_bound"]


@pytest.fixture(autouse=True)
def two_cores(monkeypatch):
    monkeypatch.setattr(index_mdk.os, "cpu_count", lambda: 2)


def row(step: int, label: str, name: str, requests: int, rps: float, p50: float, p99: float, **more) -> dict:
    return {
        "step": step,
        "label": label,
        "request_type": "MDK",
        "name": name,
        "users": 1,
        "requests": requests,
        "failures": 0,
        "rps": rps,
        "p50_ms": p50,
        "p99_ms": p99,
        "generator_cpu_max": 20.0,
        "generator_bound": False,
        **more,
    }


def fleet_run(
    folder: Path,
    name: str,
    headroom: float,
    generator: float = 10.0,
    stand_in: float = 40.0,
    load: float = 0.8,
    reads_rps: float = 450.0,
    burst: dict | None = None,
) -> Path:
    """A fleet's run folder: one at a time (step 0), saturation reads (2), the burst (5), and its mdk.json."""
    run = folder / name
    run.mkdir(parents=True)
    rows = [
        row(0, "one at a time", "telemetry", 20, 2.0, 310.0, 380.0),
        row(0, "one at a time", "summary", 5, 0.5, 1250.0, 1400.0),
        row(0, "one at a time", "action", 20, 2.0, 3.8, 9.0),
        row(2, "saturation reads", "telemetry", 4000, reads_rps, 420.0, 900.0),
        row(5, "action burst", "action", 3000, 1000.0, 40.0, 300.0, target_rate=1000, **(burst or {})),
    ]
    with open(run / "steps.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, restval="")
        writer.writeheader()
        writer.writerows(rows)
    cpu = {"mocks": stand_in / 2, "worker-0": stand_in / 2, "generator": generator}
    doc = {
        "headroom": {"value": headroom, "by_worker": {"worker-0": headroom}},
        "cpu_percent": {"mocks": stand_in / 2, "worker-0": stand_in / 2, "kernel": 3.0},
        "cpu_by_step": {"2": cpu, "5": cpu},
        "rejected_ratio": 0.0,
        "load_avg": load,
    }
    (run / "mdk.json").write_text(json.dumps(doc))
    return run


def table(section, title: str):
    return next(frame for heading, frame in section.tables if heading.startswith(title))


def test_each_fleet_is_beside_the_pages_verdict_at_the_pages_size(tmp_path):
    runs = {
        "fleet-2000x1": fleet_run(tmp_path, "fleet-2000x1", 0.62),
        "fleet-5000x1": fleet_run(tmp_path, "fleet-5000x1", 1.55),
    }
    section = mdk(runs)
    verdicts = table(section, "Capacity")
    assert list(verdicts["Devices / Workers"]) == ["2,000 / 1", "5,000 / 1"]
    assert list(verdicts["page"]) == ["green", "red"] and list(verdicts["verdict"]) == ["green", "red"]
    assert list(verdicts["shape"]) == ["holds", "holds"]
    assert "--query-concurrency 100" in verdicts["set by"].iloc[1]  # the red headroom is the stand-in's arithmetic
    assert [c.text for c in section.checks] == ["2,000 / 1: green (page green)", "5,000 / 1: red (page red)"]
    assert all(c.holds for c in section.checks)


def test_a_fleet_the_machine_cannot_hold_is_machine_bound_with_the_generators_and_the_stand_ins_cpu(tmp_path):
    runs = {"fleet-2000x1": fleet_run(tmp_path, "fleet-2000x1", 0.62, generator=70.0, stand_in=130.0, load=2.1)}
    section = mdk(runs)
    verdicts = table(section, "Capacity")
    assert verdicts["shape"].iloc[0] == "machine-bound"
    assert verdicts["machine"].iloc[0].startswith("machine-bound: generator 70 %, stand-in 130 % of a core")
    assert not section.checks[0].holds and "machine-bound" in section.checks[0].text


def test_others_loading_the_machine_make_a_fleet_machine_bound_and_say_the_load_average(tmp_path):
    runs = {"fleet-2000x1": fleet_run(tmp_path, "fleet-2000x1", 1.4, generator=10.0, stand_in=40.0, load=5.2)}
    machine = table(mdk(runs), "Capacity")["machine"].iloc[0]
    assert "load average 5.2 on 2 cores (others filled the machine)" in machine
    assert machine.startswith("machine-bound")


def test_the_5000_by_5_pair_holds_as_one_green_and_one_red_run(tmp_path):
    rejected = {"failures": 2500}
    runs = {
        "fleet-5000x5": fleet_run(tmp_path, "fleet-5000x5", 0.3),
        "fleet-5000x5-ping": fleet_run(tmp_path, "fleet-5000x5-ping", 0.3, burst=rejected | {"p99_ms": 2600.0}),
    }
    section = mdk(runs)
    assert list(table(section, "Capacity")["verdict"]) == ["green", "red"]
    assert section.checks[-1].text == "5,000 / 5: green and red (page: one green, one red)" and section.checks[-1].holds
    latency = table(section, "Latency")
    rejected_row = latency[latency["figure"].str.contains("ERR_WORKER_NOT_ROUTABLE")].iloc[0]
    assert rejected_row["measured"] == "83 %" and rejected_row["page"] == "83 %"


def test_one_at_a_time_latencies_and_the_burst_are_beside_the_pages_figures(tmp_path):
    latency = table(mdk({"fleet-2000x4": fleet_run(tmp_path, "fleet-2000x4", 0.2)}), "Latency")
    shown = {r["figure"]: (r["measured"], r["page"], r["x"]) for _, r in latency.iterrows()}
    assert shown["2,000 / 4: device read p50"] == ("310 ms", "305 ms", "1.02x")
    assert shown["2,000 / 4: fleet summary p50"] == ("1.25 s", "1.30 s", "0.96x")
    assert shown["2,000 / 4: single action accept p50"] == ("3.8 ms", "3.5 ms", "1.09x")
    assert shown["2,000 / 4: accept p50 at 1,000 submits/s"][0] == "40 ms"
    assert shown["2,000 / 4: accepted submits of the burst"] == ("3,000", "2,600", "1.15x")


def test_the_kernels_highest_cpu_is_beside_the_pages_ceiling(tmp_path):
    section = mdk({"fleet-2000x1": fleet_run(tmp_path, "fleet-2000x1", 0.6)})
    kernel = table(section, "Resource use").iloc[0]
    assert (kernel["figure"], kernel["measured"], kernel["page"]) == (
        "Kernel CPU, highest over the fleets",
        "3 %",
        "32 %",
    )


def test_read_throughput_gains_are_beside_the_pages_and_machine_bound_is_said(tmp_path):
    runs = {
        "reads-1000x1": fleet_run(tmp_path, "reads-1000x1", 0.3, reads_rps=400.0),
        "reads-1000x2": fleet_run(tmp_path, "reads-1000x2", 0.2, reads_rps=640.0),
        "fleet-2000x1": fleet_run(tmp_path, "fleet-2000x1", 0.6, reads_rps=420.0),
        "fleet-2000x4": fleet_run(tmp_path, "fleet-2000x4", 0.2, reads_rps=430.0, generator=80.0, stand_in=120.0),
    }
    section = mdk(runs)
    throughput = table(section, "Saturation read throughput")
    gains = throughput[throughput["figure"].str.contains("over 1")]
    assert list(gains["measured"]) == ["1.60x", "1.02x"] and list(gains["page"]) == ["1.60x", "1.78x"]
    assert list(gains["machine"]) == ["", "machine-bound"]
    texts = {c.text: c.holds for c in section.checks}
    assert texts["1,000 devices, 2 Workers over 1: 1.60x (page 1.60x)"]
    assert texts["2,000 devices, 4 Workers over 1: 1.02x (page 1.78x), machine-bound"] is False


def test_every_page_row_no_workload_attempts_is_listed_with_its_reason():
    section = mdk({})
    assert len(section.not_reproducible) >= 5
    assert all(row and why for row, why in section.not_reproducible)
    assert any("RSS" in row for row, _ in section.not_reproducible)


def test_a_machine_bound_fleets_latencies_say_so(tmp_path):
    runs = {
        "fleet-2000x1": fleet_run(tmp_path, "fleet-2000x1", 0.6, load=6.0),
        "fleet-2000x4": fleet_run(tmp_path, "fleet-2000x4", 0.2),
    }
    latency = table(mdk(runs), "Latency")
    machine = dict(zip(latency["figure"], latency["machine"]))
    assert machine["2,000 / 1: device read p50"] == "machine-bound" and machine["2,000 / 4: device read p50"] == ""


def test_the_kernels_own_acceptance_is_beside_locusts(tmp_path):
    run = fleet_run(tmp_path, "fleet-10x1", 0.1)
    doc = json.loads((run / "mdk.json").read_text())
    doc["kernel"] = {"accept_ms": {"0.5": 0.9, "0.99": 4.2}}
    (run / "mdk.json").write_text(json.dumps(doc))
    latency = table(mdk({"fleet-10x1": run}), "Latency")
    shown = dict(zip(latency["figure"], latency["measured"]))
    assert shown["10 / 1: the Kernel's own accept p50"] == "0.9 ms"
    assert shown["10 / 1: the Kernel's own accept p99"] == "4.2 ms"


def test_the_red_5000_by_1_fleets_headroom_and_worker_cpu_are_beside_the_pages(tmp_path):
    latency = table(mdk({"fleet-5000x1": fleet_run(tmp_path, "fleet-5000x1", 1.55, stand_in=80.0)}), "Latency")
    shown = {r["figure"]: (r["measured"], r["page"]) for _, r in latency.iterrows()}
    assert shown["5,000 / 1: headroom"] == ("1.55", "1.24")
    assert shown["5,000 / 1: Worker CPU"] == ("40 %", "108 %")
