"""One bounded backoff for every client and User after a transport fault (refused, reset, unreachable, timeout).

Without it a refused port is a hot loop: hundreds of failed attempts a second at full CPU, each one a failure row.
The wait doubles from ``first`` per fault in a row up to ``cap`` and drops to nothing on the next answer. A wait is a
gevent sleep, so the end of the run (Locust kills the user's greenlet) ends it too, and no single wait exceeds
``cap``: a restarted target is found again at most ``cap`` seconds after it is back.

Two ways to use it: ``gevent.sleep(backoff.failed())`` right after the fault, or ``failed()`` at the fault and
``wait()`` before the next attempt (so the failed request is recorded at once and only the next one is held back).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable

import gevent

from swarmgauge.errors import UsageError

FIRST = 0.05
CAP = 2.0
MAX_DOUBLINGS = 64  # 2**64 x any sane ``first`` is past any cap: keeps the power finite however long the outage
# One generator for every backoff: a ``random.Random`` holds 2.5 KiB of state, 4 % of a pooled Mark user's memory
_SHARED_RNG = random.Random()


class Backoff:
    """Doubling waits from ``first`` to ``cap`` seconds per transport fault in a row; ``succeeded()`` resets.

    ``jitter`` (0 to <1) shortens each wait by up to that fraction, at random, so many users that failed together
    do not all come back in the same instant.

    Slots: one per user of every kind, for the run (with a dictionary 156 bytes, with slots 104).
    """

    __slots__ = ("_clock", "_ready_at", "_rng", "cap", "delay", "faults", "first", "jitter")

    def __init__(
        self,
        first: float = FIRST,
        cap: float = CAP,
        *,
        jitter: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        if not (math.isfinite(first) and math.isfinite(cap) and 0 < first <= cap):
            raise UsageError(f"backoff needs finite 0 < first <= cap seconds, got first={first!r} cap={cap!r}")
        if not 0 <= jitter < 1:
            raise UsageError(f"backoff jitter must be in [0, 1), got {jitter!r}")
        self.first, self.cap, self.jitter = first, cap, jitter
        self._clock = clock
        self._rng = rng if rng is not None else _SHARED_RNG
        self.faults = 0  # transport faults in a row since the last answer
        self.delay = 0.0  # the wait the last fault asked for (0 after an answer)
        self._ready_at = 0.0

    def failed(self) -> float:
        """Count one more fault in a row; return the seconds to wait before the next attempt."""
        self.faults += 1
        base = min(self.cap, self.first * 2 ** min(self.faults - 1, MAX_DOUBLINGS))
        self.delay = base * (1.0 - self.jitter * self._rng.random()) if self.jitter else base
        self._ready_at = self._clock() + self.delay
        return self.delay

    def succeeded(self) -> None:
        """The target answered: the next fault starts again from ``first``."""
        self.faults = 0
        self.delay = 0.0
        self._ready_at = 0.0

    def remaining(self) -> float:
        """Seconds left of the current wait (0 after an answer, or once the wait is over)."""
        return max(0.0, min(self.delay, self._ready_at - self._clock()))

    def wait(self) -> float:
        """Sleep out what is left of the current wait; return the seconds slept (0 when none was due)."""
        left = self.remaining()
        if left > 0:
            gevent.sleep(left)
        return left


def max_attempts(seconds: float, first: float = FIRST, cap: float = CAP, jitter: float = 0.0) -> int:
    """The most attempts one client can make in ``seconds`` of faults in a row: one, then one after each wait.

    The waits are the schedule's, each shortened by ``jitter`` at most; the attempts themselves count as no time.
    """
    spent, attempts = 0.0, 1
    for doublings in range(100_000):
        spent += min(cap, first * 2 ** min(doublings, MAX_DOUBLINGS)) * (1.0 - jitter)
        if spent > seconds:
            break
        attempts += 1
    return attempts
