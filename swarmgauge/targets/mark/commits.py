"""Write commits as ``bucketstore`` paces them: one head-object commit start per interval, each taking its cost.

The kind page's writes: one writer back to back takes 1.51 s a publish (the 1.5 s ``defaultCommitInterval``), a
write spaced below the pacing about 60 ms (the commit's own bucket writes), 4 concurrent writers wait about 6 s,
and a 4-writer burst of 200 loses 49 to the 10 s request timeout. Served in arrival order, 4 writers would wait
exactly 4 intervals and never reach 10 s; the losses say the next slot goes to whichever waiting writer gets there
first, not to the one that waited longest. ``order="random"`` models that race (each waiter wakes at the slot plus a
random fraction of a millisecond and the first awake takes it); ``order="fifo"`` reserves slots in arrival order.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any

ORDERS = ("random", "fifo")
#: the waiters' race for a freed slot: each wakes up to this long after it (so the winner is random)
RACE_WINDOW = 0.001
#: lognormal sigma of a commit's cost: the page's soak had p99 / p50 = 86 / 58 ms = exp(2.33 * 0.17)
COST_SIGMA = 0.17


class CommitTimeout(Exception):
    """No commit slot (and its cost) fits before the request deadline."""


class CommitPacer:
    """Serialised, paced commits shared by every connection of one server (as one world's head object is)."""

    def __init__(
        self,
        interval: float,
        cost: float = 0.0,
        order: str = "random",
        *,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        if order not in ORDERS:
            raise ValueError(f"commit order must be one of {ORDERS}, not {order!r}")
        self.interval = interval
        self.cost = cost
        self.order = order
        self._clock = clock
        self._random = rng or random.Random()
        self._sleep = sleep
        self._next_start = -math.inf
        self.commits = 0

    def commit_cost(self) -> float:
        return self.cost * self._random.lognormvariate(0.0, COST_SIGMA) if self.cost > 0 else 0.0

    async def _take_slot_in_order(self, deadline: float, cost: float) -> None:
        now = self._clock()
        start = max(now, self._next_start)
        if start + cost > deadline:
            await self._sleep(max(0.0, deadline - now))
            raise CommitTimeout("no commit slot before the request deadline")
        self._next_start = start + self.interval
        if start > now:
            await self._sleep(start - now)

    async def _race_for_slot(self, deadline: float, cost: float) -> None:
        while True:
            now = self._clock()
            if now >= self._next_start:
                self._next_start = now + self.interval
                return
            wake = self._next_start + self._random.uniform(0.0, RACE_WINDOW)
            if wake + cost > deadline:
                await self._sleep(max(0.0, deadline - now))
                raise CommitTimeout("no commit slot before the request deadline")
            await self._sleep(wake - now)

    async def commit(self, apply: Callable[[], Any], deadline: float) -> Any:
        """Wait for a commit slot, spend the commit's cost, then ``apply()``; :class:`CommitTimeout` past the deadline."""
        cost = self.commit_cost()
        if self.order == "fifo":
            await self._take_slot_in_order(deadline, cost)
        else:
            await self._race_for_slot(deadline, cost)
        if cost:
            await self._sleep(cost)
        self.commits += 1
        return apply()
