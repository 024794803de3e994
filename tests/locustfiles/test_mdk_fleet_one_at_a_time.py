"""locustfiles/mdk_fleet.py's one-at-a-time user and the machine figures of mdk.json, as the demo's fleets use them:
one user times device reads, single action accepts and fleet summaries one request in flight, and mdk.json holds each
step's CPU per stand-in process and of the generator, and the load average, so the index can tell a fleet the
machine could not hold from one the stand-in's model makes red."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from swarmgauge.run_folders import resolve
from swarmgauge.targets.launch import child_env
from tests import REPO_ROOT

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]
PLAN = {
    "name": "one-at-a-time",
    "kind": "stages",
    "stages": [{"label": "one at a time", "users": 1, "duration": "6s", "user_classes": ["MDKOneAtATime"]}],
    "slos": ["fail_ratio<0.01"],
}


def test_one_user_times_reads_accepts_and_summaries_and_mdk_json_has_each_steps_cpu(tmp_path):
    plan = tmp_path / "plan.yaml"
    plan.write_text(yaml.safe_dump(PLAN))
    run_dir = tmp_path / "run"
    command = [sys.executable, "-m", "locust", "-f", str(REPO_ROOT / "locustfiles" / "mdk_fleet.py"), "--headless"]
    command += ["--plan", str(plan), "--mdk-profile", "10x1", "--sample-interval", "1", "--run-dir", str(run_dir)]
    command += ["--mdk-embedded-args", "--read-cost-ms 20-40"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=100, env=child_env(), cwd=REPO_ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    steps = (resolve(run_dir) / "steps.csv").read_text().splitlines()
    names = {line.split(",")[3] for line in steps[1:] if line.split(",")[1] == "one at a time"}
    assert {"telemetry", "action", "summary"} <= names
    # the users' discovery came before the load, once, and is no request of the run
    assert "discover" not in names
    info = json.loads((resolve(run_dir) / "run.json").read_text())["mdk_discovered_before_load"]
    assert info["devices"] == info["of"] == 10 and info["seconds"] > 0
    doc = json.loads((resolve(run_dir) / "mdk.json").read_text())
    assert isinstance(doc["load_avg"], float)
    step = doc["cpu_by_step"]["0"]
    assert {"generator", "worker-0", "kernel", "gateway", "mocks"} <= set(step)
    assert all(value >= 0 for value in step.values())


def _locust(tmp_path, *more: str) -> tuple[subprocess.CompletedProcess, object]:
    plan = tmp_path / "plan.yaml"
    plan.write_text(yaml.safe_dump(PLAN))
    run_dir = tmp_path / "run"
    command = [sys.executable, "-m", "locust", "-f", str(REPO_ROOT / "locustfiles" / "mdk_fleet.py"), "--headless"]
    command += ["--plan", str(plan), "--mdk-profile", "10x1", "--run-dir", str(run_dir), *more]
    result = subprocess.run(command, capture_output=True, text=True, timeout=100, env=child_env(), cwd=REPO_ROOT)
    return result, run_dir


def test_the_kernels_worker_list_gives_the_fleets_ids_before_the_load_and_the_run_says_so(tmp_path):
    result, run_dir = _locust(tmp_path, "--mdk-discover", "kernel", "--mdk-embedded-args", "--read-cost-ms 20-40")
    assert result.returncode == 0, result.stderr[-3000:]
    info = json.loads((resolve(run_dir) / "run.json").read_text())["mdk_discovered_before_load"]
    assert info["devices"] == info["of"] == 10 and info["by"] == "kernel"
    steps = (resolve(run_dir) / "steps.csv").read_text().splitlines()
    read = [line.split(",") for line in steps[1:] if line.split(",")[3] == "telemetry"]
    assert read and all(int(row[9]) == 0 for row in read)  # every read of a listed device answered


def test_the_kernels_worker_list_is_refused_without_the_embedded_stand_in(tmp_path):
    result, _run_dir = _locust(tmp_path, "--mdk-discover", "kernel", "--host", "http://127.0.0.1:9")
    assert result.returncode == 2
    assert "--mdk-discover kernel" in result.stderr
