"""Every declared option names the values it accepts, and every numeric one refuses nan, inf and -1 (issue 33, 5)."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import configargparse
import pytest

from swarmgauge.core import option_kinds
from swarmgauge.core.options import add_option, check_options
from swarmgauge.errors import UsageError

ROOT = Path(__file__).resolve().parents[2]

#: Loads every locustfile (so every option is declared), then feeds each numeric option nan, inf and -1 through the
#: checker that runs at init, every other option left at its default; prints what was refused and what was not.
WALK = """
import argparse, glob, json
import locust.util.load_locustfile as l
from locust.argument_parser import get_parser
from swarmgauge.core import option_kinds
from swarmgauge.core.options import DECLARED, check_options
from swarmgauge.errors import UsageError
for f in sorted(glob.glob('locustfiles/*.py')):
    f.endswith('__init__.py') or l.load_locustfile(f)
parser = get_parser()
defaults = parser.parse_args([])
numeric_types = {a.option_strings[-1]: a.type for a in parser._actions if a.type in (int, float)}
out = {'declared': len(DECLARED), 'unchecked_numbers': [], 'accepted': [], 'refused': 0, 'defaults_ok': True}
try:
    check_options(defaults)
except UsageError as exc:
    out['defaults_ok'] = str(exc)
for flag, option in sorted(DECLARED.items()):
    if flag in numeric_types and not option_kinds.is_numeric(option.kind):
        out['unchecked_numbers'].append(flag)
    if not option_kinds.is_numeric(option.kind):
        continue
    for bad in ('nan', 'inf', '-inf', '-1'):
        parsed = argparse.Namespace(**vars(defaults))
        setattr(parsed, option.dest, float(bad))
        try:
            check_options(parsed)
        except UsageError as exc:
            out['refused'] += flag in str(exc)
        else:
            out['accepted'].append(f'{flag} {bad}')
print(json.dumps(out))
"""


def test_every_numeric_option_refuses_nan_inf_and_negative_and_accepts_its_default():
    env = {name: value for name, value in os.environ.items() if not name.startswith(("SWARMGAUGE_", "LOCUST_"))}
    done = subprocess.run([sys.executable, "-c", WALK], capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["declared"] >= 60
    assert found["unchecked_numbers"] == []
    assert found["accepted"] == []
    assert found["refused"] >= 4 * 20, found  # every numeric option, four bad values each, the flag named
    assert found["defaults_ok"] is True


def test_a_numeric_option_without_a_kind_is_refused_at_declaration():
    with pytest.raises(TypeError, match="kind="):
        add_option(configargparse.ArgumentParser(), "--sg-test-unkinded", type=float, default=1.0, help="x")


@pytest.mark.parametrize(
    "kind, value",
    [
        (option_kinds.POSITIVE_SECONDS, "0"),
        (option_kinds.RATE, "0"),
        (option_kinds.POSITIVE_COUNT, "0"),
        (option_kinds.COUNT, "1.5"),
        (option_kinds.PORT, "65536"),
        (option_kinds.NON_NEGATIVE, "soon"),
    ],
)
def test_zero_where_it_means_nothing_and_values_out_of_range_are_refused(kind, value):
    with pytest.raises(UsageError, match="--x"):
        kind("--x", value)


@pytest.mark.parametrize(
    "kind, value",
    [
        (option_kinds.POSITIVE_SECONDS, "2.5"),
        (option_kinds.NON_NEGATIVE, 0),
        (option_kinds.COUNT, 0),
        (option_kinds.PORT, 0),
        (option_kinds.RATE, None),
    ],
)
def test_values_in_range_pass(kind, value):
    kind("--x", value)


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0", "3600.5", "soon"])
def test_a_request_timeout_is_finite_seconds_above_zero_and_at_most_an_hour(value):
    with pytest.raises(UsageError, match=r"--mark-timeout .*a finite number above 0 and at most 3600"):
        option_kinds.REQUEST_TIMEOUT("--mark-timeout", value)


@pytest.mark.parametrize("value", ["2.5", 3600, None])
def test_a_request_timeout_in_range_passes(value):
    option_kinds.REQUEST_TIMEOUT("--mcp-timeout", value)


#: Declares the Mark and MCP users' options (in a child: declaring them adds listeners to Locust's events), then
#: prints each request timeout's kind and what the init check says of an hour and a second.
TIMEOUTS = """
import argparse, json
import locust.util.load_locustfile as l
from locust.argument_parser import get_parser
from swarmgauge.core import option_kinds
from swarmgauge.core.options import DECLARED, check_options
from swarmgauge.errors import UsageError
for f in ('locustfiles/demarkus_reads.py', 'locustfiles/mcp_churn.py'):
    l.load_locustfile(f)
