"""The MDK page's index section over hand-made fleet run folders: each fleet's verdict beside the page's, a fleet the
machine could not hold said as machine-bound with the generator's and the stand-in's CPU (and the load average when
others filled the machine), the 5,000 / 5 pair, the throughput gains, the one-at-a-time latencies, and every page
row no workload attempts listed with its reason."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd
import pytest

from swarmgauge.reports import index_mdk_machine
from swarmgauge.reports.index_grades import AMBER, MACHINE, RED, SET, grade_table
from swarmgauge.reports.index_mdk import mdk
from swarmgauge.reports.index_mdk_burst import WHY

COLUMNS = ["step", "label", "request_type", "name", "users", "target_rate", "requests", "failures", "rps"]
COLUMNS += ["p50_ms", "p99_ms", "generator_cpu_max", "generator_bound", "generator_stall_ms", "stalled_requests"]
COLUMNS += ["generator_stalled"]


@pytest.fixture(autouse=True)
def two_cores(monkeypatch):
    monkeypatch.setattr(index_mdk_machine.os, "cpu_count", lambda: 2)


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
    machine: float | None = None,
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
    if machine is not None:
        cpu["machine"] = machine
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
    assert list(verdicts["page verdict"]) == ["green", "red"] and list(verdicts["verdict"]) == ["green", "red"]
    graded = grade_table(verdicts)
    assert graded.grades == [SET, SET]  # the same verdicts, each set by the stand-in's sweep
    assert list(graded.table["verdict x"]) == ["same", "same"]
    assert "--query-concurrency 123" in verdicts["set by"].iloc[1]  # the red headroom is the stand-in's arithmetic
    assert [c.text for c in section.checks] == ["2,000 / 1: green (page green)", "5,000 / 1: red (page red)"]
    assert all(c.holds for c in section.checks)


def test_a_fleet_whose_discovery_found_fewer_devices_than_the_page_is_said_and_never_holds(tmp_path):
    runs = {
        "fleet-2000x1": fleet_run(tmp_path, "fleet-2000x1", 0.62),
        "fleet-5000x1": fleet_run(tmp_path, "fleet-5000x1", 1.55),
    }
    for name, found in (("fleet-2000x1", 2000), ("fleet-5000x1", 383)):
        info = {"mdk_discovered_before_load": {"devices": found, "of": int(name[6:10]), "seconds": 3.0}}
        (runs[name] / "run.json").write_text(json.dumps(info))
    section = mdk(runs)
    verdicts = table(section, "Capacity")
    assert list(verdicts["devices read"]) == ["2,000 of 2,000", "383 of 5,000"]
    assert grade_table(verdicts).grades == [SET, MACHINE]
    assert [c.holds for c in section.checks] == [True, False]
    assert "only 383 of 5,000 devices answered the discovery before the load" in section.checks[1].text


def test_a_fleet_the_machine_cannot_hold_is_machine_bound_with_the_generators_and_the_stand_ins_cpu(tmp_path):
    # amber against the page's green on a machine the run filled: the machine may have made the amber
    runs = {"fleet-2000x1": fleet_run(tmp_path, "fleet-2000x1", 0.8, generator=70.0, stand_in=130.0, load=2.1)}
    section = mdk(runs)
    verdicts = table(section, "Capacity")
    assert grade_table(verdicts).grades == [MACHINE]
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
    assert grade_table(table(section, "Capacity")).grades == [SET, SET]
    assert section.checks[-1].text == "5,000 / 5: green and red (page: one green, one red)" and section.checks[-1].holds
    latency = table(section, "Latency")
    rejected_row = latency[latency["figure"].str.contains("ERR_WORKER_NOT_ROUTABLE")].iloc[0]
    assert rejected_row["measured"] == "83 %" and rejected_row["page"] == "83 %"


def test_one_at_a_time_latencies_and_the_burst_are_beside_the_pages_figures(tmp_path):
    latency = table(mdk({"fleet-2000x4": fleet_run(tmp_path, "fleet-2000x4", 0.2)}), "Latency")
    shown = {r["figure"]: (r["measured"], r["page"], r["x"]) for _, r in latency.iterrows()}
    assert shown["2,000 / 4: device read p50"] == ("310 ms", "305 ms", "1.02x")
    assert shown["2,000 / 4: fleet summary p50"] == ("1.25 s", "about 1.3 s", "0.96x")
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


def test_read_throughput_gains_are_beside_the_pages_and_a_machine_bound_row_is_shown_not_judged(tmp_path):
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
    assert list(gains["x"]) == ["1.00x", "machine-bound"]
    bound = throughput[throughput["figure"].str.startswith("2,000 devices / 4 Workers")].iloc[0]
    assert bound["x"] == "machine-bound" and bound["measured"] == "430" and bound["page"] == "1766"
    assert bound["bound by"].startswith("machine-bound: the page's 1,766 reads/s needs about 821 % of a core here")
    grades = grade_table(throughput).grades
    assert grades[list(throughput["figure"]).index(bound["figure"])] == MACHINE  # never red against the page
    texts = {c.text: c.holds for c in section.checks}
    assert texts["1,000 devices, 2 Workers over 1: 1.60x (page 1.60x)"]
    assert texts["2,000 devices, 4 Workers over 1: 1.02x (page 1.78x), machine-bound"] is False


def test_saturation_short_of_the_page_where_its_rate_needs_more_than_two_cores_is_machine_bound(tmp_path):
    """The baseline's 2,000 / 4: 1,209 reads/s at 33 % + 145 % of a core (under 90 % of the machine, load 3.0): the
    page's 1,766 reads/s would take ~260 % of a core at that CPU a read, so the 2 cores were its ceiling."""
    runs = {"fleet-2000x4": fleet_run(tmp_path, "fleet-2000x4", 0.3, generator=33.0, stand_in=145.0, reads_rps=1209.0)}
    throughput = table(mdk(runs), "Saturation read throughput")
    bound = throughput.iloc[0]
    assert bound["x"] == "machine-bound" and bound["measured"] == "1209"
    assert "needs about 260 % of a core here (1.47 ms of CPU a request" in bound["bound by"]
    assert grade_table(throughput).grades == [MACHINE]


