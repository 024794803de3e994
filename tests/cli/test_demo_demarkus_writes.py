"""The demarkus page's write and MCP workloads: every row has one at any scale (scale shortens, never drops), the
burst declares its expected exit, the MCP tables cover 1/8/32 workers of both tools plus QUIC at 1, and every
stand-in setting is one the embedded targets' own parsers accept."""

from __future__ import annotations

import shlex

import pytest

from swarmgauge.cli.demo_demarkus_writes import burst_writes, churn_ttl, dedup_cap, writes_and_mcp
from swarmgauge.cli.demo_pages import pages
from swarmgauge.plans.plan import build_plan
from swarmgauge.targets.mark.cli import build_parser
from swarmgauge.targets.mcp_gateway import parse_args as gateway_args

NAMES = ["writes", "writes-concurrent", "writes-burst", "writes-soak", "mcp-tools", "churn"]


@pytest.mark.parametrize("scale", [0.1, 0.25, 0.5, 1.0, 2.0])
def test_every_write_and_mcp_workload_is_there_at_every_scale_and_its_plan_builds(scale):
    workloads = writes_and_mcp(scale)
    assert [w.name for w in workloads] == NAMES
    for workload in workloads:
        if workload.plan is not None:
            build_plan(workload.plan, source="test")
        assert workload.planned_seconds() > 0
    page = pages(["demarkus"], scale)[0]
    assert set(NAMES) <= {w.name for w in page.workloads}


def test_scale_shortens_the_holds_and_the_burst_but_keeps_its_floor():
    short, full = writes_and_mcp(0.25), writes_and_mcp(1.0)
    assert sum(w.planned_seconds() for w in short) < sum(w.planned_seconds() for w in full)
    assert burst_writes(1.0) == 200 and burst_writes(0.1) == 40


@pytest.mark.parametrize("scale", [0.1, 0.25, 0.3, 0.5, 0.9])
def test_a_short_one_writer_soak_reads_whole_pacing_periods_after_its_first_free_slot(scale):
    """A 6 s hold read 5 writes (0.83/s against the page's 0.67) because the first takes a free slot at once: below
    scale 1 a period's warm-up goes first and the measured part is whole periods, at least two."""
    from swarmgauge.cli.demo_demarkus_writes import PAGE_PACING_S

    plan = writes_and_mcp(scale)[0].plan
    warmup, duration = float(plan["warmup"].rstrip("s")), float(plan["duration"].rstrip("s"))
    assert warmup == PAGE_PACING_S
    periods = (duration - warmup) / PAGE_PACING_S
    assert periods == round(periods) >= 2
    build_plan(plan, source="test")


def test_at_scale_1_the_one_writer_soak_is_the_24_s_the_rows_were_judged_on():
    plan = writes_and_mcp(1.0)[0].plan
    assert plan["duration"] == "24s" and "warmup" not in plan


def test_the_burst_is_expected_to_end_with_locusts_failure_exit_and_the_others_with_zero():
    exits = {w.name: w.expected_exit for w in writes_and_mcp(1.0)}
    assert exits.pop("writes-burst") == 1 and set(exits.values()) == {0}


def test_the_mcp_plan_runs_both_tools_at_1_8_and_32_workers_then_quic_fetch_at_1():
    plan = next(w for w in writes_and_mcp(1.0) if w.name == "mcp-tools").plan
    assert plan is not None
    labels = [stage["label"] for stage in plan["stages"] if stage["label"] != "switch"]
    assert labels == [f"{tool} {n}" for tool in ("mark_fetch", "mark_lookup_all") for n in (1, 8, 32)] + [
        "QUIC FETCH 1"
    ]


@pytest.mark.parametrize("scale", [0.25, 1.0])
def test_the_dedup_cap_sits_below_the_live_sessions_so_the_log_spam_shows(scale):
    assert dedup_cap(scale) < 5 * churn_ttl(scale)


def _value_after(options: tuple[str, ...], flag: str) -> str | None:
    joined = [option.split("=", 1)[1] for option in options if option.startswith(flag + "=")]
    return joined[0] if joined else options[options.index(flag) + 1] if flag in options else None


def test_a_value_that_starts_with_a_dash_is_joined_to_its_flag():
    """argparse takes a lone ``--json-response`` after ``--mcp-embedded-args`` for a flag of its own (exit 2, the
    workload never ran); a value with a space in it passes, one without must be joined with ``=``."""
    for workload in writes_and_mcp(1.0):
        for flag, value in zip(workload.options, workload.options[1:]):
            if flag in ("--mark-embedded-args", "--mcp-embedded-args", "--mcp-mark-args"):
                assert not (value.startswith("-") and " " not in value), (workload.name, flag, value)


def test_every_stand_in_setting_is_accepted_by_the_target_it_is_for():
    for workload in writes_and_mcp(1.0):
        mark = _value_after(workload.options, "--mark-embedded-args") or _value_after(
            workload.options, "--mcp-mark-args"
        )
        if mark:
            build_parser().parse_args(["--port", "0", *shlex.split(mark)])
        gateway = _value_after(workload.options, "--mcp-embedded-args")
        if gateway:
            gateway_args(["--mark", "mark://127.0.0.1:1", *shlex.split(gateway)])


@pytest.mark.parametrize("scale", [0.25, 1.0])
def test_the_planned_time_of_the_burst_is_its_count_at_the_pacing_and_of_the_writers_their_queue_answered(scale):
    """The progress line's "planned" is the time the run takes: the burst's count of commit slots (its -t only a cap
    above it), and the concurrent writers' hold plus their writes in flight answered within their stop grace."""
    by_name = {w.name: w for w in writes_and_mcp(scale)}
    burst, concurrent = by_name["writes-burst"], by_name["writes-concurrent"]
    pacing = 1.5 * 0.2
    assert burst.planned_seconds() == pytest.approx(burst_writes(scale) * pacing)
    assert float(_value_after(burst.options, "-t").rstrip("s")) > burst.planned_seconds()
    grace = float(_value_after(concurrent.options, "--stop-timeout"))
    assert concurrent.plan is not None
    hold = float(concurrent.plan["duration"].rstrip("s"))
    assert concurrent.planned_seconds() == hold + min(4 * 1.5, grace)


def test_the_concurrent_writers_hold_past_their_queues_second_round_at_any_scale():
    """The mean wait reads the 4 writers' queue (about 6 s) only from their second round of writes on: below scale 1
    the hold shrinks to that and no further (``needs``); at scale 1 it is the 20 s it was."""
    from swarmgauge.cli.demo_demarkus_writes import CONCURRENT_QUEUE_S

    for scale, expected in ((0.1, CONCURRENT_QUEUE_S), (0.25, CONCURRENT_QUEUE_S), (0.5, 10.0), (1.0, 20.0)):
        concurrent = {w.name: w for w in writes_and_mcp(scale)}["writes-concurrent"]
        assert concurrent.plan is not None and float(concurrent.plan["duration"].rstrip("s")) == expected
