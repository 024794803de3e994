"""users/mdk_fleet_users.py: the burst user submits only on an open-model ticket it took through the hook, and
says it takes tickets (so a plan may run it in a rate step); the one-at-a-time user sends each kind its share in turn."""

from __future__ import annotations

import time
from collections import Counter
from types import SimpleNamespace

import gevent
from locust.env import Environment
from locust.event import Events

from swarmgauge.core import hooks, intended
from swarmgauge.shapes.open_model import takes_tickets
from swarmgauge.users import mdk_fleet_users


class Burst(mdk_fleet_users.MDKBurstUser):
    """The burst user as a locustfile runs it (nothing listens on the discard port; no request is sent)."""

    host = "http://127.0.0.1:9"


def _user(monkeypatch, ticket: bool) -> tuple[Burst, list[str]]:
    environment = Environment(events=Events())
    user = Burst(environment)
    picked: list[str] = []
    monkeypatch.setattr(user, "pick_device", lambda: picked.append("pick"))  # no device: nothing is sent
    monkeypatch.setattr(hooks.take_ticket, "implementation", lambda _user: ticket and _hold_ticket())
    return user, picked


def _hold_ticket() -> bool:
    """What the open-model scheduler does for a taken ticket: this greenlet's next iteration runs on it."""
    intended.set_intended_start(time.perf_counter())
    return True


def _iteration(user: Burst) -> None:
    """One task iteration as ``core/intended.py`` runs it: on the ticket this greenlet holds, if any."""
    intended.begin_iteration()
    try:
        user.do_action()
    finally:
        intended.end_iteration()


def test_the_burst_user_takes_tickets():
    assert takes_tickets(Burst) and not takes_tickets(mdk_fleet_users.MDKReader)


def test_without_a_ticket_it_waits_idle_and_submits_nothing(monkeypatch):
    user, picked = _user(monkeypatch, ticket=False)
    monkeypatch.setattr(mdk_fleet_users, "IDLE_WAIT_S", 0.01)
    assert user.wait_time() == 0.0  # the idle wait is spent inside, then an iteration that sends nothing
    _iteration(user)
    assert picked == []


def test_a_ticket_runs_one_submit_at_once(monkeypatch):
    user, picked = _user(monkeypatch, ticket=True)
    assert user.wait_time() == 0.0
    _iteration(user)
    _iteration(user)
    assert picked == ["pick"]


def test_an_idle_user_waits_for_a_ticket_from_the_next_steps_start(monkeypatch):
    """The burst's users, idle in the step before it, look for a ticket as the burst begins, not up to 0.5 s into it
    with hundreds of tickets due at once."""
    user, _picked = _user(monkeypatch, ticket=False)
    idle = gevent.spawn(user.wait_time)
    gevent.sleep(0.01)
    assert not idle.ready()  # idle in the closed step
    step = hooks.StepInfo(index=1, label="action burst", users=200, rate=1000.0, started_at=0.0, duration=3.0)
    hooks.step_changed.fire(environment=user.environment, step=step)
    idle.join(timeout=mdk_fleet_users.IDLE_WAIT_S / 2)
    assert idle.ready() and idle.value == 0.0


def test_a_ticket_taken_by_locusts_wait_after_the_wake_is_submitted(monkeypatch):
    """Woken by the burst's start, the user's wait returns 0 without a ticket and Locust's wait (routed through
    core/intended.py) takes the burst's ticket: that iteration submits (keyed on a flag of its own wait, the
    reverted 6fd623e skipped it, and a burst of 3,000 tickets counted 2,999 submits and no drop)."""
    user, picked = _user(monkeypatch, ticket=False)
    monkeypatch.setattr(mdk_fleet_users, "IDLE_WAIT_S", 0.01)
    assert user.wait_time() == 0.0
    _hold_ticket()  # the routed wait's take
    _iteration(user)
    assert picked == ["pick"]


class OneAtATime(mdk_fleet_users.MDKOneAtATime):
    host = "http://127.0.0.1:9"


def _one_at_a_time(mix: str | None) -> OneAtATime:
    environment = Environment(events=Events())
    environment.parsed_options = SimpleNamespace(mdk_one_at_a_time_mix=mix)
    return OneAtATime(environment)


def test_one_at_a_time_sends_each_kind_its_share_in_turn_not_at_random():
    """30 reads, 10 accepts and 22 summaries in 62 requests, each kind within one of its share all along, so a step
    cut anywhere has every kind's share of what it sent (drawn at random, a short step starved the cheap kinds)."""
    user = _one_at_a_time("telemetry=30,action=10,summary=22")
    shares = {"telemetry": 30 / 62, "action": 10 / 62, "summary": 22 / 62}
    sent: Counter[str] = Counter()
    for n in range(1, 63):
        sent[user.next_kind()] += 1
        assert all(abs(sent[kind] - share * n) <= 1 for kind, share in shares.items())
    assert sent == {"telemetry": 30, "action": 10, "summary": 22}


def test_one_at_a_time_without_the_option_sends_its_default_mix():
    user = _one_at_a_time(None)
    sent = Counter(user.next_kind() for _ in range(7))
    assert sent == {"telemetry": 3, "action": 3, "summary": 1}


def test_a_burst_user_connects_at_its_start_before_it_waits_for_a_ticket(monkeypatch):
    """Its connection is opened in the step before the burst, not by its first submit: the page's harness submits on a
    client already connected, and 1,000 connections opened in the burst's first second clumped its submits."""
    user, _picked = _user(monkeypatch, ticket=False)
    done: list[str] = []
    monkeypatch.setattr(user, "discover", lambda: done.append("discover"))
    monkeypatch.setattr(user.client, "connect", lambda: done.append("connect") or True)
    monkeypatch.setattr(user, "wait", lambda: done.append("wait"))
    user.on_start()
    assert done == ["discover", "connect", "wait"]
