"""The quick default of ``swarmgauge demo``: a Mark read ramp over QUIC against the embedded server with its simulated
~160 req/s bucket, with a complete run directory."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from swarmgauge.run_folders import resolve

pytestmark = pytest.mark.integration  # starts servers, processes or locust runs

ROOT = Path(__file__).resolve().parents[2]


def test_demo_writes_the_run_directory_and_report(tmp_path: Path):
    run_dir = tmp_path / "demo"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "swarmgauge.cli",
            "demo",
            "--run-dir",
            str(run_dir),
            "--steps",
            "1,2",
            "--step-time",
            "2",
            "--warmup",
            "0",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"results: {resolve(run_dir)} " in result.stdout  # the run's own folder, not its parent
    for name in ("steps.csv", "run.json", "slo.json", "locust_stats.csv", "locust_stats_history.csv", "report.md"):
        assert (resolve(run_dir) / name).exists(), name
    assert not list(run_dir.glob("locust_*.csv")), (
        "nothing of the run is left beside its folder for a rerun to overwrite"
    )
    with open(resolve(run_dir) / "steps.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert {row["users"] for row in rows} >= {"1", "2"}
    assert {row["request_type"] for row in rows} >= {"FETCH", "QUIC"}
    assert all(row["failures"] == "0" for row in rows)
    assert "started the embedded mark at mark://127.0.0.1:" in result.stderr
    assert "stopped the embedded mark" in result.stderr
    assert "spawn rate is very high" not in result.stderr  # the plan's end stops its users; it is no ramp to warn of
    report = (resolve(run_dir) / "report.md").read_text()
    assert "| Step" in report
    assert "| date |" in report and "| command |" in report and "aioquic" in report  # the run's context
    assert "## Target memory" in report and "embedded mark (pid" in report  # the embedded server sampled as target
    assert "page req/s" in report and "Δ p50" in report  # the demarkus page's figures beside the measured ones
    assert "swarmgauge: per-step results" in result.stdout and "exit code 0" in result.stdout
    options = json.loads((resolve(run_dir) / "run.json").read_text())["options"]
    assert "--backend-rps 160" in options["mark_embedded_args"]  # the page's bucket ceiling, simulated
