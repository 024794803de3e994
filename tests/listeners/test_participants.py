"""Who took part in a run, as run.json and the report say it: a master's workers are counted while they run (they
have quit by the time run.json is finished), and ``user_classes`` names the classes that ran, not every class the
locustfile offers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swarmgauge.run_folders import resolve
from tests.listeners.sim_run import run_distributed, sim_target

pytestmark = pytest.mark.integration  # starts servers, processes or locust runs

LOCUSTFILE = Path(__file__).resolve().parent / "two_users_locustfile.py"


def test_a_distributed_run_records_its_two_workers_and_only_the_class_its_plan_ran(tmp_path: Path):
    plan = tmp_path / "plan.yaml"
    plan.write_text("name: pick\nkind: step_ramp\nuser_classes: [SimUser]\nsteps: [2]\nstep_time: 3s\nwarmup: 0s\n")
    run_dir = tmp_path / "run"
    with sim_target("--delay", "const:5") as target:
        result = run_distributed(
            target.url,
            "--plan",
            str(plan),
            "--stop-timeout",
            "5",
            "--run-dir",
            str(run_dir),
            locustfile=LOCUSTFILE,
        )
        served = target.records()
    assert result.returncode == 0, result.stderr[-3000:]
    assert served, "the workers sent load"

    run = json.loads((resolve(run_dir) / "run.json").read_text())
    assert run["runner"] == "MasterRunner" and run["workers"] == 2
    assert run["user_classes"] == ["SimUser"]
    assert run["locustfile_user_classes"] == ["IdleUser", "SimUser"]

    report = (resolve(run_dir) / "report.md").read_text()
    assert "| workers | 2 (MasterRunner) |" in report
    assert "| user classes | SimUser (not run: IdleUser) |" in report
