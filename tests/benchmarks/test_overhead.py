"""Smoke run of benchmarks/overhead.py with a tiny window: it runs plain Locust and Locust with swarmgauge against
its own nginx, prints its table and ratio and writes its JSON (no timing is asserted; the figures are for reading)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # starts servers, processes or locust runs

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(not (shutil.which("nginx") or Path("/usr/sbin/nginx").exists()), reason="nginx not installed")
def test_overhead_benchmark_prints_and_writes_its_figures(tmp_path):
    out = tmp_path / "overhead.json"
    command = [sys.executable, "-m", "benchmarks.overhead", "--users", "2", "--rounds", "1"]
    command += ["--warmup", "0.5", "--window", "1", "--out", str(out)]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "swarmgauge / fasthttp" in result.stdout
    doc = json.loads(out.read_text())
    assert set(doc["cpu_us_per_request"]) == {"fasthttp", "swarmgauge"}
    assert all(value > 0 for value in doc["cpu_us_per_request"].values())
    assert len(doc["ratio_rounds"]) == 1 and doc["ratio"] > 0
    assert len(doc["load_average"]) == 3
    assert all(r["requests"] > 0 and r["failures"] == 0 for rows in doc["rounds"].values() for r in rows)
    assert doc["target_ratio"] == 1.05
    assert set(doc["event_us"]) == {"fasthttp", "swarmgauge"} and "one request event" in result.stdout
    assert set(doc["iteration_us"]) == {"fasthttp", "swarmgauge"} and "one task iteration" in result.stdout
    assert all(value > 0 for value in doc["iteration_us"].values())
    assert "constant cost per request" in result.stdout and isinstance(doc["constant_share"], float)
    assert doc["settings"]["pinned"] == ((os.cpu_count() or 1) >= 2 and shutil.which("taskset") is not None)


def test_a_pinned_case_runs_under_taskset_on_its_cpu_and_an_unpinned_one_as_given():
    from benchmarks.overhead import GENERATOR_CPU, NGINX_CPU, pinned

    assert pinned(GENERATOR_CPU) == ["taskset", "-c", "1"] and GENERATOR_CPU != NGINX_CPU
    assert pinned(None) == []


def test_overhead_benchmark_rejects_zero_counts(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.overhead", "--rounds", "0", "--out", str(tmp_path / "x.json")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "benchmarks.overhead: --users and --rounds must be at least 1, --window > 0 and --warmup >= 0"
    )
