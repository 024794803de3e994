"""users/mdk_fleet_users.py: the burst user submits only on an open-model ticket it took through the hook, and
says it takes tickets (so a plan may run it in a rate step)."""

from __future__ import annotations

import gevent
from locust.env import Environment
from locust.event import Events

from swarmgauge.core import hooks
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
    monkeypatch.setattr(hooks.take_ticket, "implementation", lambda _user: ticket)
    return user, picked


def test_the_burst_user_takes_tickets():
    assert takes_tickets(Burst) and not takes_tickets(mdk_fleet_users.MDKReader)


def test_without_a_ticket_it_waits_idle_and_submits_nothing(monkeypatch):
    user, picked = _user(monkeypatch, ticket=False)
    monkeypatch.setattr(mdk_fleet_users, "IDLE_WAIT_S", 0.01)
    assert user.wait_time() == 0.0  # the idle wait is spent inside, then the iteration
    user.do_action()
    assert picked == []


def test_an_idle_user_looks_for_a_ticket_as_the_next_step_starts(monkeypatch):
    """The burst's users wake when the burst begins, not up to 0.5 s into it with hundreds of tickets due at once."""
    user, _picked = _user(monkeypatch, ticket=False)
    idle = gevent.spawn(user.wait_time)
    gevent.sleep(0.01)
    assert not idle.ready()  # idle in the closed step
    step = hooks.StepInfo(index=1, label="action burst", users=200, rate=1000.0, started_at=0.0, duration=3.0)
    hooks.step_changed.fire(environment=user.environment, step=step)
    idle.join(timeout=mdk_fleet_users.IDLE_WAIT_S / 2)
    assert idle.ready() and idle.value == 0.0


def test_a_ticket_runs_one_submit_at_once(monkeypatch):
    user, picked = _user(monkeypatch, ticket=True)
    assert user.wait_time() == 0.0
    user.do_action()
    user.do_action()
    assert picked == ["pick"] and not user.ticketed
