"""Run folders under a --run-dir parent: never the same folder twice, a latest link, and a report from either."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from swarmgauge.run_folders import LATEST, new_run_folder, resolve

ROOT = Path(__file__).resolve().parents[2]


def test_runs_started_in_the_same_second_get_their_own_folders_and_latest_follows(tmp_path):
    first = new_run_folder(tmp_path, now=0.0)
    second = new_run_folder(tmp_path, now=0.0)
    assert (first.name, second.name) == ("19700101T000000Z", "19700101T000000Z-2")
    assert (tmp_path / LATEST).is_symlink() and (tmp_path / LATEST).resolve() == second.resolve()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_resolve_takes_a_parent_its_latest_link_or_a_run_folder(tmp_path):
    run = new_run_folder(tmp_path / "runs")
    (run / "run.json").write_text("{}")
    assert resolve(tmp_path / "runs") == run.resolve()
    assert resolve(tmp_path / "runs" / LATEST) == tmp_path / "runs" / LATEST
    assert resolve(run) == run
    assert resolve(tmp_path / "empty") == tmp_path / "empty"


def test_swarmgauge_report_renders_the_latest_run_of_a_parent(tmp_path):
    older = new_run_folder(tmp_path, now=0.0)
    newer = new_run_folder(tmp_path, now=60.0)
    for run in (older, newer):
        (run / "run.json").write_text("{}")
    result = subprocess.run(
        [sys.executable, "-m", "swarmgauge.cli", "report", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert (newer / "report.md").exists() and not (older / "report.md").exists()
    assert not (tmp_path / "report.md").exists()
