"""MarkUser against the real reference server over QUIC, on each engine (client and server on the same one): what
each verb records, connection policies, recovery."""

from __future__ import annotations

import argparse
import socket
import time

import pytest
from locust import task
from locust.env import Environment

from swarmgauge.quic.driver import QuicError
from swarmgauge.targets.launch import launch_target
from swarmgauge.users.mark_errors import MarkUnauthorized, NotFound
from swarmgauge.users.mark_user import MarkUser

pytestmark = pytest.mark.integration  # starts servers, processes or locust runs

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
    values = dict(
        mark_token=TOKEN,
        mark_insecure=True,
        mark_ca="",
        mark_server_name="",
        mark_connection="",
        mark_timeout=3.0,
        mark_quic_engine=ENGINE_UNDER_TEST["name"],
    )
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
    assert rows == [
        ("PUBLISH", "/t/{doc}", None),
        ("FETCH", "/t/a.md", None),
        ("APPEND", "/t/a.md", None),
        ("VERSIONS", "/t/a.md", None),
        ("LIST", "/t", None),
        ("LOOKUP", "LOOKUP /", None),
        ("ARCHIVE", "/t/a.md", None),
    ]
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
    assert errors == [NotFound, MarkUnauthorized, NotFound]


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


def test_the_users_of_one_environment_share_their_clients_hooks_and_each_handshake_is_recorded(server, recorded):
    env = make_env(server.url, recorded)
    users = [ProbeUser(env) for _ in range(2)]
    first, second = (user.client.inner for user in users)
    assert first.on_handshake is second.on_handshake and first.on_reconnect is second.on_reconnect
    for user in users:
        user.client.fetch("/health")
        user.on_stop()
    handshakes = [r for r in recorded if r["request_type"] == "QUIC"]
    assert [(r["name"], r["exception"]) for r in handshakes] == [("handshake", None)] * 2
    assert all(r["response_time"] > 0 for r in handshakes)


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
    failures = [r for r in recorded if r["exception"] is not None]
    assert len(failures) == 1 and isinstance(failures[0]["exception"], QuicError)  # once: QUIC row or FETCH row
    assert sum(r["request_type"] == "QUIC" and r["exception"] is None for r in recorded) == 2
    assert user.client.inner.stats.reconnects >= 1  # the attempt that failed while it was down, if any, counts


def test_unreachable_server_is_one_handshake_failure_with_its_real_duration(recorded):
    user = user_on(f"mark://127.0.0.1:{free_udp_port()}", recorded, mark_timeout=0.5)
    assert user.client.fetch("/health") is None
    kinds = [(r["request_type"], type(r["exception"]).__name__) for r in recorded]
    assert kinds == [("QUIC", kinds[0][1])] and kinds[0][1].endswith(("Timeout", "Failed"))  # not a FETCH row too
    assert recorded[0]["response_time"] > 0
    assert isinstance(user.client.last_error, QuicError)


def test_a_silent_server_handshake_is_recorded_with_the_time_it_took(recorded):
    mute = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    mute.bind(("127.0.0.1", 0))
    try:
        user = user_on(f"mark://127.0.0.1:{mute.getsockname()[1]}", recorded, mark_timeout=0.3)
        assert user.client.fetch("/health") is None
    finally:
        mute.close()
    assert [r["request_type"] for r in recorded] == ["QUIC"]
    assert recorded[0]["response_time"] >= 300 * 0.9


def test_a_refused_port_is_retried_with_a_bounded_backoff_and_the_user_stays_alive(recorded):
    user = user_on(f"mark://127.0.0.1:{free_udp_port()}", recorded, mark_timeout=0.5)
    deadline = time.monotonic() + 1.0
    calls = 0
    while time.monotonic() < deadline and calls < 10_000:
        assert user.client.fetch("/health") is None
        calls += 1
    attempts = [r for r in recorded if r["request_type"] == "QUIC"]
    assert 3 <= len(attempts) <= 12  # 50 ms doubling: about 5 in a second, not hundreds
    assert len(recorded) == len(attempts) == calls
    assert user.client.inner.stats.reconnects == len(attempts) - 1


