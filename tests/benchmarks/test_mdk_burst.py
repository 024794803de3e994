"""benchmarks/mdk_burst.py end to end on a tiny fleet: one row per run with its counts (no figure is asserted)."""

import json

import pytest

from benchmarks import mdk_burst


@pytest.mark.integration
@pytest.mark.timeout(200)
def test_a_tiny_burst_writes_a_row_per_run(tmp_path):
    assert mdk_burst.main(["--profiles", "20x1", "--runs", "1", "--out", str(tmp_path)]) == 0
    rows = json.loads((tmp_path / "mdk-burst.json").read_text())["rows"]
    assert [r["profile"] for r in rows] == ["20x1"]
    assert rows[0]["submits"] > 0 and rows[0]["queued"] + rows[0]["not_routable"] <= rows[0]["submits"]
    assert rows[0]["kernel_p50_ms"] <= rows[0]["kernel_p99_ms"] and rows[0]["missed_pings"] is not None


def test_no_profile_is_refused_in_one_line(capsys):
    assert mdk_burst.main(["--profiles", ",", "--out", "unused"]) == 2
    assert capsys.readouterr().err.startswith("mdk_burst: --profiles")


def test_the_discover_stage_grows_with_the_fleet_and_the_plan_loads(tmp_path):
    from swarmgauge.plans.plan import load_plan_file

    big = load_plan_file(str(mdk_burst.burst_plan("5000x5", tmp_path)))
    assert [(s.label, s.duration) for s in big.stages] == [("discover", 20.0), ("action burst", 3.0)]
    assert big.stages[1].rate == 1000 and big.stages[1].max_users == 1000
    small = load_plan_file(str(mdk_burst.burst_plan("cap-20devices-1workers", tmp_path)))
    assert small.stages[0].duration == 2.0
