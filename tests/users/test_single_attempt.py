"""Issue 33.4: the server sees exactly the requests Locust records (no geventhttpclient resend below the counter).

Against a server that reads each request and then resets or closes the connection, geventhttpclient sent each
idempotent request again up to ``concurrency + 1`` times (brain 12x, MDK 2x) without an event. The server here is a
FAKE below the HTTP seam that counts the requests it read."""

from __future__ import annotations

import pytest
from locust.env import Environment

from swarmgauge.protocols.kneo import KneoUnreachable
from swarmgauge.users.brain_user import BrainUser
from swarmgauge.users.kneo_client import KneoClient
from swarmgauge.users.mcp_client import MCPClient
from swarmgauge.users.mdk_client import MDKClient
from tests.users.fake_http import dropping as dropping_http

CALLS = 4


@pytest.fixture(params=["reset", "close"])
def dropping(request):
    server = dropping_http(request.param)
    yield server
    server.stop()


def recording() -> tuple[Environment, list[dict]]:
    environment = Environment(user_classes=[])
    recorded: list[dict] = []
    environment.events.request.add_listener(lambda **kw: recorded.append(kw))
    return environment, recorded


@pytest.mark.timeout(60)
def test_mdk_sends_each_request_once(dropping):
    environment, recorded = recording()
    client = MDKClient(dropping.url, environment.events, timeout=2.0)
    for _ in range(CALLS):
        client.summary()
    client.close()
    assert len(recorded) == CALLS
    assert all(e["exception"] is not None for e in recorded)
    assert dropping.requests_seen == len(recorded)


@pytest.mark.timeout(60)
def test_brain_sends_each_request_once(dropping):
    class Probe(BrainUser):
        host = dropping.url

    environment, recorded = recording()
    user = Probe(environment)
    user.on_start()
    for _ in range(CALLS):
        user.stats()
    assert len(recorded) == CALLS
    assert all(e["exception"] is not None for e in recorded)
    assert dropping.requests_seen == len(recorded)


@pytest.mark.timeout(60)
def test_mcp_sends_each_request_once(dropping):
    environment, recorded = recording()
    client = MCPClient(dropping.url, environment=environment, path="/mcp", timeout=2.0)
    for _ in range(CALLS):
        with pytest.raises(Exception):  # noqa: B017 - any named MCP failure; the count is what is checked
            client.initialize()
    client.close()
    assert len(recorded) == CALLS
    assert all(e["exception"] is not None for e in recorded)
    assert dropping.requests_seen == len(recorded)


@pytest.mark.timeout(60)
def test_kneo_sends_each_request_once(dropping):
    environment, recorded = recording()
    client = KneoClient(dropping.url, request_events=environment.events, environment=environment, timeout=2.0)
    for _ in range(CALLS):
        with pytest.raises(KneoUnreachable):
            client.poll("run-1")
    assert len(recorded) == CALLS
    assert dropping.requests_seen == len(recorded)


@pytest.mark.timeout(60)
def test_kneo_records_the_first_send_of_an_idempotent_retry(dropping):
    """With ``--kneo-idempotency`` a send with no answer is sent once more: both sends are recorded."""
    environment, recorded = recording()
    client = KneoClient(
        dropping.url, request_events=environment.events, environment=environment, timeout=2.0, idempotency=True
    )
    for _ in range(2):
        with pytest.raises(KneoUnreachable):
            client.dispatch()
    assert dropping.requests_seen == len(recorded) == 4
    assert all(isinstance(e["exception"], KneoUnreachable) for e in recorded)


@pytest.mark.timeout(60)
def test_mcp_delete_is_sent_once(dropping):
    """DELETE is idempotent, so geventhttpclient resent it on a dropped connection."""
    environment, recorded = recording()
    client = MCPClient(dropping.url, environment=environment, path="/mcp", timeout=2.0)
    for _ in range(CALLS):
        client.session.session_id = "session-1"
        with pytest.raises(Exception):  # noqa: B017 - any named MCP failure; the count is what is checked
            client.delete()
    client.close()
    assert len(recorded) == CALLS
    assert dropping.requests_seen == len(recorded)
