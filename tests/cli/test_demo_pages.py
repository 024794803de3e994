"""``swarmgauge demo brain`` end to end, the cheapest page: two real Locust runs against the brain stand-in, one run
folder each under one demo folder, and an index whose figures are the ones in those folders."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from swarmgauge.reports.index_figures import ms
from swarmgauge.run_folders import resolve

pytestmark = pytest.mark.integration  # starts servers, processes and locust runs

ROOT = Path(__file__).resolve().parents[2]


def _aggregated(run: Path) -> dict[str, str]:
    with open(run / "steps.csv", newline="") as handle:
        return next(row for row in csv.DictReader(handle) if row["name"] == "Aggregated")


@pytest.mark.timeout(200)
def test_demo_brain_builds_the_index_from_its_run_folders(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "swarmgauge.cli", "demo", "brain", "--scale", "0.35", "--run-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=190,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    demo = resolve(tmp_path)
    lines = result.stdout.splitlines()
    progress = [line for line in lines if line.startswith("[")]
    assert len(progress) == 2  # one line per workload: name, elapsed, run folder
    for line, name in zip(progress, ("before-fix", "after-fix")):
        assert f"brain/{name}:" in line and " s, exit " in line and str(demo / "brain" / name) in line
    assert f"index: {demo / 'report.html'}" in result.stdout

    manifest = json.loads((demo / "demo.json").read_text())
    runs = {w["name"]: demo / w["run_folder"] for w in manifest["pages"][0]["workloads"]}
    assert all((run / "steps.csv").is_file() and (run / "report.html").is_file() for run in runs.values())

    report = (demo / "report.md").read_text()
    section = report.split("## brain:")[1]
    for name, run in runs.items():
        row = next(line for line in section.splitlines() if line.startswith(f"| {name} "))
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        measured = _aggregated(run)
        assert cells[1] == str(int(measured["requests"]))  # searches, from that run's steps.csv
        assert cells[2] == ms(measured["p50_ms"])  # p50, from the same row
        trend = json.loads((run / "summary.json").read_text())["Target memory"]["trends"][0]
        assert cells[5] == f"{trend['first MiB']:.0f} to {trend['last MiB']:.0f} MiB"
        assert f"]({run.relative_to(demo)}/report.html)" in section  # the link to the workload's full report
    assert "**Verdict:** shape holds: before the fix RSS grew" in section
    html = (demo / "report.html").read_text()
    assert "class='holds'" in html and "2dph-brain-perf.md" in html
