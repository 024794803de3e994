"""Run folders under a --run-dir parent: never the same folder twice, a latest link, and a report from either."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from swarmgauge.run_folders import LATEST, is_inside, new_run_folder, resolve

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


def test_a_run_folder_is_0700_and_its_parent_keeps_the_umask(tmp_path):
    previous = os.umask(0o022)
    try:
        run = new_run_folder(tmp_path / "runs")
    finally:
        os.umask(previous)
    assert stat.S_IMODE(run.stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "runs").stat().st_mode) == 0o755


def test_is_inside_follows_the_latest_link(tmp_path):
    run = new_run_folder(tmp_path / "runs")
    assert is_inside(tmp_path / "runs" / LATEST / "steps.csv", tmp_path / "runs")
    assert is_inside(run, tmp_path / "runs")
    assert not is_inside(tmp_path / "runs-other" / "x.csv", tmp_path / "runs")
