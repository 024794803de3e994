"""The stand-in Kernel's dispatch lane: its cost grows with the fleet and the commands in it, and a health ping
queued behind a busy lane misses, so the Worker goes SICK and commands for it are rejected ERR_WORKER_NOT_ROUTABLE."""

from __future__ import annotations

import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from swarmgauge.targets.launch import child_env
from swarmgauge.targets.mdk.common import StackPlan, WorkerPlan
from swarmgauge.targets.mdk.kernel import Kernel
from swarmgauge.targets.mdk.stack import MDKStack
from tests import REPO_ROOT

SET_NORMAL = {"action": "setPowerMode", "params": {"mode": "normal"}}


def test_a_lane_turn_costs_more_with_a_bigger_fleet_and_more_commands_in_the_kernel(tmp_path):
    plan = StackPlan(
        gateway_port=1,
        kernel_port=2,
        workers=[WorkerPlan("worker-0", 3, 4, [])],
        accept_base_us=500.0,
        accept_us_per_device=2.0,
        accept_us_per_inflight=50.0,
    )
    kernel = Kernel(tmp_path, plan)
    kernel.device_owner = {f"d{i}": "worker-0" for i in range(1000)}
    idle = kernel.lane_cost_s()
    kernel.device_owner.update({f"e{i}": "worker-0" for i in range(4000)})
    bigger = kernel.lane_cost_s()
    kernel.lane_waiting, kernel.unsettled = 150, 50
    loaded = kernel.lane_cost_s()
    assert idle == pytest.approx(0.0025) and bigger == pytest.approx(0.0105)
    assert loaded == pytest.approx(0.0105 + 200 * 50e-6)


@pytest.mark.integration
@pytest.mark.timeout(90)
def test_a_ping_behind_a_busy_lane_misses_and_the_worker_rejects_as_not_routable():
    # 4 devices x 0.1 s per lane turn: 12 concurrent submits hold the lane about 5 s, past the ping's 1 s timeout.
    with MDKStack(
        devices=4,
        workers=1,
        health_ping_s=0.5,
        health_timeout_s=1.0,
        accept_base_us=0.0,
        accept_us_per_device=100_000.0,
        accept_us_per_inflight=0.0,
    ) as stack:
        url = f"{stack.url}/api/fleet/device/{stack.device_ids('worker-0')[0]}/action"

        def submit(_: int) -> dict:
            return requests.post(url, json=SET_NORMAL, timeout=30).json()["result"]

        with ThreadPoolExecutor(max_workers=12) as pool:
            results = list(pool.map(submit, range(12)))
        status = stack.kernel_status()
        errors = {r.get("error") for r in results if r["status"] == "REJECTED"}
        assert status["missed_pings"] >= 1
        assert errors == {"ERR_WORKER_NOT_ROUTABLE"} and any(r["status"] == "QUEUED" for r in results)
        text = requests.get(stack.url + "/metrics", timeout=10).text
        assert "mdk_kernel_missed_pings_total" in text and "mdk_kernel_commands_in_flight" in text
        assert status["accept_ms"]["0.5"] <= status["accept_ms"]["0.99"]
        assert 'mdk_kernel_accept_ms{quantile="0.99"}' in text
        deadline = time.monotonic() + 15
        while stack.kernel_status()["workers"][0]["health"] != "HEALTHY":
            assert time.monotonic() < deadline, "the Worker never became healthy again once the lane was free"
            time.sleep(0.2)


def test_a_negative_lane_cost_is_a_one_line_usage_error():
    result = subprocess.run(
        [sys.executable, "-m", "swarmgauge.cli", "target", "mdk", "--accept-us-per-device", "-1"],
        capture_output=True,
        text=True,
        timeout=30,
        env=child_env(),
        cwd=REPO_ROOT,
    )
    assert result.returncode == 2 and "--accept-us-per-device" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_the_default_lane_waits_tens_of_ms_at_2000_devices_and_as_the_page_at_5000(tmp_path):
    """The page: acceptance at 1,000 submits/s took tens of ms at p50 at 2,000 devices (one Worker and four) and
    423 ms at 5,000 in its green run. A 3 s burst's median submit waits 1,500 turns' excess over the 1 ms between
    arrivals; one parameter set for every fleet, and a single command still waits about one turn."""
    kernel = Kernel(tmp_path, StackPlan(gateway_port=1, kernel_port=2, workers=[WorkerPlan("worker-0", 3, 4, [])]))

    def median_wait_ms(devices: int) -> float:
        kernel.device_owner = {f"d{i}": "worker-0" for i in range(devices)}
        return max(0.0, 1500 * (kernel.lane_cost_s() * 1000 - 1.0))

    assert median_wait_ms(1000) == 0.0  # keeps up: evenly paced submits do not queue
    assert 10 <= median_wait_ms(2000) < 100  # "tens of ms"
    assert median_wait_ms(5000) == pytest.approx(423, rel=0.25)  # the page's green 5,000 / 5 run
    kernel.device_owner = {f"d{i}": "worker-0" for i in range(10)}
    assert kernel.lane_cost_s() * 1000 < 1.0  # a single command at 10 devices: one turn, under a ms


def test_thousands_of_unsettled_commands_do_not_saturate_a_small_fleets_lane(tmp_path):
    """A burst after 200 readers on 10 devices leaves its commands executing behind their reads (unsettled, by the
    thousand); the Kernel still accepts 1,000/s: acceptance does not hang on execution."""
    kernel = Kernel(tmp_path, StackPlan(gateway_port=1, kernel_port=2, workers=[WorkerPlan("worker-0", 3, 4, [])]))
    kernel.device_owner = {f"d{i}": "worker-0" for i in range(10)}
    kernel.unsettled = 3000
    assert kernel.lane_cost_s() * 1000 < 1.0
