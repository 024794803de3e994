"""Transport faults (issue 21.5) and issue 18's client points, against the named FAKE server below the HTTP seam."""

from __future__ import annotations

import pytest
from locust.env import Environment

from swarmgauge.errors import UsageError
from swarmgauge.protocols import mcp as proto
from swarmgauge.users import mcp_user as mcp_users
from swarmgauge.users.mcp_client import MCPClient, session_lost, split_endpoint
from swarmgauge.users.mcp_user import MCPChurnUser, MCPToolUser, MCPUser, options_from
from tests.users.fake_gevent import module_sleeps
from tests.users.fake_mcp_server import FakeMCPServer
from tests.users.test_mcp_user import Recorder, make_user

#: The fake answers each fault at once; the timeout only bounds a hang, and on a loaded machine 2 s was met before
#: the fault (a timeout, not the fault, named)
FAULT_TIMEOUT = 10.0
# Every failure name a fault below may produce: (request name, exception class, message).
BOUNDED = {
    ("MCPConnectionLost", "connection closed before the answer was complete"),
    ("MCPConnectionLost", "connection reset"),
    ("MCPBadHTTP", "answer is not valid HTTP"),
    ("MCPUnreachable", "connection refused"),
}


@pytest.fixture
def fake():
    server = FakeMCPServer().start()
    yield server
    server.stop()


@pytest.fixture
def env():
    environment = Environment()
    return environment, Recorder(environment)


@pytest.fixture
def sleeps(monkeypatch):
    """Backoff sleeps, recorded instead of slept."""
    slept: list[float] = []
    monkeypatch.setattr(mcp_users, "gevent", module_sleeps(slept.append))
    return slept


def failure_kinds(recorder):
    return {(type(e["exception"]).__name__, str(e["exception"])) for e in recorder.events if e["exception"]}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("path", ["/cut", "/nonhttp", "/reset", "/badstatus"])
def test_a_fault_during_initialize_is_named_and_the_user_lives_on(fake, env, sleeps, path):
    environment, recorder = env
    user = make_user(MCPUser, environment, fake.url, path=path, timeout=FAULT_TIMEOUT)
    user.on_start()
    for _ in range(3):
        user.call()
    assert [e["name"] for e in recorder.events] == ["initialize"] * 4
    assert failure_kinds(recorder) <= BOUNDED, failure_kinds(recorder)
    assert user.client.session.needs_initialize


@pytest.mark.timeout(60)
@pytest.mark.parametrize("path", ["/cut", "/nonhttp", "/reset", "/badstatus"])
def test_a_fault_mid_session_is_named_with_no_traceback(fake, env, sleeps, path):
    environment, recorder = env
    client = MCPClient(fake.url, environment=environment, path="/mcp", timeout=FAULT_TIMEOUT)
    client.open_session()
    client.url = fake.url + path
    for _ in range(2):
        with pytest.raises(proto.MCPError):
            client.call_tool("echo")
    assert failure_kinds(recorder) <= BOUNDED and len(failure_kinds(recorder)) == 1


def test_a_wrong_jsonrpc_id_makes_one_failure_name_whatever_the_id(fake, env):
    environment, recorder = env
    user = make_user(MCPUser, environment, fake.url, path="/wrongid")
    user.on_start()
    for _ in range(5):
        user.call()
    names = {(e["name"], repr(e["exception"])) for e in recorder.events if e["exception"]}
    assert len(names) == 1
    assert "1000" not in next(iter(names))[1]


def test_backoff_against_a_refused_port_doubles_to_a_cap_and_resets_on_an_answer(fake, env, sleeps):
    environment, recorder = env
    user = make_user(MCPUser, environment, "http://127.0.0.1:9", timeout=1.0)
    for _ in range(12):
        user.call()
    assert sleeps[0] == mcp_users.BACKOFF_FIRST
    assert all(b == min(mcp_users.BACKOFF_MAX, 2 * a) for a, b in zip(sleeps, sleeps[1:]))
    assert max(sleeps) == mcp_users.BACKOFF_MAX
    assert failure_kinds(recorder) == {("MCPUnreachable", "connection refused")}
    user.client = MCPClient(fake.url, environment=environment)
    user.call()
    assert user.backoff.faults == 0 and user.backoff.delay == 0.0


