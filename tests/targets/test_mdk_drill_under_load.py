"""targets/mdk/drill_under_load.py: the readers' reads that arm a drill, their failures counted during it, and the
outage drill's timed device left to the drill (``MDKStack.attach`` and ``run_drill`` are fakes: the seam under test is
the order of set-aside, arming and drill)."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from swarmgauge.targets.mdk import drill_under_load
from swarmgauge.targets.mdk.drill_under_load import DRILLS_NAME, FleetTarget
from swarmgauge.targets.mdk.drills import DrillResult


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


class FakeStack:
    """The stand-in's device list, and nothing to kill."""

    def device_ids(self, worker_id: str | None = None) -> list[str]:
        return ["d-0", "d-1", "d-2"]


@pytest.mark.parametrize(
    "drill, counted, aside",
    [("device-outage", True, ["d-0"]), ("device-outage", False, []), ("worker-restart", True, [])],
)
def test_the_outage_drill_sets_its_timed_device_aside_before_it_runs(monkeypatch, tmp_path, drill, counted, aside):
    target = FleetTarget()
    target.root = tmp_path
    set_aside: list[str] = []
    target.set_aside = set_aside.append
    target.read_ok = {"d-1"}  # a reader's good read arms the drill
    target.reads_seen = 1
    aside_when_run: list[list[str]] = []

    def fake_run_drill(name, stack, url, **kwargs):
        aside_when_run.append(list(set_aside))
        return DrillResult(name, "mocks", "d-0", killed_at=time.time(), recovered=True, ended_at=time.time())

    monkeypatch.setattr(drill_under_load.MDKStack, "attach", staticmethod(lambda root: FakeStack()))
    monkeypatch.setattr(drill_under_load, "run_drill", fake_run_drill)
    options = SimpleNamespace(mdk_drill=drill, mdk_drill_after="0s", mdk_drill_worker="worker-0")
    target.run_drill(options, counted=counted)
    assert aside_when_run == [aside]
    expected = (aside != []) if drill == "device-outage" else None
    assert target.drill_results[0].device_set_aside is expected
