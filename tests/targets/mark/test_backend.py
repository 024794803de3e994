"""The simulated backend's uneven service: read costs spread around one token, round trips around the delay."""

from __future__ import annotations

import random
import statistics

import pytest

from swarmgauge.targets.mark.backend import BackendKnobs, SimulatedBackend
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
