"""The driver's requests in flight: answers handed over from the hub, first outcome wins, deadlines kept."""

from __future__ import annotations

import sys

import gevent
import pytest

from swarmgauge.quic.errors import ConnectionLost, RequestTimeout
from swarmgauge.quic.streams import InFlight


def answer_from_hub(in_flight: InFlight) -> None:
    """What the driver's service pass does last, run where it runs: in the hub."""
    gevent.get_hub().loop.run_callback(in_flight.deliver)


def test_an_answer_recorded_in_the_hub_reaches_the_waiting_greenlet():
    in_flight = InFlight(gevent.get_hub())
    pending = in_flight.open(0, deadline=100.0, timeout=10.0)
    waiter = gevent.spawn(in_flight.wait, pending)
    gevent.sleep(0)
    in_flight.finish(pending, b"answer")
    answer_from_hub(in_flight)
    assert waiter.get(timeout=5) == b"answer"


def test_an_error_is_raised_in_the_waiting_greenlet_and_the_first_outcome_wins():
    in_flight = InFlight(gevent.get_hub())
    pending = in_flight.open(4, deadline=100.0, timeout=10.0)
    waiter = gevent.spawn(in_flight.wait, pending)
    gevent.sleep(0)
    in_flight.finish(pending, RequestTimeout("late"))
    in_flight.finish(pending, b"too late to count")
    answer_from_hub(in_flight)
    with pytest.raises(RequestTimeout, match="late"):
        waiter.get(timeout=5)


def test_an_outcome_recorded_before_the_wait_is_returned_at_once():
    in_flight = InFlight(gevent.get_hub())
    pending = in_flight.open(0, deadline=100.0, timeout=10.0)
    in_flight.finish(pending, b"early")
    assert in_flight.wait(pending) == b"early"


def test_the_next_deadline_is_the_earliest_unanswered_one():
    in_flight = InFlight(gevent.get_hub())
    first = in_flight.open(0, deadline=5.0, timeout=5.0)
    in_flight.open(4, deadline=3.0, timeout=3.0)
    in_flight.open(8, deadline=9.0, timeout=9.0)
    assert in_flight.next_deadline == 3.0
    in_flight.forget(4)
    assert in_flight.next_deadline == 5.0
    in_flight.finish(first, b"done")
    assert in_flight.next_deadline == 9.0
    assert [sid for sid, _ in in_flight.overdue(10.0)] == [8]
    assert in_flight.overdue(8.0) == []
    in_flight.forget(0)
    in_flight.forget(8)
    assert in_flight.next_deadline is None and len(in_flight) == 0


def test_failing_all_gives_each_stream_its_own_error_of_the_same_class():
    in_flight = InFlight(gevent.get_hub())
    streams = [in_flight.open(sid, deadline=100.0, timeout=10.0) for sid in (0, 4)]
    in_flight.fail_all(ConnectionLost("gone"))
    outcomes = [pending.outcome for pending in streams]
    assert all(isinstance(outcome, ConnectionLost) and str(outcome) == "gone" for outcome in outcomes)
    assert outcomes[0] is not outcomes[1]
    assert in_flight.next_deadline is None


def test_one_stream_keeps_its_deadline_until_answered_then_none():
    in_flight = InFlight(gevent.get_hub())
    only = in_flight.open(0, deadline=7.0, timeout=7.0)
    assert in_flight.next_deadline == 7.0
    in_flight.finish(only, b"done")
    assert in_flight.next_deadline is None
    in_flight.forget(0)
    assert in_flight.next_deadline is None


def test_a_table_whose_last_stream_is_forgotten_keeps_no_slots_while_idle():
    """A pooled connection idles between requests: its emptied table is as small as a new one (an emptied dict keeps
    its slot array), and the next stream opens in it as before."""
    in_flight = InFlight(gevent.get_hub())
    for stream_id in (0, 4):
        in_flight.open(stream_id, deadline=100.0, timeout=10.0)
    in_flight.forget(0)
    assert list(in_flight.streams) == [4]
    in_flight.forget(4)
    assert len(in_flight) == 0 and sys.getsizeof(in_flight.streams) == sys.getsizeof({})
    in_flight.open(8, deadline=100.0, timeout=10.0)
    assert list(in_flight.streams) == [8] and in_flight.next_deadline == 100.0
