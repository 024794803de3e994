"""The write locustfile: embedded server with a generated token, expected-version from the last FETCH, the soak."""

from __future__ import annotations

import csv
import subprocess
import sys

import pytest

from swarmgauge.targets.launch import child_env
from tests import REPO_ROOT

pytestmark = pytest.mark.integration  # starts servers, processes or locust runs

LOCUSTFILE = REPO_ROOT / "locustfiles" / "demarkus_writes.py"


def run(tmp_path, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "locust",
            "-f",
            str(LOCUSTFILE),
            "--headless",
            "--csv",
            str(tmp_path / "w"),
            "--stop-timeout",
            "5",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=child_env(),
        cwd=REPO_ROOT,
    )
    with open(tmp_path / "w_stats.csv", newline="") as handle:
        rows = {(r["Type"], r["Name"]): r for r in csv.DictReader(handle)}
    return result, rows


def test_one_writer_publishes_with_expected_versions(tmp_path):
    result, rows = run(
        tmp_path,
        "WriterUser",
        "-u",
        "1",
        "-r",
        "1",
        "-t",
        "3s",
        "--mark-write-paths",
        "2",
        "--mark-embedded-args",
        "--commit-interval 0.05s",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    publish = rows[("PUBLISH", "/load/{doc}")]
    assert int(publish["Request Count"]) > 2 and publish["Failure Count"] == "0"
    assert rows[("FETCH", "/load/{doc} (before write)")]["Failure Count"] == "0"


def test_competing_writers_record_conflicts_by_name(tmp_path):
    result, rows = run(tmp_path, "WriterUser", "-u", "4", "-r", "4", "-t", "3s", "--mark-write-paths", "1")
    with open(tmp_path / "w_failures.csv", newline="") as handle:
        errors = {row["Error"] for row in csv.DictReader(handle)}
    assert int(rows[("PUBLISH", "/load/{doc}")]["Request Count"]) > 0
    assert all(error.startswith("Conflict") for error in errors), errors


def test_soak_writer_runs_at_its_rate_option(tmp_path):
    result, rows = run(tmp_path, "SoakWriterUser", "-u", "1", "-r", "1", "-t", "3s", "--mark-write-rate", "2")
    assert result.returncode == 0, result.stderr[-2000:]
    assert int(rows[("PUBLISH", "/load/{doc}")]["Request Count"]) >= 1


def test_the_generated_token_never_reaches_logs_or_csvs(tmp_path):
    result, _ = run(tmp_path, "WriterUser", "-u", "1", "-r", "1", "-t", "2s", "--mark-token", "visible-raw-token")
    outputs = result.stdout + result.stderr + "".join(p.read_text() for p in tmp_path.glob("w_*.csv"))
    assert "visible-raw-token" not in outputs