def test_saturation_short_of_the_cores_but_within_the_pages_tolerance_keeps_its_grade(tmp_path):
    """The quiet run's 2,000 / 4: 1,537 reads/s (0.87x, within a quarter) on a machine it filled: it held, as the
    Gateway lane's setting (its cap, about 1,610 reads/s, fitted to the page's many-Worker figures) says."""
    runs = {"fleet-2000x4": fleet_run(tmp_path, "fleet-2000x4", 0.3, generator=33.0, stand_in=160.0, reads_rps=1537.0)}
    throughput = table(mdk(runs), "Saturation read throughput")
    assert throughput.iloc[0]["x"] == "0.87x" and grade_table(throughput).grades == [SET]
    assert "--gateway-read-us 620" in throughput.iloc[0]["set by"]


def test_saturation_short_of_its_cap_with_the_machine_not_bound_says_the_stand_in_set_it(tmp_path):
    runs = {"fleet-2000x4": fleet_run(tmp_path, "fleet-2000x4", 0.3, generator=10.0, stand_in=60.0, reads_rps=1209.0)}
    bound = table(mdk(runs), "Saturation read throughput").iloc[0]
    assert bound["x"] == "0.68x" and not bound["bound by"].startswith("machine-bound")
    assert bound[WHY].startswith("1,209 reads/s is below the setting's cap of about 1,610, with the machine not bound")


def test_many_workers_reads_are_capped_by_the_gateways_lane_and_say_so(tmp_path):
    """A run with the Gateway's lane at its cap: 1,611 reads/s on 4 Workers and 1,011 on one, each row set by its
    lane's setting and its bound said as that lane (a closed loop's readers over their wait always match the rate,
    so the readers are named only where no lane is full)."""
    runs = {
        "fleet-2000x4": fleet_run(tmp_path, "fleet-2000x4", 0.3, generator=37.0, stand_in=124.0, reads_rps=1611.0),
        "fleet-2000x1": fleet_run(tmp_path, "fleet-2000x1", 0.6, reads_rps=1011.0),
    }
    throughput = table(mdk(runs), "Saturation read throughput")
    four = throughput[throughput["figure"].str.startswith("2,000 devices / 4 Workers")].iloc[0]
    assert four["x"] == "0.91x" and WHY not in throughput
    assert four["bound by"].startswith("the Gateway's lane (about 1,610 reads/s; reads waited 420 ms at p50)")
    assert "--gateway-read-us 620: the Gateway serves at most about 1,610 reads/s" in four["set by"]
    one = throughput[throughput["figure"].str.startswith("2,000 devices / 1 Worker")].iloc[0]
    assert one["bound by"].startswith("one Worker's lane (about 960 reads/s")
    assert "--worker-read-us 1040" in one["set by"]
    gain = throughput[throughput["figure"] == "2,000 devices, 4 Workers over 1"].iloc[0]
    assert (gain["measured"], gain["page"], gain["x"]) == ("1.59x", "1.78x", "0.90x")
    assert gain["set by"].startswith("the ratio of the stand-in's two caps: --gateway-read-us 620 over")
    assert grade_table(throughput).grades == [SET, SET, SET]


