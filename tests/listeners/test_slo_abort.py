"""``--slo-abort`` waits for its grace and minimum sample and says its breach in the threshold's unit; a bad abort
setting is one line and exit 2 before any load."""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

import pytest
from locust.env import Environment

from swarmgauge.listeners import slo_abort, steps, steps_requests
from swarmgauge.run_folders import resolve
from tests.listeners.sim_run import run_local, sim_target
from tests.listeners.test_live import IdleUser

GATES_LOCUSTFILE = Path(__file__).resolve().parent / "gates_locustfile.py"


def _abort_environment(**options: object) -> Environment:
    environment = Environment(user_classes=[IdleUser], parsed_options=argparse.Namespace(**options))
    environment.create_local_runner()
    return environment


def _requests(environment: Environment, count: int, ms: float) -> None:
    for _ in range(count):
        steps_requests.on_request(environment, "GET", "/x", ms, start_time=time.time())
    steps.merge_local_now(environment)


def test_an_abort_waits_for_its_minimum_sample_and_speaks_in_the_thresholds_unit():
    environment = _abort_environment(slo_abort=["p99<50ms"])
    _requests(environment, 20, 82.6)
    assert slo_abort.breached(environment, min_requests=100) is None  # 20 slow requests: not yet a p99 to stop a run on
    found = slo_abort.breached(environment, min_requests=20)
    assert found is not None and found["requests"] == 20
    assert re.fullmatch(r"p99 8\d(\.\d)? ms > 50 ms", found["breach"]), found["breach"]
    found.update(after_s=12.3)
    assert slo_abort.abort_message(found).endswith(f"{found['breach']} over 20 requests, after 12.3 s")
    seconds = _abort_environment(slo_abort=["p99<0.05s"])
    _requests(seconds, 5, 82.6)
    assert re.fullmatch(r"p99 0\.08\d+ s > 0\.05 s", slo_abort.breached(seconds)["breach"])


def test_abort_settings_default_to_a_10s_grace_and_100_requests():
    environment = _abort_environment(slo_abort=None, slo_abort_grace=None, slo_abort_min_requests=None)
    assert (slo_abort.abort_grace(environment), slo_abort.abort_min_requests(environment)) == (10.0, 100)


@pytest.mark.integration
def test_an_abort_fires_only_after_its_grace_and_says_the_unit(tmp_path):
    run_dir = tmp_path / "run"
    with sim_target("--delay", "const:5") as target:
        result = run_local(
            target.url,
            "RaisingUser",
            "--steps",
            "1",
            "--step-time",
            "60s",
            "--stop-timeout",
            "3",
            "--sample-interval",
            "1",
            "--slo-abort",
            "p99<1ms",
            "--slo-abort-grace",
            "3s",
            "--slo-abort-min-requests",
            "20",
            "--run-dir",
            str(run_dir),
            locustfile=GATES_LOCUSTFILE,
            timeout=120,
        )
    assert result.returncode == 3, result.stderr[-3000:]
    aborted = json.loads((resolve(run_dir) / "run.json").read_text())["aborted"]
    assert aborted["after_s"] >= 3.0 and aborted["check"] >= 3  # the checks inside the grace never fired
    assert aborted["requests"] >= 20 and (aborted["grace_s"], aborted["min_requests"]) == (3.0, 20)
    assert re.fullmatch(r"p99 \d+(\.\d+)? ms > 1 ms", aborted["breach"]), aborted["breach"]
    assert f"run aborted: p99<1ms breached in step 0 (1 users): {aborted['breach']} over " in result.stderr


@pytest.mark.integration
@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--slo-abort-grace", "5x", "--slo-abort-grace: expected a duration"),
        ("--slo-abort-min-requests", "1.5", "--slo-abort-min-requests '1.5': expected a whole number"),
        ("--slo-junit", "no/such/folder/slo.xml", "--slo-junit no/such/folder/slo.xml: folder no/such/folder does"),
    ],
)
def test_a_bad_abort_or_junit_setting_is_one_line_and_exit_2_before_any_load(option, value, says):
    result = run_local(
        "http://127.0.0.1:9",
        "--steps",
        "1",
        "--step-time",
        "5s",
        option,
        value,
        locustfile=GATES_LOCUSTFILE,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if line.startswith("swarmgauge:")]
    assert len(lines) == 1 and lines[0].startswith(f"swarmgauge: {says}"), lines
    assert "Traceback" not in result.stderr
