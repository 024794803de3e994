"""Smoke run of benchmarks/overhead.py with tiny counts: it runs, prints its table and writes its JSON (no timing
is asserted; the figures are for reading)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # starts servers, processes or locust runs

ROOT = Path(__file__).resolve().parents[2]


def test_overhead_benchmark_prints_and_writes_its_figures(tmp_path):
    out = tmp_path / "overhead.json"
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.overhead", "--requests", "40", "--rounds", "1", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    for part in ("fasthttp", "steps_listener", "steps_end_to_end", "open_model"):
        assert part in result.stdout
    doc = json.loads(out.read_text())
    assert set(doc["figures"]) == {"fasthttp", "steps_listener", "steps_end_to_end", "open_model"}
    assert doc["figures"]["fasthttp"]["us_per_request"] > 0
    assert all(isinstance(f["share_of_fasthttp"], float) for f in doc["figures"].values())
    assert all(len(v) == 1 for v in doc["samples_us"].values())
    assert doc["target_share"] == 0.10


def test_overhead_benchmark_rejects_zero_counts(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.overhead", "--requests", "0", "--out", str(tmp_path / "x.json")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.strip() == "benchmarks.overhead: --requests and --rounds must be at least 1"