def test_a_workers_gain_that_strays_on_a_machine_not_bound_points_at_its_rows(tmp_path):
    runs = {
        "fleet-2000x4": fleet_run(tmp_path, "fleet-2000x4", 0.3, generator=44.0, stand_in=124.0, reads_rps=2312.0),
        "fleet-2000x1": fleet_run(tmp_path, "fleet-2000x1", 0.6, reads_rps=1012.0),
    }
    throughput = table(mdk(runs), "Saturation read throughput")
    four = throughput[throughput["figure"].str.startswith("2,000 devices / 4 Workers")].iloc[0]
    assert four[WHY].startswith("2,312 reads/s is above the setting's cap of about 1,610")
    gain = throughput[throughput["figure"] == "2,000 devices, 4 Workers over 1"].iloc[0]
    assert (gain["measured"], gain["page"], gain["x"]) == ("2.28x", "1.78x", "1.29x")
    assert gain[WHY] == "a side of the pair strayed from its cap (its row above says why)"


def test_the_2000_device_summary_is_graded_against_the_figure_the_pages_read_rates_give_each_site(tmp_path):
    runs = {
        "fleet-2000x1": fleet_run(tmp_path, "fleet-2000x1", 0.6),
        "fleet-2000x4": fleet_run(tmp_path, "fleet-2000x4", 0.2),
    }
    latency = table(mdk(runs), "Latency")
    rows = latency[latency["figure"].str.contains("fleet summary")]
    one, four = rows.iloc[0], rows.iloc[1]
    assert one["figure"] == "2,000 / 1: fleet summary p50" and one["page"].startswith("2.32 s, derived")
    assert "--worker-read-us 1040" in one["set by"]  # one Worker's read cap, fitted to the page's 994 reads/s
    assert four["page"] == "about 1.3 s" and four["set by"] == ""
    graded = grade_table(rows.reset_index(drop=True)).grades
    assert graded[1] != SET


def test_readers_that_bound_the_saturation_reads_are_said(tmp_path):
    run = fleet_run(tmp_path, "reads-1000x1", 0.3, reads_rps=610.0)
    steps = (run / "steps.csv").read_text()
    steps = steps.replace("saturation reads,MDK,telemetry,1,", "saturation reads,MDK,telemetry,200,")
    (run / "steps.csv").write_text(steps.replace(",420.0,900.0,", ",330.0,900.0,"))
    row = table(mdk({"reads-1000x1": run}), "Saturation read throughput").iloc[0]
    assert row["figure"] == "1,000 devices / 1 Worker: saturation reads/s (200 readers)"
    assert row["bound by"].startswith("200 readers at 330 ms a read: the readers")


def test_every_page_row_no_workload_attempts_is_listed_with_its_reason():
    section = mdk({})
    assert len(section.not_reproducible) >= 5
    assert all(row and why for row, why in section.not_reproducible)
    assert any("RSS" in row for row, _ in section.not_reproducible)


def test_a_machine_bound_fleets_latencies_say_so_and_those_that_held_keep_their_grade(tmp_path):
    runs = {
        "fleet-2000x1": fleet_run(tmp_path, "fleet-2000x1", 0.6, load=6.0),
        "fleet-2000x4": fleet_run(tmp_path, "fleet-2000x4", 0.2),
    }
    latency = table(mdk(runs), "Latency")
    machine = dict(zip(latency["figure"], latency["machine"]))
    ratio = dict(zip(latency["figure"], latency["x"]))
    assert machine["2,000 / 1: device read p50"].startswith("machine-bound: generator 10 %, stand-in 40 % of a core")
    assert ratio["2,000 / 1: device read p50"] == "1.02x"  # held on a full machine: judged by its own numbers
    assert machine["2,000 / 4: device read p50"] == "" and ratio["2,000 / 4: device read p50"] == "1.02x"


def test_figures_the_page_gives_none_for_are_apart_from_its_rows(tmp_path):
    run = fleet_run(tmp_path, "fleet-10x1", 0.1)
    doc = json.loads((run / "mdk.json").read_text())
    doc["kernel"] = {"accept_ms": {"0.5": 0.9, "0.99": 4.2}}
    (run / "mdk.json").write_text(json.dumps(doc))
    section = mdk({"fleet-10x1": run, "fleet-2000x4": fleet_run(tmp_path, "fleet-2000x4", 0.2)})
    page_rows = set(table(section, "Latency")["figure"])
    [(caption, apart)] = section.measured_only
    shown = dict(zip(apart["figure"], apart["measured"]))
    assert caption == "Latency measured here, the page gives none" and list(apart.columns) == ["figure", "measured"]
    assert shown["10 / 1: the Kernel's own accept p50"] == "0.9 ms"
    assert shown["10 / 1: the Kernel's own accept p99"] == "4.2 ms"
    apart_rows = {"10 / 1: fleet summary p50", "10 / 1: accept p50 at 1,000 submits/s"}
    assert apart_rows | {"2,000 / 4: accept p99 at 1,000 submits/s"} <= set(shown)
    assert not page_rows & set(shown)
    assert "2,000 / 4: fleet summary p50" in page_rows and "10 / 1: device read p50" in page_rows


