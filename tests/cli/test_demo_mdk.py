"""The MDK page's demo workloads: the page's five fleets at the page's sizes (never the 100-device fleet the page
does not have), both 5,000 / 5 runs, the read-throughput pairs, the drills, each red fleet and drill declaring the
non-zero exit it ends with, user classes the locustfile has, the one-at-a-time mix each graded figure needs, and
the page's load within about 4.2 minutes at scale 1."""

from __future__ import annotations

import ast

import pandas as pd

from swarmgauge.cli.demo_mdk import (
    ACCEPT_S,
    LANES,
    READ_S,
    RESTART_BOOT,
    SATURATION_READERS,
    SWEEP,
    TEN_DEVICE_READERS,
    fleets,
    one_at_a_time_mix,
    one_at_a_time_s,
    summary_s,
    workloads,
)
from swarmgauge.cli.demo_pages import pages
from swarmgauge.reports.index_figures import figure, ms
from swarmgauge.reports.index_grades import FEW, grade_table
from swarmgauge.reports.index_mdk import ACCEPT_TOLERANCE, READ_TOLERANCE, SUMMARY_2000, SUMMARY_TOLERANCE
from swarmgauge.reports.index_mdk_drills import BOOT_SET_BY
from swarmgauge.users.mdk_user import parse_weights
from tests import REPO_ROOT as ROOT


def profiles() -> dict[str, str]:
    return {w.name: w.options[w.options.index("--mdk-profile") + 1] for w in workloads(1.0)}


def test_the_page_runs_its_own_fleets_and_no_other():
    shown = profiles()
    fleets = [shown[name] for name in shown if name.startswith("fleet-")]
    assert fleets == ["10x1", "2000x1", "5000x1", "2000x4", "5000x5", "5000x5"]
    assert "100x1" not in shown.values()
    assert shown["reads-1000x1"] == "1000x1" and shown["reads-1000x2"] == "1000x2"
    assert [w.name for w in pages(["mdk"])[0].workloads] == list(shown)


def test_each_fleet_runs_one_at_a_time_saturation_and_the_burst():
    fleet = next(w for w in workloads(1.0) if w.name == "fleet-2000x1")
    assert fleet.plan is not None
    stages = {stage["label"]: stage for stage in fleet.plan["stages"]}
    assert stages["one at a time"]["user_classes"] == ["MDKOneAtATime"]
    assert stages["saturation reads"]["users"] == SATURATION_READERS
    assert stages["action burst"]["rate"] == 1000 and stages["action burst"]["duration"] == "3s"
    assert "MDK:action:p99<=2000ms" in fleet.plan["slos"]


def test_red_fleets_and_drills_declare_their_exit_and_the_red_5000_by_5_run_says_its_setting():
    by_name = {w.name: w for w in workloads(1.0)}
    assert by_name["fleet-5000x1"].expected_exit == 3 and by_name["fleet-5000x5-ping"].expected_exit == 3
    assert by_name["fleet-2000x1"].expected_exit == 0 and by_name["fleet-10x1"].expected_exit == 0
    assert all(by_name[d].expected_exit == 1 for d in ("worker-restart", "kernel-restart", "device-outage"))
    ping = by_name["fleet-5000x5-ping"].options
    assert ping[ping.index("--mdk-embedded-args") + 1] == f"{LANES} {SWEEP} --health-ping-s 0.5"
    green = by_name["fleet-5000x5"].options
    assert (
        green[green.index("--mdk-embedded-args") + 1] == f"{LANES} {SWEEP} --health-phase-s 600"
    )  # no ping in its burst


