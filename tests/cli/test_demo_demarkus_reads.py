"""The demarkus page's read workloads: every read row of the page attempted, at any scale, against the page's
simulated bottleneck."""

from __future__ import annotations

import shlex

from swarmgauge.cli.demo_demarkus_reads import read_workloads
from swarmgauge.cli.demo_pages import MARK_BOTTLENECK, pages
from swarmgauge.reports.reference import target_caveat
from swarmgauge.targets.mark.cli import build_parser


def test_every_read_row_of_the_page_has_a_step_at_every_scale():
    for scale in (1.0, 0.5, 0.25):
        plans = {w.name: w.plan for w in read_workloads(scale)}
        assert [stage["users"] for stage in plans["reads"]["stages"]] == [1, 4, 16, 64, 256]
        assert plans["fresh"]["steps"] == [16, 64] and plans["fresh"]["user_classes"] == ["FreshFetchUser"]
        assert plans["lookup"]["steps"] == [16, 64] and plans["lookup"]["user_classes"] == ["LookupUser"]
        assert plans["list"]["steps"] == [16] and plans["list"]["user_classes"] == ["ListUser"]
    assert {"reads", "fresh", "lookup", "list"} <= {w.name for w in pages(["demarkus"])[0].workloads}


def test_the_read_workloads_simulate_the_pages_bottleneck_as_their_plans_say():
    for workload in read_workloads(1.0):
        assert workload.options[1] == "--mark-embedded-args"
        target_args = workload.options[2]
        assert target_args.startswith(MARK_BOTTLENECK)
        build_parser().parse_args(["--port", "0", *shlex.split(target_args)])
        run = {
            "plan": workload.plan,
            "host": "",
            "embedded_targets": {"mark": {"args": ["--port", "0", *shlex.split(target_args)]}},
        }
        assert target_caveat(run) is None, workload.name
        steps = len(workload.plan.get("steps") or workload.plan["stages"])
        assert 6 <= workload.planned_seconds() / steps <= 15  # the contract's hold per step


def test_the_fresh_rows_compare_the_iteration_the_page_times():
    fresh = {w.name: w for w in read_workloads(1.0)}["fresh"]
    rows = fresh.plan["reference"]["rows"]
    assert {row["name"] for row in rows} == {"FETCH+dial"}
    assert [(row["users"], row["p50_ms"], row["p99_ms"]) for row in rows] == [(16, 23, 323), (64, 343, 1160)]


def test_only_the_fresh_dials_lose_first_flights_and_wait_quic_gos_retransmit_timer():
    """The page's fresh rows read as a share of dials waiting a client retransmit timer: the fresh workload's server
    loses that share of first flights and its client resends after quic-go's 200 ms (initial RTT 0.1 s); no other
    read workload loses any."""
    workloads = {w.name: w for w in read_workloads(1.0)}
    fresh = workloads["fresh"]
    assert "--initial-loss 0.3" in fresh.options[2]
    assert "--initial-loss 0.3" in fresh.plan["reference"]["target"]["args"]
    assert fresh.options[fresh.options.index("--mark-initial-rtt") + 1] == "0.1"
    for name in ("reads", "lookup", "list"):
        assert (
            "--initial-loss" not in workloads[name].options[2] and "--mark-initial-rtt" not in workloads[name].options
        )


def test_the_last_steps_requests_in_flight_finish_and_count():
    """Each read workload ends on its largest step; the users get time to finish the requests they have in flight
    (without it the 256-user step lost 256 requests and showed 95-130 req/s against the slots' 160)."""
    for workload in read_workloads(0.5):
        options = list(workload.options)
        assert "--stop-timeout" in options
        assert float(options[options.index("--stop-timeout") + 1]) > 1.79  # the page's slowest read, 256 users' p99


def seconds(text: str) -> float:
    return float(text.rstrip("s"))


def test_the_pooled_ramp_keeps_a_warm_up_that_covers_the_256_user_handshakes_at_any_scale():
    """The warm-up is what the 256-user step needs at any scale; the measured part's floor is a sample count, which
    shrinks below scale 1 with the others (as the hold, never under 2 s; the index saying the rows are noisier)."""
    for scale, least_measured in ((1.0, 4), (0.5, 2), (0.25, 2)):
        stages = {w.name: w for w in read_workloads(scale)}["reads"].plan["stages"]
        last = stages[-1]
        assert last["users"] == 256 and seconds(last["warmup"]) >= 5  # the 2 s spawn hold, 192 users' handshakes
        measured = {seconds(stage["duration"]) - seconds(stage["warmup"]) for stage in stages}
        assert len(measured) == 1 and measured.pop() >= least_measured  # every step measured alike


def test_only_the_256_user_step_keeps_its_warm_up_floor_below_scale_1_and_the_plan_is_the_same_at_1():
    """Below 256 users a step adds at most 48 users and fills its queue in a round of reads: its warm-up shrinks with
    the scale as any hold does. At scale 1 every step keeps the 6 s it had as a step ramp."""
    quarter = {w.name: w for w in read_workloads(0.25)}["reads"].plan["stages"]
    assert [seconds(stage["warmup"]) for stage in quarter] == [2, 2, 2, 2, 5]
    assert [stage["label"] for stage in quarter] == [f"{users} users" for users in (1, 4, 16, 64, 256)]
    whole = {w.name: w for w in read_workloads(1.0)}["reads"]
    assert {(seconds(s["duration"]), seconds(s["warmup"])) for s in whole.plan["stages"]} == {(14, 6)}
    assert whole.planned_seconds() == 70  # as before: five steps of 14 s