def test_acceptance_under_the_burst_is_graded_against_the_pages_words(tmp_path):
    runs = {
        "fleet-2000x1": fleet_run(tmp_path, "fleet-2000x1", 0.5, burst={"p50_ms": 75.0}),
        "fleet-5000x5": fleet_run(tmp_path, "fleet-5000x5", 0.5, burst={"p50_ms": 430.0, "p99_ms": 900.0}),
    }
    latency = table(mdk(runs), "Latency").set_index("figure")
    assert latency.loc["2,000 / 1: accept p50 at 1,000 submits/s", "page"] == "tens of ms"
    assert latency.loc["5,000 / 5 (run 1): accept p50 at 1,000 submits/s", "page"] == "423 ms"
    p99 = latency.loc["5,000 / 5 (run 1): accept p99 at 1,000 submits/s"]
    assert p99["page"] == "under 2,000 ms (the green run)" and p99["x"] == "0.90x"
    assert RED not in grade_table(latency.reset_index()).grades


def test_the_red_5000_by_1_fleets_headroom_and_worker_cpu_are_beside_the_pages(tmp_path):
    latency = table(mdk({"fleet-5000x1": fleet_run(tmp_path, "fleet-5000x1", 1.55, stand_in=80.0)}), "Latency")
    shown = {r["figure"]: (r["measured"], r["page"]) for _, r in latency.iterrows()}
    assert shown["5,000 / 1: headroom"] == ("1.55", "1.24")
    assert shown["5,000 / 1: Worker CPU"] == ("40 %", "108 %")


def test_a_5000_by_1_worker_cpu_short_of_the_page_says_why_with_the_runs_numbers(tmp_path):
    """The page's 108 % is work the stand-in's Worker does not do (it never idles and runs per-device jobs); the row
    keeps its figures and says so with its sweep's pulls/s, its CPU a pull and what the busiest step already used."""
    run = fleet_run(tmp_path, "fleet-5000x1", 1.25, stand_in=80.0, generator=20.0)
    latency = table(mdk({"fleet-5000x1": run}), "Latency").set_index("figure")
    row = latency.loc["5,000 / 1: Worker CPU"]
    assert (row["measured"], row["page"], row["x"]) == ("40 %", "108 %", "0.37x")
    why = row["why it cannot hold here"]
    assert "400 device pulls/s, cycle 12.5 s" in why and "1.00 ms of CPU a pull" in why
    assert "the other 68 % of a core" in why and "already fills to 100 % of a core" in why
    # the page's per-device cost put on this machine: the Worker at 108 % beside the rest of the run's processes
    assert "2.68 ms" in why and "beside the 60 % the run's other processes used in a step: 168 % of 200 %" in why


def test_a_5000_by_1_worker_cpu_within_the_pages_tolerance_gives_no_why(tmp_path):
    run = fleet_run(tmp_path, "fleet-5000x1", 1.25, stand_in=160.0)
    latency = table(mdk({"fleet-5000x1": run}), "Latency").set_index("figure")
    assert latency.loc["5,000 / 1: Worker CPU", "measured"] == "80 %"
    assert not latency.loc["5,000 / 1: Worker CPU"].get("why it cannot hold here")


def test_drills_mark_the_boot_as_set_and_grade_the_cached_channels_against_the_caches_window():
    from swarmgauge.reports.index_mdk_drills import drill_table

    drills = [
        {"drill": "worker-restart", "recovered": True, "ready_s": 5.2, "first_read_s": 6.5, "read_after_ready_s": 1.3},
        {
            "drill": "device-outage",
            "recovered": True,
            "snap_failed_s": 0.01,
            "cached_failed_s": 2.77,
            "restored_s": 3.0,
            "restored_read_s": 3.5,
        },
    ]
    shown = drill_table(drills)
    graded = grade_table(shown)
    by_event = {event: position for position, event in enumerate(shown["event"])}
    assert "--restart-boot-s 5" in shown["set by"].iloc[by_event["READY"]]
    assert "--restart-boot-s 5" in shown["set by"].iloc[by_event["first device read"]]
    assert shown["set by"].iloc[by_event["read after READY"]] == ""
    cached = shown.iloc[by_event["cached channels failed"]]
    assert cached["page"] == "about 4.7 s (one sample of the 0 to 5 s window)" and cached["x"] == "1.11x"
    assert graded.grades[by_event["cached channels failed"]] == "set by the stand-in"  # within the window, not red
    back = shown.iloc[by_event["reads again after devices back"]]
    assert back["measured"] == "0.50 s" and back["page"] == "about 0.35 s"
    assert "--read-cost-ms 220-390" in back["set by"]  # one read after the devices are back: the mock's read cost
    assert graded.grades[by_event["reads again after devices back"]] == "set by the stand-in"


