"""benchmarks/reads_ramp.py's table from a run folder: the p99 / p50 beside the page's, the in-step timeline p99 and
the stall flags (figures are read, never asserted against a speed)."""

from __future__ import annotations

import csv
from pathlib import Path

from benchmarks.reads_ramp import in_step_p99, step_table


def _write(path: Path, rows: list[dict]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def test_the_table_sets_each_steps_shape_beside_the_pages_with_its_in_step_p99(tmp_path):
    flags = {"generator_cpu_max": 20.0, "generator_stall_ms": "", "stalled_requests": 0, "generator_stalled": False}
    _write(
        tmp_path / "steps.csv",
        [
            {"step": 0, "request_type": "FETCH", "users": 16, "rps": 159.0, "p50_ms": 100.0, "p99_ms": 160.0, **flags},
            {"step": 1, "request_type": "FETCH", "users": 64, "rps": 158.0, "p50_ms": 400.0, "p99_ms": 2600.0}
            | {**flags, "generator_stall_ms": 2300.0, "stalled_requests": 44, "generator_stalled": True},
            {"step": 1, "request_type": "QUIC", "users": 64, "rps": 3.0, "p50_ms": 1700.0, "p99_ms": 4000.0, **flags},
        ],
    )
    timeline = [(0, 150.0), (0, 162.0), (0, 158.0), (0, 900.0), (1, 300.0), (1, 450.0), (1, 470.0), (1, 4000.0)]
    _write(tmp_path / "timeline.csv", [{"time": i, "step": s, "p99_ms": v} for i, (s, v) in enumerate(timeline)])
    rows = step_table(tmp_path)
    assert [r["users"] for r in rows] == [16, 64]  # FETCH only: the handshakes ride along
    assert rows[0]["shape_within_15pct"] is True  # 1.60 against the page's 1.66
    assert rows[1]["shape_within_15pct"] is False and rows[1]["generator_stalled"] is True
    assert rows[1]["in_step_p99_ms"] == 460.0  # the median of the inner intervals: the edges left out
    assert rows[1]["stalled_requests"] == 44 and rows[1]["generator_stall_ms"] == 2300.0


def test_a_step_with_fewer_than_three_intervals_has_no_in_step_p99():
    assert in_step_p99([{"step": "0", "p99_ms": "5"}, {"step": "0", "p99_ms": "6"}], "0") is None
