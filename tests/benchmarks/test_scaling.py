"""Smoke run of benchmarks/scaling.py: tiny runs with 1 and 2 workers against our own nginx, JSON out (no timing is
asserted; the figures are for reading)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # starts servers, processes or locust runs

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(
    not (shutil.which("nginx") or Path("/usr/sbin/nginx").exists()),
    reason="nginx is not installed (.ci/run installs nginx-light)",
)
def test_scaling_benchmark_runs_one_and_two_workers_and_writes_a_ratio(tmp_path):
    out = tmp_path / "scaling.json"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.scaling",
            "--users",
            "2",
            "--seconds",
            "2",
            "--rounds",
            "1",
            "--out",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=150,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "ratio 2:1" in result.stdout
    doc = json.loads(out.read_text())
    assert [(r["workers"], r["workers_reporting"]) for r in doc["runs"]] == [(1, 1), (2, 2)]
    assert all(r["requests"] > 0 and r["failures"] == 0 for r in doc["runs"])
    assert doc["ratio_2_to_1"] == pytest.approx(doc["rps_median"]["2"] / doc["rps_median"]["1"], rel=1e-3)


def test_scaling_benchmark_rejects_zero_counts(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.scaling", "--users", "0", "--out", str(tmp_path / "x.json")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "benchmarks.scaling: --users, --seconds, --rounds and --nginx-workers must be at least 1"
    )
    assert not (tmp_path / "x.json").exists()
