"""``swarmgauge demo brain`` end to end, the cheapest page: two real Locust runs against the brain stand-in, one run
folder each under one demo folder, and an index whose figures are the ones in those folders."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from swarmgauge.cli.demo_pages import pages
from swarmgauge.reports.index_figures import ms
from swarmgauge.run_folders import resolve

pytestmark = pytest.mark.integration  # starts servers, processes and locust runs

ROOT = Path(__file__).resolve().parents[2]


def _aggregated(run: Path) -> dict[str, str]:
    with open(run / "steps.csv", newline="") as handle:
        return next(row for row in csv.DictReader(handle) if row["name"] == "Aggregated")


@pytest.mark.timeout(400)
def test_demo_brain_builds_the_index_from_its_run_folders(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "swarmgauge.cli", "demo", "brain", "--scale", "0.35", "--run-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=390,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    demo = resolve(tmp_path)
    lines = result.stdout.splitlines()
    progress = [line for line in lines if line.startswith("[")]
    names = ("before-fix", "after-fix", "pool-before-fix", "pool-after-fix")
    assert len(progress) == len(names)  # one line per workload: name, elapsed, exit, run folder, time left
    for line, name, code in zip(progress, names, (3, 0, 3, 0)):  # the gates that fail by design exit 3
        assert f"brain/{name}:" in line and f" s), exit {code}" in line and str(demo / "brain" / name) in line
        assert " s (start-up " in line and ", load " in line and ", drain " in line and ", end " in line  # its phases
        assert " elapsed, " in line
    assert progress[0].endswith(" left") and " no workload left, the reports next (about " in progress[-1]
    assert "reports: 4 run reports, " in result.stdout  # rendered between the loads, not inside each workload
    assert f"index: {demo / 'report.html'}" in result.stdout

    manifest = json.loads((demo / "demo.json").read_text())
    runs = {w["name"]: demo / w["run_folder"] for w in manifest["pages"][0]["workloads"]}
    assert all((run / "steps.csv").is_file() and (run / "report.html").is_file() for run in runs.values())

    report = (demo / "report.md").read_text()
    section = report.split("## brain:")[1]
    for name in ("before-fix", "after-fix"):
        measured = _aggregated(runs[name])
        row = next(line for line in section.splitlines() if line.startswith(f"| {name}: p50 of "))
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert cells[0] == f"{name}: p50 of {int(measured['requests']):,} searches"  # from that run's steps.csv
        assert cells[1] == ms(measured["p50_ms"])
    for run in runs.values():
        assert f"]({run.relative_to(demo)}/report.html)" in section  # the link to the workload's full report
    assert "**Verdict:** " in section and " rows green" in section
    kept = next(line for line in section.splitlines() if line.startswith("| before-fix: RSS kept per search"))
    assert "16 MiB set (page: ~490 MB / 30.6)" in kept and "set by the stand-in: --leak-per-search 16384" in kept
    assert "| after-fix: errors " in section and "| 0 = 0 " in section  # a zero on the page, matched
    assert "after the fix 1 model load(s) in the process" in section and "after the fix 0 zombie children" in section
    assert "pool full: every backend route (even /stats) 502 through the last step" in section
    assert "pool fixed: 0 errors at c=8/16" in section
    assert "](index_plots/brain.png)" in section and (demo / "index_plots" / "brain.png").is_file()
    html = (demo / "report.html").read_text()
    assert '<div id="chart-index-brain" class="plotly-graph-div"' in html and "2dph-brain-perf.md" in html


def test_the_kneo_page_hands_the_python_it_found_to_its_workloads_and_keeps_one_set(monkeypatch):
    """The availability check finds kneo-serv's Python >= 3.12 once; the workloads' processes inherit it through the
    variable the kneo target tries first, so each start-up does not look again (a variable set by the user stays)."""
    from swarmgauge.cli.demo_pages import KNEO_PYTHON_VARIABLE
    from swarmgauge.targets.kneo import NoSuitablePython, find_python

    try:
        interpreter, _version = find_python()
    except NoSuitablePython:
        pytest.skip("no Python >= 3.12 here")
    kneo = next(page for page in pages([], 1.0) if page.name == "kneo")
    monkeypatch.delenv(KNEO_PYTHON_VARIABLE, raising=False)
    kneo.unavailable()
    assert os.environ[KNEO_PYTHON_VARIABLE] == interpreter
    assert find_python() == (interpreter, _version)  # what a workload's process finds first with it set
    monkeypatch.setenv(KNEO_PYTHON_VARIABLE, "/a/python/set/by/the/user")
    kneo.unavailable()
    assert os.environ[KNEO_PYTHON_VARIABLE] == "/a/python/set/by/the/user"
