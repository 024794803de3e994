"""The live view's figures are the run's own: the memory slope is the report's for the same samples, a mixed step's
Aggregated row says it is counts only, and a local run is not called a master with no workers."""

from __future__ import annotations

import json
import time

import pytest
from locust import User, constant, task
from locust.env import Environment

from swarmgauge.core.trend import MIB, Warmup
from swarmgauge.core.verdict import GENERATOR_SOURCE, Row
from swarmgauge.listeners import live, resources
from swarmgauge.reports.resources import section

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
