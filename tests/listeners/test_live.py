"""The live view's figures are the run's own: the memory slope is the report's for the same samples, a mixed step's
Aggregated row says it is counts only, and a local run is not called a master with no workers; ``--slo-abort`` waits
for its grace and minimum sample and says its breach in the threshold's unit."""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

import pytest
from locust import User, constant, task
from locust.env import Environment

from swarmgauge.core.trend import MIB, Warmup
from swarmgauge.core.verdict import GENERATOR_SOURCE, Row
from swarmgauge.listeners import live, resources, steps
from swarmgauge.reports.resources import section
from swarmgauge.run_folders import resolve
from tests.listeners.sim_run import run_local, sim_target

GATES_LOCUSTFILE = Path(__file__).resolve().parent / "gates_locustfile.py"

TARGET = "psutil:pid=4242"
SAMPLES = 120
INTERVAL_S = 5.0


class IdleUser(User):
    wait_time = constant(1)

    @task
    def nothing(self) -> None:
        """Never run: the tests read the live view, no load."""


def _local_environment() -> Environment:
    environment = Environment(user_classes=[IdleUser])
    environment.create_local_runner()
    return environment


def _memory(elapsed: float) -> float:
    """A target that grows fast while it starts (the first minute) and slowly after: bytes at ``elapsed``."""
    start_up = min(elapsed, 60.0) * 2.0 * MIB
    return 100 * MIB + start_up + elapsed * 0.01 * MIB


def _sampled(environment: Environment, warmup: Warmup) -> resources.ResourceSampler:
    sampler = resources.sampler_for(environment)
    sampler.warmup = warmup
    now = time.time()
    for i in range(SAMPLES):
        elapsed = i * INTERVAL_S
        for source, value in ((TARGET, _memory(elapsed)), (GENERATOR_SOURCE, 50 * MIB + i * 1024.0)):
            sampler.rows.append(Row(now + elapsed, elapsed, 0, "local", source, "rss_bytes", value, i))
        sampler.rows.append(Row(now + elapsed, elapsed, 0, "local", "locust", "requests", i * 100.0, i))
    return sampler


@pytest.mark.parametrize("warmup", [Warmup(fraction=0.1), Warmup(seconds=90.0), Warmup()])
def test_the_pages_memory_slope_is_the_reports_for_the_same_samples(warmup, tmp_path):
    environment = _local_environment()
    sampler = _sampled(environment, warmup)
    (tmp_path / "resources.csv").write_text(sampler.csv_text())
    (tmp_path / "run.json").write_text(json.dumps({"resources": {"warmup": str(warmup)}}))

    page = {(s["source"], s["metric"]): s for s in live.resource_series(environment)}
    report = {r["series"]: r["MiB/h"] for r in section(tmp_path).summary["trends"]}

    shown = page[(TARGET, "rss_bytes")]
    assert shown["slope_warmup"] == str(warmup)
    assert round(shown["slope_mib_per_h"], 1) == report[f"{TARGET} rss_bytes"]
    assert page[(GENERATOR_SOURCE, "rss_bytes")]["slope_mib_per_h"] is not None  # the page charts its own too


def test_the_slope_leaves_out_the_start_up_the_chart_still_shows():
    environment = _local_environment()
    _sampled(environment, Warmup(fraction=0.1))
    shown = next(s for s in live.resource_series(environment) if s["source"] == TARGET)
    assert shown["points"][0] == [0.0, 100.0] and len(shown["points"]) == SAMPLES
    assert shown["slope_mib_per_h"] == pytest.approx(0.01 * 3600, rel=1e-6)  # the steady growth, start-up left out


def test_a_local_run_says_local_not_zero_workers():
    doc = live.snapshot(_local_environment())
    assert (doc["runner"], doc["workers"]) == ("local", None)


# --- --slo-abort: a grace, a minimum sample, the threshold's unit ------------------------------------------------


def _abort_environment(**options: object) -> Environment:
    environment = Environment(user_classes=[IdleUser], parsed_options=argparse.Namespace(**options))
    environment.create_local_runner()
    return environment


def _requests(environment: Environment, count: int, ms: float) -> None:
    for _ in range(count):
        steps.on_request(environment, "GET", "/x", ms, start_time=time.time())
    steps.merge_local_now(environment)


def test_an_abort_waits_for_its_minimum_sample_and_speaks_in_the_thresholds_unit():
    environment = _abort_environment(slo_abort=["p99<50ms"])
    _requests(environment, 20, 82.6)
    assert live.breached(environment, min_requests=100) is None  # 20 slow requests: not yet a p99 to stop a run on
    found = live.breached(environment, min_requests=20)
    assert found is not None and found["requests"] == 20
    assert re.fullmatch(r"p99 8\d(\.\d)? ms > 50 ms", found["breach"]), found["breach"]
    found.update(after_s=12.3)
    assert live.abort_message(found).endswith(f"{found['breach']} over 20 requests, after 12.3 s")
    seconds = _abort_environment(slo_abort=["p99<0.05s"])
    _requests(seconds, 5, 82.6)
    assert re.fullmatch(r"p99 0\.08\d+ s > 0\.05 s", live.breached(seconds)["breach"])


def test_abort_settings_default_to_a_10s_grace_and_100_requests():
    environment = _abort_environment(slo_abort=None, slo_abort_grace=None, slo_abort_min_requests=None)
    assert (live.abort_grace(environment), live.abort_min_requests(environment)) == (10.0, 100)


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