defaults = get_parser().parse_args([])
out = {}
for flag in ('--mark-timeout', '--mcp-timeout'):
    parsed = argparse.Namespace(**vars(defaults))
    setattr(parsed, DECLARED[flag].dest, 3601.0)
    try:
        check_options(parsed)
        refusal = None
    except UsageError as exc:
        refusal = str(exc)
    out[flag] = {'request_timeout': DECLARED[flag].kind is option_kinds.REQUEST_TIMEOUT, 'refusal': refusal}
print(json.dumps(out))
"""


def test_the_request_timeouts_are_declared_with_their_cap_and_refused_past_it():
    env = {name: value for name, value in os.environ.items() if not name.startswith(("SWARMGAUGE_", "LOCUST_"))}
    done = subprocess.run(
        [sys.executable, "-c", TIMEOUTS], capture_output=True, text=True, timeout=120, env=env, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    for flag in ("--mark-timeout", "--mcp-timeout"):
        assert found[flag]["request_timeout"] is True
        assert found[flag]["refusal"] == (
            f"{flag} 3601.0: must be a finite number above 0 and at most 3600 (a request timeout, seconds above 0)"
        )


def test_a_parsed_kind_reports_the_parsers_refusal_with_the_flag():
    check = option_kinds.parsed_by(lambda text: json.loads(text))
    with pytest.raises(UsageError, match=re.escape("--x '{bad'")):
        check("--x", "{bad")


def test_embedded_args_are_parsed_by_the_targets_own_parser_and_its_numbers_checked():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int)
    parser.add_argument("--delay-ms", type=float, default=0.0)
    assert option_kinds.parse_embedded_args("--t-embedded-args", "--delay-ms 5", parser) == ["--delay-ms", "5"]
    for bad, words in (("--delay-ms nan", "--delay-ms nan"), ("--delay-ms -1", "--delay-ms -1"), ("--x 1", "--x")):
        with pytest.raises(UsageError, match=words):
            option_kinds.parse_embedded_args("--t-embedded-args", bad, parser)


def test_an_option_another_parser_declared_is_skipped():
    check_options(argparse.Namespace())


READS = ROOT / "locustfiles" / "demarkus_reads.py"
#: A sample of the walk through real Locust runs: options of four declaring modules, each with a value the walk feeds.
REAL_RUN_SAMPLE = [
    ("--mark-corpus", "-1"),
    ("--sample-interval", "inf"),
    ("--master-lost-after", "nan"),
    ("--prometheus-port", "70000"),
]


@pytest.mark.integration
@pytest.mark.parametrize("flag, value", REAL_RUN_SAMPLE, ids=[flag for flag, _ in REAL_RUN_SAMPLE])
def test_a_sample_of_the_walk_stops_a_real_run_before_any_load(tmp_path, flag, value):
    from tests.listeners.sim_run import run_local

    run_dir = tmp_path / "run"
    result = run_local("", "FetchUser", f"{flag}={value}", "-t", "5s", "--run-dir", str(run_dir), locustfile=READS)
    assert result.returncode == 2, result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if "swarmgauge: " in line]
    assert len(lines) == 1 and f"{flag} " in lines[0], result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert not (run_dir / "steps.csv").exists()
