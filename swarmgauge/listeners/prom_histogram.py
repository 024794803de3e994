"""Latency as a classic Prometheus histogram, with fixed buckets read off the per-step HDR histograms.

Fixed buckets, not native ones: Prometheus 2.42 (Debian 12) keeps native histograms behind a feature flag and takes
them only from protobuf scrapes, Pushgateway 1.5.1 and the text format cannot carry them, and Grafana's
``histogram_quantile`` panels want ``_bucket{le}`` series. Classic buckets go through every path alike: the
``/swarmgauge/metrics`` scrape, the Pushgateway and remote-write.

:data:`BUCKETS_SECONDS` is the one place the bounds are written down: 1, 1.5, 2, 3, 5, 7.5 per decade from 0.1 ms to
75 s (36 bounds and ``+Inf``), so a ``histogram_quantile`` is within one bucket of the HDR percentile, a bucket at most
40 % as wide as its upper bound (2 ms wide around a 4 ms p99, 20 ms around 40 ms). An HDR sub-bucket is counted in
the first bound at or above its highest equivalent value, the value HDR reports as a percentile, so the rank that
gives ``steps.csv``'s p99 lands in the same Prometheus bucket as the p99 ``histogram_quantile`` interpolates.
No Locust and no I/O here.
"""

from __future__ import annotations

from bisect import bisect_left

from swarmgauge.listeners.step_stats import NameStats

BUCKET_MANTISSAS = (1.0, 1.5, 2.0, 3.0, 5.0, 7.5)
BUCKET_DECADES = range(-4, 2)
BUCKETS_SECONDS: tuple[float, ...] = tuple(
    round(mantissa * 10.0**decade, 6) for decade in BUCKET_DECADES for mantissa in BUCKET_MANTISSAS
)
MICROS_PER_SECOND = 1_000_000


def bucket_width(seconds: float) -> float:
    """The width of the bucket ``seconds`` falls in (``le`` minus the bound below it); inf past the last bound."""
    index = bisect_left(BUCKETS_SECONDS, seconds)
    if index >= len(BUCKETS_SECONDS):
        return float("inf")
    lower = BUCKETS_SECONDS[index - 1] if index else 0.0
    return BUCKETS_SECONDS[index] - lower


def cumulative_buckets(stats: NameStats) -> list[int]:
    """Requests at or under each bound of :data:`BUCKETS_SECONDS`, then the ``+Inf`` count (every timed request)."""
    histogram = stats.histogram
    per_bucket = [0] * (len(BUCKETS_SECONDS) + 1)
    bounds_us = [bound * MICROS_PER_SECOND for bound in BUCKETS_SECONDS]
    for item in histogram.get_recorded_iterator():
        highest = histogram.get_highest_equivalent_value(item.value_iterated_to)
        per_bucket[bisect_left(bounds_us, highest)] += item.count_at_value_iterated_to
    running, cumulative = 0, []
    for count in per_bucket:
        running += count
        cumulative.append(running)
    return cumulative


def sum_seconds(stats: NameStats) -> float:
    """The exact sum of the timed requests' latencies (not the HDR's rounded one), in seconds."""
    return stats.total_ms / 1000.0
