"""``swarmgauge drill`` against ``swarmgauge target mdk``, both real processes: each drill kills a component by its
pid, restarts it, and records the events in order; READY and the first successful read are separate events."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import requests

from swarmgauge.targets.launch import child_env, launch_target
from swarmgauge.targets.mdk.drills import outage_device
from swarmgauge.targets.mdk.stack import MDKStack
from tests import REPO_ROOT

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]
CACHE_S = 2


@pytest.fixture(scope="module")
def stand_in():
    with launch_target(
        "mdk", ["--devices", "10", "--workers", "2", "--cache-s", str(CACHE_S)], wait_for=("ready", "root")
    ) as target:
        yield target


def drill(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "swarmgauge.cli", "drill", *args],
        capture_output=True,
        text=True,
        timeout=90,
        env=child_env(),
        cwd=REPO_ROOT,
    )


def _pids(root: str) -> dict[str, int]:
    stack = MDKStack.attach(root)
    return {c: stack.pid(c) for c in stack.components}


@pytest.mark.parametrize("name, component", [("worker-restart", "worker-0"), ("kernel-restart", "kernel")])
def test_restart_drills_time_ready_and_the_first_read_separately(stand_in, tmp_path, name, component):
    root = stand_in.lines["root"]
    before = _pids(root)
    result = drill(name, "--root", root, "--run-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    row = json.loads(result.stdout.strip().splitlines()[-1])
    assert row["drill"] == name and row["component"] == component and row["recovered"] is True
    assert row["ready_s"] > 0 and row["first_read_s"] > 0
    assert row["read_after_ready_s"] == pytest.approx(row["first_read_s"] - row["ready_s"])
    assert "READY after" in result.stdout and "first successful read after" in result.stdout
    after = _pids(root)
    assert after[component] != before[component]  # killed by pid and restarted
    assert {c: p for c, p in after.items() if c != component} == {c: p for c, p in before.items() if c != component}
    saved = json.loads((tmp_path / "mdk_drills.json").read_text())["drills"]
    assert [d["drill"] for d in saved] == [name]
    summary = requests.get(stand_in.url + "/api/fleet/summary", timeout=10).json()
    assert summary["deviceCount"] == 10


def test_device_outage_fails_snap_first_then_the_cached_channels_then_recovers(stand_in, tmp_path):
    root = stand_in.lines["root"]
    result = drill("device-outage", "--root", root, "--outage-s", "1", "--run-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    row = json.loads(result.stdout.strip().splitlines()[-1])
    assert row["recovered"] is True and row["ready_s"] is None
    assert row["device_id"] == outage_device(MDKStack.attach(root)) and row["device_set_aside"] is None  # no readers
    assert row["snap_failed_s"] <= row["cached_failed_s"] < row["restored_s"] < row["restored_read_s"]
    assert "snap failed after" in result.stdout and "cached channels after" in result.stdout
    summary = requests.get(stand_in.url + "/api/fleet/summary", timeout=10).json()
    assert summary["deviceCount"] == 10


def test_results_append_to_one_file(stand_in, tmp_path):
    root = stand_in.lines["root"]
    for _ in range(2):
        assert (
            drill("worker-restart", "--root", root, "--worker", "worker-1", "--run-dir", str(tmp_path)).returncode == 0
        )
    saved = json.loads((tmp_path / "mdk_drills.json").read_text())["drills"]
    assert [d["component"] for d in saved] == ["worker-1", "worker-1"]


def test_bad_drill_input_is_one_line(tmp_path, stand_in):
    no_stack = drill("worker-restart", "--root", str(tmp_path))
    assert no_stack.returncode == 2 and "no stack.json" in no_stack.stderr
    no_worker = drill("worker-restart", "--root", stand_in.lines["root"], "--worker", "worker-9")
    assert no_worker.returncode == 1 and "swarmgauge drill:" in no_worker.stderr
    assert drill("meteor-strike", "--root", str(tmp_path)).returncode == 2
