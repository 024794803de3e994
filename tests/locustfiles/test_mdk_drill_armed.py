"""An in-run drill waits for the readers' first good read of the victim's devices before it kills, so a drill asked
for at the very start (during the first fleet discovery) still meets readers, and their failed reads are counted."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from swarmgauge.run_folders import resolve
from swarmgauge.targets.launch import child_env
from tests import REPO_ROOT

pytestmark = pytest.mark.timeout(150)


@pytest.mark.integration
def test_a_worker_restart_asked_for_at_once_kills_after_a_good_read_and_counts_the_failed_reads(tmp_path):
    run_dir = tmp_path / "drill"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "locust",
            "-f",
            str(REPO_ROOT / "locustfiles" / "mdk_fleet.py"),
            "--headless",
            "--sample-interval",
            "1",
            "--mdk-scenario",
            "reads",
            "--mdk-readers",
            "10",
            "--mdk-read-time",
            "12s",
            "--mdk-profile",
            "40x2",
            "--run-dir",
            str(run_dir),
            "--mdk-drill",
            "worker-restart",
            "--mdk-drill-after",
            "0s",
        ],
        capture_output=True,
        text=True,
        timeout=140,
        env=child_env(),
        cwd=REPO_ROOT,
    )
    assert result.returncode in (0, 1, 3), result.stderr[-3000:]
    drill = json.loads((resolve(run_dir) / "mdk_drills.json").read_text())["drills"][0]
    assert drill["drill"] == "worker-restart" and drill["armed_s"] is not None
    assert drill["failed_reads"] >= drill["victim_failed_reads"] > 0
    assert "failed reader reads" in result.stderr


def test_a_drill_with_no_good_read_of_the_victim_does_not_kill(monkeypatch):
    from swarmgauge.targets.mdk import drills

    monkeypatch.setattr(drills, "read_state", lambda url, device_id, timeout=3.0: "error")
    with pytest.raises(drills.DrillError, match="did not kill"):
        drills.await_read("http://127.0.0.1:9", ["d1", "d2"], 0.2, "worker-0's devices")
