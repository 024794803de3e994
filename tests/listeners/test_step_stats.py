"""The per-step recorder's NameStats: response times wait in a small table and reach the HDR histogram before
anything reads it, so every figure is what recording each one into the histogram at once gives."""

from __future__ import annotations

from hdrh.histogram import HdrHistogram

from swarmgauge.listeners.step_stats import HIGHEST_US, LOWEST_US, NameStats, StepMerge, StepRecorder

TIMES_MS = [0.0004, 1.0, 1.0, 2.5, 2.5, 2.5, 7.25, 120.0, 3_600_000.0 * 2, -3.0]


def _direct(times_ms: list[float]) -> HdrHistogram:
    histogram = HdrHistogram(LOWEST_US, HIGHEST_US, 3)
    for ms in times_ms:
        histogram.record_value(min(max(int(ms * 1000.0 + 0.5), LOWEST_US), HIGHEST_US))
    return histogram


def test_percentiles_read_every_recorded_time_as_the_histogram_would():
    stats = NameStats()
    for ms in TIMES_MS:
        stats.record(ms, failed=False)
    direct = _direct(TIMES_MS)
    for percentile in (0, 50, 90, 99, 100):
        assert stats.percentile_ms(percentile) == direct.get_value_at_percentile(percentile) / 1000.0
    stats.record(5.0, failed=True)  # recorded after a read: still counted at the next read
    assert stats.settle().get_total_count() == len(TIMES_MS) + 1
    assert (stats.requests, stats.failures) == (len(TIMES_MS) + 1, 1)


def test_a_ladder_read_in_one_pass_is_each_percentile_read_alone():
    """percentiles.csv and steps.csv read their percentiles in one pass over the histogram: the same values."""
    from swarmgauge.listeners.step_percentiles import LADDER

    assert NameStats().percentiles_ms(LADDER) == {}
    for times in (TIMES_MS, [3.0], [float(i % 997) / 7 for i in range(5000)]):
        stats = NameStats()
        for ms in times:
            stats.record(ms, failed=False)
        assert stats.percentiles_ms(LADDER) == {p: stats.percentile_ms(p) for p in LADDER}
        assert list(stats.percentiles_ms((99.9, 50, 50))) == [99.9, 50]  # asked order kept, a repeat read once


def test_a_drained_batch_merges_to_the_same_histogram_as_recording_directly():
    recorder = StepRecorder()
    for ms in TIMES_MS:
        recorder.record(0, "GET", "/", ms, False)
    merge = StepMerge()
    merge.add_batch("worker", recorder.drain())
    merged = merge.entries[(0, "GET", "/")].settle()
    direct = _direct(TIMES_MS)
    assert merged.get_total_count() == direct.get_total_count()
    assert [merged.get_value_at_percentile(p) for p in (1, 50, 99, 100)] == [
        direct.get_value_at_percentile(p) for p in (1, 50, 99, 100)
    ]
    assert merged.get_min_value() == direct.get_min_value() and merged.get_max_value() == direct.get_max_value()


def test_a_local_drain_hands_its_histograms_over_unencoded_and_merges_to_the_same_figures():
    merges = []
    for encoded in (True, False):
        recorder = StepRecorder()
        for ms in TIMES_MS:
            recorder.record(0, "GET", "/", ms, ms > 50)
        batch = recorder.drain(encoded=encoded)
        assert isinstance(batch["entries"][0][3], str) is encoded
        merge = StepMerge()
        combined = merge.add_batch("local", batch)
        merges.append((combined, merge.entries[(0, "GET", "/")]))
    (a_combined, a_entry), (b_combined, b_entry) = merges
    for a, b in ((a_combined, b_combined), (a_entry, b_entry)):
        assert (a.requests, a.failures, a.total_ms, a.max_ms) == (b.requests, b.failures, b.total_ms, b.max_ms)
        assert list(a.settle().counts) == list(b.settle().counts)
        assert a.percentiles_ms((50, 99)) == b.percentiles_ms((50, 99))


def test_adding_folds_both_sides_pending_times():
    left, right = NameStats(), NameStats()
    left.record(1.0, False)
    right.record(9.0, False)
    left.add(right)
    assert left.settle().get_total_count() == 2
    assert left.percentile_ms(100) == _direct([1.0, 9.0]).get_value_at_percentile(100) / 1000.0
    assert not right.pending


def test_unfinished_requests_ride_the_drained_batch_and_add_up_in_the_merge():
    recorder = StepRecorder()
    recorder.record(0, "FETCH", "/a", 12.0, False)
    for step in (0, 0, 1):
        recorder.record(step, "FETCH", "/a", 4000.0, True)
        recorder.note_unfinished(step, "FETCH", "/a")
    merged = StepMerge()
    merged.add_batch("worker-1", recorder.drain())
    merged.add_batch(
        "worker-2", {"entries": [[0, "FETCH", "/a", NameStats().settle().encode().decode(), 1, 1, 5.0, 5.0, 0]]}
    )
    first = merged.entries[(0, "FETCH", "/a")]  # the second worker's batch has no unfinished field: none
    assert (first.requests, first.failures, first.unfinished, first.answered) == (4, 3, 2, 2)
    assert (merged.entries[(1, "FETCH", "/a")].unfinished, merged.entries[(1, "FETCH", "/a")].answered) == (1, 0)
