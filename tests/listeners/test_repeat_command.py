"""listeners/repeat_command.py for a headless run: the options a ``LOCUST_*`` variable or a config file applied are
written after ``argv`` in the report's command row, each said where it came from, a secret as ``***`` (a real
``locust`` subprocess against the sim target)."""

from __future__ import annotations

import json
import sys
from types import SimpleNamespace

import pytest

import swarmgauge.locust  # noqa: F401 - every swarmgauge option on Locust's parser
from swarmgauge.listeners import rundir
from swarmgauge.listeners.repeat_command import applied_outside_argv
from tests.listeners.sim_run import run_local, sim_target

pytestmark = pytest.mark.integration  # starts a target and a locust run

SECRET_TOKEN = "tok-by-env-n0t-in-the-command"
DSN_PASSWORD = "pw-in-the-config-7c1"

LOCUSTFILE = """
from locust import events

import swarmgauge.listeners.repeat_command  # noqa: F401 - the options applied outside argv, in run.json
from swarmgauge.shapes import PlanShape  # noqa: F401
from tests.listeners.sim_locustfile import SimUser  # noqa: F401


@events.init_command_line_parser.add_listener
def _options(parser):
    parser.add_argument("--sim-token", default="", is_secret=True, env_var="SIM_TOKEN", help="a secret")
    parser.add_argument("--sim-dsn", default="", help="a DSN whose password must not show")
    parser.add_argument("--sim-label", default="", env_var="SIM_LABEL", help="set to its default by env")
"""


def test_a_headless_runs_command_carries_the_options_set_by_environment_and_config_file(tmp_path):
    locustfile = tmp_path / "outside_argv.py"
    locustfile.write_text(LOCUSTFILE)
    config = tmp_path / "run.conf"
    config.write_text(f"sim-dsn = postgresql://swarm:{DSN_PASSWORD}@127.0.0.1:5432/db\nstop-timeout = 4\n")
    run_dir = tmp_path / "run"
    env = {"LOCUST_RUN_TIME": "2s", "SIM_TOKEN": SECRET_TOKEN, "SIM_LABEL": ""}
    with sim_target("--delay", "const:5") as target:
        result = run_local(
            target.url,
            "-u",
            "1",
            "-r",
            "1",
            "--config",
            str(config),
            "--run-dir",
            str(run_dir),
            locustfile=locustfile,
            env=env,
        )
    assert result.returncode == 0, result.stderr[-3000:]
    folder = rundir.resolve(run_dir)
    doc = json.loads((folder / "run.json").read_text())
    outside = doc["options_outside_argv"]
    words = outside["words"]
    assert words[words.index("--run-time") + 1] == "2s"
    assert words[words.index("--sim-token") + 1] == "***"
    assert words[words.index("--sim-dsn") + 1] == "postgresql://swarm:***@127.0.0.1:5432/db"
    assert words[words.index("--stop-timeout") + 1] == "4"
    assert "--sim-label" not in words  # set, but to its default: nothing to repeat
    assert outside["from"]["--run-time"] == "LOCUST_RUN_TIME" and outside["from"]["--sim-token"] == "SIM_TOKEN"
    assert outside["from"]["--sim-dsn"] == f"config file {config}"
    report = (folder / "report.md").read_text()
    command = next(line for line in report.splitlines() if line.startswith("| command |"))
    assert "--run-time 2s" in command and "--stop-timeout 4" in command and "--sim-token '***'" in command
    assert "--sim-dsn 'postgresql://swarm:***@127.0.0.1:5432/db'" in command and f"--config {config}" in command
    assert "| set outside the command line | --run-time (LOCUST_RUN_TIME)" in report
    for path in folder.iterdir():
        if path.is_file():
            content = path.read_bytes()
            assert SECRET_TOKEN.encode() not in content and DSN_PASSWORD.encode() not in content, path.name


def test_the_options_outside_argv_are_read_from_a_parse_as_locusts_and_a_failed_parse_says_nothing(
    tmp_path, monkeypatch, capsys
):
    config = tmp_path / "more.conf"
    config.write_text("users = 7\nheadless = true\n")
    monkeypatch.setenv("LOCUST_RUN_TIME", "3m")
    monkeypatch.setattr(sys, "argv", ["locust", "-f", "x.py", "--config", str(config), "-u", "2"])
    environment = SimpleNamespace(parsed_options=None)
    found = applied_outside_argv(environment)  # type: ignore[arg-type]
    assert found["words"] == ["--run-time", "3m", "--headless"]  # -u on argv wins over the file's users
    assert found["from"] == {"--run-time": "LOCUST_RUN_TIME", "--headless": f"config file {config}"}
    monkeypatch.setattr(sys, "argv", ["locust", "--no-such-option"])
    assert applied_outside_argv(environment) == {"words": [], "from": {}}  # type: ignore[arg-type]
    assert "no-such-option" not in capsys.readouterr().err
