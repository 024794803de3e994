"""Stalls of the simulated backend: every read in service or queued waits while the whole read path stands still.

The kind page's read tails add a fixed amount past the knee: p99 sits about 65 ms above p50 at 16 users (166 vs
100 ms) and at 64 (486 vs 423 ms), while 1 user's spreads 6 ms and 256 users' 20 ms on 1.77 s. Service that
varies per read cannot do that (a first-come queue of reads that spread 1.3x alone tightens as it grows); a pause
that every read in the system sits through at once can: a 100 ms read at 16 users spans one or not, a 1.7 s read
at 256 spans about one whatever it does. The page does not say what paused; a collection cycle of fake-gcs-server
would, and a collector's cycles are paced by what it allocates, so by the reads it serves: its rows fit one stall of
about 45 to 60 ms every 640 reads (between 576 and 704 apart, as a collector at a steady allocation rate runs nearly
periodically; about every 4 s at the 160 reads/s ceiling, every 14 s at one user's 47 a second, which keeps one
user's p99 clear of them). Nearly even gaps also give a measured window of a few seconds its share of stalls: with
gaps of 320 to 960 reads the 4 s mark_lookup_all step at 8 workers met none in one run (p99 0.62x).

A stall begins when the work already booked ends, so no booked read's answer moves and every later one waits it out.
Pure (the time passed in) and seeded, so two runs at one setting stall after the same reads.
"""

from __future__ import annotations

import bisect
import random

SEED = 6309
#: the reads between stalls spread evenly over this share either side of ``every_reads``
GAP_SPREAD = 0.1


class StallSchedule:
    """Stalls of ``length`` seconds, one after about every ``every_reads`` reads booked."""

    def __init__(self, length: float, every_reads: int, seed: int = SEED) -> None:
        if length <= 0 or every_reads < 2:
            raise ValueError("a stall schedule needs a length above 0 and at least 2 reads between stalls")
        self.length = length
        self.every_reads = every_reads
        self._random = random.Random(seed)
        self._starts: list[float] = []
        self.reads = 0
        self._next_at = self._gap()

    def _gap(self) -> int:
        spread = GAP_SPREAD * self.every_reads
        return max(1, round(self.every_reads + self._random.uniform(-spread, spread)))

    @property
    def stalls(self) -> int:
        return len(self._starts)

    def read_booked(self, booked_until: float) -> None:
        """Count one read; after every ``every_reads`` or so, stall from ``booked_until`` (when the work already
        booked ends: no booked answer moves)."""
        self.reads += 1
        if self.reads < self._next_at:
            return
        self._next_at = self.reads + self._gap()
        start = booked_until if not self._starts else max(booked_until, self._starts[-1] + self.length)
        self._starts.append(start)

    def finish(self, start: float, work: float) -> float:
        """When ``work`` seconds of service begun at ``start`` are done, the stalls on the way sat out."""
        moment = start
        index = bisect.bisect_right(self._starts, moment) - 1
        if index >= 0 and moment < self._starts[index] + self.length:
            moment = self._starts[index] + self.length
        for stall in self._starts[index + 1 :]:
            if stall >= moment + work:
                break
            work -= stall - moment
            moment = stall + self.length
        return moment + work
