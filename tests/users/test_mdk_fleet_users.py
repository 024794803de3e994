"""users/mdk_fleet_users.py: the burst user submits only on an open-model ticket it took through the hook, and
says it takes tickets (so a plan may run it in a rate step); the one-at-a-time user sends each kind its share in turn."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

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
