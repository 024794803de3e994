"""Histograms made acyclic are freed the moment they are dropped and still record, encode, decode and add."""

import gc
import weakref

import pytest
from hdrh.histogram import HdrHistogram

from swarmgauge.listeners.hdr_acyclic import acyclic
from swarmgauge.listeners.step_stats import NameStats, StepMerge, StepRecorder, new_histogram


@pytest.fixture
def no_cyclic_gc():
    """Only reference counting frees anything while a test runs, so a cycle shows as an object still alive."""
    gc.collect()
    gc.disable()
    yield
    gc.enable()


def test_hdrh_still_makes_every_histogram_a_cycle(no_cyclic_gc):
    """Why acyclic() exists: if hdrh ever stops doing this, the helper is no longer needed."""
    plain = HdrHistogram(1, 3_600_000_000, 3)
    alive = weakref.ref(plain)
    del plain
    assert alive() is not None
    gc.collect()
    assert alive() is None


def test_an_acyclic_histogram_is_freed_when_dropped(no_cyclic_gc):
    histogram = acyclic(HdrHistogram(1, 3_600_000_000, 3))
    histogram.record_value(1500)
    alive = weakref.ref(histogram)
    del histogram
    assert alive() is None


def _histograms_alive() -> int:
    return sum(type(o) is HdrHistogram for o in gc.get_objects())  # isinstance would count the weak proxies too


def test_the_recorder_and_the_merge_leave_no_histogram_behind(no_cyclic_gc):
    before = _histograms_alive()
    merge = StepMerge()
    for _ in range(5):
        recorder = StepRecorder()
        recorder.record(0, "GET", "/a", 12.5, failed=False)
        recorder.record(0, "GET", "/b", 40.0, failed=True)
        combined = merge.add_batch("local", recorder.drain())
        assert combined.requests == 2
        del recorder, combined
    assert _histograms_alive() - before == 2  # the merge's two entries, nothing else
    assert merge.select(0, None, None).requests == 10


def test_acyclic_histograms_record_encode_decode_and_add_as_before():
    stats = NameStats(new_histogram())
    for ms in (1.0, 2.0, 3.0, 100.0):
        stats.record(ms, failed=False)
    decoded = acyclic(HdrHistogram.decode(stats.histogram.encode()))
    assert decoded.get_total_count() == 4
    assert decoded.get_value_at_percentile(50) == stats.histogram.get_value_at_percentile(50)
    total = new_histogram()
    total.add(decoded)
    total.add(stats.histogram)
    assert total.get_total_count() == 8 and total.get_max_value() == stats.histogram.get_max_value()


def test_a_histogram_whose_encoder_does_not_point_back_is_refused_by_name():
    histogram = HdrHistogram(1, 3_600_000_000, 3)
    histogram.encoder.histogram = None
    with pytest.raises(TypeError, match="hdrh changed"):
        acyclic(histogram)
