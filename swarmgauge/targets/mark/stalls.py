"""Stalls of the simulated backend: every read in service or queued waits while the whole read path stands still.

The kind page's read tails add a fixed amount past the knee: p99 sits about 65 ms above p50 at 16 users (166 vs
100 ms) and at 64 (486 vs 423 ms), while 1 user's spreads 6 ms and 256 users' 20 ms on 1.77 s. Service that
varies per read cannot do that (a first-come queue of reads that spread 1.3x alone tightens as it grows); a pause
that every read in the system sits through at once can: a 100 ms read at 16 users either spans one or not, a
1.7 s read at 256 spans about one whatever it does. The page does not say what paused (a garbage-collection cycle of
fake-gcs-server, a pod throttled to the end of its CFS period at its 1-CPU limit would); its rows fit one stall of
about 60 ms every 4 s (between 2 and 6 s apart, as an allocation-paced collector's cycles are).

Pure (the time passed in) and seeded, so two runs at one setting stall at the same moments after start-up.
"""

from __future__ import annotations

import bisect
import random

SEED = 6309
#: the gaps between stalls spread evenly over this share either side of ``every``
GAP_SPREAD = 0.5


class StallSchedule:
    """Stalls of ``length`` seconds, about one per ``every`` seconds from the first time asked, drawn as needed."""

    def __init__(self, length: float, every: float, seed: int = SEED) -> None:
        if length <= 0 or every <= length:
            raise ValueError("a stall schedule needs a length above 0 and stalls further apart than they last")
        self.length = length
        self.every = every
        self._random = random.Random(seed)
        self._starts: list[float] = []

    def _draw_until(self, moment: float) -> None:
        if not self._starts:
            self._starts.append(moment + self._gap())
        while self._starts[-1] <= moment:
            self._starts.append(self._starts[-1] + self._gap())

    def _gap(self) -> float:
        return self.every * self._random.uniform(1.0 - GAP_SPREAD, 1.0 + GAP_SPREAD)

    def finish(self, start: float, work: float) -> float:
        """When ``work`` seconds of service begun at ``start`` are done, the stalls on the way sat out."""
        moment = start
        self._draw_until(moment)
        index = bisect.bisect_right(self._starts, moment) - 1
        if index >= 0 and moment < self._starts[index] + self.length:
            moment = self._starts[index] + self.length
        index += 1
        while True:
            self._draw_until(moment + work)
            stall = self._starts[index]
            if stall >= moment + work:
                return moment + work
            work -= stall - moment
            moment = stall + self.length
            index += 1

    def next_stall(self, moment: float) -> float:
        """When the first stall that begins after ``moment`` begins."""
        self._draw_until(moment)
        return self._starts[bisect.bisect_right(self._starts, moment)]
