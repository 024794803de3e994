"""The sampler's column store gives back every row exactly, and the sampler's drain/merge/CSV work on it."""

from types import SimpleNamespace

import pytest

from swarmgauge.core.verdict import Row
from swarmgauge.listeners.resources import ResourceSampler
from swarmgauge.listeners.sample_rows import SampleRows

ROWS = [
    Row(1700000000.125, 0.0, None, "local", "generator", "rss", 83.0 * 2**20, 0),
    Row(1700000005.5, 5.375, 0, "local", "psutil:pid=7", "rss", 12345678.0, 1),
    Row(1700000005.5, 5.375, 0, "local", "requests", "requests", 4096.0, 1),
    Row(1700000010.75, 10.625, 3, "worker:a", "generator", "rss", 0.1 + 0.2, 2),
]


def test_every_row_reads_back_exactly_in_order():
    rows = SampleRows(ROWS)
    assert len(rows) == 4 and bool(rows)
    assert list(rows) == ROWS
    assert rows[1] == ROWS[1] and rows[0].step is None and rows[3].value == 0.1 + 0.2


def test_a_series_is_stored_once_however_many_rows_it_has():
    rows = SampleRows()
    for n in range(100):
        rows.append(Row(float(n), float(n), 0, "local", "generator", "rss", float(n), n))
    rows.append(Row(100.0, 100.0, 0, "local", "generator", "cpu", 1.0, 100))
    assert rows.series == [("local", "generator", "rss"), ("local", "generator", "cpu")]
    assert len(rows) == 101 and not SampleRows()


def test_a_negative_step_is_refused_by_name_and_nothing_is_half_added():
    rows = SampleRows(ROWS[:1])
    with pytest.raises(ValueError, match="step"):
        rows.append(Row(1.0, 1.0, -2, "local", "generator", "cpu", 1.0, 1))
    assert list(rows) == ROWS[:1] and rows.series == [("local", "generator", "rss")]


def test_the_sampler_drains_merges_and_writes_csv_from_the_column_store():
    worker = ResourceSampler(SimpleNamespace())
    worker.rows.extend(ROWS[:2])
    packed = worker.drain()
    assert len(worker.rows) == 0 and len(packed) == 2
    master = ResourceSampler(SimpleNamespace())
    master.started_at = ROWS[0].time
    master.merge("a", packed)
    assert [(r.node, r.source, r.value, r.step) for r in master.rows] == [
        ("worker:a", "generator", ROWS[0].value, None),
        ("worker:a", "psutil:pid=7", ROWS[1].value, 0),
    ]
    lines = master.csv_text().splitlines()
    assert len(lines) == 3 and "worker:a" in lines[1]
