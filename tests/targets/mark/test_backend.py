"""The simulated backend's uneven service: read costs spread around one token, round trips around the delay."""

from __future__ import annotations

import asyncio
import random
import statistics

import pytest

from swarmgauge.targets.mark.backend import BackendKnobs, BackendTimeout, SimulatedBackend
from swarmgauge.targets.mark.pacing import TokenBucket


def test_read_costs_average_one_token_with_the_gap_shapes_spread():
    backend = SimulatedBackend(BackendKnobs(backend_rps=160, gap_shape=2.0), rng=random.Random(7))
    costs = [backend.read_cost() for _ in range(20_000)]
    assert statistics.fmean(costs) == pytest.approx(1.0, rel=0.03)
    assert statistics.pstdev(costs) == pytest.approx(2**-0.5, rel=0.05)  # gamma shape 2: CV 1 / sqrt(2)


def test_round_trips_spread_around_the_delay_and_zero_knobs_are_exact():
    backend = SimulatedBackend(BackendKnobs(read_delay=0.01, delay_jitter=0.12), rng=random.Random(7))
    trips = sorted(backend.round_trip() for _ in range(20_000))
    assert trips[len(trips) // 2] == pytest.approx(0.01, rel=0.02)  # the median is the delay itself
    assert 1.25 < trips[int(len(trips) * 0.99)] / trips[len(trips) // 2] < 1.40  # exp(2.33 * 0.12) = 1.32
    even = SimulatedBackend(BackendKnobs(read_delay=0.01, backend_rps=160, gap_shape=0, delay_jitter=0))
    assert {even.read_cost() for _ in range(10)} == {1.0} and {even.round_trip() for _ in range(10)} == {0.01}


def test_a_costly_read_holds_the_next_one_back_longer():
    bucket = TokenBucket(rate=10, burst=1)
    assert bucket.reserve(0.0, 1.0, cost=2.5) == 0.0
    assert bucket.reserve(0.0, 1.0) == pytest.approx(0.25)  # 2.5 tokens at 10/s before it is back to one


class FakeClock:
    """A clock the test moves (a fake below the seam: the backend's waiting rules, not asyncio's timers)."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_concurrency_limited_backend_serves_three_reads_at_once_and_queues_the_fourth(monkeypatch):
    clock, slept = FakeClock(), []

    async def record_sleep(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr("swarmgauge.targets.mark.backend.asyncio.sleep", record_sleep)
    knobs = BackendKnobs(read_delay=0.01, stat_head=True, backend_concurrency=3, delay_jitter=0)
    backend = SimulatedBackend(knobs, clock=clock)
    assert knobs.active

    async def four_reads() -> None:
        for _ in range(4):
            await backend.read(clock.now + 10)

    asyncio.run(four_reads())
    assert slept == pytest.approx([0.02, 0.02, 0.02, 0.04])  # two 10 ms round trips each; the fourth waits one read


def test_a_read_that_cannot_get_a_slot_before_its_deadline_times_out(monkeypatch):
    clock = FakeClock()

    async def no_sleep(seconds: float) -> None:
        return None

    monkeypatch.setattr("swarmgauge.targets.mark.backend.asyncio.sleep", no_sleep)
    backend = SimulatedBackend(BackendKnobs(read_delay=1.0, backend_concurrency=1, delay_jitter=0), clock=clock)

    async def two_reads() -> None:
        await backend.read(clock.now + 1.5)
        await backend.read(clock.now + 1.5)  # the one slot is booked until 1.0 s, this read would end at 2.0 s

    with pytest.raises(BackendTimeout):
        asyncio.run(two_reads())
