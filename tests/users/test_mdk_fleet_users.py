"""users/mdk_fleet_users.py: the burst user submits only on an open-model ticket it took through the hook, and
says it takes tickets (so a plan may run it in a rate step)."""

from __future__ import annotations

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
    assert user.wait_time() == mdk_fleet_users.IDLE_WAIT_S
    user.do_action()
    assert picked == []


def test_a_ticket_runs_one_submit_at_once(monkeypatch):
    user, picked = _user(monkeypatch, ticket=True)
    assert user.wait_time() == 0.0
    user.do_action()
    user.do_action()
    assert picked == ["pick"] and not user.ticketed
