"""MarkUser against the real reference server over QUIC, on each engine (client and server on the same one): what
each verb records, connection policies, recovery."""

from __future__ import annotations

import argparse
import socket

import pytest
from locust import task
from locust.env import Environment

from swarmgauge.targets.launch import launch_target
from swarmgauge.users.mark import NotFound, Unauthorized
from swarmgauge.users.mark_user import MarkUser
from swarmgauge.users.quic import QuicError

TOKEN = "user-test-token"
ENGINE_UNDER_TEST = {"name": "qh3"}  # set per test by ``engine_under_test``; every user and server takes it


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ProbeUser(MarkUser):
    """Tasks are called by the tests directly, so every count below is exact."""

    @task
    def nothing(self) -> None:
        pass


def options(**overrides) -> argparse.Namespace:
    values = dict(mark_token=TOKEN, mark_insecure=True, mark_ca="", mark_server_name="", mark_connection="",
                  mark_timeout=3.0, mark_quic_engine=ENGINE_UNDER_TEST["name"])
    values.update(overrides)
    return argparse.Namespace(**values)


@pytest.fixture(autouse=True)
def engine_under_test(quic_engine):
    ENGINE_UNDER_TEST["name"] = quic_engine
    return quic_engine


def launch_mark(args: list[str]):
    return launch_target("mark", [*args, "--quic-engine", ENGINE_UNDER_TEST["name"]])


@pytest.fixture(scope="module")
def server(quic_engine):
    ENGINE_UNDER_TEST["name"] = quic_engine
    with launch_mark(["--port", "0", "--seed-corpus", "5", "--publish-token", TOKEN]) as running:
        yield running


@pytest.fixture
def recorded():
    return []


def make_env(host: str, recorded: list, **overrides) -> Environment:
    env = Environment(user_classes=[ProbeUser], host=host, parsed_options=options(**overrides))
    env.events.request.add_listener(lambda **kw: recorded.append(kw))
    return env


def user_on(host: str, recorded: list, user_class=ProbeUser, **overrides) -> MarkUser:
    return user_class(make_env(host, recorded, **overrides))


def non_handshake(recorded: list) -> list[dict]:
    return [r for r in recorded if r["request_type"] != "QUIC"]


def test_every_verb_records_type_name_and_length(server, recorded):
    user = user_on(server.url, recorded)
    first = user.client.publish("/t/a.md", b"# A\n\nalpha body\n", expected_version=0, name="/t/{doc}")
    fetched = user.client.fetch("/t/a.md")
    user.client.append("/t/a.md", b"more\n", expected_version=1)
    user.client.versions("/t/a.md")
    user.client.list("/t")
    user.client.lookup("/", "alpha", name="LOOKUP /")
    user.client.archive("/t/a.md")
    user.on_stop()
    assert first.status == "created" and fetched.body == b"# A\n\nalpha body\n"
    rows = [(r["request_type"], r["name"], r["exception"]) for r in non_handshake(recorded)]
    assert rows == [("PUBLISH", "/t/{doc}", None), ("FETCH", "/t/a.md", None), ("APPEND", "/t/a.md", None),
                    ("VERSIONS", "/t/a.md", None), ("LIST", "/t", None), ("LOOKUP", "LOOKUP /", None),
                    ("ARCHIVE", "/t/a.md", None)]
    fetch_row = non_handshake(recorded)[1]
    assert fetch_row["response_length"] == len(b"# A\n\nalpha body\n")


def test_failures_carry_their_named_errors(server, recorded):
    user = user_on(server.url, recorded, mark_token="")
    assert user.client.fetch("/t/none.md") is None
    assert user.client.publish("/t/b.md", b"# B\n") is None
    with pytest.raises(NotFound):
        user.client.fetch("/t/none.md", reraise=True)
    user.on_stop()
    errors = [type(r["exception"]) for r in non_handshake(recorded)]
    assert errors == [NotFound, Unauthorized, NotFound]


def test_pooled_is_one_handshake_per_user_and_fresh_one_per_request(server, recorded):
    pooled = [user_on(server.url, recorded) for _ in range(2)]
    for user in pooled:
        for _ in range(5):
            user.client.fetch("/health")
        user.on_stop()
    assert sum(r["request_type"] == "QUIC" for r in recorded) == 2
    recorded.clear()
    fresh = user_on(server.url, recorded, mark_connection="fresh")
    for _ in range(5):
        fresh.client.fetch("/health")
    assert [r["request_type"] for r in recorded] == ["QUIC", "FETCH"] * 5


def test_shared_is_one_connection_for_all_users(server, recorded):
    users = [user_on(server.url, recorded, mark_connection="shared") for _ in range(3)]
    assert users[0].client.inner is users[1].client.inner is users[2].client.inner
    for user in users:
        user.client.fetch("/health")
    assert sum(r["request_type"] == "QUIC" for r in recorded) == 1
    users[0].client.inner.close()


def test_a_server_restart_is_survived(recorded):
    port = free_udp_port()
    args = ["--port", str(port), "--seed-corpus", "3"]
    server = launch_mark(args)
    user = user_on(server.url, recorded, mark_timeout=1.0)
    try:
        assert user.client.fetch("/health") is not None
        server.stop()
        assert user.client.fetch("/health") is None
        server = launch_mark(args)
        results = [user.client.fetch("/health") for _ in range(3)]
    finally:
        server.stop()
        user.on_stop()
    assert all(r is not None for r in results)
    failures = [r for r in non_handshake(recorded) if r["exception"] is not None]
    assert len(failures) == 1 and isinstance(failures[0]["exception"], QuicError)
    assert sum(r["request_type"] == "QUIC" and r["exception"] is None for r in recorded) == 2


def test_unreachable_server_is_a_recorded_handshake_failure(recorded):
    user = user_on(f"mark://127.0.0.1:{free_udp_port()}", recorded, mark_timeout=0.5)
    assert user.client.fetch("/health") is None
    kinds = [(r["request_type"], type(r["exception"]).__name__) for r in recorded]
    assert kinds[0][0] == "QUIC" and kinds[0][1].endswith(("Timeout", "Failed"))
    assert kinds[1][0] == "FETCH"


def test_bad_options_are_usage_errors(server, recorded):
    from swarmgauge.errors import UsageError

    with pytest.raises(UsageError, match="connection must be one of"):
        user_on(server.url, recorded, mark_connection="sometimes")
    with pytest.raises(UsageError, match="needs --host"):
        ProbeUser(Environment(user_classes=[ProbeUser], host="", parsed_options=options()))
