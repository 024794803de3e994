"""Token buckets and slots with the time passed in: the per-IP rate limit and the simulated backend's capacity.

Pure (no clock, no sleeping) so the waiting rules can be tested without waiting; the server turns a returned delay
into an ``asyncio.sleep``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class TokenBucket:
    """``rate`` tokens per second up to ``burst``; like Go's ``rate.Limiter`` reservations."""

    rate: float
    burst: float
    tokens: float = field(init=False)
    updated: float | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.rate <= 0 or self.burst < 1:
            raise ValueError("a token bucket needs rate > 0 and burst >= 1")
        self.tokens = self.burst

    def _refill(self, now: float) -> None:
        if self.updated is not None and now > self.updated:
            self.tokens = min(self.burst, self.tokens + (now - self.updated) * self.rate)
        if self.updated is None or now > self.updated:
            self.updated = now

    def reserve(self, now: float, max_wait: float, cost: float = 1.0) -> float | None:
        """Seconds to wait before the caller may go, or None (nothing taken) if that exceeds ``max_wait``.

        ``cost`` tokens are taken (1 by default; the simulated backend spreads it to model uneven service).
        """
        self._refill(now)
        wait = 0.0 if self.tokens >= 1 else (1 - self.tokens) / self.rate
        if wait > max_wait:
            return None
        self.tokens -= cost
        return wait


@dataclass
class Slots:
    """``count`` servers taking work in arrival order, with the time passed in: a bucket that serves at most
    ``count`` reads at once, each holding its slot for its own service time.

    A reservation books the slot that frees first, so the capacity is ``count`` over the mean hold however late the
    caller's sleeps wake (an event loop under load oversleeps; a slot held until the sleep returned would lose it).
    ``finish(start, hold)`` says when a hold begun at ``start`` ends (later than ``start + hold`` across a stall of
    the backend: ``targets/mark/stalls.py``).
    """

    count: int
    finish: Callable[[float, float], float] = lambda start, hold: start + hold
    free_at: list[float] = field(init=False)

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ValueError("slots need a count of at least 1")
        self.free_at = [float("-inf")] * self.count

    def reserve(self, now: float, hold: float, max_wait: float) -> float | None:
        """Seconds from ``now`` until this work is done (queueing plus ``hold``), or None (nothing booked) when
        that exceeds ``max_wait``."""
        slot = min(range(self.count), key=self.free_at.__getitem__)
        done = self.finish(max(now, self.free_at[slot]), hold)
        if done - now > max_wait:
            return None
        self.free_at[slot] = done
        return done - now


class PerClientLimiter:
    """One bucket per client IP, as demarkus keys its limiter; idle buckets are forgotten."""

    def __init__(self, rate: float, burst: float, *, forget_after: float = 300.0, max_clients: int = 100_000) -> None:
        self.rate = rate
        self.burst = burst
        self.forget_after = forget_after
        self.max_clients = max_clients
        self._buckets: dict[str, TokenBucket] = {}

    def reserve(self, client: str, now: float, max_wait: float) -> float | None:
        bucket = self._buckets.get(client)
        if bucket is None:
            if len(self._buckets) >= self.max_clients:
                self._forget_idle(now)
            bucket = self._buckets[client] = TokenBucket(self.rate, self.burst)
        return bucket.reserve(now, max_wait)

    def _forget_idle(self, now: float) -> None:
        for client, bucket in list(self._buckets.items()):
            if bucket.updated is not None and now - bucket.updated > self.forget_after:
                del self._buckets[client]
