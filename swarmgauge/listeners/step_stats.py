"""Per-step HDR histograms: the recorder every process keeps and the merge the master keeps.

No Locust and no I/O here, so the drain/merge round trip is tested directly. A drained batch is msgpack-safe
(lists, str, numbers) because it rides in Locust's ``report_to_master`` data.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hdrh.histogram import HdrHistogram

from swarmgauge.listeners.hdr_acyclic import acyclic
from swarmgauge.listeners.hdr_bulk import percentiles, record_counts

# Microseconds, 1 us to 1 h, 3 significant digits: 0.1 % resolution at any latency.
LOWEST_US = 1
HIGHEST_US = 3_600_000_000
SIGNIFICANT_FIGURES = 3
AGGREGATED = ("", "Aggregated")
# request types that ride along with the operations a user waits on (a pooled connection's handshake): never summed
# into a step's Aggregated row, whose rate would then count a connection as a request
RIDE_ALONG = frozenset({("QUIC", "handshake")})


def new_histogram() -> HdrHistogram:
    return acyclic(HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_FIGURES))


@dataclass(slots=True)
class NameStats:
    """What one (step, request type, name) has seen: histogram of response times plus exact counts."""

    settled: HdrHistogram = field(default_factory=new_histogram)  # without the pending times: read ``histogram``
    requests: int = 0
    failures: int = 0
    total_ms: float = 0.0
    max_ms: float = 0.0
    none_times: int = 0
    unfinished: int = 0  # of ``failures``: requests their user was stopped in (``errors.Unfinished``)
    #: response times in microseconds not yet in ``histogram``, in the order they came: a request appends one C
    #: integer (no object kept, sequential memory) instead of hdrh's Python index arithmetic or an update of a dict
    #: by value, a random slot of thousands a second; :meth:`settle` counts and folds them in before anything reads
    #: the histogram
    pending: array[int] = field(default_factory=lambda: array("q"), repr=False, compare=False)

    def record(self, response_time_ms: float | None, failed: bool) -> None:
        self.requests += 1
        if failed:
            self.failures += 1
        if response_time_ms is None:
            self.none_times += 1
            return
        self.total_ms += response_time_ms
        if response_time_ms > self.max_ms:
            self.max_ms = response_time_ms
        self.pending.append(int(response_time_ms * 1000.0 + 0.5))

    def settle(self) -> HdrHistogram:
        """The histogram with every pending response time recorded in it (clamped to its range, as recorded)."""
        if self.pending:
            counts = Counter(self.pending)
            if min(counts) < LOWEST_US or max(counts) > HIGHEST_US:
                clamped: Counter[int] = Counter()
                for micros, count in counts.items():
                    clamped[min(max(micros, LOWEST_US), HIGHEST_US)] += count
                counts = clamped
            record_counts(self.settled, counts)
            del self.pending[:]
        return self.settled

    @property
    def histogram(self) -> HdrHistogram:
        """Every response time recorded so far (the pending ones folded in first)."""
        return self.settle()

    def add(self, other: NameStats) -> None:
        self.settle().add(other.settle())
        self.requests += other.requests
        self.failures += other.failures
        self.total_ms += other.total_ms
        self.max_ms = max(self.max_ms, other.max_ms)
        self.none_times += other.none_times
        self.unfinished += other.unfinished

    @property
    def answered(self) -> int:
        """Requests that ended (with an answer or a failure of their own), not cut off by their user's stop."""
        return self.requests - self.unfinished

    def percentile_ms(self, percentile: float) -> float | None:
        return self.percentiles_ms((percentile,)).get(percentile)

    def percentiles_ms(self, wanted: Sequence[float]) -> dict[float, float]:
        """Several percentiles read in one pass over the histogram (``listeners/hdr_bulk.py``: hdrh's own walk calls
        a method per bucket, ~23,000 of them); empty when it holds nothing."""
        histogram = self.settle()
        if histogram.get_total_count() == 0:
            return {}
        found = percentiles(histogram, wanted)
        return {percentile: found.get(percentile, 0) / 1000.0 for percentile in wanted}

    @property
    def avg_ms(self) -> float | None:
        timed = self.requests - self.none_times
        return self.total_ms / timed if timed else None