def test_acceptance_of_a_burst_the_generator_stalled_in_is_machine_bound_and_says_the_stall(tmp_path):
    """A generator stall sends the submits it held back at once, a queue the Kernel's lane (2 % slack at 2,000
    devices) cannot drain within the burst: the figure is the machine's, shown, not judged against the page."""
    stall = {"generator_stalled": True, "generator_stall_ms": 195.7, "stalled_requests": 226, "p50_ms": 207.0}
    runs = {
        "fleet-2000x1": fleet_run(tmp_path, "fleet-2000x1", 0.6, burst=stall),
        "fleet-2000x4": fleet_run(tmp_path, "fleet-2000x4", 0.2),
    }
    latency = table(mdk(runs), "Latency")
    rows = {r["figure"]: r for _, r in latency.iterrows()}
    stalled = rows["2,000 / 1: accept p50 at 1,000 submits/s"]
    assert stalled["x"] == "machine-bound"
    assert stalled["machine"].startswith("machine-bound: the generator stalled 196 ms in the burst (226 submits late)")
    assert rows["2,000 / 1: device read p50"]["x"] == "1.02x"  # the other steps' figures stay judged
    assert rows["2,000 / 4: accept p50 at 1,000 submits/s"]["machine"] == ""
    assert grade_table(latency).grades[list(latency["figure"]).index(stalled["figure"])] == MACHINE


def test_on_a_fleet_the_machine_could_not_hold_a_figure_that_held_keeps_its_grade_and_one_that_missed_is_bound(
    tmp_path,
):
    """The 2,000 / 4 fleet at 33 % + 160 % of a core: its device read at 310 ms (the page's 305) held anyway; only a
    figure off the page is put down to the machine."""
    run = fleet_run(tmp_path, "fleet-2000x4", 0.2, generator=70.0, stand_in=130.0, load=2.1)
    latency = table(mdk({"fleet-2000x4": run}), "Latency")
    ratio = dict(zip(latency["figure"], latency["x"]))
    assert ratio["2,000 / 4: device read p50"] == "1.02x"
    assert all(x == "machine-bound" or not x.endswith("x") or 0.5 <= float(x[:-1]) <= 1.5 for x in ratio.values())
    assert all(str(m).startswith("machine-bound: generator 70 %") for m in latency["machine"])


def test_the_red_5000_by_5_runs_accepted_and_rejected_submits_say_why_they_cannot_hold_here(tmp_path):
    """The page's red run let 419 commands through its Kernel in the ~3 s before its SICK mark (about 7 ms each, its
    green run 1.3 ms): the stand-in's one lane, fitted to the green run, cannot give both, and the row says so."""
    from swarmgauge.reports.index_mdk_burst import WHY

    rejected = {"failures": 240, "p99_ms": 1170.0}
    latency = table(
        mdk({"fleet-5000x5-ping": fleet_run(tmp_path, "fleet-5000x5-ping", 0.3, burst=rejected)}), "Latency"
    )
    rows = latency.set_index("figure")
    for figure in ("accepted submits of the burst", "submits rejected (ERR_WORKER_NOT_ROUTABLE)"):
        why = rows.loc[f"5,000 / 5 (run 2): {figure}", WHY]
        assert "419 commands" in why and "7 ms" in why and "1.3 ms" in why and "one row" in why
        assert "4 of the 5 Workers SICK" in why and "~470" in why
    assert not isinstance(rows.loc["5,000 / 5 (run 2): accept p99 at 1,000 submits/s", WHY], str)  # that one holds


def test_a_fleet_whose_step_sends_no_summary_past_the_discovery_shows_that_one_measured_only(tmp_path):
    """At 5,000 devices the demo sends no summary past the users' discovery (3 to 6 s each): the first, cold, is shown
    apart, never graded."""
    run = fleet_run(tmp_path, "fleet-5000x1", 1.3)
    steps = run / "steps.csv"
    steps.write_text(steps.read_text().replace(",summary,", ",discover,"))
    section = mdk({"fleet-5000x1": run})
    apart = next(frame for heading, frame in section.measured_only if heading.startswith("Latency measured here"))
    shown = dict(zip(apart["figure"], apart["measured"]))
    assert shown["5,000 / 1: fleet summary, the users' first (cold)"] == "1.25 s"
    assert not any("summary" in figure for figure in table(section, "Latency")["figure"])


