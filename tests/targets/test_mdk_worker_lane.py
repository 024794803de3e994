"""A Worker with ``--worker-read-us`` serves the reads it is sent one at a time on its lane, as the MDK page's
Node.js Worker on its one core: reads of different devices (which their own locks would let run together) queue
there, so one Worker caps the fleet's read throughput; with no setting they run together. The Gateway's
``--gateway-read-us`` lane is one for every Worker's reads: past one Worker it caps them."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from swarmgauge.targets.mdk.stack import MDKStack

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]
TURN_S = 0.3


def read_all_at_once(stack: MDKStack) -> float:
    """Seconds until every device has answered one read, all sent together."""
    devices = stack.device_ids()

    def read(device_id: str) -> int:
        return requests.get(f"{stack.url}/api/fleet/device/{device_id}/telemetry", timeout=30).status_code

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=len(devices)) as pool:
        assert set(pool.map(read, devices)) == {200}
    return time.monotonic() - started


def test_a_workers_reads_of_different_devices_queue_on_its_lane(tmp_path):
    knobs = {"devices": 6, "workers": 1, "read_cost_ms": (0.0, 0.0), "health_phase_s": 600.0}
    with MDKStack(root=tmp_path / "lane", worker_read_us=TURN_S * 1e6, **knobs) as stack:
        assert read_all_at_once(stack) >= 6 * TURN_S  # six turns, one after another


def test_the_gateways_lane_queues_the_reads_of_every_worker(tmp_path):
    knobs = {"devices": 6, "workers": 3, "read_cost_ms": (0.0, 0.0), "health_phase_s": 600.0}
    with MDKStack(root=tmp_path / "gateway-lane", gateway_read_us=TURN_S * 1e6, **knobs) as stack:
        assert read_all_at_once(stack) >= 6 * TURN_S  # six turns on the one Gateway, whatever Worker owns the device
