"""An HDR histogram's two costly Python loops, done with C-speed steps: recording many values, reading percentiles.

``hdrh`` records a value through six Python calls (its bucket arithmetic) and reads a percentile by calling
``get_count_at_index`` once per bucket up to it; a run folds each second's response times into histograms and reads
p50/p99 of every second's bucket, which cost a FastHttpUser GET ~4 % of its CPU (``benchmarks/overhead.py``,
cProfile). Here the bucket arithmetic is inline over the values at once, and a percentile is a bisection of the
running sums of the counts array. Both use only hdrh's public fields and methods and give what hdrh's own
``record_value`` and ``get_percentile_to_value_dict`` give (``tests/listeners/test_hdr_bulk.py`` compares them).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping
from itertools import accumulate
from typing import Any


def counts_index(histogram: Any, value: int) -> int:
    """The index of ``value``'s bucket in ``histogram.counts`` (hdrh's bucket arithmetic, for one value)."""
    half_magnitude, unit = histogram.sub_bucket_half_count_magnitude, histogram.unit_magnitude
    bucket = (value | histogram.sub_bucket_mask).bit_length() - (unit + half_magnitude + 1)
    return ((bucket + 1) << half_magnitude) + (value >> (bucket + unit)) - histogram.sub_bucket_half_count


def record_counts(histogram: Any, counts: Mapping[int, int]) -> None:
    """Record each value of ``counts`` (value -> how many, every value inside the histogram's range) at once."""
    if not counts:
        return
    mask, unit = histogram.sub_bucket_mask, histogram.unit_magnitude
    half_magnitude, half_count = histogram.sub_bucket_half_count_magnitude, histogram.sub_bucket_half_count
    below = unit + half_magnitude + 1
    cells, limit = histogram.counts, histogram.counts_len
    added = 0
    for value, count in counts.items():
        bucket = (value | mask).bit_length() - below
        index = ((bucket + 1) << half_magnitude) + (value >> (bucket + unit)) - half_count
        if 0 <= index < limit:
            cells[index] += count
            added += count
    histogram.total_count += added
    histogram.min_value = min(histogram.min_value, min(counts))
    histogram.max_value = max(histogram.max_value, max(counts))


def percentiles(histogram: Any, wanted: Iterable[float]) -> dict[float, int]:
    """The value at each percentile, as ``get_percentile_to_value_dict`` reads it (empty for an empty histogram)."""
    if histogram.get_total_count() == 0:
        return {}
    stored = min(histogram.counts_len, histogram.encoder.payload.counts_len)  # a decoded one may stop early
    low, high = 0, stored
    if histogram.min_value <= histogram.max_value:  # the buckets outside min..max hold nothing: sum only these
        low = min(counts_index(histogram, histogram.min_value), stored)
        high = min(counts_index(histogram, histogram.max_value) + 1, stored)
    running = list(accumulate(histogram.counts[low:high]))  # a second's latencies span ~5,000 of ~23,000 buckets
    found: dict[float, int] = {}
    for percentile in sorted(set(wanted)):
        if percentile > 100:
            break
        index = bisect_left(running, histogram.get_target_count_at_percentile(percentile))  # a target is >= 1
        if index == len(running):
            break  # counts short of the total: hdrh's walk finds no bucket either
        value = histogram.get_value_from_index(low + index)
        found[percentile] = (
            histogram.get_highest_equivalent_value(value)
            if percentile
            else histogram.get_lowest_equivalent_value(value)
        )
    return found