@dataclass(frozen=True)
class TimelinePoint:
    """One closed ``timeline.csv`` bucket: its figures only, a few dozen bytes instead of a histogram's ~190 KB."""

    requests: int
    failures: int
    p50_ms: float | None
    p99_ms: float | None

    @classmethod
    def of(cls, stats: NameStats) -> TimelinePoint:
        at = stats.percentiles_ms((50, 99))
        return cls(stats.requests, stats.failures, at.get(50), at.get(99))


class StepRecorder:
    """One process's per-step measurements since the last drain."""

    def __init__(self) -> None:
        self.entries: dict[tuple[int, str, str], NameStats] = {}
        self.warmup: dict[int, int] = {}
        self.counters: dict[tuple[int, str], int] = {}
        self.cpu_max: dict[int, float] = {}
        self.stalls: dict[int, tuple[float, int]] = {}
        #: the entries of step :attr:`newest_step` by request type, then name, as :meth:`newest_entry` made or found
        #: them: a request of the step current now finds its figures without building a (step, type, name) key
        self.newest: dict[str, dict[str, NameStats]] = {}
        self.newest_step = -1

    def _reset(self) -> None:
        self.entries = {}
        self.warmup = {}
        self.counters = {}
        self.cpu_max = {}
        self.stalls = {}
        self.newest = {}

    def record(self, step: int, request_type: str, name: str, response_time_ms: float | None, failed: bool) -> None:
        self.entry(step, request_type, name).record(response_time_ms, failed)

    def entry(self, step: int, request_type: str, name: str) -> NameStats:
        """The figures of (step, type, name), made on first use: a caller on every request's path looks in
        ``entries`` first and comes here only for a new name."""
        key = (step, request_type, name)
        stats = self.entries.get(key)
        if stats is None:
            stats = self.entries[key] = NameStats()
        return stats

    def newest_entry(self, step: int, request_type: str, name: str) -> NameStats:
        """:meth:`entry` for a request of the step current now, filed under :attr:`newest` too (a step other than
        :attr:`newest_step` becomes it, and the entries of the one before are looked up by key again)."""
        if step != self.newest_step:
            self.newest_step, self.newest = step, {}
        stats = self.newest.setdefault(request_type, {})[name] = self.entry(step, request_type, name)
        return stats

    def note_unfinished(self, step: int, request_type: str, name: str) -> None:
        """The request just recorded for (step, type, name) was cut off by its user's stop (rare: no per-request
        cost on the path of a request that ends)."""
        self.entries[(step, request_type, name)].unfinished += 1

    def record_warmup(self, step: int) -> None:
        self.warmup[step] = self.warmup.get(step, 0) + 1

    def count(self, step: int, name: str, n: int) -> None:
        self.counters[(step, name)] = self.counters.get((step, name), 0) + n

    def note_cpu(self, step: int, cpu_percent: float) -> None:
        if cpu_percent > self.cpu_max.get(step, -1.0):
            self.cpu_max[step] = cpu_percent

    def note_stall(self, step: int, stall_ms: float, requests: int) -> None:
        """``requests`` of ``step`` were in flight during a generator stall of ``stall_ms`` (0: the stall grew)."""
        longest, stalled = self.stalls.get(step, (0.0, 0))
        self.stalls[step] = (max(longest, stall_ms), stalled + requests)

    def empty(self) -> bool:
        return not (self.entries or self.warmup or self.counters or self.cpu_max or self.stalls)

    def drain(self, encoded: bool = True) -> dict[str, Any]:
        """Everything recorded since the last drain, msgpack-safe; the recorder starts afresh. ``encoded=False``
        hands the histograms over as they are, for a merge in this same process (a local run folds its own drain in
        every second: encoding and decoding ~190 KB of counts there was most of that second's work)."""
        batch = {
            "entries": [
                [
                    step,
                    rtype,
                    name,
                    s.settle().encode().decode("ascii") if encoded else s.settle(),
                    s.requests,
                    s.failures,
                    s.total_ms,
                    s.max_ms,
                    s.none_times,
                    s.unfinished,
                ]
                for (step, rtype, name), s in self.entries.items()
            ],
            "warmup": [[step, n] for step, n in self.warmup.items()],
            "counters": [[step, name, n] for (step, name), n in self.counters.items()],
            "cpu": [[step, value] for step, value in self.cpu_max.items()],
            "stalls": [[step, longest, stalled] for step, (longest, stalled) in self.stalls.items()],
        }
        self._reset()
        return batch


