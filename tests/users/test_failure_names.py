"""Issue 33.4: a failure's name carries no body, id or payload, so N distinct error answers make a bounded number of
failures rows (kneo made 13,796 rows in 12 s from its bodies). The servers are FAKEs below each client's seam that
answer every request with a different error; rows are counted by Locust's own failure key."""

from __future__ import annotations

import json
import uuid

import pytest
from locust.env import Environment
from locust.stats import StatsError

from swarmgauge.protocols.kneo import KneoError
from swarmgauge.protocols.mcp import MCPError
from swarmgauge.quic.driver import QuicError
from swarmgauge.users.brain_user import BrainUser
from swarmgauge.users.kneo_client import KneoClient
from swarmgauge.users.mark_client import MarkClient
from swarmgauge.users.mark_errors import MarkError
from swarmgauge.users.mcp_client import MCPClient
from swarmgauge.users.mdk_client import MDKClient
from tests.quic.misbehaving_quic import MisbehavingQuicServer
from tests.users.fake_http import Answer, FakeHTTPServer, varying_answers

DISTINCT = 24  # distinct error answers per shape


def unique(index: int) -> str:
    return f"{uuid.uuid4().hex}-{index}"


def failure_rows(recorded: list[dict]) -> set[str]:
    return {StatsError.create_key(e["request_type"], e["name"], e["exception"]) for e in recorded if e["exception"]}


def recording() -> tuple[Environment, list[dict]]:
    environment = Environment(user_classes=[])
    recorded: list[dict] = []
    environment.events.request.add_listener(lambda **kw: recorded.append(kw))
    return environment, recorded


@pytest.fixture
def serve():
    servers: list[FakeHTTPServer] = []

    def start(answer: Answer) -> FakeHTTPServer:
        servers.append(varying_answers(answer))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


KNEO_ANSWERS: list[Answer] = [
    lambda n: (500, json.dumps({"detail": {"error": f"boom_{unique(n)}", "message": unique(n)}}).encode()),
    lambda n: (500, f"Internal error {unique(n)}".encode()),
    lambda n: (200, f"<html>{unique(n)}</html>".encode()),
    lambda n: (200, json.dumps({"run_id": unique(n), "status": f"weird-{unique(n)}"}).encode()),
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("answer", KNEO_ANSWERS)
def test_kneo_failure_rows_are_bounded(serve, answer):
    server = serve(answer)
    environment, recorded = recording()
    client = KneoClient(server.url, request_events=environment.events, environment=environment, timeout=5.0)
    for _ in range(DISTINCT):
        with pytest.raises(KneoError):
            client.dispatch()
    assert len(recorded) == DISTINCT
    assert len(failure_rows(recorded)) == 1, failure_rows(recorded)


def test_kneo_poll_timeout_names_no_wait_or_status():
    from swarmgauge.protocols.kneo import PollTimeout

    names = {str(PollTimeout("run-1", "running", waited)) for waited in (1.0, 1.25, 60.3)}
    names |= {str(PollTimeout(unique(n), f"state-{unique(n)}", 2.0)) for n in range(DISTINCT)}
    assert len(names) <= 2, names


MDK_ANSWERS: list[tuple[str, Answer]] = [
    ("summary", lambda n: (500, json.dumps({"statusCode": 500, "message": f"ERR_{unique(n).upper()}"}).encode())),
    ("summary", lambda n: (500, f"{unique(n)}".encode())),
    ("telemetry", lambda n: (200, json.dumps({"metrics": {f"ch{unique(n)}": {"error": unique(n)}}}).encode())),
    ("action", lambda n: (200, json.dumps({"result": {"status": f"S{unique(n)}", "error": unique(n)}}).encode())),
    ("action", lambda n: (200, json.dumps({"result": {"status": "REJECTED", "error": f"ERR_{n}_{n * 7}"}}).encode())),
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("call", "answer"), MDK_ANSWERS)
def test_mdk_failure_rows_are_bounded(serve, call, answer):
    server = serve(answer)
    environment, recorded = recording()
    client = MDKClient(server.url, environment.events, timeout=5.0)
    for _ in range(DISTINCT):
        if call == "summary":
            assert client.summary() is None
        else:
            assert getattr(client, call)("device-1") is None
    client.close()
    assert len(recorded) == DISTINCT
    assert len(failure_rows(recorded)) == 1, failure_rows(recorded)


BRAIN_ANSWERS: list[Answer] = [
    lambda n: (502, json.dumps({"error": f"db failed {unique(n)}"}).encode()),
    lambda n: (502, json.dumps({"error": f"buffer pool is full {unique(n)}"}).encode()),
    lambda n: (500 + n % 3, unique(n).encode()),
    lambda n: (200, f"not json {unique(n)}".encode()),
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("answer", BRAIN_ANSWERS)
def test_brain_failure_rows_are_bounded(serve, answer):
    server = serve(answer)

    class Probe(BrainUser):
        host = server.url

    environment, recorded = recording()
    user = Probe(environment)
    user.on_start()
    for _ in range(DISTINCT):
        user.stats()
    assert len(recorded) == DISTINCT
    assert len(failure_rows(recorded)) <= 3, failure_rows(recorded)  # one per status at most (500, 501, 502)


MCP_ANSWERS: list[Answer] = [
    lambda n: (500, json.dumps({"error": unique(n)}).encode()),
    lambda n: (200, json.dumps({"jsonrpc": "2.0", "id": n + 1, "error": {"code": -1, "message": unique(n)}}).encode()),
    lambda n: (200, f"oops {unique(n)}".encode()),
    lambda n: (400, json.dumps({"jsonrpc": "2.0", "error": {"code": -32600, "message": unique(n)}}).encode()),
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("answer", MCP_ANSWERS)
def test_mcp_failure_rows_are_bounded(serve, answer):
    server = serve(answer)
    environment, recorded = recording()
    client = MCPClient(server.url, environment=environment, path="/mcp", timeout=5.0)
    for _ in range(DISTINCT):
        with pytest.raises(MCPError):
            client.initialize()
    client.close()
    assert len(recorded) == DISTINCT
    assert len(failure_rows(recorded)) == 1, failure_rows(recorded)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("path", ["/varied-error", "/varied-status", "/varied-metadata", "/varied-close"])
def test_mark_failure_rows_are_bounded(quic_engine, path):
    server = MisbehavingQuicServer(quic_engine=quic_engine).start()
    try:
        client = MarkClient(server.url, quic_engine=server.engine.name, insecure=True, timeout=5)
        errors = []
        for _ in range(DISTINCT // 4):
            try:
                client.fetch(path)
            except (MarkError, QuicError) as exc:
                errors.append(exc)
            client.wait_for_backoff()
        client.close()
    finally:
        server.stop()
    assert len(errors) == DISTINCT // 4
    rows = {StatsError.create_key("FETCH", path, error) for error in errors}
    assert len(rows) == 1, rows
