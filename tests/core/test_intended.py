"""Open-model timing: a ticket is held by the greenlet it was given to, its iteration's lag goes to every request of
that iteration (swarmgauge's ``measure()`` and Locust's own HTTP clients alike), and nothing else is touched."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import gevent
import pytest
from gevent.pywsgi import WSGIServer
from locust import FastHttpUser, HttpUser
from locust.env import Environment
from locust.event import Events

from swarmgauge.core import hooks, intended
from swarmgauge.core.hooks import StepInfo
from swarmgauge.core.intended import (
    adjust_request,
    begin_iteration,
    current_lag,
    end_iteration,
    holds_ticket,
    note_step,
    run_task,
    set_intended_start,
    sleep_for,
)
from swarmgauge.users.recording import measure

LAG = 0.5


@pytest.fixture(autouse=True)
def _no_ticket_left_behind() -> Iterator[None]:
    yield
    set_intended_start(None)
    end_iteration()


def _event(response_time: float | None = 10.0, start_time: float = 1000.0) -> dict[str, Any]:
    return {"request_type": "GET", "name": "/", "response_time": response_time, "start_time": start_time}


def test_a_ticket_is_held_until_its_iteration_begins_and_the_lag_lasts_the_iteration():
    set_intended_start(time.perf_counter() - LAG)
    assert holds_ticket() and current_lag() == 0.0
    begin_iteration()
    assert not holds_ticket() and current_lag() >= LAG
    end_iteration()
    assert current_lag() == 0.0


def test_every_request_of_the_iteration_carries_the_lag_and_none_outside_it():
    set_intended_start(time.perf_counter() - LAG)
    before = _event()
    adjust_request(before)
    assert before == _event()
    begin_iteration()
    first, second = _event(), _event(response_time=30.0)
    adjust_request(first)
    adjust_request(second)
    assert first["response_time"] >= 10.0 + 1000 * LAG and first["start_time"] <= 1000.0 - LAG
    assert second["response_time"] - 30.0 == pytest.approx(first["response_time"] - 10.0)
    end_iteration()
    after = _event()
    adjust_request(after)
    assert after == _event()


def test_a_ticket_on_time_or_early_adds_nothing_and_a_none_response_time_stays_none():
    set_intended_start(time.perf_counter() + 60.0)
    begin_iteration()
    on_time = _event()
    adjust_request(on_time)
    assert on_time == _event()
    end_iteration()
    set_intended_start(time.perf_counter() - LAG)
    begin_iteration()
    unmeasured = _event(response_time=None)
    adjust_request(unmeasured)
    assert unmeasured == _event(response_time=None)


def test_each_greenlet_has_only_its_own_ticket_and_lag():
    set_intended_start(time.perf_counter() - LAG)
    begin_iteration()
    other = gevent.spawn(lambda: (holds_ticket(), current_lag()))
    assert other.get(timeout=5) == (False, 0.0)
    assert current_lag() >= LAG


def test_tickets_of_finished_greenlets_are_dropped_once_many_are_left():
    intended._tickets.clear()  # tickets other tests in this process left behind would move the pruning point
    finished = [gevent.spawn(set_intended_start, 1.0) for _ in range(intended._PRUNE_AT)]
    gevent.joinall(finished, timeout=10)
    set_intended_start(2.0)
    assert len(intended._tickets) == 1 and holds_ticket()


def test_measure_reports_what_it_measured_and_the_event_counts_the_lag_once():
    events = Events()
    seen: list[dict[str, Any]] = []
    events.request.add_listener(lambda **kwargs: seen.append(kwargs))
    intended.install(Environment(events=events))
    set_intended_start(time.perf_counter() - LAG)
    begin_iteration()
    with measure(events, "GET", "/a") as outcome:
        gevent.sleep(0.01)
    end_iteration()
    assert len(seen) == 1
    assert 1000 * LAG + 10 <= seen[0]["response_time"] < 1000 * LAG + 1000  # counted once, not twice
    assert outcome.response_time == pytest.approx(seen[0]["response_time"])
    assert outcome.start_time == pytest.approx(seen[0]["start_time"])


def test_measure_since_times_from_an_earlier_moment_of_the_same_operation():
    seen: list[float] = []
    events = Events()
    events.request.add_listener(lambda response_time, **_: seen.append(response_time))
    with measure(events, "run queued", "/r", since=time.perf_counter() - LAG):
        pass
    assert seen[0] >= 1000 * LAG


def _hello(_environ: dict[str, Any], start_response: Any) -> list[bytes]:
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
    return [b"ok"]


@contextmanager
def _local_http() -> Iterator[str]:
    server = WSGIServer(("127.0.0.1", 0), _hello, log=None, error_log=None)
    server.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.stop(timeout=1)


@pytest.mark.parametrize("user_class", [FastHttpUser, HttpUser])
def test_locusts_own_http_clients_carry_the_lag_into_locusts_stats_and_every_listener(user_class):
    events = Events()
    seen: list[dict[str, Any]] = []
    events.request.add_listener(lambda **kwargs: seen.append(kwargs))
    environment = Environment(events=events)
    environment.create_local_runner()  # Locust's own statistics listen from here on
    intended.install(environment)
    with _local_http() as url:
        client = type("Client", (user_class,), {"host": url})(environment).client
        client.get("/before")
        due_wall = time.time() - LAG
        set_intended_start(time.perf_counter() - LAG)
        begin_iteration()
        client.get("/during")
        end_iteration()
    before, during = seen
    assert before["response_time"] < 1000 * LAG
    assert during["response_time"] >= 1000 * LAG
    assert due_wall - 0.05 < during["start_time"] < due_wall + LAG  # counted from when its ticket was due
    assert environment.stats.get("/during", "GET").max_response_time >= 1000 * LAG
    assert environment.stats.get("/before", "GET").max_response_time < 1000 * LAG


def test_the_request_hook_is_locusts_own_outside_a_lagging_iteration():
    """A run with no lag pays nothing per request for the adjustment: it is in front of the hook only while some
    iteration carries a lag, every request of which it adjusts."""
    events = Events()
    seen: list[float] = []
    events.request.add_listener(lambda response_time, **_: seen.append(response_time))
    environment = Environment(events=events)
    intended.install(environment)
    assert "fire" not in vars(events.request)
    set_intended_start(time.perf_counter() - LAG)
    begin_iteration()
    assert "fire" in vars(events.request)
    events.request.fire(request_type="GET", name="/", response_time=1.0, response_length=0)
    end_iteration()
    assert "fire" not in vars(events.request)
    events.request.fire(request_type="GET", name="/", response_time=1.0, response_length=0)
    assert seen[0] >= 1000 * LAG and seen[1] == 1.0


ENVIRONMENT = object()  # the Environment of the stand-in users below


class _Steps:
    """Stands in for the step listener and the ticket scheduler: an open or closed step, tickets due ``LAG`` ago."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, rate: float | None) -> None:
        self.rate = rate
        self.taken = 0
        monkeypatch.setattr(hooks.current_step, "implementation", self.current_step)
        monkeypatch.setattr(hooks.take_ticket, "implementation", self.take_ticket)
        note_step(ENVIRONMENT, self.current_step(ENVIRONMENT))  # as the step listener's announcement does

    def current_step(self, _environment: Any) -> StepInfo:
        return StepInfo(0, "step", 4, self.rate, time.time())

    def take_ticket(self, _user: Any) -> bool:
        if self.rate is None:
            return False
        self.taken += 1
        set_intended_start(time.perf_counter() - LAG)
        return True


