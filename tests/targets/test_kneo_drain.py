"""The queue row's figures from stored stamps: drain length and rate, per-run queue wait, unfinished rows apart."""

from __future__ import annotations

import pytest

from swarmgauge.targets.kneo.drain import drain_figures


def test_a_batch_drains_at_its_runs_over_first_save_to_last_terminal_stamp():
    times = [
        ("2026-06-18T10:00:00+00:00", "2026-06-18T10:00:01+00:00", "completed"),
        ("2026-06-18T10:00:00.500000+00:00", "2026-06-18T10:00:03+00:00", "completed"),
        ("2026-06-18T10:00:01+00:00", "2026-06-18T10:00:04+00:00", "failed"),
        ("2026-06-18T10:00:01+00:00", None, "running"),
    ]
    figures = drain_figures(times)
    assert figures["runs"] == 3 and figures["unfinished"] == 1
    assert figures["drain_s"] == pytest.approx(4.0) and figures["runs_per_s"] == pytest.approx(0.75)
    assert figures["wait_p50_ms"] == pytest.approx(2500.0) and figures["wait_p99_ms"] == pytest.approx(3000.0)


def test_no_finished_run_gives_no_rate_and_unreadable_stamps_count_as_unfinished():
    figures = drain_figures([("not a time", "2026-06-18T10:00:01+00:00", "completed")])
    assert figures["runs"] == 0 and figures["unfinished"] == 1
    assert figures["runs_per_s"] is None and figures["wait_p50_ms"] is None


def test_the_peak_queued_counts_runs_saved_and_not_yet_started_at_every_instant():
    def at(second: float) -> str:
        return f"2026-06-18T10:00:{second:06.3f}+00:00"

    # three runs queued together while the workers sleep, then one saved as another starts: the peak is 3
    times = [
        (at(0.0), at(1.1), "completed", at(1.0)),
        (at(0.2), at(1.2), "completed", at(1.0)),
        (at(0.4), at(1.3), "completed", at(1.0)),
        (at(1.0), at(1.5), "completed", at(1.4)),
        (at(2.0), None, "running", None),
    ]
    figures = drain_figures(times)
    assert figures["peak_queued"] == 3 and figures["unfinished"] == 1
    assert drain_figures([(at(0.0), at(1.0), "completed")])["peak_queued"] is None  # no start stamp: not known
