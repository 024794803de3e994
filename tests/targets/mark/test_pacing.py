"""Token buckets with time passed in: the rate limit's and the backend capacity's waiting rules."""

from __future__ import annotations

import pytest

from swarmgauge.targets.mark.pacing import PerClientLimiter, Slots, TokenBucket

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


def test_slots_take_work_at_once_until_all_are_busy_then_in_arrival_order():
    slots = Slots(3)
    # four reads of 20 ms arrive together: three start at once, the fourth waits for the first slot to free
    assert [slots.reserve(0.0, 0.02, 1.0) for _ in range(4)] == pytest.approx([0.02, 0.02, 0.02, 0.04])
    # the next two take the slots that free first (at 20 ms), the one after waits for the earliest again
    assert [slots.reserve(0.0, 0.02, 1.0) for _ in range(3)] == pytest.approx([0.04, 0.04, 0.06])


def test_slots_keep_their_capacity_when_the_caller_wakes_late():
    """A read booked at 20 ms frees its slot at 20 ms on the schedule, however late the caller comes back: four reads
    of 20 ms on three slots every 30 ms (below the 150 a second they hold) never pile up."""
    slots = Slots(3)
    for round_start in (0.0, 0.03, 0.06, 0.09, 0.12):
        waits = [slots.reserve(round_start, 0.02, 1.0) for _ in range(4)]
        assert max(waits) <= 0.04 + 1e-9


def test_slots_refuse_past_the_bound_and_book_nothing():
    slots = Slots(1)
    assert slots.reserve(0.0, 0.5, 1.0) == pytest.approx(0.5)
    assert slots.reserve(0.0, 0.5, 0.9) is None
    assert slots.reserve(0.0, 0.5, 1.0) == pytest.approx(1.0)  # the refused one took no time from it
    with pytest.raises(ValueError):
        Slots(0)
