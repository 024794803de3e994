"""JSON-RPC messages and the MCP session state machine, without I/O."""

import json

import pytest

from swarmgauge.errors import UsageError
from swarmgauge.protocols import mcp


def init_result(version="2025-11-25"):
    return {"protocolVersion": version, "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}


def test_handshake_moves_new_initializing_ready_and_sets_headers():
    session = mcp.MCPSession()
    assert session.state is mcp.SessionState.NEW
    outgoing = session.initialize()
    body = json.loads(outgoing.body)
    assert body["method"] == "initialize" and body["params"]["protocolVersion"] == "2025-11-25"
    assert outgoing.headers["Accept"] == "application/json, text/event-stream"
    assert mcp.SESSION_HEADER not in outgoing.headers and mcp.VERSION_HEADER not in outgoing.headers
    assert session.state is mcp.SessionState.INITIALIZING
    session.on_initialize_result(init_result(), "abc123")
    assert session.state is mcp.SessionState.READY
    note = session.initialized()
    assert note.request_id is None and json.loads(note.body) == {
        "jsonrpc": "2.0",
        "method": "notifications/initialized",
    }
    call = session.call_tool("mark_fetch", {"url": "/a.md"})
    assert call.headers[mcp.SESSION_HEADER] == "abc123" and call.headers[mcp.VERSION_HEADER] == "2025-11-25"
    assert json.loads(call.body)["params"] == {"name": "mark_fetch", "arguments": {"url": "/a.md"}}
    assert call.request_id == outgoing.request_id + 1


def test_expiry_drops_the_session_id_and_requires_initialize():
    session = mcp.MCPSession(protocol_version="2025-06-18")
    session.initialize()
    session.on_initialize_result(init_result("2025-06-18"), "sid")
    session.expire()
    assert session.state is mcp.SessionState.EXPIRED and session.needs_initialize
    with pytest.raises(mcp.MCPProtocolError):
        session.call_tool("x")
    again = session.initialize()
    assert mcp.SESSION_HEADER not in again.headers


def test_missing_session_id_is_named_when_required():
    session = mcp.MCPSession(require_session_id=True)
    session.initialize()
    with pytest.raises(mcp.MissingSessionId):
        session.on_initialize_result(init_result(), None)


def test_no_session_id_is_fine_for_a_server_without_sessions():
    session = mcp.MCPSession()
    session.initialize()
    session.on_initialize_result(init_result(), None)
    assert mcp.SESSION_HEADER not in session.call_tool("t").headers


def test_unsupported_negotiated_version_and_bad_option():
    session = mcp.MCPSession()
    session.initialize()
    with pytest.raises(mcp.UnsupportedVersion):
        session.on_initialize_result(init_result("2024-01-01"), "sid")
    with pytest.raises(UsageError):
        mcp.MCPSession(protocol_version="1999-01-01")


def test_stateless_version_has_no_handshake_and_carries_meta():
    session = mcp.MCPSession(protocol_version="2026-07-28")
    assert not session.needs_initialize
    call = session.call_tool("mark_fetch", {"url": "/a"})
    params = json.loads(call.body)["params"]
    assert params["_meta"][mcp.META_VERSION_KEY] == "2026-07-28"
    assert call.headers["Mcp-Method"] == "tools/call" and call.headers["Mcp-Name"] == "mark_fetch"
    with pytest.raises(mcp.MCPProtocolError):
        session.initialize()


def test_sse_answer_with_a_notification_before_the_response():
    stream = (
        b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{}}\n\n'
        b'event: message\ndata: {"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"status: ok\\n\\nbody"}]}}\n\n'
    )
    messages = mcp.read_messages("text/event-stream", stream, 3)
    assert len(messages) == 2
    text = mcp.tool_text(mcp.result_of(messages, 3))
    parsed = mcp.parse_tool_text(text)
    assert parsed.status == "ok" and parsed.body == "body"


def test_jsonrpc_error_carries_its_code():
    body = b'{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"bad params"}}'
    with pytest.raises(mcp.JSONRPCError) as info:
        mcp.result_of(mcp.read_messages("application/json", body, 2), 2)
    assert info.value.code == -32602


def test_is_error_result_is_a_tool_error():
    with pytest.raises(mcp.ToolError) as info:
        mcp.tool_text({"content": [{"type": "text", "text": "boom"}], "isError": True})
    assert info.value.text == "boom" and str(info.value) == "tool reported isError"


@pytest.mark.parametrize("body", [b"<html>oops</html>", b'{"jsonrpc"'])
def test_non_json_body(body):
    with pytest.raises(mcp.MCPProtocolError):
        mcp.read_messages("application/json", body, 1)


@pytest.mark.parametrize(
    "obj",
    [
        {"hello": 1},
        {"jsonrpc": "1.0", "id": 1, "result": {}},
        {"jsonrpc": "2.0", "id": 1},
        {"jsonrpc": "2.0", "id": 1, "error": {"code": "x"}},
        [1],
    ],
)
def test_json_that_is_not_jsonrpc(obj):
    with pytest.raises(mcp.NotJSONRPC):
        mcp.read_messages("application/json", json.dumps(obj).encode(), 1)


def test_sse_garbage_and_cut_off_are_stream_errors():
    with pytest.raises(mcp.SSEStreamError):
        mcp.read_messages("text/event-stream", b"data: not json at all\n\n", 1)
    with pytest.raises(mcp.SSEStreamError):
        mcp.read_messages("text/event-stream", b'data: {"jsonrpc":"2.0","id":1,', 1)
    with pytest.raises(mcp.SSEStreamError):
        mcp.read_messages("text/event-stream", b": only a comment\n\n", 1)


def test_response_for_another_id_is_not_ours():
    with pytest.raises(mcp.MCPProtocolError):
        mcp.result_of([{"jsonrpc": "2.0", "id": 9, "result": {}}], 1)


def test_batch_answer_is_accepted():
    body = b'[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":"n"}]'
    assert mcp.result_of(mcp.read_messages("application/json", body, 1), 1) == {}
