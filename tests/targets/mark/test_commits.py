"""Write commits paced as bucketstore paces them: a spaced write pays only its cost, back-to-back writes wait for
the interval, and writers racing for a slot (unlike writers served in order) lose some to the request deadline."""

from __future__ import annotations

import asyncio
import random
import time

import pytest

from swarmgauge.targets.mark.backend import BackendKnobs, BackendTimeout, SimulatedBackend
from swarmgauge.targets.mark.commits import CommitPacer, CommitTimeout


class FakeClock:
    """Time that moves only when the code under test sleeps (one writer at a time)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_a_write_spaced_past_the_interval_waits_only_for_its_own_cost():
    clock = FakeClock()
    pacer = CommitPacer(1.5, 0.06, "fifo", clock=clock, rng=random.Random(1), sleep=clock.sleep)
    asyncio.run(pacer.commit(lambda: None, deadline=10.0))
    clock.now = 2.0
    clock.slept.clear()
    assert asyncio.run(pacer.commit(lambda: "applied", deadline=12.0)) == "applied"
    assert len(clock.slept) == 1 and clock.slept[0] == pytest.approx(0.06, rel=0.8)


@pytest.mark.parametrize("order", ["fifo", "random"])
def test_a_write_right_after_another_waits_for_the_interval(order):
    clock = FakeClock()
    pacer = CommitPacer(1.5, 0.0, order, clock=clock, rng=random.Random(1), sleep=clock.sleep)
    asyncio.run(pacer.commit(lambda: None, deadline=10.0))
    clock.now = 0.1
    asyncio.run(pacer.commit(lambda: None, deadline=10.1))
    assert clock.now == pytest.approx(1.5, abs=0.002)


@pytest.mark.parametrize("order", ["fifo", "random"])
def test_a_slot_past_the_deadline_is_a_timeout_at_the_deadline_and_nothing_is_applied(order):
    clock = FakeClock()
    pacer = CommitPacer(1.5, 0.0, order, clock=clock, rng=random.Random(1), sleep=clock.sleep)
    asyncio.run(pacer.commit(lambda: None, deadline=10.0))
    applied = []
    with pytest.raises(CommitTimeout):
        asyncio.run(pacer.commit(lambda: applied.append(1), deadline=1.0))
    assert applied == [] and clock.now == pytest.approx(1.0)


def test_the_backend_answers_a_commit_timeout_as_its_own_timeout():
    backend = SimulatedBackend(BackendKnobs(commit_interval=60.0))

    async def two_writes() -> None:
        await backend.commit(lambda: None, time.monotonic() + 5)
        await backend.commit(lambda: None, time.monotonic() + 0.01)

    with pytest.raises(BackendTimeout):
        asyncio.run(two_writes())


def _burst(order: str, writers: int = 4, writes: int = 20, interval: float = 0.02, timeout: float = 0.14) -> int:
    """Writers back to back, each write with a deadline ``timeout`` after it is sent; returns the writes lost."""
    pacer = CommitPacer(interval, 0.0, order, rng=random.Random(5))
    lost = 0

    async def writer() -> None:
        nonlocal lost
        loop = asyncio.get_running_loop()
        for _ in range(writes):
            try:
                await pacer.commit(lambda: None, loop.time() + timeout)
            except CommitTimeout:
                lost += 1

    async def main() -> None:
        await asyncio.gather(*(writer() for _ in range(writers)))

    asyncio.run(main())
    return lost


def test_four_writers_served_in_order_lose_nothing_but_racing_for_slots_loses_some():
    assert _burst("fifo") == 0
    assert _burst("random") > 0


def test_an_unknown_order_is_refused():
    with pytest.raises(ValueError):
        CommitPacer(1.0, 0.0, "lifo")
