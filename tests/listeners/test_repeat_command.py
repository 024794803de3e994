"""listeners/repeat_command.py. A headless run: the options a ``LOCUST_*`` variable or a config file applied are
written after ``argv`` in the report's command row, each said where it came from, a secret as ``***`` (a real
``locust`` subprocess against the sim target). A web UI run: its repeat command names every option the launch set
(command line, variable, config file) but the launch-only ones, the form's options as the form left them."""

from __future__ import annotations

import json
import os
import shlex
import sys
from types import SimpleNamespace

import pytest
from locust import argument_parser, events
from locust.env import Environment
from werkzeug.datastructures import ImmutableMultiDict

import swarmgauge.locust  # noqa: F401 - every swarmgauge option on Locust's parser
from swarmgauge.listeners import rundir, webui_form
from swarmgauge.listeners.repeat_command import applied_outside_argv, options_given, repeat_command
from tests.listeners.sim_run import run_local, sim_target
from tests.listeners.test_live import _local_environment

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


@pytest.mark.integration  # starts a target and a locust run
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


UI_HOST = "http://127.0.0.1:9"
CODE_SECRET = "code-n0t-in-the-repeat-51"


def _declare_test_options(parser):
    parser.add_argument("--repeat-code", default="", is_secret=True, help="a secret the form does not show")
    parser.add_argument("--repeat-store", default="", help="a store an embedded target may set at start-up")


@pytest.fixture
def launch_ui(monkeypatch, tmp_path):
    """A web UI process as launched: ``argv`` and variables set (no others of ours), its options parsed as Locust
    parses them, in a folder with no locust.conf or pyproject.toml; ``start`` is its first START with a form."""
    events.init_command_line_parser.add_listener(_declare_test_options)
    for name in os.environ:
        if name.startswith(("LOCUST_", "SWARMGAUGE_")):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)

    def launch(argv: list[str], env: dict[str, str] | None = None) -> Environment:
        for name, value in (env or {}).items():
            monkeypatch.setenv(name, value)
        monkeypatch.setattr(sys, "argv", ["locust", "-f", "my.py", *argv])
        environment = _local_environment()
        environment.parsed_options = argument_parser.get_parser().parse_args()
        environment.host = environment.parsed_options.host or UI_HOST
        return environment

    yield launch
    events.init_command_line_parser.remove_listener(_declare_test_options)


def start(environment: Environment, **form: str) -> list[str]:
    """START with ``form`` (two users by default), then the words of the repeat command of a run held 5 s."""
    fields = ImmutableMultiDict([("user_count", "2"), ("spawn_rate", "1"), *form.items()])
    left = webui_form.apply_form(environment, fields)
    webui_form.apply_common_fields(environment, left)
    if "profile" in left:  # Locust's own handler sets its profile field
        environment.parsed_options.profile = left["profile"] or None
    return shlex.split(repeat_command(environment, held=[(2, 5.0)], plan_in_effect=False))


def value_of(words: list[str], flag: str) -> str:
    assert words.count(flag) == 1, words
    return words[words.index(flag) + 1]


def test_a_ui_runs_repeat_names_the_non_form_options_of_its_command_line_and_not_how_the_ui_was_started(
    launch_ui, tmp_path
):
    config = tmp_path / "ui.conf"
    config.write_text("autoquit = 5\n")
    environment = launch_ui(
        [
            *("--web-host", "127.0.0.1", "--web-port", "8099", "--class-picker", "--config", str(config)),
            *("--host", UI_HOST, "-u", "9", "--stop-timeout", "3", "--prometheus-push-interval=5s", "--brief-summary"),
        ]
    )
    words = start(environment)
    assert words[:6] == ["locust", "-f", "my.py", "--headless", "--host", UI_HOST]
    assert value_of(words, "-u") == "2" and value_of(words, "-t") == "5s"  # the form's users and the time held
    assert value_of(words, "--stop-timeout") == "3" and value_of(words, "--prometheus-push-interval") == "5s"
    assert "--brief-summary" in words
    for launch_only in ("--web-host", "--web-port", "8099", "--class-picker", "--config", "--autoquit", "-f my.py"):
        assert launch_only not in words


def test_a_ui_runs_repeat_names_what_variables_and_a_config_file_set_a_secret_as_stars(launch_ui, tmp_path):
    config = tmp_path / "ui.conf"
    config.write_text(f"repeat-code = {CODE_SECRET}\nstop-timeout = 9\nweb-port = 8091\nloglevel = DEBUG\n")
    environment = launch_ui(
        ["--config", str(config), "--stop-timeout", "4"],
        env={
            "SWARMGAUGE_PROMETHEUS_PUSH_INTERVAL": "7s",
            "LOCUST_PROMETHEUS_PUSH": "http://swarm:pw-in-the-env-3d@127.0.0.1:9091",
            "LOCUST_HEADFUL": "true",
        },
    )
    words = start(environment)
    assert value_of(words, "--prometheus-push-interval") == "7s"
    assert value_of(words, "--prometheus-push") == "http://swarm:***@127.0.0.1:9091"
    assert value_of(words, "--repeat-code") == "***" and value_of(words, "--loglevel") == "DEBUG"
    assert value_of(words, "--stop-timeout") == "4"  # the command line over the file
    assert "--web-port" not in words and "--headful" not in words
    assert CODE_SECRET not in " ".join(words) and "pw-in-the-env-3d" not in " ".join(words)


def test_the_forms_value_of_a_form_option_wins_over_the_launchs(launch_ui):
    environment = launch_ui(
        ["--sample-interval", "2", "--slo", "p99<100ms", "--profile", "nightly"], env={"LOCUST_WARMUP": "3s"}
    )
    words = start(environment, sample_interval="1", slo="p99<100ms", warmup="4s", profile="evening")
    assert float(value_of(words, "--sample-interval")) == 1.0 and value_of(words, "--warmup") == "4s"
    assert value_of(words, "--slo") == "p99<100ms" and value_of(words, "--profile") == "evening"


def test_what_an_embedded_target_set_at_start_up_is_left_to_the_locustfile(launch_ui):
    environment = launch_ui(["--repeat-store", "sqlite:///given.db", "--stop-timeout", "2"])
    options = environment.parsed_options
    options.repeat_store, options.mark_insecure = "postgresql://127.0.0.1:5432/embedded", True  # as a target does
    environment.host = "http://127.0.0.1:52673"
    rundir.add_run_info(environment, "embedded_targets", {"sim": {"pid": 1, "url": environment.host}})
    words = start(environment, mark_insecure="false")
    assert options.mark_insecure is True  # the form did not undo it
    assert "--repeat-store" not in words and "--mark-insecure" not in words and "--host" not in words
    assert value_of(words, "--stop-timeout") == "2"


def test_every_option_is_given_once_where_it_won_and_the_outside_argv_record_reads_the_same(launch_ui, tmp_path):
    config = tmp_path / "ui.conf"
    config.write_text("stop-timeout = 9\nbrief-summary = true\n")
    environment = launch_ui(["--config", str(config), "--stop-timeout=4"], env={"LOCUST_STOP_TIMEOUT": "6"})
    given = {option.action.dest: (option.value, option.source) for option in options_given(environment)}
    assert given["stop_timeout"] == ("4", "command line")
    assert given["brief_summary"] == (True, f"config file {config}")
    outside = applied_outside_argv(environment)
    assert outside == {"words": ["--brief-summary"], "from": {"--brief-summary": f"config file {config}"}}