def test_a_one_at_a_time_step_that_sent_no_read_or_accept_shows_the_pages_rows_red_not_left_out(tmp_path):
    """On a loaded machine a 5,000-device discovery outlasted its step: the page's read and accept rows were dropped
    from the index (46 rows instead of 50); a figure the page has and the run did not measure is red."""
    run = fleet_run(tmp_path, "fleet-5000x1", 1.3)
    steps = run / "steps.csv"
    kept = [line for line in steps.read_text().splitlines() if ",one at a time,MDK,telemetry," not in line]
    kept = [line for line in kept if ",one at a time,MDK,action," not in line]
    steps.write_text("\n".join(kept).replace(",one at a time,MDK,summary,", ",one at a time,MDK,discover,") + "\n")
    latency = table(mdk({"fleet-5000x1": run}), "Latency")
    graded = dict(zip(latency["figure"], grade_table(latency).grades))
    shown = dict(zip(latency["figure"], latency["measured"]))
    for figure in ("5,000 / 1: device read p50", "5,000 / 1: single action accept p50"):
        assert shown[figure] == "" and graded[figure] == RED


def test_a_fleet_whose_verdict_is_not_the_pages_is_amber_a_step_off_and_red_two(tmp_path):
    runs = {
        "fleet-2000x1": fleet_run(tmp_path, "fleet-2000x1", 0.8),  # amber headroom against the page's green
        "fleet-5000x1": fleet_run(tmp_path, "fleet-5000x1", 0.3),  # green against the page's red
    }
    verdicts = table(mdk(runs), "Capacity")
    graded = grade_table(verdicts)
    assert list(verdicts["verdict"]) == ["amber", "green"]
    assert graded.grades == [AMBER, RED]
    assert list(graded.table["verdict x"]) == ["one step off", "two steps off"]
    assert set(graded.table["tolerance"]) == {"the same verdict"}


def test_a_10_device_fleet_not_amber_says_why_the_pages_amber_cannot_hold_here(tmp_path):
    """The page's 14 timed-out reads sit where chance decides (the queue model's figures); an amber run needs no why."""
    from swarmgauge.reports.index_mdk_burst import WHY

    green = table(mdk({"fleet-10x1": fleet_run(tmp_path / "green", "fleet-10x1", 0.3)}), "Capacity").iloc[0]
    assert green["verdict"] == "green"
    assert "14 timed-out reads" in green[WHY] and "83 % of runs" in green[WHY]
    assert "benchmarks/mdk_ten_device_timeouts.py" in green[WHY]
    amber_run = fleet_run(tmp_path / "amber", "fleet-10x1", 0.3)
    doc = json.loads((amber_run / "mdk.json").read_text())
    (amber_run / "mdk.json").write_text(json.dumps(doc | {"rejected_ratio": 0.004}))
    amber = table(mdk({"fleet-10x1": amber_run}), "Capacity").iloc[0]
    assert amber["verdict"] == "amber" and not isinstance(amber.get(WHY), str)


def test_a_fleet_as_good_as_the_pages_on_a_bound_machine_holds_as_the_machine_only_slows_it(tmp_path):
    green = fleet_run(tmp_path, "fleet-2000x1", 0.62, generator=70.0, stand_in=130.0, load=2.1)
    red = fleet_run(tmp_path, "fleet-5000x1", 1.55, generator=70.0, stand_in=130.0, load=2.1)
    section = mdk({"fleet-2000x1": green, "fleet-5000x1": red})
    verdicts = table(section, "Capacity")
    assert verdicts["machine"].iloc[0].startswith("machine-bound")  # said beside it all the same
    assert grade_table(verdicts).grades == [SET, MACHINE]  # a red on a bound machine may be the machine's
    assert [c.holds for c in section.checks] == [True, False]


def test_the_machines_measured_cpu_in_the_step_decides_not_a_lagging_load_average(tmp_path):
    # the 1-minute load average at the end also holds the run's own start-up: with the machine's CPU measured in the
    # step, a quiet machine is not "filled by others" and a full one is bound whoever filled it
    quiet = fleet_run(tmp_path, "fleet-5000x5", 0.3, generator=36.0, stand_in=112.0, load=3.9, machine=152.0)
    full = fleet_run(tmp_path, "fleet-2000x4", 0.3, generator=30.0, stand_in=60.0, load=0.5, machine=188.0)
    verdicts = table(mdk({"fleet-2000x4": full, "fleet-5000x5": quiet}), "Capacity")
    machine = list(verdicts["machine"])
    assert machine[0].startswith("machine-bound: generator 30 %, stand-in 60 % of a core, the machine 188 % of 200 %")
    assert "(others 98 %)" in machine[0]
    assert machine[1] == "generator 36 %, stand-in 112 % of a core, the machine 152 % of 200 % (others 4 %)"


