"""``listeners/hdr_bulk``: recording many values and reading percentiles give what hdrh's own methods give.

hdrh's ``record_value`` and ``get_percentile_to_value_dict`` are the reference: if hdrh changes its layout, these
fail and ``hdr_bulk`` is to be checked against it (or dropped, if hdrh's own got fast)."""

from __future__ import annotations

import random

import pytest
from hdrh.histogram import HdrHistogram

from swarmgauge.listeners.hdr_bulk import counts_index, percentiles, record_counts
from swarmgauge.listeners.step_stats import HIGHEST_US, LOWEST_US, SIGNIFICANT_FIGURES, NameStats

WANTED = (0, 1, 25, 50, 66.6, 90, 95, 99, 99.9, 99.99, 100, 100.5)


def _values(seed: int) -> dict[int, int]:
    rng = random.Random(seed)
    counts: dict[int, int] = {}
    for _ in range(3_000):
        value = int(rng.lognormvariate(8, 2)) + 1  # 1 µs to minutes: every bucket size
        counts[value] = counts.get(value, 0) + rng.randint(1, 3)
    for edge in (LOWEST_US, 2047, 2048, 2049, 4095, 4096, HIGHEST_US):
        counts[edge] = counts.get(edge, 0) + 1
    return counts


def _by_hdrh(counts: dict[int, int]) -> HdrHistogram:
    histogram = HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_FIGURES)
    for value, count in counts.items():
        histogram.record_value(value, count)
    return histogram


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_recording_at_once_fills_the_counts_as_hdrh_records_each(seed):
    counts = _values(seed)
    ours = HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_FIGURES)
    record_counts(ours, counts)
    theirs = _by_hdrh(counts)
    assert list(ours.counts) == list(theirs.counts)
    assert (ours.get_total_count(), ours.get_min_value(), ours.get_max_value()) == (
        theirs.get_total_count(),
        theirs.get_min_value(),
        theirs.get_max_value(),
    )
    assert ours.encode() == theirs.encode()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_percentiles_are_hdrhs_for_a_recorded_and_a_decoded_histogram(seed):
    histogram = _by_hdrh(_values(seed))
    assert percentiles(histogram, WANTED) == histogram.get_percentile_to_value_dict(list(WANTED))
    decoded = HdrHistogram.decode(histogram.encode())  # its counts array stops at its last non-zero bucket
    assert percentiles(decoded, WANTED) == decoded.get_percentile_to_value_dict(list(WANTED))


def test_an_empty_histogram_has_no_percentile_and_one_value_is_every_percentile():
    histogram = HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_FIGURES)
    assert percentiles(histogram, WANTED) == {}
    record_counts(histogram, {1500: 1})
    assert set(percentiles(histogram, (50, 99)).values()) == {1500}


def test_a_steps_figures_settle_through_it_with_times_outside_the_range_clamped_as_before():
    stats = NameStats()
    for ms in (0.0001, 0.4, 1.5, 1.5, 2.3, 80.0, 5_000_000.0):
        stats.record(ms, failed=False)
    reference = _by_hdrh({1: 1, 400: 1, 1500: 2, 2300: 1, 80_000: 1, HIGHEST_US: 1})
    assert list(stats.histogram.counts) == list(reference.counts)
    assert stats.percentiles_ms((50, 99)) == {50: 1.5, 99: reference.get_value_at_percentile(99) / 1000.0}
    assert stats.percentile_ms(50) == 1.5
    assert NameStats().percentile_ms(50) is None and NameStats().percentiles_ms((50,)) == {}


def test_a_values_bucket_index_is_hdrhs():
    histogram = HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_FIGURES)
    for value in (LOWEST_US, 2, 2047, 2048, 2049, 4095, 4096, 123_456, HIGHEST_US, *_values(4)):
        assert counts_index(histogram, value) == histogram.get_counts_array_index(value)


def test_percentiles_read_from_the_span_of_recorded_values_are_hdrhs_recorded_added_and_decoded():
    rng = random.Random(5)
    band = {value: rng.randint(1, 4) for value in (rng.randint(300, 20_000) for _ in range(2_000))}
    recorded = _by_hdrh(band)  # a second of latencies: a few thousand buckets, none near either end
    added = HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_FIGURES)
    added.add(recorded)
    decoded = HdrHistogram.decode(recorded.encode())
    for histogram in (recorded, added, decoded):
        assert percentiles(histogram, WANTED) == histogram.get_percentile_to_value_dict(list(WANTED))
