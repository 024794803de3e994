"""A run's files are private where they are created; the process's umask, and so every other file, is untouched."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from swarmgauge.run_folders import resolve
from tests.listeners.sim_run import ROOT, locust_command, sim_target

PRIVACY_LOCUSTFILE = Path(__file__).resolve().parent / "privacy_locustfile.py"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_importing_swarmgauge_locust_and_its_init_leave_the_umask_alone():
    probe = (
        "import os\n"
        "os.umask(0o022)\n"
        "import swarmgauge.locust\n"
        "from locust import events\n"
        "from locust.env import Environment\n"
        "after_import = os.umask(0o022)\n"
        "events.init.fire(environment=Environment(events=events), runner=None, web_ui=None)\n"
        "print(oct(after_import), oct(os.umask(0o022)))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "0o22 0o22"


@pytest.mark.integration
def test_the_run_and_locusts_files_anywhere_are_private_and_the_users_own_files_keep_the_umask(tmp_path):
    runs, elsewhere = tmp_path / "runs", tmp_path / "elsewhere"
    own, umask_seen = tmp_path / "own.txt", tmp_path / "umask.txt"
    with sim_target("--delay", "const:1") as target:
        result = subprocess.run(
            locust_command(
                PRIVACY_LOCUSTFILE,
                "--headless",
                "--host",
                target.url,
                "--steps",
                "1",
                "--step-time",
                "2",
                "--run-dir",
                str(runs),
                "--csv",
                str(elsewhere / "csv" / "locust"),
                "--html",
                str(elsewhere / "new" / "locust.html"),
                "--logfile",
                str(elsewhere / "locust.log"),
                "--json-file",
                str(elsewhere / "stats"),
            ),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=150,
            env={**os.environ, "PRIVACY_OWN_FILE": str(own), "PRIVACY_UMASK_FILE": str(umask_seen)},
            umask=0o022,
        )
    assert result.returncode == 0, result.stderr[-3000:]
    run = resolve(runs)
    assert run != runs and mode(run) == 0o700
    written = [p for p in run.rglob("*")]
    assert {"run.json", "steps.csv", "summary.json", "locust_stats.csv"} <= {p.name for p in written}
    assert {p.name: oct(mode(p)) for p in written if mode(p) != (0o700 if p.is_dir() else 0o600)} == {}
    assert mode(runs) == 0o755  # the --run-dir parent is the user's folder
    assert umask_seen.read_text().strip() == "22"
    assert mode(own) == 0o644
    # Locust's own files are private wherever they are; a folder created for them is 0700 (an existing one keeps
    # the mode it has, as does the --logfile's, which Locust makes before any listener runs)
    assert {p.name: oct(mode(p)) for p in (elsewhere / "csv").iterdir()} == {
        "locust_stats.csv": "0o600",
        "locust_stats_history.csv": "0o600",
        "locust_failures.csv": "0o600",
        "locust_exceptions.csv": "0o600",
    }
    assert {p.name: oct(mode(p)) for p in elsewhere.iterdir()} == {
        "locust.log": "0o600",
        "new": "0o700",
        "stats.json": "0o600",
        "csv": "0o700",
    }
    assert (elsewhere / "locust.log").stat().st_size > 0 and (elsewhere / "new" / "locust.html").stat().st_size > 0
    assert mode(elsewhere / "new" / "locust.html") == 0o600
    assert json.loads((elsewhere / "stats.json").read_text())
