"""``benchmarks/mdk_read_cpu.py`` against a real (small) stand-in: the readers' reads are counted and answered, and
each stand-in process's CPU a read is reported beside the generator's."""

from __future__ import annotations

import pytest

from benchmarks.mdk_read_cpu import measure

pytestmark = pytest.mark.integration  # starts the MDK stand-in's processes


def test_a_small_fleet_reports_reads_and_each_processs_cpu_a_read():
    # spawned: forking needs a process with one thread (the benchmark's own command line), not an xdist worker
    found = measure(10, 1, readers=5, seconds=1.0)
    assert found["start"] == "spawn"
    assert found["reads"] > 0 and set(found["statuses"]) == {"200"}
    assert set(found["cpu_ms_per_read"]) == {"mocks", "kernel", "worker-0", "gateway", "generator"}
    assert found["stand_in_ms_per_read"] is not None