def test_every_user_class_a_stage_names_is_in_the_locustfile():
    tree = ast.parse((ROOT / "locustfiles" / "mdk_fleet.py").read_text())
    classes = {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    named = {c for w in workloads(1.0) for s in (w.plan or {}).get("stages", []) for c in s.get("user_classes", [])}
    assert named <= classes


def test_the_page_plans_about_4_minutes_at_scale_1_and_scale_never_drops_a_row():
    full, half = workloads(1.0), workloads(0.5)
    # 304 s: the one-at-a-time steps hold the requests each graded p50 needs on a loaded machine (234 s when they
    # drew too few, 286 s when they were sized on a quiet one's reads), and the compared saturation steps a warm-up
    # before their 10 s (6 s in all)
    assert sum(w.planned_seconds() for w in full) <= 305
    assert [w.name for w in half] == [w.name for w in full]
    assert sum(w.planned_seconds() for w in half) < sum(w.planned_seconds() for w in full)


def test_no_step_waits_for_the_fleets_discovery_which_the_run_does_before_its_load():
    """A summary reads every device (5.7 s at 5,000 on one Worker): the run discovers at its start-up, so the
    one-at-a-time step is its mix alone, the ping run's burst users spawn in the usual 2 s (scaled, 1 s at 0.25) and
    the throughput pairs start with their readers."""
    for scale, spawn in ((1.0, "2s"), (0.25, "1s")):
        plans = {w.name: w.plan for w in workloads(scale)}
        assert plans["fleet-5000x5-ping"]["stages"][0]["duration"] == spawn
        assert [stage["label"] for stage in plans["reads-1000x1"]["stages"]] == ["saturation reads"]
    big = next(f for f in fleets() if f.name == "fleet-5000x1")
    assert one_at_a_time_s(big) == round(one_at_a_time_s_of_mix(big) * 1.1)


def one_at_a_time_s_of_mix(fleet) -> float:
    mix = one_at_a_time_mix(fleet)
    serial = mix["telemetry"] * READ_S + mix["action"] * ACCEPT_S
    return serial + mix["summary"] * summary_s(fleet.devices, fleet.workers)


def _mix(workload) -> dict[str, int]:
    return parse_weights(workload.options[workload.options.index("--mdk-one-at-a-time-mix") + 1])


def _holds_over(requests: int, tolerance: float) -> bool:
    """A figure on the page's value read over ``requests`` is not "few samples" by the index's own rule."""
    row = figure("figure", 305.0, 305.0, ms, tolerance=tolerance, samples=requests, statistic="p50")
    return grade_table(pd.DataFrame([row])).grades[0] != FEW


def test_one_at_a_time_sends_each_graded_figure_the_requests_the_index_needs():
    """Drawn at random, a 12 s step at 2,000 / 1 sent 2 reads and 4 summaries of 2.5 s: the index said "few samples".
    The mix gives the reads, the single accepts and the page's 2,000-device summaries what their tolerances need."""
    for workload in workloads(1.0):
        if not workload.name.startswith("fleet-") or workload.name == "fleet-5000x5-ping":
            continue
        mix = _mix(workload)
        assert _holds_over(mix["telemetry"], READ_TOLERANCE) and _holds_over(mix["action"], ACCEPT_TOLERANCE)
        assert not _holds_over(mix["telemetry"] - 3, READ_TOLERANCE)  # a margin, no more
        if workload.name in SUMMARY_2000:
            assert _holds_over(mix["summary"], SUMMARY_TOLERANCE)
    assert "--mdk-one-at-a-time-mix" not in next(w for w in workloads(1.0) if w.name == "fleet-5000x5-ping").options


def test_the_one_at_a_time_step_holds_its_mix_at_the_requests_planned_costs():
    """One request in flight: the step lasts every request of the mix, one after another, with slack; a 2,000 / 1
    summary is 2,000 reads through one Worker's lane, about 2.4 s."""
    assert 2.3 <= summary_s(2000, 1) <= 2.5 and summary_s(2000, 4) < summary_s(2000, 1)
    by_name = {w.name: w for w in workloads(1.0)}
    for fleet in fleets():
        if fleet.name == "fleet-5000x5-ping":
            continue
        mix = _mix(by_name[fleet.name])
        serial = mix["telemetry"] * READ_S + mix["action"] * ACCEPT_S
        serial += mix["summary"] * summary_s(fleet.devices, fleet.workers)
        stage = by_name[fleet.name].plan["stages"][0]
        assert stage["label"] == "one at a time" and float(stage["duration"].rstrip("s")) >= serial


def test_only_the_5000_by_5_bursts_may_have_1000_submits_in_flight():
    in_flight = {
        w.name: next(s["max_users"] for s in w.plan["stages"] if s["label"] == "action burst")
        for w in workloads(1.0)
        if w.name.startswith("fleet-") and w.plan is not None
    }
    assert in_flight == {
        "fleet-10x1": 200,
        "fleet-2000x1": 200,
        "fleet-5000x1": 200,
        "fleet-2000x4": 200,
        "fleet-5000x5": 1000,
        "fleet-5000x5-ping": 1000,
    }


def test_saturation_runs_the_pages_1000_readers_on_every_fleet_but_the_10_device_one():
    readers = {
        w.name: next(s["users"] for s in w.plan["stages"] if s["label"] == "saturation reads")
        for w in workloads(1.0)
        if w.plan is not None and any(s["label"] == "saturation reads" for s in w.plan["stages"])
    }
    assert SATURATION_READERS == 1000 and TEN_DEVICE_READERS == 200
    assert readers.pop("fleet-10x1") == TEN_DEVICE_READERS
    assert set(readers.values()) == {SATURATION_READERS}
    assert set(readers) == {
        "fleet-2000x1",
        "fleet-5000x1",
        "fleet-2000x4",
        "fleet-5000x5",
        "reads-1000x1",
        "reads-1000x2",
    }


def test_restart_drills_model_the_boot_the_index_names_and_the_outage_does_not():
    by_name = {w.name: w.options for w in workloads(1.0)}
    for drill in ("worker-restart", "kernel-restart"):
        options = by_name[drill]
        assert options[options.index("--mdk-embedded-args") + 1] == RESTART_BOOT
    assert "--mdk-embedded-args" not in by_name["device-outage"]
    assert BOOT_SET_BY.startswith(RESTART_BOOT)


def test_every_fleet_and_throughput_run_caps_a_workers_reads_as_the_pages_one_core_and_the_gateways_past_one():
    for workload in workloads(1.0):
        if workload.name.startswith(("fleet-", "reads-")):
            options = workload.options
            assert options[options.index("--mdk-embedded-args") + 1].startswith(LANES)


def test_the_5000_device_fleets_hold_the_pages_3_s_read_load_and_the_compared_fleets_a_steady_10_s():
    """The 5,000-device fleets' reads/s are not among the page's figures; 10 s of 1,000 readers put the 5,000 / 1
    Worker's one measured collection sweep under them (headroom 1.67 against the page's 1.24, swept without reads)."""
    held = {}
    for workload in workloads(1.0):
        for stage in (workload.plan or {}).get("stages", []):
            if stage["label"] == "saturation reads":
                seconds = float(stage["duration"].rstrip("s")) - float(stage.get("warmup", "0s").rstrip("s"))
                held[workload.name] = seconds
    assert held["fleet-5000x1"] == held["fleet-5000x5"] == 3
    assert held["fleet-2000x1"] == held["fleet-2000x4"] == held["reads-1000x1"] == held["reads-1000x2"] == 10


def test_a_drill_outlasts_its_kill_the_boot_and_the_recovery_at_any_scale():
    """At --scale 0.25 a 4 s drill ended before the restarted Worker was READY (exit 3, not the declared 1): whatever
    the scale, the reads go on past the kill, the boot it runs with (or the outage's 5 s cache) and the recovery."""
    from swarmgauge.cli.demo_mdk import DRILLS, drill_workload

    for scale in (0.1, 0.25, 0.5, 1.0):
        for name in DRILLS:
            workload = drill_workload(name, scale)
            (stage,) = workload.plan["stages"]
            kill_s = float(workload.options[workload.options.index("--mdk-drill-after") + 1].rstrip("s"))
            if name == "device-outage":
                waits_s = 5.0
            else:
                embedded = workload.options[workload.options.index("--mdk-embedded-args") + 1]
                waits_s = float(embedded.removeprefix("--restart-boot-s "))
            assert kill_s >= 1
            assert float(stage["duration"].rstrip("s")) >= kill_s + waits_s + 1


def test_below_scale_1_the_restart_boot_shrinks_with_the_scale_and_the_index_names_the_one_run():
    """The boot is the stand-in's setting (READY and the first read are marked as set by it): a quarter-scale demo
    boots a quarter as long, 1 s at the least, and the index's "set by" says which boot and why."""
    from swarmgauge.cli.demo_mdk import drill_workload
    from swarmgauge.reports.index_mdk_drills import drill_rows

    def boot(scale: float) -> str:
        options = drill_workload("kernel-restart", scale).options
        return options[options.index("--mdk-embedded-args") + 1]

    assert (boot(2.0), boot(1.0), boot(0.5), boot(0.25), boot(0.1)) == (
        RESTART_BOOT,
        RESTART_BOOT,
        "--restart-boot-s 2.5",
        "--restart-boot-s 1.25",
        "--restart-boot-s 1",
    )
    assert (
        drill_workload("kernel-restart", 0.25).planned_seconds()
        < drill_workload("device-outage", 0.25).planned_seconds()
    )
    drill = {"drill": "kernel-restart", "recovered": True, "ready_s": 1.4, "first_read_s": 1.8, "boot_s": 1.25}
    ready = next(row for row in drill_rows(drill) if row["event"] == "READY")
    assert (
        ready["set by"].startswith("--restart-boot-s 1.25 ") and "shortened to 0.25 of it by --scale" in ready["set by"]
    )
    at_scale_1 = next(row for row in drill_rows({**drill, "boot_s": 5.0}) if row["event"] == "READY")
    assert at_scale_1["set by"] == BOOT_SET_BY


def test_a_drill_at_scale_1_kills_at_2_s_into_15_s_of_reads_and_shorter_scales_shorten_it():
    from swarmgauge.cli.demo_mdk import drill_workload

    full, quarter = drill_workload("worker-restart", 1.0), drill_workload("worker-restart", 0.25)
    assert full.plan["stages"][0]["duration"] == "15s"
    assert full.options[full.options.index("--mdk-drill-after") + 1] == "2s"
    assert quarter.planned_seconds() < full.planned_seconds()
    assert quarter.options[quarter.options.index("--mdk-drill-after") + 1] == "1s"


#: Every MDK workload's load seconds and steps at --scale 1, as the issue's 90 % of rows is judged on them (main 4843a62,
#: the one-at-a-time steps since sized on a loaded machine's 0.37 s reads; the compared saturation steps' warm-up on
#: top of their 10 s since 2026-12-07, where their first reads' flood read 5 % over one Worker's lane): a change for
#: shorter scales must leave these as they are.
SCALE_1 = {
    "fleet-10x1": (30, "one at a time 13s, switch 1s, saturation reads 10s, switch 1s, discover 2s, action burst 3s"),
    "fleet-2000x1": (91, "one at a time 71s, switch 1s, saturation reads 13s, switch 1s, discover 2s, action burst 3s"),
    "fleet-5000x1": (22, "one at a time 12s, switch 1s, saturation reads 3s, switch 1s, discover 2s, action burst 3s"),
    "fleet-2000x4": (63, "one at a time 45s, switch 1s, saturation reads 11s, switch 1s, discover 2s, action burst 3s"),
    "fleet-5000x5": (22, "one at a time 12s, switch 1s, saturation reads 3s, switch 1s, discover 2s, action burst 3s"),
    "fleet-5000x5-ping": (9, "discover 2s, action burst 3s, drain 4s"),
    "reads-1000x1": (11, "saturation reads 11s"),
    "reads-1000x2": (11, "saturation reads 11s"),
    "worker-restart": (15, "reads 15s"),
    "kernel-restart": (15, "reads 15s"),
    "device-outage": (15, "reads 15s"),
}


def test_scale_1_keeps_the_plans_the_pages_rows_were_judged_on():
    found = {
        workload.name: (
            workload.planned_seconds(),
            ", ".join(f"{stage['label']} {stage['duration']}" for stage in workload.plan["stages"]),
        )
        for workload in workloads(1.0)
    }
    assert found == SCALE_1
    warmed = {w.name: s["warmup"] for w in workloads(1.0) for s in w.plan["stages"] if "warmup" in s}
    assert warmed == {"fleet-2000x1": "3s", "fleet-2000x4": "1s", "reads-1000x1": "1s", "reads-1000x2": "1s"}


def test_a_short_saturation_step_leaves_out_the_readers_first_flood_and_a_summarys_lane_backlog():
    """A 2 s step counted 1,000 first reads the Workers had not served (1,216 reads/s on a 960/s lane), and at 2,000 /
    1 the one-at-a-time step's last summary holds the lane 2.1 s, 1.1 s of it past the switch (no user) between the
    steps: the compared rates measure past both, a second."""
    from swarmgauge.cli.demo_mdk import RATE_FLEETS, SWITCH, THROUGHPUT, WORKER_READ_S

    by_name = {w.name: w for w in workloads(0.25)}
    for name in (*RATE_FLEETS, *THROUGHPUT):
        (stage,) = [s for s in by_name[name].plan["stages"] if s["label"] == "saturation reads"]
        warmup, duration = float(stage["warmup"].rstrip("s")), float(stage["duration"].rstrip("s"))
        assert duration - warmup >= 1 and warmup >= 1
        if name in RATE_FLEETS:
            fleet = next(f for f in fleets() if f.name == name)
            switch_s = float(SWITCH["duration"].rstrip("s"))
            assert warmup >= 1 + max(0.0, fleet.devices * WORKER_READ_S / fleet.workers - switch_s)
            assert by_name[name].plan["stages"][1] == SWITCH  # the switch is what comes between them
    for name in ("fleet-10x1", "fleet-5000x1", "fleet-5000x5"):  # their reads count in the verdict, every one
        assert all("warmup" not in s for s in by_name[name].plan["stages"])


def test_below_scale_1_the_mdk_page_is_shorter_and_keeps_every_workload_and_step():
    full, quarter = workloads(1.0), workloads(0.25)
    assert [w.name for w in quarter] == [w.name for w in full]
    for short, long in zip(quarter, full, strict=True):
        assert [s["label"] for s in short.plan["stages"]] == [s["label"] for s in long.plan["stages"]]
        assert short.planned_seconds() <= long.planned_seconds()
    assert sum(w.planned_seconds() for w in quarter) < sum(w.planned_seconds() for w in full) / 2


def test_below_scale_1_only_the_drills_and_the_ping_run_take_their_ids_from_the_kernels_list():
    """A summary reads every device before the load (0.6 s at the drills' 50, 2.5 s at 2,000 / 1, 5-6 s at 5,000): a
    drill's rows time a restart, which the Kernel's list leaves as they were, and the ping run reads no device; a
    fleet's short steps met the Workers' sweeps and the devices' caches at other times without the summary's seconds,
    and its figures moved. Scale 1 keeps the summary everywhere."""
    assert not [w.name for w in workloads(1.0) if "--mdk-discover" in w.options]
    for scale in (0.1, 0.25, 0.5):
        listed = {w.name for w in workloads(scale) if "--mdk-discover" in w.options}
        assert listed == {"worker-restart", "kernel-restart", "device-outage", "fleet-5000x5-ping"}
        for workload in workloads(scale):
            if workload.name in listed:
                assert workload.options[workload.options.index("--mdk-discover") + 1] == "kernel"


def test_below_scale_1_the_one_at_a_time_mix_shrinks_its_summaries_with_the_square_and_the_step_fits_it():
    by_name = {w.name: w for w in workloads(0.25)}
    for fleet in fleets():
        if fleet.name == "fleet-5000x5-ping":
            continue
        full, quarter = one_at_a_time_mix(fleet), one_at_a_time_mix(fleet, 0.25)
        assert quarter["telemetry"] == -(-full["telemetry"] // 4) and quarter["action"] == -(-full["action"] // 4)
        assert quarter["summary"] == -(-full["summary"] // 16)  # 22 -> 2, 3 -> 1, 0 -> 0
        given = {kind: n for kind, n in _mix(by_name[fleet.name]).items() if n}
        assert given == {
            kind: n for kind, n in quarter.items() if n
        }  # the option the run is given is the mix the step is sized for
        stage = by_name[fleet.name].plan["stages"][0]
        assert float(stage["duration"].rstrip("s")) == one_at_a_time_s(fleet, 0.25)
        assert one_at_a_time_s(fleet, 0.25) >= quarter["telemetry"] * READ_S  # the whole mix, one at a time
    assert one_at_a_time_mix(fleets()[1], 2.0) == one_at_a_time_mix(fleets()[1])  # above 1 the holds grow, not it


def test_the_ping_run_reads_no_device_so_below_scale_1_it_discovers_from_the_kernels_list():
    for scale, expected in ((0.25, ["kernel"]), (1.0, [])):
        by_name = {w.name: list(w.options) for w in workloads(scale)}
        ping = by_name["fleet-5000x5-ping"]
        assert [ping[i + 1] for i, option in enumerate(ping) if option == "--mdk-discover"] == expected
        assert "--mdk-one-at-a-time-mix" not in ping  # the burst alone: no device read in its run
        assert "--mdk-discover" not in by_name["fleet-5000x5"]  # its reads keep the summary's warm fleet
