"""The one bounded backoff (``users/backoff.py``), and MDK, kneo and brain users held back by it on a refused port.

The refused-port tests give one user a couple of seconds against a closed loopback port (bound, never listening, so
every connect is refused at once) and bound its attempts by the backoff's schedule over the time it really ran: a
count, never a duration.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator

import pytest
from locust.env import Environment

from swarmgauge.errors import UsageError
from swarmgauge.users import backoff as backoff_module
from swarmgauge.users.backoff import CAP, FIRST, Backoff, max_attempts
from swarmgauge.users.brain_client import BrainUnreachable
from swarmgauge.users.brain_user import BrainUser
from swarmgauge.users.kneo_user import KneoUser
from swarmgauge.users.mdk_user import MDKUser
from tests.users.fake_gevent import module_sleeps

RUN_SECONDS = 2.0


class Clock:
    """A hand-moved clock, so waits are read without sleeping."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_waits_double_from_first_to_the_cap_and_an_answer_resets_them():
    backoff = Backoff(0.05, 2.0)
    waits = [backoff.failed() for _ in range(9)]
    assert waits == [0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0, 2.0]
    assert backoff.faults == 9
    backoff.succeeded()
    assert (backoff.faults, backoff.delay, backoff.remaining()) == (0, 0.0, 0.0)
    assert backoff.failed() == 0.05


def test_the_defaults_are_the_shared_schedule_and_a_long_outage_stays_at_the_cap():
    backoff = Backoff()
    assert (backoff.first, backoff.cap) == (FIRST, CAP)
    assert max(backoff.failed() for _ in range(10_000)) == CAP


def test_jitter_only_shortens_a_wait_and_never_below_its_fraction():
    backoff = Backoff(0.05, 5.0, jitter=0.2)
    for expected in [0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0]:
        assert expected * 0.8 <= backoff.failed() <= expected


def test_wait_sleeps_out_only_what_is_left_of_the_wait(monkeypatch):
    slept: list[float] = []
    monkeypatch.setattr(backoff_module, "gevent", module_sleeps(slept.append))  # this module's sleeps only
    clock = Clock()
    backoff = Backoff(0.5, 2.0, clock=clock)
    assert backoff.wait() == 0.0  # nothing failed yet: no wait
    backoff.failed()
    clock.now += 0.2
    assert backoff.wait() == pytest.approx(0.3)
    clock.now += 0.3
    assert backoff.wait() == 0.0
    backoff.failed()
    backoff.succeeded()
    assert backoff.wait() == 0.0
    assert slept == [pytest.approx(0.3)]


def test_max_attempts_follows_the_schedule():
    # 1 attempt, then one after 0.05, 0.1, 0.2, 0.4 (0.75 s in all), the next after 0.8 more (1.55 s)
    assert max_attempts(0.0) == 1
    assert max_attempts(0.75) == 5
    assert max_attempts(1.5) == 5
    assert max_attempts(1.55) == 6
    assert max_attempts(10.0, first=1.0, cap=1.0) == 11
    assert max_attempts(1.5, jitter=0.5) == 6  # waits halved at most: one more attempt fits


@pytest.mark.parametrize(
    "first, cap, jitter", [(0.0, 1.0, 0.0), (2.0, 1.0, 0.0), (float("nan"), 1.0, 0.0), (0.1, 1.0, 1.0)]
)
def test_a_bad_schedule_is_a_usage_error(first, cap, jitter):
    with pytest.raises(UsageError):
        Backoff(first, cap, jitter=jitter)


@pytest.fixture
def refused_url() -> Iterator[str]:
    """A loopback port that is bound but never listens: every connect to it is refused."""
    closed = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    closed.bind(("127.0.0.1", 0))
    yield f"http://127.0.0.1:{closed.getsockname()[1]}"
    closed.close()


def run_one_user(iterate: Callable[[], None]) -> float:
    """Call ``iterate`` as a user's task loop would, for about ``RUN_SECONDS``; returns the seconds it ran."""
    started = time.monotonic()
    for _ in range(100_000):
        if time.monotonic() - started >= RUN_SECONDS:
            break
        iterate()
    return time.monotonic() - started


def check_bounded(recorded: list[dict], ran: float, named: type) -> None:
    assert recorded, "the refused port must show as failures"
    assert all(isinstance(e["exception"], named) for e in recorded), {repr(e["exception"]) for e in recorded}
    assert len({str(e["exception"]) for e in recorded}) == 1  # one failure name, whatever the attempt
    assert 3 <= len(recorded) <= max_attempts(ran)  # held back by the schedule: not a hot loop, not stalled


def environment_for(user_class: type) -> tuple[Environment, list[dict]]:
    environment = Environment(user_classes=[user_class])
    recorded: list[dict] = []
    environment.events.request.add_listener(lambda **kw: recorded.append(kw))
    return environment, recorded


@pytest.mark.timeout(60)
def test_an_mdk_user_against_a_refused_port_backs_off(refused_url):
    from swarmgauge.users.mdk_client import GatewayUnreachable

    class Probe(MDKUser):
        host = refused_url

    environment, recorded = environment_for(Probe)
    user = Probe(environment)
    user.on_start()
    ran = run_one_user(user.step)
    check_bounded(recorded, ran, GatewayUnreachable)
    assert user.client.backoff.faults == len(recorded)


@pytest.mark.timeout(60)
def test_a_kneo_user_against_a_refused_port_backs_off(refused_url):
    from swarmgauge.protocols.kneo import KneoUnreachable

    class Probe(KneoUser):
        host = refused_url

    environment, recorded = environment_for(Probe)
    user = Probe(environment)
    ran = run_one_user(user.run_once)
    check_bounded(recorded, ran, KneoUnreachable)
    assert {e["request_type"] for e in recorded} == {"run sync"}


@pytest.mark.timeout(60)
def test_a_brain_user_against_a_refused_port_backs_off(refused_url):
    class Probe(BrainUser):
        host = refused_url

    environment, recorded = environment_for(Probe)
    user = Probe(environment)
    user.on_start()
    ran = run_one_user(user.one_call)
    check_bounded(recorded, ran, BrainUnreachable)


def test_a_backoff_keeps_its_fields_in_slots():
    """One Backoff per user of every kind lives for the run: no instance dictionary (156 -> 104 bytes)."""
    backoff = Backoff(0.05, 5.0, jitter=0.2)
    assert not hasattr(backoff, "__dict__")
    backoff.failed()
    assert backoff.faults == 1 and backoff.delay > 0
