"""A request in flight when its user is stopped is recorded once, as ``Unfinished``, with its time so far: every
built-in User (Mark pooled and fresh, MCP, kneo sync and queued, MDK, brain), against fakes that never answer.

The user is stopped as Locust stops one: its greenlet is killed (``GreenletExit``) while it waits for the answer.
"""

from __future__ import annotations

import argparse
import json
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import gevent
import pytest
from gevent.pywsgi import WSGIServer
from locust import argument_parser, task
from locust.env import Environment
from locust.event import Events

from swarmgauge.errors import Unfinished
from swarmgauge.users import recording
from swarmgauge.users.brain_user import BrainUser
from swarmgauge.users.kneo_client import KneoClient
from swarmgauge.users.mark_user import MarkUser
from swarmgauge.users.mcp_client import MCPClient
from swarmgauge.users.mdk_client import MDKClient
from tests.quic.misbehaving_quic import MisbehavingQuicServer
from tests.users.silent_servers import FakeSilentHTTPServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

IN_FLIGHT_S = 0.4  # how long each request waits before its user is stopped
HOLD_S = 30.0  # a fake's "never": far beyond every test here


class Recorder:
    """Every ``request`` event fired on ``events``."""

    def __init__(self, events: Any = None) -> None:
        self.events = events if events is not None else Events()
        self.seen: list[dict[str, Any]] = []
        self.events.request.add_listener(lambda **kw: self.seen.append(kw))

    def unfinished(self) -> list[dict[str, Any]]:
        return [event for event in self.seen if isinstance(event["exception"], Unfinished)]


def stop_in_flight(call: Callable[[], Any]) -> tuple[float, float]:
    """Run ``call`` in a greenlet and stop it as Locust stops a user, once its request is in flight; returns the
    wall-clock times it was spawned and stopped."""
    spawned = time.time()
    greenlet = gevent.spawn(call)
    gevent.sleep(IN_FLIGHT_S)
    assert not greenlet.dead, f"the call ended before it was stopped: {greenlet.value!r} {greenlet.exception!r}"
    stopped = time.time()
    greenlet.kill(block=True, timeout=10)
    assert greenlet.dead
    return spawned, stopped


def assert_one_unfinished(recorder: Recorder, request_type: str, name: str, ran: tuple[float, float]) -> dict[str, Any]:
    """Exactly one Unfinished for (type, name): started after the call began, its time so far reaching the stop."""
    found = [e for e in recorder.unfinished() if (e["request_type"], e["name"]) == (request_type, name)]
    assert len(found) == 1, recorder.seen
    event = found[0]
    spawned, stopped = ran
    assert spawned - 0.05 <= event["start_time"] < stopped and event["response_time"] > 0
    assert abs(event["start_time"] + event["response_time"] / 1000.0 - stopped) < 0.25  # timed up to the stop
    assert str(event["exception"]) == "no answer before the user was stopped"
    return event


@pytest.fixture
def silent_http() -> Iterator[FakeSilentHTTPServer]:
    server = FakeSilentHTTPServer().start()
    yield server
    server.stop()


# --- Mark over QUIC: a server that completes the handshake and answers no stream ------------------------------------


@pytest.fixture(scope="module")
def silent_quic(quic_engine) -> Iterator[MisbehavingQuicServer]:
    server = MisbehavingQuicServer(quic_engine=quic_engine, silent=True).start()
    yield server
    server.stop()


class ProbeMarkUser(MarkUser):
    @task
    def nothing(self) -> None:
        pass


def mark_environment(host: str, engine: str, connection: str) -> Environment:
    options = argparse.Namespace(
        mark_token="",
        mark_insecure=True,
        mark_ca="",
        mark_server_name="",
        mark_connection=connection,
        mark_timeout=HOLD_S,
        mark_quic_engine=engine,
    )
    return Environment(user_classes=[ProbeMarkUser], host=host, parsed_options=options)


@pytest.mark.parametrize("connection", ["pooled", "fresh", "shared"])
def test_a_mark_request_the_server_never_answers_is_unfinished_when_the_user_stops(silent_quic, connection):
    env = mark_environment(silent_quic.url, silent_quic.engine.name, connection)
    recorder = Recorder(env.events)
    user = ProbeMarkUser(env)
    try:
        ran = stop_in_flight(lambda: user.client.fetch("/doc.md"))
    finally:
        user.client.inner.close()
    assert_one_unfinished(recorder, "FETCH", "/doc.md", ran)
    handshakes = [e for e in recorder.seen if e["request_type"] == "QUIC"]
    assert [e["exception"] for e in handshakes] == [None]  # the handshake completed: only the request is unfinished


def test_a_mark_handshake_in_flight_is_unfinished_when_the_user_stops(quic_engine):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as mute:  # takes the Initial packets and answers none
        mute.bind(("127.0.0.1", 0))
        env = mark_environment(f"mark://127.0.0.1:{mute.getsockname()[1]}", quic_engine, "pooled")
        recorder = Recorder(env.events)
        user = ProbeMarkUser(env)
        ran = stop_in_flight(lambda: user.client.fetch("/doc.md"))
    event = assert_one_unfinished(recorder, "QUIC", "handshake", ran)
    assert event is recorder.seen[-1] and len(recorder.seen) == 1  # no FETCH: it was never sent


