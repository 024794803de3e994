"""Token buckets with time passed in: the rate limit's and the backend capacity's waiting rules."""

from __future__ import annotations

import pytest

from swarmgauge.targets.mark.pacing import PerClientLimiter, TokenBucket

pytestmark = pytest.mark.integration  # starts servers, processes or locust runs


def test_burst_then_waits_at_the_rate():
    bucket = TokenBucket(rate=10, burst=2)
    assert [bucket.reserve(0.0, 1.0) for _ in range(2)] == [0.0, 0.0]
    assert bucket.reserve(0.0, 1.0) == pytest.approx(0.1)
    assert bucket.reserve(0.0, 1.0) == pytest.approx(0.2)


def test_a_wait_beyond_the_bound_takes_nothing():
    bucket = TokenBucket(rate=1, burst=1)
    assert bucket.reserve(0.0, 0.0) == 0.0
    assert bucket.reserve(0.0, 0.5) is None
    assert bucket.reserve(0.0, 0.5) is None
    assert bucket.reserve(1.0, 0.0) == 0.0


def test_refills_up_to_burst_only():
    bucket = TokenBucket(rate=100, burst=3)
    for _ in range(3):
        bucket.reserve(0.0, 0.0)
    assert [bucket.reserve(60.0, 0.0) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.reserve(60.0, 0.0) is None


def test_each_client_has_its_own_bucket():
    limiter = PerClientLimiter(rate=1, burst=1)
    assert limiter.reserve("127.0.0.1", 0.0, 0.0) == 0.0
    assert limiter.reserve("127.0.0.1", 0.0, 0.0) is None
    assert limiter.reserve("127.0.0.2", 0.0, 0.0) == 0.0


def test_idle_clients_are_forgotten_when_full():
    limiter = PerClientLimiter(rate=1, burst=1, forget_after=10, max_clients=2)
    limiter.reserve("a", 0.0, 0.0)
    limiter.reserve("b", 0.0, 0.0)
    limiter.reserve("c", 100.0, 0.0)
    assert set(limiter._buckets) == {"c"}


@pytest.mark.parametrize("rate, burst", [(0, 1), (-1, 1), (1, 0)])
def test_rejects_nonsense(rate, burst):
    with pytest.raises(ValueError):
        TokenBucket(rate, burst)
