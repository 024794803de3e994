"""targets/mdk/drill_under_load.py: the readers' reads that arm a drill, and their failures counted during it."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

from swarmgauge.targets.mdk.drill_under_load import DRILLS_NAME, FleetTarget


def test_only_the_readers_telemetry_is_remembered():
    target = FleetTarget()
    target.on_request("MDK", "telemetry", context={"device_id": "d-1"})
    target.on_request("MDK", "telemetry", exception=OSError("refused"), context={"device_id": "d-2"})
    target.on_request("MDK", "action", context={"device_id": "d-3"})
    target.on_request("HTTP", "telemetry", context={"device_id": "d-4"})
    assert target.reads_seen == 2 and target.read_ok == {"d-1"}
    assert [device for _at, device in target.failed_reads] == ["d-2"]


def test_failed_reads_are_counted_from_the_kill_to_the_drills_end():
    target = FleetTarget()
    now = time.time()
    target.failed_reads.extend([(now - 10, "a"), (now - 4, "a"), (now - 3, "b"), (now - 1, "a"), (now + 5, "a")])
    result = SimpleNamespace(killed_at=now - 5, ended_at=now, failed_reads=None, victim_failed_reads=None)
    target.count_failed_reads(result, victims={"a"})
    assert result.failed_reads == 3 and result.victim_failed_reads == 2


def test_no_drill_writes_no_drill_file(tmp_path: Path):
    target = FleetTarget()
    target.join_drill()
    target.save_drills(tmp_path)
    assert not (tmp_path / DRILLS_NAME).exists()
