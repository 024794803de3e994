"""listeners/mdk_results.py: the stand-in's own counters read from its metrics text, the rejected ratio over
Locust's real stats, and the gates a run gets (a reads-only plan is not judged on actions)."""

from __future__ import annotations

from pathlib import Path

import pytest
from locust.env import Environment
from locust.event import Events

from swarmgauge.core.run_context import RunContext
from swarmgauge.listeners import mdk_results, resources

METRICS = """# HELP mdk_commands_total commands by status
mdk_commands_total{status="QUEUED"} 2990
mdk_commands_total{status="COMPLETED"} 2980
mdk_commands_rejected_total{code="ERR_WORKER_NOT_ROUTABLE"} 10
mdk_kernel_accept_ms{quantile="0.99"} 12.5
mdk_kernel_missed_pings_total 3
mdk_worker_headroom{worker="worker-0"} 0.4
mdk_gateway_requests_total 3020
mdk_gateway_metrics_requests_total 20
"""


def _environment() -> Environment:
    return Environment(events=Events())


def test_the_kernel_counts_are_read_from_its_metrics():
    assert mdk_results.parse_kernel_counts(METRICS) == {
        "commands": {"QUEUED": 2990, "COMPLETED": 2980},
        "rejected": {"ERR_WORKER_NOT_ROUTABLE": 10},
        "accept_ms": {"0.99": 12.5},
        "missed_pings": 3,
        "gateway": {"requests": 3020, "metrics_requests": 20},
    }


def test_a_gateway_without_metrics_has_no_kernel_counts():
    assert mdk_results.kernel_counts("http://127.0.0.1:9") is None  # nothing listens on the discard port


def test_rejections_and_timeouts_over_attempted_reads_and_actions():
    environment = _environment()
    stats = environment.stats
    for _ in range(6):
        stats.log_request("MDK", "telemetry", 5, 0)
    for _ in range(4):
        stats.log_request("MDK", "action", 5, 0)
    stats.log_error("MDK", "action", "Rejected(ERR_WORKER_NOT_ROUTABLE)")
    stats.log_error("MDK", "telemetry", "GatewayTimeout(10s)")
    stats.log_error("MDK", "telemetry", "DeviceNotFound(x)")
    stats.log_error("HTTP", "telemetry", "Rejected(other type)")
    stats.log_request("MDK", "connect", 5, 0)
    stats.log_error("MDK", "connect", "GatewayTimeout(10s)")  # a burst user's connect: neither read nor action
    assert mdk_results.error_counts(environment) == {
        "Rejected(ERR_WORKER_NOT_ROUTABLE)": 1,
        "GatewayTimeout(10s)": 2,
        "DeviceNotFound(x)": 1,
    }
    assert mdk_results.rejected_ratio(environment) == 2 / 10
    assert mdk_results.rejected_ratio(environment, 0) is None  # a whole-run figure only
    assert mdk_results.rejected_ratio(_environment()) is None  # nothing attempted


def test_the_target_is_sampled_and_judged_on_the_pages_gates(tmp_path: Path):
    environment = _environment()
    pid_file = tmp_path / "pids" / "kernel.pid"
    mdk_results.watch_target(environment, "http://127.0.0.1:8080/", [pid_file], submits_actions=True)
    assert resources.sampler_for(environment).extra_specs == [
        "prom:http://127.0.0.1:8080/metrics#" + ",".join(mdk_results.PROM_METRICS),
        f"psutil:pidfile={pid_file}",
    ]
    assert RunContext.of(environment).default_slos == mdk_results.DEFAULT_SLOS


def test_a_plan_without_actions_is_not_judged_on_them():
    environment = _environment()
    mdk_results.watch_target(environment, "", [], submits_actions=False)
    assert resources.sampler_for(environment).extra_specs == []
    gates = RunContext.of(environment).default_slos
    assert gates and not set(gates) & set(mdk_results.ACTION_SLOS)


def _sweep_rows(environment: Environment, samples: list[tuple[float, float]]) -> None:
    """(headroom, sweeps ended) per sampling round of one Worker, as the sampler records the Gateway's metrics."""
    from swarmgauge.core.verdict import Row

    source = "prom:http://127.0.0.1:8080/metrics#" + ",".join(mdk_results.PROM_METRICS)
    rows = resources.sampler_for(environment).rows
    for round_, (headroom, ended) in enumerate(samples):
        rows.append(
            Row(float(round_), float(round_), 0, "local", source, 'mdk_worker_headroom{worker="w-0"}', headroom, round_)
        )
        metric = 'mdk_worker_collection_cycles_total{worker="w-0"}'
        rows.append(Row(float(round_), float(round_), 0, "local", source, metric, ended, round_))


def test_the_first_sweep_started_before_the_run_is_left_out_once_a_later_one_ended():
    environment = _environment()
    _sweep_rows(environment, [(1.1, 1), (1.1, 1), (1.1, 1), (0.6, 2), (0.62, 3)])
    assert mdk_results.headroom_by_worker(environment) == {"w-0": pytest.approx(0.61)}


def test_a_worker_whose_second_sweep_never_ends_keeps_its_first_and_its_lower_bound():
    environment = _environment()
    _sweep_rows(environment, [(1.5, 1), (1.7, 1), (1.9, 1)])
    assert mdk_results.headroom_by_worker(environment) == {"w-0": pytest.approx(1.7)}
