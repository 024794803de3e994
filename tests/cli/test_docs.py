"""The reference in ``docs/reference`` is the code's: ``swarmgauge docs --check`` fails when they drift apart, and
a real run writes the columns and keys the reference (``swarmgauge.core.run_files``) lists."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from swarmgauge.core import run_files
from swarmgauge.run_folders import resolve
from tests.listeners.sim_run import ROOT, run_local, sim_target

REFERENCE = ROOT / "docs" / "reference"
FULL_LOCUSTFILE = ROOT / "tests" / "listeners" / "privacy_locustfile.py"  # imports swarmgauge.locust, as users do


def docs(*args: str) -> subprocess.CompletedProcess[str]:
    """``swarmgauge docs`` in a fresh process: the registry holds what the code declares, and no test's options."""
    return subprocess.run(
        [sys.executable, "-m", "swarmgauge", "docs", *args], capture_output=True, text=True, timeout=120, cwd=ROOT
    )


def test_the_committed_reference_matches_the_code():
    result = docs("--check", str(REFERENCE))
    assert result.returncode == 0, result.stderr


def test_a_page_that_drifted_is_named_and_fails_the_check(tmp_path: Path):
    assert docs(str(tmp_path)).returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in REFERENCE.iterdir())
    options = tmp_path / "options.md"
    options.write_text(options.read_text().replace("`--run-dir`", "`--run-folder`"))
    (tmp_path / "slo.md").unlink()
    result = docs("--check", str(tmp_path))
    assert result.returncode == 1
    assert f"{options}: differs from the code" in result.stderr
    assert f"{tmp_path / 'slo.md'}: differs from the code (missing)" in result.stderr


def test_the_options_page_names_every_declared_option_with_both_variables():
    text = (REFERENCE / "options.md").read_text()
    for flag, locust, ours in (("--run-dir", "LOCUST_RUN_DIR", "SWARMGAUGE_RUN_DIR"), ("--slo", "LOCUST_SLO", "")):
        assert f"| `{flag}` | `{locust}`" in text and ours in text


def test_a_bad_invocation_is_one_line_and_exit_2():
    result = docs("--verbose")
    assert result.returncode == 2 and result.stderr.startswith("usage: swarmgauge docs")


def keys_of(run_file: str) -> set[str]:
    (found,) = [f for f in run_files.RUN_FILES if f.name == run_file]
    return set(run_files.names(found.columns))


@pytest.mark.integration
def test_a_real_run_writes_the_columns_and_keys_the_reference_lists(tmp_path: Path):
    with sim_target("--delay", "const:1") as target:
        result = run_local(
            target.url,
            *("--steps", "1", "--step-time", "3", "--run-dir", str(tmp_path), "--sample", f"psutil:pid={os.getpid()}"),
            *("--sample-interval", "1"),
            locustfile=FULL_LOCUSTFILE,
            env={"PRIVACY_OWN_FILE": str(tmp_path / "own.txt"), "PRIVACY_UMASK_FILE": str(tmp_path / "umask.txt")},
        )
    assert result.returncode == 0, result.stderr[-3000:]
    run = resolve(tmp_path)
    with open(run / "steps.csv", newline="") as handle:
        header = next(csv.reader(handle))
    base, tail = run_files.names(run_files.STEPS_BASE), run_files.names(run_files.STEPS_TAIL)
    assert header[: len(base)] == base and header[len(header) - len(tail) :] == tail
    with open(run / "timeline.csv", newline="") as handle:
        assert next(csv.reader(handle)) == run_files.names(run_files.TIMELINE)
    with open(run / "resources.csv", newline="") as handle:
        assert next(csv.reader(handle)) == run_files.names(run_files.RESOURCES)
    for name in ("run.json", "slo.json"):
        assert set(json.loads((run / name).read_text())) - keys_of(name) == set(), name
    summary_extra = set(json.loads((run / "summary.json").read_text())) - keys_of("summary.json")
    assert all(key[:1].isupper() for key in summary_extra), summary_extra  # report sections, named by their titles
    listed = {f.name for f in run_files.RUN_FILES}
    assert {p.name for p in run.iterdir() if p.suffix != ".png"} - listed == set()
