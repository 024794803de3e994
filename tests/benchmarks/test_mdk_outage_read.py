"""benchmarks/mdk_outage_read.py: the figure it prints is devices back to the first good read, per outage row."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.mdk_outage_read import main, outage_figures


def test_each_outage_row_gives_devices_back_to_the_first_good_read(tmp_path: Path):
    path = tmp_path / "mdk_drills.json"
    rows = [
        {"drill": "worker-restart", "ready_s": 5.0, "first_read_s": 6.0},
        {"drill": "device-outage", "restored_s": 3.0, "restored_read_s": 3.35, "device_set_aside": True},
        {"drill": "device-outage", "restored_s": 3.0, "restored_read_s": None, "device_set_aside": False},
    ]
    path.write_text(json.dumps({"drills": rows}))
    figures = outage_figures(path)
    assert [f["reads_again_s"] for f in figures] == [0.35, None]
    assert [f["device_set_aside"] for f in figures] == [True, False]


def test_a_bad_run_count_is_refused_in_one_line(capsys):
    assert main(["--runs", "0"]) == 2
    assert capsys.readouterr().err.strip() == "mdk_outage_read: --runs must be 1 to 50"