def _kernel_accept(run: Path, p50: float, p99: float) -> Path:
    doc = json.loads((run / "mdk.json").read_text())
    doc["kernel"] = {"accept_ms": {"0.5": p50, "0.99": p99}}
    (run / "mdk.json").write_text(json.dumps(doc))
    return run


def test_at_5000_by_5_a_miss_the_kernels_own_accept_holds_is_the_paths_lag_on_the_machine(tmp_path):
    """The 5,000 / 5 burst saturates the Kernel's lane: where Locust's acceptance misses the page's and the Kernel's
    own (the lane's model) holds it, the rest is the generator's and the Gateway's lag on the 2-core machine, shown as
    machine-bound with both figures; where the Kernel's own misses too, the miss stays judged."""
    burst = {"p50_ms": 1196.0, "p99_ms": 2048.0}
    lagged = _kernel_accept(fleet_run(tmp_path / "lag", "fleet-5000x5", 0.5, burst=burst), 824.0, 1300.0)
    section = mdk({"fleet-5000x5": lagged})
    rows = {r["figure"]: r for _, r in table(section, "Latency").iterrows()}
    p50 = rows["5,000 / 5 (run 1): accept p50 at 1,000 submits/s"]
    assert p50["x"] == "machine-bound"
    assert p50["machine"].startswith("machine-bound: the Kernel's own accept 824 ms holds the page's 423 ms; the other")
    assert rows["5,000 / 5 (run 1): accept p99 at 1,000 submits/s"]["x"] == "machine-bound"
    verdict = table(section, "Capacity").iloc[0]
    assert verdict["verdict"] == "red" and verdict["verdict x"] == MACHINE
    assert "the Kernel's own accept p99 1.30 s is within the page's 2,000 ms" in verdict["machine"]
    assert not section.checks[0].holds  # shown as the machine's, never counted as holding

    slow = _kernel_accept(fleet_run(tmp_path / "slow", "fleet-5000x5", 0.5, burst=burst), 1900.0, 2600.0)
    section = mdk({"fleet-5000x5": slow})
    rows = {r["figure"]: r for _, r in table(section, "Latency").iterrows()}
    assert rows["5,000 / 5 (run 1): accept p50 at 1,000 submits/s"]["x"] == "2.83x"
    assert rows["5,000 / 5 (run 1): accept p50 at 1,000 submits/s"]["machine"] == ""
    assert table(section, "Capacity").iloc[0]["verdict x"] != MACHINE

    held = _kernel_accept(fleet_run(tmp_path / "held", "fleet-5000x5", 0.5, burst={"p50_ms": 600.0}), 420.0, 900.0)
    rows = {r["figure"]: r for _, r in table(mdk({"fleet-5000x5": held}), "Latency").iterrows()}
    assert (
        rows["5,000 / 5 (run 1): accept p50 at 1,000 submits/s"]["x"] == "1.42x"
    )  # a figure that held keeps its grade
    assert rows["5,000 / 5 (run 1): accept p50 at 1,000 submits/s"]["machine"] == ""


def test_the_red_5000_by_5_run_kinder_than_the_page_after_a_generator_stall_is_machine_bound(tmp_path):
    """Its red rests on the burst holding the Kernel's lane saturated past a ping's timeout: a generator that stalled
    in the burst fed the lane late, no ping missed, and the kinder verdict is the machine's, said with the stall."""
    stall = {"generator_stalled": True, "generator_stall_ms": 433.3, "stalled_requests": 2361, "p99_ms": 1998.0}
    stalled = _kernel_accept(fleet_run(tmp_path / "stall", "fleet-5000x5-ping", 0.91, burst=stall), 135.0, 544.0)
    verdict = table(mdk({"fleet-5000x5-ping": stalled}), "Capacity").iloc[0]
    assert verdict["page verdict"] == "red" and verdict["verdict"] == "amber" and verdict["verdict x"] == MACHINE
    assert verdict["machine"].startswith(
        "machine-bound: the generator stalled 433 ms in the burst (2,361 submits late)"
    )
    assert "its own accept p50 135 ms" in verdict["machine"]

    paced = _kernel_accept(fleet_run(tmp_path / "paced", "fleet-5000x5-ping", 0.91), 135.0, 544.0)
    assert table(mdk({"fleet-5000x5-ping": paced}), "Capacity").iloc[0]["verdict x"] != MACHINE  # no stall: judged


def test_at_5000_by_5_a_miss_after_a_generator_stall_is_machine_bound_when_the_kernels_own_misses_too(tmp_path):
    """A 1.3 s stall fed the lane late (the Kernel's own p50 76 ms, off the page's 423 too): the miss is the stall's."""
    stall = {"generator_stalled": True, "generator_stall_ms": 1298.3, "stalled_requests": 2711, "p50_ms": 1402.0}
    run = _kernel_accept(fleet_run(tmp_path, "fleet-5000x5", 0.5, burst=stall), 76.0, 620.0)
    rows = {r["figure"]: r for _, r in table(mdk({"fleet-5000x5": run}), "Latency").iterrows()}
    p50 = rows["5,000 / 5 (run 1): accept p50 at 1,000 submits/s"]
    assert p50["x"] == "machine-bound"
    assert p50["machine"].startswith("machine-bound: the generator stalled 1298 ms in the burst (2,711 submits late)")


