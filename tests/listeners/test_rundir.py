"""The run directory: secrets redacted everywhere, and run.json recording how the run ended (the atomic writes are
tested in tests/swarmgauge/test_files.py)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import pytest

from swarmgauge.listeners import rundir
from tests.listeners.sim_run import run_local, sim_target

pytestmark = pytest.mark.integration  # starts servers, processes or locust runs

SECRET_TOKEN = "tok-5ecret-d0-not-leak"
DSN_PASSWORD = "pw-in-the-dsn-9f2"

SECRET_LOCUSTFILE = """
from locust import events

from swarmgauge.shapes import PlanShape  # noqa: F401
from tests.listeners.sim_locustfile import SimUser  # noqa: F401


@events.init_command_line_parser.add_listener
def _options(parser):
    parser.add_argument("--sim-token", default="", is_secret=True, env_var="SIM_TOKEN", help="a secret")
    parser.add_argument("--sim-dsn", default="", help="a DSN whose password must not show")
"""


def test_a_real_run_leaves_no_secret_in_any_file_and_records_the_run(tmp_path):
    locustfile = tmp_path / "secret_locustfile.py"
    locustfile.write_text(SECRET_LOCUSTFILE)
    run_dir = tmp_path / "run"
    with sim_target("--delay", "const:5") as target:
        result = run_local(
            target.url,
            "--steps",
            "1",
            "--step-time",
            "1",
            "--stop-timeout",
            "5",
            f"--sim-token={SECRET_TOKEN}",
            "--sim-dsn",
            f"postgresql://swarm:{DSN_PASSWORD}@127.0.0.1:5432/db",
            "--run-dir",
            str(run_dir),
            "--csv",
            str(run_dir / "locust"),
            locustfile=locustfile,
        )
    assert result.returncode == 0, result.stderr[-3000:]
    files = sorted(p for p in rundir.resolve(run_dir).iterdir() if p.is_file())
    assert {
        "run.json",
        "steps.csv",
        "slo.json",
        "timeline.csv",
        "report.md",
        "report.html",
        "summary.json",
        "locust_stats.csv",
    } <= {p.name for p in files}
    for path in files:
        content = path.read_bytes()
        assert SECRET_TOKEN.encode() not in content and DSN_PASSWORD.encode() not in content, path.name
    for stream in (result.stdout, result.stderr):
        assert SECRET_TOKEN not in stream and DSN_PASSWORD not in stream
    doc = json.loads((rundir.resolve(run_dir) / "run.json").read_text())
    assert doc["exit_code"] == 0
    assert doc["options"]["sim_token"] == "***"
    assert doc["options"]["sim_dsn"] == "postgresql://swarm:***@127.0.0.1:5432/db"
    assert "--sim-token=***" in doc["argv"]
    assert doc["shape"] == "PlanShape" and doc["plan"]["kind"] == "step_ramp"
    assert doc["runner"] == "LocalRunner" and doc["workers"] == 1
    assert doc["user_classes"] == doc["locustfile_user_classes"] == ["SimUser"]
    assert doc["started_at"] <= doc["ended_at"]
    assert doc["versions"]["locust"] and doc["locustfile"].endswith("secret_locustfile.py")
    assert [s["label"] for s in doc["steps"]] == ["1 users"]
    assert not [p for p in rundir.resolve(run_dir).iterdir() if p.name.endswith(".tmp")]
    report = (rundir.resolve(run_dir) / "report.md").read_text()
    assert "| workers | local run (LocalRunner) |" in report and "| user classes | SimUser |" in report


QUICK_LOCUSTFILE = """
import gevent
from locust import User, constant, events, task

import swarmgauge.locust  # noqa: F401 - the listeners, rundir among them

MADE = 40


class QuickUser(User):
    wait_time = constant(0)

    @task
    def burst(self):
        for _ in range(MADE):
            self.environment.events.request.fire(
                request_type="T", name="n", response_time=1.0, response_length=0, exception=None, context={}
            )
        gevent.spawn(self.environment.runner.quit)
        gevent.sleep(10)
"""


@pytest.mark.integration
def test_locust_csv_prefix_files_hold_the_final_figures_of_a_run_that_ends_between_two_of_its_writes(tmp_path):
    """Locust rewrites ``--csv`` tables once a second; a run that quits 0.1 s in must still show every request."""
    locustfile = tmp_path / "quick.py"
    locustfile.write_text(QUICK_LOCUSTFILE)
    result = subprocess.run(
        [sys.executable, "-m", "locust", "-f", str(locustfile), "--headless", "-u", "1", "-r", "1", "-t", "30s"]
        + ["--csv", str(tmp_path / "run"), "--host", "http://127.0.0.1:9"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    rows = {row["Name"]: row for row in csv.DictReader((tmp_path / "run_stats.csv").open())}
    assert rows["n"]["Request Count"] == rows["Aggregated"]["Request Count"] == "40"
