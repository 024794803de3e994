"""A plan file's ``feeder:`` in real Locust runs against a real ``targets/sim_http.py``: the master applies it,
the workers get its rows, an option given for the run wins over the plan, and a bad one stops the run (exit 2)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from swarmgauge.run_folders import resolve
from tests.listeners.sim_run import run_distributed, run_local, sim_target

pytestmark = pytest.mark.integration  # starts servers, processes or locust runs

LOCUSTFILE = Path(__file__).resolve().parent / "feeder_locustfile.py"


def _plan(folder: Path, feeder: str) -> Path:
    """A plan file in ``folder`` (not the runs' working directory), so a relative feeder file is the plan's."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "fed.yaml"
    path.write_text(f"name: fed\nkind: step_ramp\nsteps: [4]\nstep_time: 120s\nfeeder: {feeder}\n")
    return path


def test_a_plans_unique_feeder_serves_each_row_once_across_two_workers(tmp_path):
    count = 120
    folder = tmp_path / "plans"
    plan = _plan(folder, "{file: rows.csv, mode: unique, batch: 50}")
    (folder / "rows.csv").write_text("row_id\n" + "".join(f"r{i}\n" for i in range(count)))
    run_dir = tmp_path / "run"
    with sim_target() as target:
        result = run_distributed(
            target.url,
            "--plan",
            str(plan),
            "--feeder-batch",
            "7",
            "--run-dir",
            str(run_dir),
            locustfile=LOCUSTFILE,
            timeout=120,
        )
        served = Counter(str(record["id"]).split("@")[0] for record in target.records())
    assert result.returncode == 0, result.stderr[-2000:]
    assert served == Counter({f"r{i}": 1 for i in range(count)})
    info = json.loads((resolve(run_dir) / "run.json").read_text())["feeder"]
    assert info["file"] == str(folder / "rows.csv") and info["mode"] == "unique" and info["dealt"] == count
    assert len(info["workers"]) == 2 and all(w["sent"] > 0 for w in info["workers"].values())
    assert info["plan"] == str(plan)
    assert [(o["option"], o["given"], o["plan"]) for o in info["overrides"]] == [("--feeder-batch", 7, 50)]
    assert f"--feeder-batch 7 (given for the run) wins over plan {plan}'s feeder batch: 50" in result.stderr


@pytest.mark.parametrize(
    ("feeder", "words"),
    [
        ("{file: missing.csv}", "feeder: file {folder}/missing.csv: no such file"),
        ("{file: rows.csv, mode: each}", "feeder: mode must be one of shared, unique, not 'each'"),
    ],
)
def test_a_bad_plan_feeder_exits_2_with_one_line_naming_the_plan_and_the_key(tmp_path, feeder, words):
    folder = tmp_path / "plans"
    plan = _plan(folder, feeder)
    result = run_local("http://127.0.0.1:9", "--plan", str(plan), locustfile=LOCUSTFILE, timeout=60)
    assert result.returncode == 2, result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if line.startswith("swarmgauge:")]
    assert len(lines) == 1 and lines[0].startswith(f"swarmgauge: plan {plan}: {words.format(folder=folder)}"), lines
    assert "Traceback" not in result.stderr
