"""The fixed-bucket histogram read off the per-step HDR data agrees with the HDR percentiles steps.csv reports."""

from __future__ import annotations

import random

import pytest

from swarmgauge.listeners.prom_histogram import BUCKETS_SECONDS, bucket_width, cumulative_buckets, sum_seconds
from swarmgauge.listeners.step_stats import NameStats


def histogram_quantile(quantile: float, bounds: tuple[float, ...], cumulative: list[int]) -> float:
    """PromQL's ``histogram_quantile`` over classic buckets: linear inside the bucket the rank falls in."""
    rank = quantile * cumulative[-1]
    for index, count in enumerate(cumulative[:-1]):
        if count >= rank:
            lower = bounds[index - 1] if index else 0.0
            below = cumulative[index - 1] if index else 0
            return lower + (bounds[index] - lower) * (rank - below) / (count - below)
    return bounds[-1]


def stats_of(latencies_ms: list[float]) -> NameStats:
    stats = NameStats()
    for value in latencies_ms:
        stats.record(value, failed=False)
    return stats


def test_the_bounds_are_written_once_increasing_from_a_tenth_of_a_millisecond_to_75_seconds():
    assert len(BUCKETS_SECONDS) == 36
    assert list(BUCKETS_SECONDS) == sorted(set(BUCKETS_SECONDS))
    assert (BUCKETS_SECONDS[0], BUCKETS_SECONDS[-1]) == (0.0001, 75.0)
    assert all(bucket_width(bound) <= 0.4 * bound + 1e-12 for bound in BUCKETS_SECONDS[1:])


def test_bucket_width_is_the_span_of_the_bucket_a_value_falls_in():
    assert bucket_width(0.004) == pytest.approx(0.002)
    assert bucket_width(0.003) == pytest.approx(0.001)
    assert bucket_width(0.00005) == pytest.approx(0.0001)
    assert bucket_width(100.0) == float("inf")


def test_cumulative_counts_per_bound_with_the_rest_in_plus_inf_and_the_exact_sum():
    stats = stats_of([0.4] * 10 + [2.5] * 20 + [40.0] * 5 + [100_000.0])
    stats.record(None, failed=True)  # an untimed request is not in the histogram
    cumulative = cumulative_buckets(stats)
    by_bound = dict(zip(BUCKETS_SECONDS, cumulative, strict=False))
    assert len(cumulative) == len(BUCKETS_SECONDS) + 1
    assert (by_bound[0.0003], by_bound[0.0005], by_bound[0.002], by_bound[0.003]) == (0, 10, 10, 30)
    assert (by_bound[0.03], by_bound[0.05], by_bound[75.0], cumulative[-1]) == (30, 35, 35, 36)
    assert sum_seconds(stats) == pytest.approx((0.4 * 10 + 2.5 * 20 + 40.0 * 5 + 100_000.0) / 1000.0)


@pytest.mark.parametrize("seed", range(6))
def test_histogram_quantile_is_within_one_bucket_of_the_hdr_percentile(seed):
    generator = random.Random(seed)
    latencies = [generator.lognormvariate(1.0, 1.2) for _ in range(generator.randint(50, 3000))]
    stats = stats_of(latencies)
    cumulative = cumulative_buckets(stats)
    for quantile in (0.5, 0.9, 0.99):
        hdr = stats.percentile_ms(quantile * 100) / 1000.0
        promql = histogram_quantile(quantile, BUCKETS_SECONDS, cumulative)
        assert abs(promql - hdr) <= bucket_width(hdr), (quantile, promql, hdr)
