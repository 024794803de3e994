"""percentiles.csv: each step's merged HDR histogram read at the ladder, the figures steps.csv's columns agree with."""

from __future__ import annotations

import csv
import io

from swarmgauge.listeners.step_percentiles import COLUMNS, LADDER, percentile_rows
from swarmgauge.listeners.step_stats import StepMerge, StepRecorder
from swarmgauge.listeners.steps_csv import write_rows


def _merge() -> StepMerge:
    recorder = StepRecorder()
    for ms in range(1, 1001):  # 1 ms to 1 s, one of each
        recorder.record(0, "GET", "/a", float(ms), False)
    recorder.record(1, "GET", "/a", 7.0, False)
    merge = StepMerge()
    merge.add_batch("worker-1", recorder.drain())
    return merge


def test_every_step_and_name_gets_the_whole_ladder_read_from_its_histogram():
    merge = _merge()
    rows = percentile_rows(merge)
    assert {(r["step"], r["percentile"]) for r in rows} == {(s, q) for s in (0, 1) for q in LADDER}
    step0 = {r["percentile"]: r["ms"] for r in rows if r["step"] == 0}
    stats = merge.entries[(0, "GET", "/a")]
    assert step0[50.0] == stats.percentile_ms(50) and abs(step0[50.0] - 500) < 1
    assert step0[99.0] == stats.percentile_ms(99) and abs(step0[99.0] - 990) < 2
    assert step0[100.0] == stats.percentile_ms(100) and abs(step0[100.0] - 1000) < 2
    assert all(a <= b for a, b in zip([step0[q] for q in LADDER], [step0[q] for q in LADDER][1:]))


def test_the_rows_write_as_the_declared_columns():
    text = write_rows(percentile_rows(_merge()), COLUMNS)
    read = list(csv.DictReader(io.StringIO(text)))
    assert list(read[0]) == ["step", "request_type", "name", "percentile", "ms"]
    assert len(read) == 2 * len(LADDER)


def test_a_name_without_a_response_time_writes_no_rows():
    merge = StepMerge()
    assert percentile_rows(merge) == []
