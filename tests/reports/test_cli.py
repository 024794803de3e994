"""``swarmgauge report``: a missing directory is one line and exit 2; an empty run directory still renders."""

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


def test_an_empty_run_directory_renders_an_empty_report(tmp_path):
    result = _report(str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "report.md").read_text().startswith(f"# swarmgauge run report: {tmp_path.name}")
    assert json.loads((tmp_path / "summary.json").read_text()) == {"run_dir": tmp_path.name}
    assert "<h1>" in (tmp_path / "report.html").read_text()