class _TaskSet:
    """What run_task and sleep_for read of a Locust TaskSet: its user's environment, and its wait."""

    def __init__(self, wait_time: float = 2.0) -> None:
        self.user = type("U", (), {"environment": ENVIRONMENT})()
        self.wait_time = wait_time
        self.slept: list[float | None] = []

    def wait(self) -> None:
        self.slept.append(sleep_for(self, self.wait_time))


def test_between_iterations_of_an_open_step_the_ticket_is_the_wait(monkeypatch):
    steps = _Steps(monkeypatch, rate=5.0)
    assert sleep_for(_TaskSet(), 2.0) is None and steps.taken == 1 and holds_ticket()
    assert sleep_for(_TaskSet(), 0.0) is None and steps.taken == 1  # a ticket held: start at once, take no other


def test_a_wait_inside_a_ticketed_iteration_is_the_tasks_own(monkeypatch):
    steps = _Steps(monkeypatch, rate=5.0)
    set_intended_start(time.perf_counter())
    begin_iteration()
    assert sleep_for(_TaskSet(), 2.0) == 2.0 and steps.taken == 0


def test_a_closed_step_sleeps_the_users_wait_time_and_takes_no_ticket(monkeypatch):
    steps = _Steps(monkeypatch, rate=None)
    taskset = _TaskSet()
    ran: list[float] = []
    run_task(taskset, lambda _taskset, _task: ran.append(current_lag()), "task")
    assert sleep_for(taskset, 2.0) == 2.0 and steps.taken == 0 and taskset.slept == [] and ran == [0.0]


