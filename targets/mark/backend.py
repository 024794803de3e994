"""Simulated storage backend costs, so one machine can show the reference page's bottlenecks.

The kind benchmark's ceiling was its bucket (fake-gcs-server, ~160 req/s) and its reads cost a bucket round trip
or two; its writes were serialised and paced by ``bucketstore``'s commits. These knobs model exactly that and
nothing more: ``read_delay`` per backend round trip (doubled by ``stat_head``: stat the head object, then read),
``backend_rps`` as a shared capacity queue, and ``commit_interval`` as serialised, paced write commits.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from swarmgauge.targets.mark.pacing import TokenBucket


class BackendTimeout(Exception):
    """The simulated backend could not serve within the request deadline (the Go server answers server-error)."""


@dataclass(frozen=True)
class BackendKnobs:
    read_delay: float = 0.0
    stat_head: bool = False
    backend_rps: float = 0.0
    commit_interval: float = 0.0

    @property
    def active(self) -> bool:
        return bool(self.read_delay or self.backend_rps or self.commit_interval)


class SimulatedBackend:
    """Turns the knobs into waits; one per server, shared by every connection (as one bucket is)."""

    def __init__(self, knobs: BackendKnobs, clock=time.monotonic) -> None:
        self.knobs = knobs
        self._clock = clock
        self._capacity = TokenBucket(knobs.backend_rps, 1) if knobs.backend_rps > 0 else None
        self._commits = asyncio.Lock()

    async def read(self, deadline: float) -> None:
        """Wait for a backend slot, then for the read's round trips; :class:`BackendTimeout` past ``deadline``."""
        if self._capacity is not None:
            wait = self._capacity.reserve(self._clock(), max(0.0, deadline - self._clock()))
            if wait is None:
                raise BackendTimeout("backend capacity exhausted")
            if wait:
                await asyncio.sleep(wait)
        trips = 2 if self.knobs.stat_head else 1
        if self.knobs.read_delay:
            await asyncio.sleep(self.knobs.read_delay * trips)

    async def commit(self, apply, deadline: float):
        """Serialise writes; each commit takes ``commit_interval``. Returns what ``apply()`` returned."""
        remaining = deadline - self._clock()
        try:
            await asyncio.wait_for(self._commits.acquire(), timeout=max(0.0, remaining))
        except TimeoutError:
            raise BackendTimeout("write queue exceeded the request deadline") from None
        try:
            if self.knobs.commit_interval:
                if self._clock() + self.knobs.commit_interval > deadline:
                    raise BackendTimeout("commit would pass the request deadline")
                await asyncio.sleep(self.knobs.commit_interval)
            return apply()
        finally:
            self._commits.release()
