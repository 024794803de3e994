"""brain_leak.py headless against the stand-in: a leak fails the rss_delta SLO (exit 3), the fixed mode passes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from swarmgauge.run_folders import resolve
from swarmgauge.targets.launch import child_env
from tests import REPO_ROOT

pytestmark = pytest.mark.integration  # starts servers, processes or locust runs


def run(tmp_path, locustfile: str, target_args: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "locust",
            "-f",
            str(REPO_ROOT / "locustfiles" / locustfile),
            "--headless",
            "-u",
            "1",
            "-r",
            "1",
            "-t",
            "10s",
            "--sample-interval",
            "1",
            "--sample-warmup",
            "2s",
            "--brain-embedded-args",
            target_args,
            "--run-dir",
            str(tmp_path),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=child_env(),
        cwd=REPO_ROOT,
    )


def test_a_leaking_target_fails_with_exit_3_and_the_verdict_names_its_slope(tmp_path):
    result = run(tmp_path, "brain_leak.py", "--leak-per-search 1024 --search-ms 20")
    assert result.returncode == 3, result.stderr[-2000:]
    assert "leak verdict: LEAK" in result.stdout + result.stderr
    assert "MiB/h" in result.stdout + result.stderr
    verdicts = {v["expr"]: v["status"] for v in json.loads((resolve(tmp_path) / "slo.json").read_text())["verdicts"]}
    assert verdicts["rss_delta<50MiB"] == "fail"
    report = (resolve(tmp_path) / "report.md").read_text()
    assert (
        "Target memory" in report and "leak verdict: LEAK" in report and (resolve(tmp_path) / "resources.png").exists()
    )


def test_the_fixed_target_passes_with_exit_0(tmp_path):
    result = run(tmp_path, "brain_leak.py", "--search-ms 20")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "leak verdict: no leak" in result.stdout + result.stderr
    assert (result.stdout + result.stderr).count("leak verdict:") == 1  # printed once, not printed and logged


def test_pool_exhaustion_is_its_own_failure_class_and_the_report_says_when_it_began(tmp_path):
    result = run(tmp_path, "brain_stress.py", "--pool-exhaustion 40 --search-ms 5", "--brain-mix", "search:3,stats:1")
    assert result.returncode == 3, result.stderr[-2000:]
    report = (resolve(tmp_path) / "report.md").read_text()
    assert "Failures by class: PoolExhausted" in report and "First seen: PoolExhausted at" in report
