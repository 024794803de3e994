"""The open-model hand-off: an intended start is read once, by the greenlet it was set in."""

from __future__ import annotations

import gevent

from swarmgauge.core.intended import set_intended_start, take_intended_start


def test_an_intended_start_is_taken_once():
    set_intended_start(12.5)
    assert take_intended_start() == 12.5
    assert take_intended_start() is None


def test_nothing_set_reads_as_none_every_time():
    assert take_intended_start() is None
    assert take_intended_start() is None


def test_each_greenlet_reads_only_its_own():
    set_intended_start(1.0)
    other = gevent.spawn(take_intended_start)
    assert other.get(timeout=5) is None
    assert take_intended_start() == 1.0


def test_starts_of_finished_greenlets_are_dropped_once_many_are_left():
    from swarmgauge.core import intended

    finished = [gevent.spawn(set_intended_start, 1.0) for _ in range(intended._PRUNE_AT)]
    gevent.joinall(finished, timeout=10)
    set_intended_start(2.0)
    assert len(intended._starts) == 1
    assert take_intended_start() == 2.0
