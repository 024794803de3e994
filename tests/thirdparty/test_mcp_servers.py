"""swarmgauge's MCP users against MCP servers no one here wrote (issue 18 points 1-2, 5 for MCP)."""

from __future__ import annotations

import pytest
from locust.env import Environment

from swarmgauge.protocols import mcp as proto
from swarmgauge.users.mcp_client import MCPClient
from swarmgauge.users.mcp_user import MCPChurnUser, MCPToolUser
from tests.thirdparty import restart, servers
from tests.users.test_mcp_user import Recorder, make_user

pytestmark = pytest.mark.integration

OUTAGE_NAMES = {"MCPConnectionLost", "MCPUnreachable", "SessionExpired", "MCPBadHTTP"}
EVERYTHING_ECHO = {"message": "hello from swarmgauge"}


@pytest.fixture(params=["everything", "fastmcp-sse", "fastmcp-json"])
def server(request):
    if request.param == "everything":
        process = servers.everything_server()
    else:
        process = servers.fastmcp_server(json_response=request.param.endswith("json"))
    process.name = request.param
    process.start()
    yield process
    process.stop()


def echo_args(server) -> dict:
    return EVERYTHING_ECHO if server.name == "everything" else {"text": "hello from swarmgauge"}


def content_types(client: MCPClient) -> list[str]:
    """Record the Content-Type of every answer the client reads."""
    seen: list[str] = []
    read = client._read_answer

    def recording(outgoing, response):
        if outgoing.request_id is not None:  # requests only: a notification's 202 has no defined type
            seen.append((response.headers.get("content-type") or "").split(";")[0])
        return read(outgoing, response)

    client._read_answer = recording
    return seen


def count_exchanges(client: MCPClient) -> list[int]:
    """How many POSTs the client made: each must be exactly one recorded event."""
    made = [0]
    exchange = client._exchange

    def counting(outgoing):
        made[0] += 1
        return exchange(outgoing)

    client._exchange = counting
    return made


@pytest.mark.timeout(180)
def test_churn_and_a_long_session_with_list_calls(server):
    environment = Environment()
    recorder = Recorder(environment)
    churn = make_user(MCPChurnUser, environment, server.url, timeout=10.0)
    churn.options.args = echo_args(server)
    seen = content_types(churn.client)
    for _ in range(10):
        churn.one_session()
    assert not recorder.failures(), recorder.failures()
    assert recorder.names().count("initialize") == 10 and recorder.names().count("tools/call echo") == 10
    expected = "application/json" if server.name == "fastmcp-json" else "text/event-stream"
    assert {kind for kind in seen if kind} == {expected}

    long = make_user(MCPToolUser, environment, server.url + "/mcp", path="/unused", timeout=10.0)
    long.options.args = echo_args(server)
    long.options.list_weight = 0.5
    before = len(recorder.events)
    long.on_start()
    for _ in range(30):
        long.call()
    names = recorder.names()[before:]
    assert names.count("initialize") == 1 and names.count("tools/list") > 0 and names.count("tools/call echo") > 0
    assert not recorder.failures()


@pytest.mark.timeout(120)
def test_progress_notifications_arrive_mid_call(server):
    environment = Environment()
    client = MCPClient(server.url, environment=environment, timeout=20.0)
    client.open_session()
    if server.name == "everything":
        text = client.call_tool("trigger-long-running-operation", {"duration": 1, "steps": 3}, progress=True)
    else:
        text = client.call_tool("slow", {"steps": 3}, progress=True)
    progress = [m for m in client.last_notifications if m["method"] == "notifications/progress"]
    if server.name == "fastmcp-json":
        assert progress == []  # a JSON answer carries the response alone: progress needs SSE
    else:
        assert [m["params"]["progress"] for m in progress] == [1, 2, 3]
    assert text


@pytest.mark.timeout(240)
def test_a_server_restart_mid_run_is_an_outage_then_a_new_session(server, capsys):
    environment = Environment()
    recorder = Recorder(environment)
    user = make_user(MCPToolUser, environment, server.url, timeout=5.0)
    user.options.args = echo_args(server)
    made = count_exchanges(user.client)
    user.on_start()
    outage = restart.through_restart(recorder.events, user.call, server.stop, server.start)
    outage.check(OUTAGE_NAMES)
    assert len(outage.events) == made[0]  # one event per POST: nothing counted twice
    assert user.client.session.initializations == 2
    with capsys.disabled():
        print("\n" + outage.summary(server.name))


@pytest.mark.timeout(120)
def test_stateless_churn_against_the_official_sdk():
    process = servers.sdk_server().start()
    try:
        environment = Environment()
        recorder = Recorder(environment)
        churn = make_user(MCPChurnUser, environment, process.url, timeout=10.0)
        churn.options.protocol = proto.STATELESS_VERSIONS[0]
        churn.options.args = {"text": "x"}
        churn.client = churn._new_client()
        for _ in range(5):
            churn.one_session()
        assert recorder.names() == ["tools/call echo"] * 5
        assert not recorder.failures(), recorder.failures()
        assert churn.client.session.session_id is None
    finally:
        process.stop()
