"""``swarmgauge report``: a missing directory, or one with no run in it, is one line and exit 2; a run renders."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.listeners.sim_run import ROOT

pytestmark = pytest.mark.integration  # starts servers, processes or locust runs


def _report(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "swarmgauge.cli", "report", *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_a_missing_run_directory_is_one_line_and_exit_2(tmp_path):
    result = _report(str(tmp_path / "nowhere"))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"swarmgauge report: {tmp_path / 'nowhere'} is not a directory"]


def test_a_directory_with_no_run_in_it_is_one_line_and_exit_2(tmp_path):
    """Issue 28, defect 6: it exited 0 and wrote a one-line report of nothing."""
    result = _report(str(tmp_path))
    assert result.returncode == 2, result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"swarmgauge report: {tmp_path} holds no run"), lines
    assert list(tmp_path.iterdir()) == [], "nothing is written into a folder with no run"


def test_a_run_folder_with_only_its_start_still_renders(tmp_path):
    (tmp_path / "run.json").write_text(json.dumps({"locustfile": "x.py"}))
    result = _report(str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "report.md").read_text().startswith(f"# swarmgauge run report: {tmp_path.name}")
    assert "<h1>" in (tmp_path / "report.html").read_text()
