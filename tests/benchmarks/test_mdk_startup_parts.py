"""``benchmarks/mdk_startup_parts.py`` against a real (small) stand-in: every part of the start-up is recorded, the
discovery's summary answers for every device, and each component's CPU is read."""

from __future__ import annotations

import pytest

from benchmarks.mdk_startup_parts import measure

pytestmark = pytest.mark.integration  # starts the MDK stand-in's processes


def test_a_small_fleet_records_its_start_its_discovery_and_each_components_cpu():
    found = measure(10, 2)
    assert found["devices_answered"] == 10
    assert {"stack_start_s", "first_summary_s", "second_summary_s", "load_avg"} <= set(found)
    assert set(found["cpu_s_over_first_summary"]) == {"mocks", "kernel", "worker-0", "worker-1", "gateway"}