def test_an_iteration_of_an_open_step_waits_for_a_ticket_first_and_runs_with_its_lag(monkeypatch):
    steps = _Steps(monkeypatch, rate=5.0)
    taskset = _TaskSet()
    ran: list[float] = []
    run_task(taskset, lambda _taskset, _task: ran.append(current_lag()), "task")
    assert taskset.slept == [None] and steps.taken == 1  # through the taskset's own wait, not its 2 s
    assert ran[0] >= LAG and not holds_ticket() and current_lag() == 0.0
    run_task(taskset, lambda _taskset, _task: ran.append(current_lag()), "task")
    assert steps.taken == 2 and len(ran) == 2  # each iteration its own ticket


def _routed() -> bool:
    """Whether Locust's task loop goes through ``run_task`` now (its own ``execute_task`` wraps nothing)."""
    from locust.user.task import DefaultTaskSet, TaskSet

    return all(hasattr(owner.__dict__["execute_task"], "__wrapped__") for owner in (TaskSet, DefaultTaskSet))


@pytest.fixture
def _fresh_tables(monkeypatch: pytest.MonkeyPatch) -> Iterator[Environment]:
    """Open-step, ticket and lag tables of this test only (others in this process leave ids and tickets behind),
    and an installed Environment; the routing is released again afterwards."""
    monkeypatch.setattr(intended, "_open_step_environments", set())
    monkeypatch.setattr(intended, "_tickets", {})
    monkeypatch.setattr(intended, "_lags", {})
    environment = Environment(events=Events())
    intended.install(environment)
    yield environment
    intended._open_step_environments.clear()
    intended._tickets.clear()
    intended._lags.clear()
    intended.end_iteration()  # decides again on empty tables: released


def _announce(environment: Any, rate: float | None) -> None:
    note_step(environment, StepInfo(0, "step", 4, rate, time.time()))


def test_a_closed_run_runs_locusts_own_task_loop_and_a_rated_step_routes_it_until_it_closes(_fresh_tables):
    environment = _fresh_tables
    assert not _routed()
    _announce(environment, 5.0)
    assert _routed()
    _announce(environment, None)
    assert not _routed()


def test_a_ticket_or_a_lag_keeps_iterations_routed_until_neither_is_left(_fresh_tables):
    environment = _fresh_tables
    set_intended_start(time.perf_counter() - LAG)  # a User's own pacer, in a closed step
    assert _routed()
    begin_iteration()
    _announce(environment, 5.0)
    _announce(environment, None)  # the step closes while the iteration runs on its ticket: it keeps its lag
    assert _routed() and current_lag() >= LAG
    end_iteration()
    assert not _routed()
    set_intended_start(time.perf_counter())
    set_intended_start(None)
    assert not _routed()


def test_a_ticket_no_iteration_will_take_keeps_nothing_routed_once_the_step_closes(_fresh_tables):
    environment = _fresh_tables
    _announce(environment, 5.0)
    stopped = gevent.spawn(set_intended_start, time.perf_counter())  # a user stopped between its ticket and its task
    stopped.join(timeout=5)
    _announce(environment, None)
    assert not _routed()


def test_a_locust_user_in_a_rated_step_runs_each_iteration_on_a_ticket_and_sleeps_no_wait_time(
    monkeypatch, _fresh_tables
):
    from locust import User, constant, task
    from locust.exception import StopUser

    steps = _Steps(monkeypatch, rate=5.0)
    lags: list[float] = []

    class Paced(User):
        wait_time = constant(30)

        @task
        def one(self) -> None:
            lags.append(current_lag())
            if len(lags) == 2:
                raise StopUser()

    assert _routed()
    user = gevent.spawn(Paced(Environment(user_classes=[Paced])).run)
    user.join(timeout=5)
    assert user.dead and steps.taken == 2 and len(lags) == 2 and min(lags) >= LAG  # no 30 s wait was slept
    _announce(ENVIRONMENT, None)
    assert not _routed() and current_lag() == 0.0
