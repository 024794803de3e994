"""A Worker whose first collection sweep outlasts the interval reports the sweep's time so far as its cycle time (a
lower bound, headroom past 1), so the MDK page's red 5,000 / 1 fleet shows its headroom on a loaded machine where the
first sweep outlasted the run, instead of no headroom at all."""

from __future__ import annotations

import re
import time

import pytest
import requests

from swarmgauge.targets.launch import launch_target

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]


def metric(url: str, name: str) -> float | None:
    text = requests.get(url + "/metrics", timeout=5).text
    match = re.search(rf"^{name}\{{[^}}]*\}} (\S+)$", text, re.M)
    return float(match.group(1)) if match else None


def test_a_first_sweep_past_the_interval_shows_its_headroom_before_it_ends():
    # 40 devices read one at a time at 150 ms: a sweep of 6 s against a 1 s interval
    args = ["--devices", "40", "--query-concurrency", "1", "--read-cost-ms", "150", "--collect-interval-s", "1"]
    with launch_target("mdk", args, wait_for=("ready", "root")) as target:
        time.sleep(3.0)  # the kernel pulls the Workers' figures every second
        headroom = metric(target.url, "mdk_worker_headroom")
        cycles = metric(target.url, "mdk_worker_collection_cycles_total")
    assert headroom is not None and headroom >= 1.5
    assert cycles == 0  # no sweep has ended: the figure is the running one's time so far
