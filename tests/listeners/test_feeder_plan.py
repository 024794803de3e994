"""A plan file's ``feeder:`` in real Locust runs against a real ``targets/sim_http.py``: the master applies it,
the workers get its rows, an option given for the run wins over the plan, and a bad one stops the run (exit 2)."""

from __future__ import annotations

import json
from argparse import Namespace
from collections import Counter
from pathlib import Path

import pytest
from locust.env import Environment

from swarmgauge.listeners.feeder_plan import summary, take_plan_feeder
from swarmgauge.run_folders import resolve
from tests.listeners.sim_run import run_distributed, run_local, sim_target
from tests.listeners.test_webui import closed_folders, start_from_form
from tests.listeners.webui_harness import browser_page, web_locust

pytestmark = pytest.mark.integration  # starts servers, processes or locust runs

LOCUSTFILE = Path(__file__).resolve().parent / "feeder_locustfile.py"


def _plan(folder: Path, feeder: str, hold: str = "120s") -> Path:
    """A plan file in ``folder`` (not the runs' working directory), so a relative feeder file is the plan's."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "fed.yaml"
    path.write_text(f"name: fed\nkind: step_ramp\nsteps: [4]\nstep_time: {hold}\nfeeder: {feeder}\n")
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


def _options(plan: Path | None, **given: object) -> Namespace:
    values = {"plan": str(plan) if plan else None, "feeder": "", "feeder_mode": "", "feeder_exhausted": ""}
    return Namespace(**{**values, "feeder_batch": None, **given})


def test_each_start_takes_back_what_the_last_plan_filled_and_applies_the_new_plans_feeder(tmp_path):
    with_rows, other_rows = _plan(tmp_path / "a", "{file: a.csv, mode: unique}"), _plan(tmp_path / "b", "{file: b.csv}")
    (tmp_path / "a" / "a.csv").write_text("row_id\na1\n")
    (tmp_path / "b" / "b.csv").write_text("row_id\nb1\n")
    without = tmp_path / "plain.yaml"
    without.write_text("name: plain\nkind: step_ramp\nsteps: [2]\nstep_time: 10s\n")
    environment = Environment()
    environment.parsed_options = _options(with_rows)
    take_plan_feeder(environment)
    assert (environment.parsed_options.feeder, environment.parsed_options.feeder_mode) == (
        str(tmp_path / "a" / "a.csv"),
        "unique",
    )
    environment.parsed_options.plan = str(without)  # the form names a plan without rows: none of the last plan's
    take_plan_feeder(environment)
    assert (environment.parsed_options.feeder, environment.parsed_options.feeder_mode) == ("", "")
    assert summary(environment) == {}
    environment.parsed_options.plan = str(other_rows)
    take_plan_feeder(environment)
    assert environment.parsed_options.feeder == str(tmp_path / "b" / "b.csv")
    assert summary(environment) == {"plan": str(other_rows)}
    environment.parsed_options.feeder = str(tmp_path / "a" / "a.csv")  # typed in the form since: the run's own
    environment.parsed_options.plan = str(with_rows)
    take_plan_feeder(environment)
    assert environment.parsed_options.feeder == str(tmp_path / "a" / "a.csv")
    assert environment.parsed_options.feeder_mode == "unique"


def test_a_web_start_naming_another_plan_runs_with_that_plans_rows(tmp_path):
    first, second = (_plan(tmp_path / name, f"{{file: {name}.csv}}", hold="2s") for name in ("a", "b"))
    (tmp_path / "a" / "a.csv").write_text("row_id\n" + "".join(f"a{i}\n" for i in range(20)))
    (tmp_path / "b" / "b.csv").write_text("row_id\n" + "".join(f"b{i}\n" for i in range(20)))
    run_dir = tmp_path / "runs"
    locustfile = tmp_path / "fed_locustfile.py"  # a user's locustfile: all of swarmgauge, the web UI's START included
    locustfile.write_text("import swarmgauge.locust  # noqa: F401\n" + LOCUSTFILE.read_text())
    with (
        sim_target() as target,
        web_locust(
            locustfile, "--host", target.url, "--plan", str(first), "--run-dir", str(run_dir), log_dir=tmp_path
        ) as web,
        browser_page() as page,
    ):
        start_from_form(page, web.url, {"plan": str(second)})
        folder = closed_folders(run_dir, 1)[0]
        served = {str(record["id"]).split("@")[0][0] for record in target.records()}
    assert served == {"b"}, web.output()[-2000:]
    assert json.loads((folder / "run.json").read_text())["feeder"]["plan"] == str(second)
