"""A device read that waits out the stand-in's request timeout (queued behind another read of the same device) is
answered 504 ``ERR_MDK_REQUEST_TIMEOUT``, as the MDK page's 10-device run counted its timed-out saturation reads, and
not 200 with null metrics (which the verdict's "rejected + timed out" row did not count)."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from swarmgauge.targets.launch import launch_target
from swarmgauge.targets.mdk.common import StackPlan

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]


def test_a_read_queued_past_the_request_timeout_is_err_mdk_request_timeout():
    # one device, reads of 0.7 s each, a 1 s request timeout: of three reads at once the second waits 0.7 s for the
    # device's lock and the third 1.4 s; the collection cycle reads once at start, then not for 300 s
    args = ["--devices", "1", "--read-cost-ms", "700", "--device-timeout-s", "1", "--collect-interval-s", "300"]
    with launch_target("mdk", args, wait_for=("ready", "root")) as target:
        device = StackPlan.load(Path(target.lines["root"])).workers[0].devices[0]
        time.sleep(1.5)  # the start's collection read is done
        url = f"{target.url}/api/fleet/device/{device}/telemetry"
        with ThreadPoolExecutor(3) as pool:
            answers = list(pool.map(lambda _: requests.get(url, timeout=10), range(3)))
    statuses = sorted(a.status_code for a in answers)
    assert statuses[0] == 200 and statuses[-1] == 504
    timed_out = [a.json() for a in answers if a.status_code == 504]
    assert all(body["message"] == "ERR_MDK_REQUEST_TIMEOUT" for body in timed_out)
    assert all(a.json()["metrics"] is not None for a in answers if a.status_code == 200)