# --- HTTP Users: a server that accepts, reads and never answers ----------------------------------------------------


def test_an_mcp_call_the_server_never_answers_is_unfinished(silent_http):
    env = Environment()
    recorder = Recorder(env.events)
    client = MCPClient(silent_http.url, environment=env, timeout=HOLD_S)
    ran = stop_in_flight(client.initialize)
    assert_one_unfinished(recorder, "MCP", "initialize", ran)


def test_an_mdk_request_the_gateway_never_answers_is_unfinished(silent_http):
    recorder = Recorder()
    client = MDKClient(silent_http.url, recorder.events, timeout=HOLD_S)
    ran = stop_in_flight(client.summary)
    assert_one_unfinished(recorder, "MDK", "summary", ran)


def test_a_brain_call_the_server_never_answers_is_unfinished(silent_http):
    class Probe(BrainUser):
        host = silent_http.url

    env = Environment(user_classes=[Probe])
    recorder = Recorder(env.events)
    user = Probe(env)
    user.on_start()
    ran = stop_in_flight(user.health)
    assert_one_unfinished(recorder, "GET", "/health", ran)
    assert len(recorder.seen) == 1  # Locust's own session fired nothing for it


def test_a_kneo_sync_run_never_answered_is_unfinished(silent_http):
    recorder = Recorder()
    client = KneoClient(silent_http.url, request_events=recorder.events, timeout=HOLD_S)
    ran = stop_in_flight(client.dispatch)
    assert_one_unfinished(recorder, "run sync", client.name, ran)
    assert client.ledger.indeterminate == 1  # the service may have stored it: the ledger says so


def test_a_kneo_queued_submit_never_answered_is_unfinished(silent_http):
    recorder = Recorder()
    client = KneoClient(silent_http.url, request_events=recorder.events, timeout=HOLD_S)
    ran = stop_in_flight(client.queued)
    assert_one_unfinished(recorder, "run submit", client.name, ran)
    assert len(recorder.seen) == 1  # no run was accepted, so no end-to-end "run queued" either


class FakeKneoPollsNeverAnswered:
    """A fake kneo-serv below the client's seam: accepts every run (202) and never answers a status read."""

    def __init__(self) -> None:
        self.server = WSGIServer(("127.0.0.1", 0), self.app, log=None)

    def app(self, environ: dict[str, Any], start_response: Any) -> list[bytes]:
        if environ["REQUEST_METHOD"] == "POST":
            body = json.dumps({"run_id": "run-held", "status": "running"}).encode()
            start_response("202 Accepted", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
            return [body]
        gevent.sleep(HOLD_S)
        start_response("503 Service Unavailable", [("Content-Length", "0")])
        return [b""]

    def __enter__(self) -> str:
        self.server.start()
        return f"http://127.0.0.1:{self.server.server_port}"

    def __exit__(self, *_exc: object) -> None:
        self.server.stop(timeout=1)


def test_a_kneo_queued_run_whose_poll_is_never_answered_is_unfinished_end_to_end():
    recorder = Recorder()
    with FakeKneoPollsNeverAnswered() as url:
        client = KneoClient(url, request_events=recorder.events, timeout=HOLD_S, poll_initial=0.01, poll_cap=0.02)
        ran = stop_in_flight(client.queued)
    assert [e["exception"] for e in recorder.seen if e["request_type"] == "run submit"] == [None]
    assert_one_unfinished(recorder, "run poll", client.name, ran)
    queued = assert_one_unfinished(recorder, "run queued", client.name, ran)
    assert queued["context"] == {"run_id": "run-held"}


# --- the one place that fires ---------------------------------------------------------------------------------------


def test_measure_records_a_stop_once_and_lets_it_go_on_up():
    recorder = Recorder()

    def operation() -> None:
        with recording.measure(recorder.events, "OP", "held") as outcome:
            outcome.response_length = 7
            gevent.sleep(HOLD_S)

    ran = stop_in_flight(operation)
    event = assert_one_unfinished(recorder, "OP", "held", ran)
    assert event["response_length"] == 7 and len(recorder.seen) == 1


def test_measure_without_events_records_nothing_on_a_stop():
    def operation() -> None:
        with recording.measure(None, "OP", "held"):
            gevent.sleep(HOLD_S)

    stop_in_flight(operation)  # no event hook to fire on, and no error either


def test_a_request_that_ends_is_not_unfinished():
    recorder = Recorder()
    with recording.measure(recorder.events, "OP", "quick"):
        pass
    assert [e["exception"] for e in recorder.seen] == [None]


@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        ([], {}, recording.IN_FLIGHT_GRACE_SECONDS),
        (["--stop-timeout", "0"], {}, 0.0),
        ([], {"LOCUST_STOP_TIMEOUT": "0"}, 0.0),
        (["--stop-timeout", "2"], {}, 2.0),
        (["--stop-timeout", "30"], {}, 30.0),
    ],
)
def test_without_a_stop_timeout_stopped_users_get_a_grace_and_a_given_one_even_0_is_kept(
    args: list[str], env: dict[str, str], expected: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Locust's default (0) kills a stopped user mid-request; swarmgauge's grace replaces only a value not given."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    options = argument_parser.parse_options(args=["-f", "locustfile.py", *args])
    environment = Environment(parsed_options=options)
    recording.grace_for_requests_in_flight(environment)
    assert environment.stop_timeout == expected