def test_server_text_never_reaches_the_failure_name():
    assert str(proto.MCPHTTPError(500, "secret payload 123")) == "HTTP 500"
    assert str(proto.JSONRPCError(-32602, "bad id 77")) == "JSON-RPC -32602"
    assert str(proto.JSONRPCError(4711, "row 99 missing")) == "JSON-RPC application error"
    error = proto.ToolError("no such doc 42")
    assert "42" not in str(error) and error.text == "no such doc 42"


def test_session_loss_is_the_spec_404_or_a_400_about_the_session():
    lost = b'{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}'
    assert session_lost(404, b"")
    assert session_lost(400, lost)
    assert not session_lost(400, b'{"jsonrpc":"2.0","error":{"code":-32602,"message":"Invalid params"},"id":1}')
    assert not session_lost(500, lost)


def test_400_no_valid_session_reinitializes_and_is_counted_once(fake, env):
    environment, recorder = env
    user = make_user(MCPUser, environment, fake.url, path="/lost400")
    user.on_start()
    user.call()
    assert [(e["name"], type(e["exception"]).__name__) for e in recorder.events] == [
        ("initialize", "NoneType"),
        ("initialized", "NoneType"),
        ("tools/call echo", "SessionExpired"),
        ("initialize", "NoneType"),
        ("initialized", "NoneType"),
        ("tools/call echo", "NoneType"),
    ]
    assert user.client.session.initializations == 2


def test_a_host_with_a_path_is_the_endpoint():
    assert split_endpoint("http://127.0.0.1:3001/mcp", "/mcp") == ("http://127.0.0.1:3001", "http://127.0.0.1:3001/mcp")
    assert split_endpoint("http://127.0.0.1:3001/", "/mcp") == ("http://127.0.0.1:3001", "http://127.0.0.1:3001/mcp")
    assert split_endpoint("http://127.0.0.1:3001/x/y", "/mcp")[1] == "http://127.0.0.1:3001/x/y"
    assert MCPClient("http://127.0.0.1:3001/api/mcp").url == "http://127.0.0.1:3001/api/mcp"


def test_stateless_churn_sends_one_self_contained_call_per_session(fake, env, monkeypatch):
    environment, recorder = env
    user = make_user(MCPChurnUser, environment, fake.url)
    user.options.protocol = "2026-07-28"
    user.client = user._new_client()
    monkeypatch.setattr(mcp_users, "gevent", module_sleeps(lambda _seconds: None))
    for _ in range(3):
        user.one_session()
    assert recorder.names() == ["tools/call echo"] * 3 and not recorder.failures()
    sent = [message for _, message in fake.requests]
    assert all(m["params"]["_meta"][proto.META_VERSION_KEY] == "2026-07-28" for m in sent)


def test_tool_user_mixes_list_calls_by_weight_in_one_session(fake, env):
    environment, recorder = env
    user = make_user(MCPToolUser, environment, fake.url)
    user.options.list_weight = 1.0
    user._mix.seed(7)
    user.on_start()
    for _ in range(40):
        user.call()
    names = recorder.names()
    assert names.count("initialize") == 1
    assert names.count("tools/list") > 5 and names.count("tools/call echo") > 5
    assert not recorder.failures()


def test_bad_list_weight_is_a_usage_error():
    class Bad:
        mcp_list_weight = -1

    with pytest.raises(UsageError):
        options_from(Bad())


@pytest.mark.parametrize(
    "field, value",
    [
        ("mcp_timeout", float("nan")),
        ("mcp_timeout", float("inf")),
        ("mcp_timeout", -1.0),
        ("mcp_churn_rate", float("nan")),
    ],
)
def test_non_finite_or_negative_numbers_are_usage_errors(field, value):
    bad = type("Bad", (), {field: value})
    with pytest.raises(UsageError):
        options_from(bad())
