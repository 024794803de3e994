"""MCPClient and the MCP Users: bad input against a FAKE server (each a named failure, the user goes on), and the
real thing against the gateway on the official SDK server in JSON and SSE modes (handshake, idle-TTL 404 and
recovery, session cap)."""

from __future__ import annotations

import time

import pytest
from locust.env import Environment

from swarmgauge.errors import UsageError
from swarmgauge.protocols import mcp as proto
from swarmgauge.targets.mcp_gateway import launch
from swarmgauge.users.mcp_client import MCPClient, MCPUnreachable
from swarmgauge.users.mcp_user import (
    MCPChurnUser,
    MCPFetchUser,
    MCPLookupAllUser,
    MCPToolUser,
    MCPUser,
    SessionPacer,
    options_from,
)
from tests.users.fake_mcp_server import FakeMCPServer

pytestmark = pytest.mark.integration  # starts the gateway and fake MCP servers

NO_MARK = ["--mark", "mark://127.0.0.1:9", "--mark-timeout", "1"]


class Recorder:
    def __init__(self, environment):
        self.events = []
        environment.events.request.add_listener(self._on)

    def _on(self, **kwargs):
        self.events.append(kwargs)

    def failures(self):
        return [(e["name"], type(e["exception"]).__name__) for e in self.events if e["exception"] is not None]

    def names(self):
        return [e["name"] for e in self.events]


@pytest.fixture
def fake():
    server = FakeMCPServer().start()
    yield server
    server.stop()


@pytest.fixture
def env():
    environment = Environment()
    return environment, Recorder(environment)


def make_user(cls, environment, host, path="/mcp", timeout=2.0):
    class Options:
        mcp_path = path
        mcp_token = ""
        mcp_protocol = proto.DEFAULT_VERSION
        mcp_tool = "echo"
        mcp_args = "{}"
        mcp_delete = False
        mcp_timeout = timeout
        mcp_churn_rate = 50.0
        mcp_query = "alpha"

    environment.parsed_options = Options()
    user_class = type("Probe" + cls.__name__, (cls,), {"host": host})
    return user_class(environment)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "path, error",
    [
        ("/nonjson", "MCPProtocolError"),
        ("/notrpc", "NotJSONRPC"),
        ("/sse-garbage", "SSEStreamError"),
        ("/sse-cut", "SSEStreamError"),
        ("/500", "MCPHTTPError"),
        ("/hang", "MCPTimeout"),
    ],
)
def test_bad_answers_are_named_failures_and_the_user_goes_on(fake, env, path, error):
    environment, recorder = env
    user = make_user(MCPUser, environment, fake.url, path=path, timeout=1.0)
    user.on_start()
    user.call()
    user.call()
    assert recorder.names()[:2] == ["initialize", "initialized"]
    failures = recorder.failures()
    assert failures and all(f == ("tools/call echo", error) for f in failures)
    assert len(failures) == 2  # one per iteration: the user went on


@pytest.mark.parametrize(
    "cls, tool",
    [(MCPFetchUser, "mark_fetch"), (MCPLookupAllUser, "mark_lookup_all"), (MCPToolUser, "echo"), (MCPUser, "echo")],
)
def test_every_task_of_a_tool_user_calls_its_own_tool(fake, env, cls, tool):
    """Locust adds a base class's tasks to a subclass's: a subclass with its own ``@task`` also ran the base's
    ``--mcp-tool`` call, and ``MCPLookupAllUser`` sent a ``mark_fetch`` for every ``mark_lookup_all``."""
    environment, recorder = env
    user = make_user(cls, environment, fake.url)
    user.on_start()
    recorder.events.clear()
    for one_task in type(user).tasks:
        one_task(user)
    assert [name for name in recorder.names() if name.startswith("tools/call")] == [f"tools/call {tool}"]


def test_missing_session_id_on_initialize_when_required(fake, env):
    environment, recorder = env
    client = MCPClient(fake.url, environment=environment, path="/nosession", require_session_id=True)
    with pytest.raises(proto.MissingSessionId):
        client.initialize()
    assert recorder.failures() == [("initialize", "MissingSessionId")]
    assert client.session.state is proto.SessionState.NEW
    relaxed = MCPClient(fake.url, path="/nosession")
    relaxed.open_session()
    assert relaxed.call_tool("echo").endswith("hello")


def test_missing_session_id_is_a_named_failure_and_the_user_goes_on(fake, env):
    environment, recorder = env
    user = make_user(MCPUser, environment, fake.url, path="/nosession")
    type(user).require_session_id = True
    user.client = user._new_client()
    user.on_start()
    user.call()
    user.call()
    assert recorder.failures() == [("initialize", "MissingSessionId")] * 3  # each iteration tries again
    assert user.client.session.state is proto.SessionState.NEW