def test_a_fleet_whose_ids_the_kernel_listed_says_no_device_was_read_before_its_load(tmp_path):
    runs = {"fleet-2000x1": fleet_run(tmp_path, "fleet-2000x1", 0.62)}
    info = {"mdk_discovered_before_load": {"devices": 2000, "of": 2000, "seconds": 0.01, "by": "kernel"}}
    (runs["fleet-2000x1"] / "run.json").write_text(json.dumps(info))
    verdicts = table(mdk(runs), "Capacity")
    assert list(verdicts["devices read"]) == ["2,000 of 2,000, listed by the Kernel (none read before the load)"]


def test_a_2000_device_acceptance_missing_the_page_with_no_stall_says_whether_the_lane_or_the_path_ran_late(tmp_path):
    """At 2,000 devices the lane keeps up: a miss with no generator stall flagged keeps its colour and says, from the
    Kernel's own acceptance, whether the lane itself or the path to it ran late; a figure that held says nothing."""
    late = _kernel_accept(fleet_run(tmp_path / "lane", "fleet-2000x4", 0.2, burst={"p50_ms": 103.0}), 101.0, 133.0)
    path = _kernel_accept(fleet_run(tmp_path / "path", "fleet-2000x1", 0.2, burst={"p50_ms": 130.0}), 40.0, 80.0)
    held = _kernel_accept(fleet_run(tmp_path / "held", "fleet-2000x1", 0.2, burst={"p50_ms": 57.0}), 56.0, 86.0)

    def p50_row(run: Path, name: str, label: str) -> pd.Series:
        latency = table(mdk({name: run}), "Latency")
        return latency[latency["figure"] == f"{label}: accept p50 at 1,000 submits/s"].iloc[0]

    lane = p50_row(late, "fleet-2000x4", "2,000 / 4")
    assert lane["x"] == "1.87x" and lane["machine"] == ""  # graded as measured, not machine-bound
    assert lane[WHY].startswith("the Kernel's own accept 101 ms (a submit's arrival to its answer) misses the page's")
    assert "the lane ran late, not the path to it" in lane[WHY]
    assert "(no CPU of the burst was sampled)" in lane[WHY]  # this run's burst step has no Kernel CPU
    assert p50_row(path, "fleet-2000x1", "2,000 / 1")[WHY].endswith(
        "holds the page's: the rest is the path, the generator's and the Gateway's lag on this machine"
    )
    assert not isinstance(p50_row(held, "fleet-2000x1", "2,000 / 1").get(WHY), str)


def _burst_cpu(run: Path, kernel: float, machine: float) -> Path:
    doc = json.loads((run / "mdk.json").read_text())
    doc["cpu_by_step"]["5"] = doc["cpu_by_step"]["5"] | {"kernel": kernel, "machine": machine}
    (run / "mdk.json").write_text(json.dumps(doc))
    return run


@pytest.mark.parametrize(
    ("kernel", "machine", "said"),
    [
        (21.0, 132.0, "neither was short of a core, so the lane's own queue set it"),
        (40.0, 190.0, "the machine was full, so the Kernel's answers waited for a core"),
        (95.0, 150.0, "its one event loop was near a full core"),
    ],
)
def test_a_lane_that_ran_late_says_whether_the_kernel_waited_for_a_core(tmp_path, monkeypatch, kernel, machine, said):
    """Where the Kernel's own acceptance at 2,000 devices misses too, its CPU over the burst (its own and the
    machine's, from the burst step's ``cpu_by_step``) says whether it waited for a core or its lane's queue set it."""
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    run = fleet_run(tmp_path / "lane", "fleet-2000x4", 0.2, burst={"p50_ms": 103.0})
    run = _burst_cpu(_kernel_accept(run, 101.0, 133.0), kernel, machine)
    latency = table(mdk({"fleet-2000x4": run}), "Latency")
    lane = latency[latency["figure"] == "2,000 / 4: accept p50 at 1,000 submits/s"].iloc[0]
    assert (
        f"over the burst the Kernel's process used {kernel:.0f} % of a core, the machine {machine:.0f} %" in lane[WHY]
    )
    assert said in lane[WHY]
    # a full machine over the burst is also the fleet's machine-bound step; otherwise the row keeps its grade
    assert lane["x"] == ("machine-bound" if machine >= 180 else "1.87x")
