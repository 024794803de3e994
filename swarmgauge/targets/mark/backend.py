"""Simulated storage backend costs, so one machine can show the reference page's bottlenecks.

The kind benchmark's ceiling was its bucket (fake-gcs-server, ~160 req/s) and its reads cost a bucket round trip
or two; its writes were serialised and paced by ``bucketstore``'s commits. These knobs model exactly that and
nothing more: ``read_delay`` per backend round trip (doubled by ``stat_head``: stat the head object, then read),
``backend_concurrency`` as the reads the bucket serves at once (each holds its slot through its round trips, the
rest queue in arrival order), ``backend_rps`` as a shared capacity queue, and ``commit_interval`` / ``commit_cost`` /
``commit_order`` as serialised, paced write commits (``targets/mark/commits.py``).

The page reaches its ceiling at 4 users with p50 barely above 1 user's, and past it only queues. A concurrency
limit does that: 3 slots of about 19 ms are 160 reads/s, 4 users keep every slot busy, and the fourth read waits
only for the first slot to free. A rate bucket cannot: it idles while every user is in its round trips, so uneven
service costs it throughput at the knee (136-139 req/s at 4 users here against the page's 160).

A real bucket is not a metronome: the gaps between the reads it serves vary (``gap_shape``: each read costs a
gamma-distributed share of a second's capacity with mean ``1 / backend_rps``; shape 2 is a coefficient of variation
of 0.71, 0 is perfectly even) and so does each round trip (``delay_jitter``: the lognormal sigma of a round trip
around ``read_delay``). The defaults reproduce the kind page's latency shape, its p99 / p50 at 1, 4, 16, 64 and 256
users (1.30, 2.14, 1.66, 1.15, 1.01) within 15 %; with both at 0 every read takes exactly the same time. The gap shape spreads the rate bucket's costs only; with ``backend_concurrency`` the spread of the
round trips (``delay_jitter``) is all there is, with the stalls of the whole backend (``stall_length`` after about
every ``stall_reads`` reads, ``targets/mark/stalls.py``) that put the page's fixed 65 ms between p50 and p99 at 16
and 64 users.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass

from swarmgauge.targets.mark.commits import CommitPacer, CommitTimeout
from swarmgauge.targets.mark.pacing import Slots, TokenBucket
from swarmgauge.targets.mark.stalls import StallSchedule


class BackendTimeout(Exception):
    """The simulated backend could not serve within the request deadline (the Go server answers server-error)."""


@dataclass(frozen=True)
class BackendKnobs:
    read_delay: float = 0.0
    stat_head: bool = False
    backend_rps: float = 0.0
    commit_interval: float = 0.0
    commit_cost: float = 0.0
    commit_order: str = "random"
    gap_shape: float = 2.0
    delay_jitter: float = 0.12
    backend_concurrency: int = 0
    stall_length: float = 0.0
    stall_reads: int = 640

    @property
    def active(self) -> bool:
        return bool(
            self.read_delay or self.backend_rps or self.commit_interval or self.commit_cost or self.backend_concurrency
        )


class SimulatedBackend:
    """Turns the knobs into waits; one per server, shared by every connection (as one bucket is)."""

    def __init__(self, knobs: BackendKnobs, clock=time.monotonic, rng: random.Random | None = None) -> None:
        self.knobs = knobs
        self._clock = clock
        self._random = rng or random.Random()
        self._capacity = TokenBucket(knobs.backend_rps, 1) if knobs.backend_rps > 0 else None
        self.stalls = StallSchedule(knobs.stall_length, knobs.stall_reads) if knobs.stall_length > 0 else None
        self._slots: Slots | None = None
        if knobs.backend_concurrency > 0:
            self._slots = Slots(knobs.backend_concurrency)
            if self.stalls is not None:
                self._slots.finish = self.stalls.finish
        self.commits = CommitPacer(
            knobs.commit_interval, knobs.commit_cost, knobs.commit_order, clock=clock, rng=self._random
        )

    def read_cost(self) -> float:
        """Tokens one read takes from the capacity bucket: 1 on average, gamma-spread when ``gap_shape`` > 0."""
        shape = self.knobs.gap_shape
        return self._random.gammavariate(shape, 1.0 / shape) if shape > 0 else 1.0

    def round_trip(self) -> float:
        """Seconds of one backend round trip: ``read_delay``, lognormally spread when ``delay_jitter`` > 0."""
        jitter = self.knobs.delay_jitter
        return self.knobs.read_delay * (self._random.lognormvariate(0.0, jitter) if jitter > 0 else 1.0)

    async def read(self, deadline: float) -> None:
        """Wait for the capacity, then for a slot and the read's round trips in it; :class:`BackendTimeout` past
        ``deadline``."""
        if self._capacity is not None:
            wait = self._capacity.reserve(self._clock(), max(0.0, deadline - self._clock()), self.read_cost())
            if wait is None:
                raise BackendTimeout("backend capacity exhausted")
            if wait:
                await asyncio.sleep(wait)
        trips = 2 if self.knobs.stat_head else 1
        service = sum(self.round_trip() for _ in range(trips)) if self.knobs.read_delay else 0.0
        now = self._clock()
        if self.stalls is not None:
            self.stalls.read_booked(max(now, *self._slots.free_at) if self._slots is not None else now)
        if self._slots is not None:
            done = self._slots.reserve(now, service, max(0.0, deadline - now))
            if done is None:
                raise BackendTimeout("no backend slot free before the request deadline")
            service = done
        elif self.stalls is not None and service:
            service = self.stalls.finish(now, service) - now
        if service:
            await asyncio.sleep(service)

    async def commit(self, apply, deadline: float):
        """Wait for a paced commit slot and the commit's cost, then ``apply()``; :class:`BackendTimeout` past
        ``deadline`` (the Go server answers server-error when its request context ends first)."""
        try:
            return await self.commits.commit(apply, deadline)
        except CommitTimeout as exc:
            raise BackendTimeout(str(exc)) from None