class StepMerge:
    """The master's merge of every process's batches, by step index."""

    def __init__(self) -> None:
        self.entries: dict[tuple[int, str, str], NameStats] = {}
        self.warmup: dict[int, int] = {}
        self.counters: dict[tuple[int, str], int] = {}
        self.cpu_max: dict[int, float] = {}
        self.stall_ms: dict[int, float] = {}
        self.stalled: dict[int, int] = {}
        self.sources: dict[int, set[str]] = {}

    def add_batch(self, source: str, batch: dict[str, Any]) -> NameStats:
        """Merge one drained batch; returns its requests over all names (for the timeline)."""
        combined = NameStats()
        for step, rtype, name, encoded, requests, failures, total_ms, max_ms, none_times, *rest in batch.get(
            "entries", []
        ):
            unfinished = int(rest[0]) if rest else 0  # a batch from a worker without the field: none
            histogram = encoded if isinstance(encoded, HdrHistogram) else acyclic(HdrHistogram.decode(encoded))
            incoming = NameStats(histogram, requests, failures, total_ms, max_ms, none_times, unfinished)
            key = (int(step), str(rtype), str(name))
            if key not in self.entries:
                self.entries[key] = NameStats()
            self.entries[key].add(incoming)
            combined.add(incoming)
            self.sources.setdefault(int(step), set()).add(source)
        for step, n in batch.get("warmup", []):
            self.warmup[int(step)] = self.warmup.get(int(step), 0) + int(n)
        for step, name, n in batch.get("counters", []):
            counter_key = (int(step), str(name))
            self.counters[counter_key] = self.counters.get(counter_key, 0) + int(n)
        for step, value in batch.get("cpu", []):
            self.cpu_max[int(step)] = max(self.cpu_max.get(int(step), 0.0), float(value))
        for step, longest, stalled in batch.get("stalls", []):
            self.stall_ms[int(step)] = max(self.stall_ms.get(int(step), 0.0), float(longest))
            self.stalled[int(step)] = self.stalled.get(int(step), 0) + int(stalled)
        return combined

    def steps(self) -> list[int]:
        seen = {k[0] for k in self.entries} | set(self.warmup) | {k[0] for k in self.counters} | set(self.cpu_max)
        return sorted(seen | set(self.stall_ms))

    def names(self, step: int) -> list[tuple[str, str]]:
        return sorted((rtype, name) for (s, rtype, name) in self.entries if s == step)

    def aggregated(self, step: int) -> NameStats:
        """The step's operations summed: every request type and name except the ride-along ones."""
        total = NameStats()
        for (s, rtype, name), stats in self.entries.items():
            if s == step and (rtype, name) not in RIDE_ALONG:
                total.add(stats)
        return total

    def operation_types(self, step: int) -> set[str]:
        """The request types of a step's operations (ride-along types left out)."""
        return {rtype for (s, rtype, name) in self.entries if s == step and (rtype, name) not in RIDE_ALONG}

    def select(self, step: int | None, request_type: str | None, name: str | None) -> NameStats:
        """Stats over the matching entries: ``None`` matches any step, type or name."""
        total = NameStats()
        for (s, rtype, nm), stats in self.entries.items():
            if step is not None and s != step:
                continue
            if request_type is not None and rtype != request_type:
                continue
            if name is not None and nm != name:
                continue
            total.add(stats)
        return total

    def counter(self, step: int | None, name: str) -> int:
        return sum(n for (s, nm), n in self.counters.items() if nm == name and (step is None or s == step))

    def workers(self, step: int) -> int:
        return len(self.sources.get(step, set()))
