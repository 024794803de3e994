"""``core/sleep_wheel``: sleepers of one hub in one heap, woken by one timer armed for the earliest."""

from __future__ import annotations

import time

import gevent
import pytest
from gevent.exceptions import InvalidSwitchError

from swarmgauge.core.sleep_wheel import SleepWheel, wheel

_wheels: list[SleepWheel] = []


@pytest.fixture(autouse=True)
def own_wheel():
    """A wheel of the test's own: sleepers other tests left in the hub's do not count here."""
    _wheels.append(SleepWheel(gevent.get_hub()))
    yield _wheels[-1]
    _wheels.pop()


def own() -> SleepWheel:
    return _wheels[-1]


def _sleep_then_note(woke: list[str], name: str, seconds: float) -> None:
    own().sleep(seconds)
    woke.append(name)


def test_sleepers_wake_by_deadline_and_in_the_order_they_slept_at_one_deadline(monkeypatch):
    woke: list[str] = []
    now = time.monotonic()
    monkeypatch.setattr("swarmgauge.core.sleep_wheel.time.monotonic", lambda: now)  # one deadline for a, b and c
    sleepers = [gevent.spawn(_sleep_then_note, woke, name, 0.02) for name in ("c", "a", "b")[::-1]]
    gevent.sleep(0)  # each runs to its sleep with the clock held
    monkeypatch.undo()
    late = gevent.spawn(_sleep_then_note, woke, "late", 0.08)
    early = gevent.spawn(_sleep_then_note, woke, "early", 0.01)
    gevent.joinall([*sleepers, late, early], timeout=5)
    assert woke[-1] == "late" and [name for name in woke if name in "abc"] == ["b", "a", "c"]
    assert len(own()) == 0


def test_a_sleeper_wakes_no_sooner_than_its_seconds():
    started = gevent.get_hub().loop.now()
    sleeper = gevent.spawn(own().sleep, 0.05)
    sleeper.join(timeout=5)
    assert sleeper.successful() and gevent.get_hub().loop.now() - started >= 0.05 - 0.001


def test_killing_the_earliest_sleeper_leaves_the_others_on_time_and_the_last_kill_closes_the_timer():
    woke: list[str] = []
    first = gevent.spawn(_sleep_then_note, woke, "first", 30)
    second = gevent.spawn(_sleep_then_note, woke, "second", 0.05)
    third = gevent.spawn(_sleep_then_note, woke, "third", 60)
    gevent.sleep(0.01)
    second.kill(timeout=5)  # the one the timer stands for
    assert second.dead and isinstance(second.value, gevent.GreenletExit)
    gevent.sleep(0.1)
    assert woke == [] and len(own()) == 2 and own().armed
    first.kill(timeout=5)
    third.kill(timeout=5)
    assert len(own()) == 0 and not own().armed  # no timer left armed for a killed sleeper


def test_a_killed_sleeper_behind_the_earliest_is_skipped_when_its_deadline_comes():
    woke: list[str] = []
    soon = gevent.spawn(_sleep_then_note, woke, "soon", 0.02)
    later = gevent.spawn(_sleep_then_note, woke, "later", 0.04)
    last = gevent.spawn(_sleep_then_note, woke, "last", 0.06)
    gevent.sleep(0.005)
    later.kill(timeout=5)
    gevent.joinall([soon, last], timeout=5)
    assert woke == ["soon", "last"] and len(own()) == 0 and not own().armed


def test_a_switch_into_a_sleeper_that_is_not_its_wake_is_refused_and_wakes_no_one_later():
    sleeper = gevent.spawn(own().sleep, 0.05)
    gevent.sleep(0.01)
    gevent.get_hub().loop.run_callback(sleeper.switch, "stray")
    sleeper.join(timeout=5)
    assert isinstance(sleeper.exception, InvalidSwitchError)
    gevent.sleep(0.08)  # its deadline passes: nothing is switched into the dead greenlet
    assert len(own()) == 0 and not own().armed


def test_a_sleeper_woken_that_sleeps_again_is_woken_again():
    rounds: list[int] = []

    def paced() -> None:
        for round_ in range(5):
            own().sleep(0.005)
            rounds.append(round_)

    gevent.joinall([gevent.spawn(paced) for _ in range(3)], timeout=5)
    assert rounds == [r for r in range(5) for _ in range(3)]


def test_each_hub_has_its_own_wheel():
    found: list[SleepWheel] = []

    def in_a_thread() -> None:
        found.append(wheel())
        wheel().sleep(0.01)
        gevent.get_hub().destroy(destroy_loop=True)

    gevent.get_hub().threadpool.apply(in_a_thread)  # a real thread (threading is gevent's here): a hub of its own
    assert found and found[0] is not wheel()


@pytest.mark.parametrize("seconds", [0.001, 0.2])
def test_the_wheel_counts_who_is_asleep(seconds):
    sleepers = [gevent.spawn(own().sleep, seconds) for _ in range(4)]
    gevent.sleep(0)
    assert len(own()) == 4
    gevent.joinall(sleepers, timeout=5)
    assert len(own()) == 0 and not own().armed