def test_404_on_a_known_session_is_session_expired_and_resets_the_session(fake, env):
    environment, recorder = env
    client = MCPClient(fake.url, environment=environment, path="/expire")
    client.open_session()
    with pytest.raises(proto.SessionExpired):
        client.call_tool("echo")
    assert client.session.needs_initialize and client.session.session_id is None


def test_unreachable_target_and_bad_options(env):
    environment, recorder = env
    client = MCPClient("http://127.0.0.1:9", environment=environment, timeout=1.0)
    with pytest.raises(MCPUnreachable):
        client.initialize()
    with pytest.raises(UsageError):
        MCPClient("mark://127.0.0.1:9")

    class Bad:
        mcp_args = "{not json"

    with pytest.raises(UsageError):
        options_from(Bad())


def test_session_pacer_issues_tickets_at_the_rate():
    clock = iter([0.0, 0.0, 0.05, 3.0]).__next__
    pacer = SessionPacer(10.0, clock=clock)
    assert [pacer.take() for _ in range(4)] == pytest.approx([0.0, 0.1, 0.2, 0.3])
    assert pacer.lag == pytest.approx(2.7)


@pytest.fixture(scope="module", params=["sse", "json"])
def gateway(request):
    extra = ["--json-response"] if request.param == "json" else []
    process = launch(NO_MARK + extra + ["--session-idle-timeout", "1.5", "--max-sessions", "4"])
    yield request.param, process
    process.stop()


@pytest.mark.timeout(90)
def test_gateway_handshake_ttl_recovery_and_cap(gateway, env):
    mode, process = gateway
    environment, recorder = env
    client = MCPClient(process.base_url, environment=environment, timeout=5.0)
    result = client.open_session()
    assert result["protocolVersion"] == "2025-11-25" and len(client.session.session_id) == 32
    assert {t["name"] for t in client.list_tools()} >= {
        "mark_fetch",
        "mark_list",
        "mark_versions",
        "mark_lookup",
        "mark_lookup_all",
    }
    client.ping()
    with pytest.raises(proto.ToolError):  # the Mark side is unreachable: a transport failure is isError: true
        client.call_tool("mark_versions", {"url": "mark://elsewhere:1/x.md"})
    with pytest.raises(proto.ToolError) as unknown:
        client.call_tool("no_such_tool")  # MCPServer answers unknown tools with isError: true
    assert "Unknown tool" in unknown.value.text

    # idle TTL: the SDK reaps the idle session; the next call is a 404 and the user re-initializes.
    time.sleep(3.5)
    user = make_user(MCPUser, environment, process.base_url, timeout=5.0)
    user.client = client
    user.options.tool = "no_such_tool"
    recorder.events.clear()
    user.call()
    names = [(e["name"], type(e["exception"]).__name__ if e["exception"] else None) for e in recorder.events]
    assert names[:3] == [("tools/call no_such_tool", "SessionExpired"), ("initialize", None), ("initialized", None)]
    assert client.session.initializations == 2

    # session cap: once the idle ones are reaped, 4 sessions open and the 5th initialize is refused (503).
    time.sleep(3.5)
    clients = [MCPClient(process.base_url, environment=environment, timeout=5.0) for _ in range(5)]
    for other in clients[:4]:
        other.open_session()
    recorder.events.clear()
    with pytest.raises(proto.SessionRefused):
        clients[4].initialize()
    assert recorder.failures() == [("initialize", "SessionRefused")]
    assert clients[4].session.state is proto.SessionState.NEW
    for other in clients + [client]:
        other.close()


@pytest.mark.timeout(60)
def test_churn_user_starts_a_fresh_session_each_iteration_without_delete(env):
    process = launch(NO_MARK + ["--json-response"])
    try:
        environment, recorder = env
        user = make_user(MCPChurnUser, environment, process.base_url, timeout=5.0)
        user.options.tool = "mark_list"
        user.options.args = {"url": "mark://other:1/"}
        seen = set()
        for _ in range(3):
            user.one_session()
            seen.add(recorder.events[-1]["name"])
        names = recorder.names()
        assert names.count("initialize") == 3 and "DELETE" not in names
        assert names.count("tools/call mark_list") == 3
        import urllib.request

        metrics = urllib.request.urlopen(process.base_url + "/metrics", timeout=5).read().decode()
        assert "mcp_gateway_sessions_live 3" in metrics
    finally:
        process.stop()
