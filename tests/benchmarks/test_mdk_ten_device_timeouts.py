"""The 10-device read-load queue model: seeded, no read times out when the timeout outlasts every queue, nearly all
do when it is shorter than a device's queue, the page's verdict bands, and the rows written as JSON."""

from __future__ import annotations

import json

import pytest

from benchmarks.mdk_ten_device_timeouts import ReadLoad, amber, main, timed_out


def test_one_seed_gives_one_answer():
    assert timed_out(ReadLoad(), 33.0, drop=False, seed=7) == timed_out(ReadLoad(), 33.0, drop=False, seed=7)


def test_a_timeout_past_every_queue_loses_no_read():
    late, answered = timed_out(ReadLoad(readers=100), 60.0, drop=False, seed=1)
    assert late == 0
    assert answered >= 100  # every reader's first read, and the reads sent again inside the hold


@pytest.mark.parametrize("drop", [False, True])
def test_a_timeout_shorter_than_a_devices_queue_times_out_most_reads(drop):
    late, answered = timed_out(ReadLoad(), 10.0, drop=drop, seed=1)
    assert late > answered


def test_amber_is_some_timed_out_under_one_percent_of_the_attempted():
    assert not amber(0, 1000)
    assert amber(14, 1076)
    assert not amber(60, 1030)


def test_the_rows_are_written_as_json(tmp_path, capsys):
    out = tmp_path / "timeouts.json"
    main(["--timeouts", "10,60", "--runs", "3", "--readers", "50", "--out", str(out)])
    rows = json.loads(out.read_text())["rows"]
    assert [row["timeout_s"] for row in rows] == [10.0, 60.0]
    assert rows[1]["timed_out_p90"] == 0
    assert "timeout    60 s" in capsys.readouterr().out


def test_bad_timeouts_are_refused(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--timeouts", "ten"])
    assert exit_.value.code == 2
