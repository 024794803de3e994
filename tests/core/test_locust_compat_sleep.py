"""``core/locust_compat.sleep_on_timer``: a user's wait between tasks, as gevent.sleep with less kept (patch
``locust-wait-on-timer``)."""

from __future__ import annotations

import gevent
from gevent.exceptions import InvalidSwitchError

from swarmgauge.core import locust_compat
from swarmgauge.core.locust_compat import sleep_on_timer
from swarmgauge.core.sleep_wheel import wheel


def test_sleepers_wake_in_the_order_of_their_timers_and_return_nothing():
    woke: list[str] = []

    def sleeper(name: str, seconds: float) -> None:
        assert sleep_on_timer(seconds) is None
        woke.append(name)

    gevent.joinall([gevent.spawn(sleeper, "late", 0.06), gevent.spawn(sleeper, "early", 0.01)], timeout=5)
    assert woke == ["early", "late"]


def test_no_wait_yields_as_gevent_sleep_zero():
    woke: list[str] = []
    first = gevent.spawn(lambda: (sleep_on_timer(0), woke.append("yielded")))
    second = gevent.spawn(woke.append, "other")
    gevent.joinall([first, second], timeout=5)
    assert woke == ["other", "yielded"]


def test_a_kill_lands_in_the_sleeping_greenlet_and_it_leaves_the_wheel():
    sleeper = gevent.spawn(sleep_on_timer, 30)
    gevent.sleep(0.01)
    asleep_before = len(wheel())
    sleeper.kill(timeout=5)
    assert sleeper.dead and isinstance(sleeper.value, gevent.GreenletExit)
    assert len(wheel()) == asleep_before - 1  # the 30 s wait left with the kill


def test_a_switch_into_a_sleeper_that_is_not_its_timer_is_refused():
    sleeper = gevent.spawn(sleep_on_timer, 30)
    gevent.sleep(0.01)
    gevent.get_hub().loop.run_callback(sleeper.switch, "stray")
    sleeper.join(timeout=5)
    assert isinstance(sleeper.exception, InvalidSwitchError)


def test_a_locust_users_wait_sleeps_on_the_timer(monkeypatch):
    from locust import User, constant, task
    from locust.env import Environment
    from locust.exception import StopUser

    from tests.core.test_locust_compat import _unrouted

    _unrouted(monkeypatch)
    slept: list[float] = []
    monkeypatch.setattr(locust_compat, "sleep_on_timer", lambda seconds: (slept.append(seconds), gevent.sleep(0)))
    ran: list[str] = []

    def run_task(taskset, execute, chosen) -> None:
        if len(ran) == 2:
            raise StopUser()
        ran.append(chosen.__name__)
        execute(taskset, chosen)

    locust_compat.route_task_iterations(run_task, lambda _taskset, seconds: seconds / 10).engage()

    class Paced(User):
        wait_time = constant(0.5)

        @task
        def one(self) -> None:
            pass

    Paced(Environment(user_classes=[Paced])).run()
    assert ran == ["one", "one"] and slept == [0.05, 0.05]
