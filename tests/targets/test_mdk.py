"""The MDK stand-in as real processes: the Gateway's benchmark routes, QUEUED-then-asynchronous commands, a missed
health ping making a Worker non-routable, the per-IP rate limit, /metrics, and bad options as one-line exit 2."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import uuid

import pytest
import requests

from swarmgauge.targets.launch import child_env, launch_target
from swarmgauge.targets.mdk.stack import MDKStack
from tests import REPO_ROOT

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]
SET_NORMAL = {"action": "setPowerMode", "params": {"mode": "normal"}}


@pytest.fixture(scope="module")
def gateway():
    with launch_target(
        "mdk", ["--devices", "12", "--workers", "2", "--cache-s", "1"], wait_for=("ready", "root")
    ) as target:
        yield target


def metric(url: str, pattern: str) -> float | None:
    text = requests.get(url + "/metrics", timeout=5).text
    match = re.search(pattern + r" (\S+)$", text, re.M)
    return float(match.group(1)) if match else None


def test_summary_lists_every_device_by_uuid_and_reads_carry_every_channel(gateway):
    summary = requests.get(gateway.url + "/api/fleet/summary", timeout=10).json()
    assert summary["deviceCount"] == 12 and len(summary["devices"]) == 12
    ids = [d["deviceId"] for d in summary["devices"]]
    assert all(uuid.UUID(i).version == 4 for i in ids)
    assert summary["totalPowerW"] == sum(d["powerW"] for d in summary["devices"])
    body = requests.get(f"{gateway.url}/api/fleet/device/{ids[0]}/telemetry", timeout=10).json()
    assert body["deviceId"] == ids[0] and body["metrics"]["snap"]["success"] is True
    assert {"hashrate_avg", "power", "temperature", "status", "power_mode"} <= set(body["metrics"])
    alerts = requests.get(f"{gateway.url}/api/fleet/device/{ids[0]}/alerts", timeout=10).json()
    assert alerts == {"deviceId": ids[0], "alerts": []}
    assert requests.get(gateway.url + "/echo", params={"value": "x1"}, timeout=5).json() == {"value": "x1"}


def test_the_gateway_counts_every_request_and_its_metrics_reads_apart(gateway):
    """A run's requests are checked against this count: every request, answered or not found, is one; a ``/metrics``
    read (the sampler's, and the one that reads the count) is one of ``metrics_requests`` too."""

    def counts() -> tuple[int, int]:  # one /metrics read, which counts itself
        text = requests.get(gateway.url + "/metrics", timeout=5).text
        found = re.findall(r"^mdk_gateway_(requests|metrics_requests)_total (\d+)$", text, re.M)
        return int(dict(found)["requests"]), int(dict(found)["metrics_requests"])

    everything, metrics = counts()
    assert requests.get(gateway.url + "/echo", timeout=5).ok
    assert requests.get(gateway.url + "/no/such/route", timeout=5).status_code == 404
    assert counts() == (everything + 3, metrics + 1)  # the two, and the second /metrics read


def test_the_kernels_worker_list_has_the_ids_a_summary_reads_without_reading_a_device(gateway):
    stack = MDKStack.attach(gateway.lines["root"])
    listed = stack.listed_device_ids()
    summary = requests.get(gateway.url + "/api/fleet/summary", timeout=10).json()
    assert sorted(listed) == sorted(d["deviceId"] for d in summary["devices"]) and len(listed) == 12
    assert sorted(listed) == sorted(stack.device_ids())  # the plan's: every Worker registered all of its devices


def test_actions_are_queued_then_executed_and_bad_ones_rejected_with_their_code(gateway):
    ids = [d["deviceId"] for d in requests.get(gateway.url + "/api/fleet/summary", timeout=10).json()["devices"]]
    before = metric(gateway.url, r'mdk_commands_total\{status="SUCCESS"\}') or 0
    for device_id in ids[:4]:
        answer = requests.post(f"{gateway.url}/api/fleet/device/{device_id}/action", json=SET_NORMAL, timeout=5)
        assert answer.status_code == 200 and answer.json()["result"]["status"] == "QUEUED"
        assert uuid.UUID(answer.json()["result"]["commandId"])
    deadline = time.monotonic() + 10
    while (metric(gateway.url, r'mdk_commands_total\{status="SUCCESS"\}') or 0) < before + 4:
        assert time.monotonic() < deadline, "queued commands never executed"
        time.sleep(0.1)

    bad_mode = requests.post(
        f"{gateway.url}/api/fleet/device/{ids[0]}/action",
        json={"action": "setPowerMode", "params": {"mode": "turbo"}},
        timeout=5,
    )
    assert bad_mode.status_code == 200
    assert bad_mode.json()["result"] == {"status": "REJECTED", "error": "ERR_PARAM_RANGE: mode"}
    unknown = requests.post(
        f"{gateway.url}/api/fleet/device/{ids[0]}/action", json={"action": "selfDestruct"}, timeout=5
    ).json()["result"]
    assert unknown["status"] == "REJECTED" and unknown["error"].startswith("ERR_COMMAND_NOT_IN_CAPABILITIES")
    missing = requests.post(f"{gateway.url}/api/fleet/device/{ids[0]}/action", json={"params": {}}, timeout=5)
    assert missing.status_code == 400 and missing.json()["message"] == "ERR_ACTION_REQUIRED"
    gone = requests.get(f"{gateway.url}/api/fleet/device/{uuid.uuid4()}/telemetry", timeout=5)
    assert gone.status_code == 404 and gone.json() == {
        "statusCode": 404,
        "error": "Not Found",
        "message": "ERR_DEVICE_NOT_FOUND",
    }
    assert metric(gateway.url, r'mdk_commands_rejected_total\{code="ERR_PARAM_RANGE"\}') >= 1


def test_metrics_carry_cycle_time_headroom_and_routable_per_worker(gateway):
    deadline = time.monotonic() + 15
    while metric(gateway.url, r'mdk_worker_headroom\{worker="worker-1"\}') is None:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    for worker in ("worker-0", "worker-1"):
        cycle = metric(gateway.url, rf'mdk_worker_collection_cycle_seconds\{{worker="{worker}"\}}')
        interval = metric(gateway.url, "mdk_collection_interval_seconds")
        headroom = metric(gateway.url, rf'mdk_worker_headroom\{{worker="{worker}"\}}')
        assert interval == 10.0 and headroom == pytest.approx(cycle / interval, abs=1e-3)
        assert metric(gateway.url, rf'mdk_worker_routable\{{worker="{worker}"\}}') == 1


def test_a_missed_health_ping_makes_the_worker_not_routable_until_a_ping_succeeds():
    with MDKStack(devices=4, workers=2, health_ping_s=0.3, health_timeout_s=0.2) as stack:
        device = stack.device_ids("worker-0")[0]
        other = stack.device_ids("worker-1")[0]
        url = f"{stack.url}/api/fleet/device/{{}}/action"
        pid = stack.pid("worker-0")
        os.kill(pid, signal.SIGSTOP)
        try:
            deadline = time.monotonic() + 5
            while True:
                result = requests.post(url.format(device), json=SET_NORMAL, timeout=5).json()["result"]
                if result["status"] == "REJECTED":
                    break
                assert time.monotonic() < deadline, "a stopped Worker stayed routable"
                time.sleep(0.05)
            assert result["error"] == "ERR_WORKER_NOT_ROUTABLE"
            assert requests.post(url.format(other), json=SET_NORMAL, timeout=5).json()["result"]["status"] == "QUEUED"
            states = {w["workerId"]: w["health"] for w in stack.kernel_status()["workers"]}
            assert states == {"worker-0": "SICK", "worker-1": "HEALTHY"}
        finally:
            os.kill(pid, signal.SIGCONT)
        deadline = time.monotonic() + 5
        while requests.post(url.format(device), json=SET_NORMAL, timeout=5).json()["result"]["status"] != "QUEUED":
            assert time.monotonic() < deadline, "the Worker never became routable again"
            time.sleep(0.05)


def test_a_set_phase_puts_the_first_health_ping_there_and_not_a_period_later():
    with MDKStack(devices=2, workers=1, health_ping_s=600, health_phase_s=6.0, health_timeout_s=0.2) as stack:
        # 6 s: the stack is up (and the Worker stopped) well before a loaded machine reaches the first ping
        device = stack.device_ids("worker-0")[0]
        pid = stack.pid("worker-0")
        os.kill(pid, signal.SIGSTOP)
        try:
            deadline = time.monotonic() + 30  # far below the 600 s period: only the set phase can bring the ping
            url = f"{stack.url}/api/fleet/device/{device}/action"
            while requests.post(url, json=SET_NORMAL, timeout=5).json()["result"]["status"] != "REJECTED":
                assert time.monotonic() < deadline, "no health ping at the set phase"
                time.sleep(0.05)
        finally:
            os.kill(pid, signal.SIGCONT)


def test_rate_limit_per_ip_keys_on_x_forwarded_for_and_frees_after_the_window():
    with launch_target("mdk", ["--devices", "2", "--rate-limit", "5", "--rate-window-s", "1.5"]) as target:
        answers = [requests.get(target.url + "/echo", timeout=5).status_code for _ in range(7)]
        assert answers == [200] * 5 + [429] * 2
        limited = requests.get(target.url + "/echo", timeout=5)
        assert limited.json()["statusCode"] == 429
        assert requests.get(target.url + "/echo", headers={"X-Forwarded-For": "127.1.0.9"}, timeout=5).ok
        assert requests.get(target.url + "/metrics", timeout=5).ok  # the stand-in's own page is never limited
        time.sleep(1.6)
        assert requests.get(target.url + "/echo", timeout=5).ok


def target_mdk(*args: str) -> subprocess.CompletedProcess:
    """``swarmgauge target mdk ARGS`` as a person runs it, to its exit (each case here exits before it serves)."""
    return subprocess.run(
        [sys.executable, "-m", "swarmgauge.cli", "target", "mdk", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=child_env(),
        cwd=REPO_ROOT,
    )


@pytest.mark.parametrize(
    "args, says",
    [
        (["--devices", "0"], "--devices"),
        (["--workers", "3", "--devices", "2"], "--workers"),
        (["--read-cost-ms", "9-1"], "--read-cost-ms"),
        (["--rate-window-s", "0"], "--rate-window-s"),
        (["--health-phase-s", "-1"], "--health-phase-s"),
        (["--restart-boot-s", "-1"], "--restart-boot-s"),
        (["--gateway-read-us", "-1"], "--gateway-read-us must be >= 0"),
    ],
)
def test_bad_options_exit_2_with_one_line(args, says):
    result = target_mdk(*args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and lines[0].startswith("swarmgauge target mdk:")


@pytest.fixture
def first_plan_port_taken(monkeypatch):
    """``take(pick)``: the first plan the stack makes finds the port ``pick(plan)`` names taken by a listening
    socket (as another process could take it between the plan and the component's bind); the holders close at the
    end."""
    import socket

    import swarmgauge.targets.mdk.stack as stack_module

    taken: list[socket.socket] = []
    make_plan = stack_module.make_plan

    def take(pick):
        def plan_with_a_taken_port(**kwargs):
            plan = make_plan(**kwargs)
            if not taken:
                holder = socket.socket()
                holder.bind(("127.0.0.1", pick(plan)))
                holder.listen()
                taken.append(holder)
            return plan

        monkeypatch.setattr(stack_module, "make_plan", plan_with_a_taken_port)
        return taken

    yield take
    for holder in taken:
        holder.close()


def test_a_port_taken_meanwhile_is_picked_again_and_a_given_busy_port_is_one_line(first_plan_port_taken):
    taken = first_plan_port_taken(lambda plan: plan.kernel_port)
    with MDKStack(devices=2) as stack:
        assert stack.plan.kernel_port != taken[0].getsockname()[1]
        assert requests.get(stack.url + "/api/fleet/summary", timeout=10).json()["deviceCount"] == 2
    busy = taken[0].getsockname()[1]
    result = target_mdk("--port", str(busy))
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "gateway exited" in lines[0] and "in use" in lines[0]


def test_a_worker_port_taken_meanwhile_starts_again_and_the_kernel_reads_the_new_key_files(first_plan_port_taken):
    """The first attempt's Worker 0 wrote its key file, then Worker 1 found its port taken: the second attempt's
    Kernel read that stale file (a dead port) before the new Worker 0 replaced it, and kept the dead address."""
    taken = first_plan_port_taken(lambda plan: plan.workers[-1].port)
    with MDKStack(devices=4, workers=2, start_timeout_s=15) as stack:
        assert stack.plan.workers[-1].port != taken[0].getsockname()[1]
        assert requests.get(stack.url + "/api/fleet/summary", timeout=10).json()["deviceCount"] == 4
