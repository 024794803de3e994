"""Steps are written as each ends, so SIGKILL (the OOM killer) after step N keeps steps 1..N, and the next
``swarmgauge report`` marks the run "ended by SIGKILL or crash" (issue 33: such a run kept only its first run.json)."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from swarmgauge.run_folders import CRASHED, ENDED, RUNNING
from swarmgauge.targets.launch import child_env, stop_processes
from tests import REPO_ROOT
from tests.listeners.sim_run import ROOT, locust_command, sim_target, start_distributed, still_running

WAIT_SECONDS = 90.0
STEP_SECONDS = 5


def _aggregated_steps(folder: Path) -> list[str]:
    path = folder / "steps.csv"
    if not path.is_file():
        return []
    with open(path, newline="") as handle:
        return [row["step"] for row in csv.DictReader(handle) if row["name"] == "Aggregated"]


def _latest(run_dir: Path) -> Path:
    return (run_dir / "latest").resolve()


@pytest.mark.integration
def test_sigkill_after_step_two_keeps_steps_one_and_two_and_the_report_says_it_was_killed(tmp_path):
    run_dir = tmp_path / "runs"
    plan = ("--steps", "1,2,3", "--step-time", str(STEP_SECONDS))
    process = subprocess.Popen(
        locust_command(
            REPO_ROOT / "locustfiles/demarkus_reads.py", "FetchUser", "--headless", *plan, "--run-dir", str(run_dir)
        ),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
    )
    try:
        deadline = time.monotonic() + WAIT_SECONDS
        kept: list[str] = []
        while time.monotonic() < deadline and process.poll() is None:
            kept = _aggregated_steps(_latest(run_dir)) if (run_dir / "latest").exists() else []
            if kept == ["0", "1"]:
                break
            time.sleep(0.1)
        children = [child.pid for child in psutil.Process(process.pid).children(recursive=True)]
        running = json.loads((_latest(run_dir) / "run.json").read_text())
        process.send_signal(signal.SIGKILL)  # as the OOM killer does: no handler runs
        process.wait(30)
    finally:
        stop_processes([process], grace=0)
    assert kept == ["0", "1"], f"steps.csv held {kept} while the run was in its third step"
    assert running["state"] == RUNNING and running["pid"] == process.pid
    assert [step["index"] for step in running["steps"]] == [0, 1]
    assert still_running(children) == []  # the embedded target dies with its parent
    folder = _latest(run_dir)
    report = subprocess.run(
        [sys.executable, "-m", "swarmgauge.cli", "report", str(run_dir)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert report.returncode == 0, report.stderr[-3000:]
    assert f"the run ended by {CRASHED} (its process never closed it): 2 step(s) kept" in report.stdout
    marked = json.loads((folder / "run.json").read_text())
    assert (marked["state"], marked["ended_by"]) == (ENDED, CRASHED)
    text = (folder / "report.md").read_text()
    assert f"ended by {CRASHED}" in text and "2 step(s) written as each ended" in text
    summary = json.loads((folder / "summary.json").read_text())
    assert [row["step"] for row in summary["steps"] if row["name"] == "Aggregated"] == [0, 1]
    assert all(row["requests"] > 0 for row in summary["steps"])


def _requests_by_step(folder: Path) -> dict[str, int]:
    with open(folder / "steps.csv", newline="") as handle:
        return {row["step"]: int(row["requests"]) for row in csv.DictReader(handle) if row["name"] == "Aggregated"}


@pytest.mark.integration
def test_a_master_writes_an_ended_step_once_its_workers_figures_for_it_are_in(tmp_path):
    """Each checkpoint of a step holds what the run's final steps.csv holds for it: the master waited for its
    workers' reports (every 3 s) instead of writing what had arrived by the boundary."""
    run_dir = tmp_path / "runs"
    plan = ("--steps", "2,4,6", "--step-time", "6", "--stop-timeout", "5")
    versions: dict[tuple[str, ...], dict[str, int]] = {}  # steps.csv as first seen with these steps in it
    with (
        sim_target("--delay", "const:5") as target,
        start_distributed(target.url, *plan, "--run-dir", str(run_dir), grace=5) as run,
    ):
        master = run.master
        deadline = time.monotonic() + WAIT_SECONDS
        while master.poll() is None and time.monotonic() < deadline:
            if (run_dir / "latest" / "steps.csv").is_file():
                seen = _requests_by_step(_latest(run_dir))
                versions.setdefault(tuple(sorted(seen)), seen)
            time.sleep(0.1)
        _stdout, stderr = master.communicate(timeout=WAIT_SECONDS)
    assert master.returncode == 0, stderr[-3000:]
    final = _requests_by_step(_latest(run_dir))
    assert set(versions) == {("0",), ("0", "1"), ("0", "1", "2")}, versions  # written in steps 2 and 3, and at the end
    assert 0 < versions[("0",)]["0"] == final["0"], (versions, final)
    assert versions[("0", "1")] == {step: final[step] for step in ("0", "1")}, (versions, final)
