"""Every swarmgauge option is settable as LOCUST_<OPTION> (Locust's convention) and SWARMGAUGE_<OPTION>."""

from __future__ import annotations

import argparse

import configargparse
import pytest

from swarmgauge.core.options import DECLARED, add_option, chosen_env_var, env_conflict, env_names


def _parser() -> configargparse.ArgumentParser:
    return configargparse.ArgumentParser(add_env_var_help=False)


def _parse(environ: dict[str, str], argv: list[str] | None = None) -> argparse.Namespace:
    parser = _parser()
    add_option(parser, "--slo-thing", default="", help="an option", environ=environ)
    return parser.parse_args(argv or [], env_vars=environ)


def test_the_two_names_come_from_the_flag():
    names = env_names("--mark-ca")
    assert (names.locust, names.swarmgauge) == ("LOCUST_MARK_CA", "SWARMGAUGE_MARK_CA")


@pytest.mark.parametrize("variable", ["LOCUST_SLO_THING", "SWARMGAUGE_SLO_THING"])
def test_either_variable_sets_the_option(variable):
    assert _parse({variable: "p99<5ms"}).slo_thing == "p99<5ms"


def test_the_command_line_wins_over_the_environment():
    assert _parse({"LOCUST_SLO_THING": "env"}, ["--slo-thing", "cli"]).slo_thing == "cli"


def test_both_set_to_the_same_value_is_accepted():
    assert _parse({"LOCUST_SLO_THING": "x", "SWARMGAUGE_SLO_THING": "x"}).slo_thing == "x"


def test_both_set_to_different_values_is_refused_in_one_line(capsys):
    with pytest.raises(SystemExit) as stopped:
        _parse({"LOCUST_SLO_THING": "a", "SWARMGAUGE_SLO_THING": "b"})
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "LOCUST_SLO_THING and SWARMGAUGE_SLO_THING" in err


def test_the_parser_reads_locusts_name_unless_only_swarmgauges_is_set():
    names = env_names("--x")
    assert chosen_env_var(names, {}) == "LOCUST_X"
    assert chosen_env_var(names, {"SWARMGAUGE_X": "1"}) == "SWARMGAUGE_X"
    assert chosen_env_var(names, {"SWARMGAUGE_X": "1", "LOCUST_X": "1"}) == "LOCUST_X"
    assert env_conflict(names, {"SWARMGAUGE_X": "1", "LOCUST_X": "1"}) is None


def test_the_help_names_both_variables_and_the_option_is_recorded():
    parser = _parser()
    add_option(parser, "--help-shown", default="", help="shown", environ={})
    assert "[env LOCUST_HELP_SHOWN or SWARMGAUGE_HELP_SHOWN]" in parser.format_help()
    assert DECLARED["--help-shown"].locust == "LOCUST_HELP_SHOWN"


@pytest.mark.integration  # a real headless Locust run against a real sim-http target
def test_locust_style_variables_reach_a_run(tmp_path):
    """The issue's first defect: LOCUST_SLO and LOCUST_RUN_DIR were ignored (exit 0, no run folder, no SLO)."""
    from tests.listeners.sim_run import run_local, sim_target

    run_dir = tmp_path / "r"
    env = {"LOCUST_SLO": "p99<0.001ms", "LOCUST_RUN_DIR": str(run_dir)}
    with sim_target() as target:
        done = run_local(
            target.url, "-u", "2", "-r", "2", "-t", "4s", "--no-report", locustfile="locustfiles/http_ramp.py", env=env
        )
    assert done.returncode == 3, done.stderr[-2000:]  # the SLO was checked, and failed
    assert (run_dir / "latest" / "slo.json").is_file() or any(run_dir.glob("*/slo.json"))


@pytest.mark.integration  # imports every locustfile, as `swarmgauge options` does
def test_every_swarmgauge_option_takes_both_variables():
    import subprocess
    import sys

    script = (
        "import glob, locust.util.load_locustfile as l\n"
        "from locust.argument_parser import get_parser\n"
        "from swarmgauge.core.options import DECLARED\n"
        "for f in sorted(glob.glob('locustfiles/*.py')):\n"
        "    f.endswith('__init__.py') or l.load_locustfile(f)\n"
        "parser = get_parser()\n"
        "ours = [a for a in parser._actions if a.env_var and not a.env_var.startswith('LOCUST_')\n"
        "        or a.env_var and a.env_var.startswith('LOCUST_') and a.option_strings[-1] in DECLARED]\n"
        "stray = [a.option_strings[-1] for a in parser._actions if a.env_var and a.env_var.startswith('SWARMGAUGE_')]\n"
        "print(len(DECLARED), len(ours), stray)\n"
    )
    import os

    env = {name: value for name, value in os.environ.items() if not name.startswith("SWARMGAUGE_")}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    declared, ours, stray = done.stdout.split(" ", 2)
    assert int(declared) >= 60 and int(ours) == int(declared) and stray.strip() == "[]"