def test_reconnects_are_counted_once_the_target_is_gone(recorded):
    port = free_udp_port()
    server = launch_mark(["--port", str(port), "--seed-corpus", "3"])
    user = user_on(server.url, recorded, mark_timeout=0.5)
    counted = []
    user.client.inner.on_reconnect = lambda: counted.append(1)
    try:
        assert user.client.fetch("/health") is not None
    finally:
        server.stop()
    for _ in range(4):
        user.client.fetch("/health")
    assert user.client.inner.stats.reconnects >= 2 and len(counted) == user.client.inner.stats.reconnects


def test_bad_options_are_usage_errors(server, recorded):
    from swarmgauge.errors import UsageError

    with pytest.raises(UsageError, match="connection must be one of"):
        user_on(server.url, recorded, mark_connection="sometimes")
    with pytest.raises(UsageError, match="needs --host"):
        ProbeUser(Environment(user_classes=[ProbeUser], host="", parsed_options=options()))


def test_users_on_one_shared_connection_are_isolated_from_each_others_stream_errors(recorded, quic_engine):
    """A timeout and a stream reset fail only their own requests: the others in flight on the shared connection
    finish, and the connection is not replaced."""
    import gevent

    from tests.quic.misbehaving_quic import MisbehavingQuicServer

    server = MisbehavingQuicServer(quic_engine=quic_engine, slow_seconds=0.8).start()
    users = [user_on(server.url, recorded, mark_connection="shared", mark_timeout=1.0) for _ in range(3)]
    try:
        shared = users[0].client.inner
        assert users[1].client.inner is shared and users[2].client.inner is shared
        assert users[2].client.fetch("/good") is not None
        driver = shared._driver
        timed_out = gevent.spawn(users[0].client.fetch, "/silent")  # times out at 1.0 s
        gevent.sleep(0.5)
        in_flight = gevent.spawn(users[2].client.fetch, "/slow")  # answered at 1.3 s, within its own 1.0 s
        gevent.sleep(0.1)
        reset = gevent.spawn(users[1].client.fetch, "/reset")  # reset at 0.6 s
        gevent.joinall([in_flight, timed_out, reset], timeout=10, raise_error=True)
        assert timed_out.value is None and type(users[0].client.last_error).__name__ == "RequestTimeout"
        assert reset.value is None and type(users[1].client.last_error).__name__ == "StreamReset"
        assert in_flight.value is not None and users[2].client.last_error is None
        assert shared._driver is driver and driver.alive
        assert all(user.client.fetch("/good") is not None for user in users)
        assert shared.stats.handshakes == 1 and shared.stats.reconnects == 0
    finally:
        users[0].client.inner.close()
        server.stop()


@pytest.mark.integration
def test_a_headless_reads_run_on_the_engine_against_the_embedded_target(tmp_path, quic_engine):
    import csv
    import subprocess
    import sys

    from swarmgauge.targets.launch import child_env
    from tests import REPO_ROOT

    command = [
        sys.executable,
        "-m",
        "locust",
        "-f",
        str(REPO_ROOT / "locustfiles" / "demarkus_reads.py"),
        "FetchUser",
        "--headless",
        "-u",
        "4",
        "-r",
        "4",
        "-t",
        "3s",
        "--csv",
        str(tmp_path / "run"),
        "--mark-corpus",
        "20",
        "--mark-quic-engine",
        quic_engine,
        "--mark-embedded-args",
        f"--quic-engine {quic_engine}",
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, env=child_env(), cwd=REPO_ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    with open(tmp_path / "run_stats.csv", newline="") as handle:
        rows = {(row["Type"], row["Name"]): row for row in csv.DictReader(handle)}
    fetch = rows[("FETCH", "/corpus/{topic}/{doc}")]
    assert int(fetch["Request Count"]) > 0 and fetch["Failure Count"] == "0"
    assert rows[("QUIC", "handshake")]["Request Count"] == "4" and rows[("QUIC", "handshake")]["Failure Count"] == "0"
