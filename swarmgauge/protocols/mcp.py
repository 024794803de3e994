"""MCP over Streamable HTTP, sans-IO: JSON-RPC 2.0 messages and the session state machine.

``MCPSession`` holds what a client must remember between POSTs (negotiated version, ``Mcp-Session-Id``, the next
request id) and builds each body and its headers; ``read_messages`` turns an answer (JSON or SSE bytes) into
JSON-RPC messages, and ``result_of`` picks the response to a request out of them or raises the named error.
No I/O here: the drivers in ``users/mcp_user.py`` and the tests feed it bytes.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from swarmgauge.errors import SwarmgaugeError, UsageError
from swarmgauge.protocols.sse import SSEDecoder, SSEError, SSETruncated

HANDSHAKE_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")
STATELESS_VERSIONS = ("2026-07-28",)
SUPPORTED_VERSIONS = HANDSHAKE_VERSIONS + STATELESS_VERSIONS
DEFAULT_VERSION = "2025-11-25"
SESSION_HEADER = "Mcp-Session-Id"
VERSION_HEADER = "MCP-Protocol-Version"
ACCEPT = "application/json, text/event-stream"
META_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


class MCPError(SwarmgaugeError):
    """Base of every MCP failure swarmgauge records."""


class MCPProtocolError(MCPError):
    """The answer is not what the transport promises: not JSON, not JSON-RPC, no response to our request."""


class NotJSONRPC(MCPProtocolError):
    """Valid JSON that is not a JSON-RPC 2.0 message."""


class SSEStreamError(MCPProtocolError):
    """The ``text/event-stream`` answer was garbled or cut off before our response arrived."""


class MissingSessionId(MCPProtocolError):
    """A stateful-era server answered ``initialize`` without ``Mcp-Session-Id`` when the client requires one."""


class UnsupportedVersion(MCPProtocolError):
    """The server negotiated a protocol version this client does not speak."""


class MCPHTTPError(MCPError):
    """An HTTP status the transport does not define as success (500, 400, 406, ...).

    The message is the status alone, so failure rows stay few; the server's own words are kept in ``detail``.
    """

    def __init__(self, status: int, detail: str = "") -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.detail = detail


class SessionExpired(MCPHTTPError):
    """The server no longer knows our session (restarted, terminated or reaped): re-initialize without the id.

    The spec says 404; widely used servers answer 400 instead (server-everything: "No valid session ID provided").
    """

    def __init__(self, detail: str = "", status: int = 404) -> None:
        super().__init__(status, detail)


class SessionRefused(MCPHTTPError):
    """503 on initialize: the server is at its session cap."""

    def __init__(self, detail: str = "") -> None:
        super().__init__(503, detail)


class MCPTimeout(MCPError):
    """No (complete) answer within the client's timeout."""


class JSONRPCError(MCPError):
    """A JSON-RPC error response; ``code`` is the server's error code.

    The message names the code when it is one of JSON-RPC's reserved range and says "application error" otherwise,
    so a server cannot make a failure row per answer; the server's text is kept in ``rpc_message``.
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"JSON-RPC {code}" if -32768 <= code <= -32000 else "JSON-RPC application error")
        self.code = code
        self.rpc_message = message
        self.data = data


class ToolError(MCPError):
    """A ``tools/call`` result with ``isError: true``; the tool's text is kept in ``text``, out of the failure name."""

    def __init__(self, text: str = "") -> None:
        super().__init__("tool reported isError")
        self.text = text


class SessionState(enum.Enum):
    NEW = "new"
    INITIALIZING = "initializing"
    READY = "ready"
    EXPIRED = "expired"


@dataclass
class Outgoing:
    """One POST to make: the body bytes, the headers the session adds, and the id to wait for (None: notification)."""

    body: bytes
    headers: dict[str, str]
    request_id: int | None
    method: str


@dataclass
class MCPSession:
    """Client-side session state: new → initializing → ready → (404) expired → initializing …"""

    protocol_version: str = DEFAULT_VERSION
    client_name: str = "swarmgauge"
    client_version: str = "0.1.0"
    require_session_id: bool = False
    capabilities: dict[str, Any] = field(default_factory=dict)
    state: SessionState = SessionState.NEW
    session_id: str | None = None
    negotiated_version: str | None = None
    server_info: dict[str, Any] = field(default_factory=dict)
    initializations: int = 0
    _next_id: int = 1

    def __post_init__(self) -> None:
        if self.protocol_version not in SUPPORTED_VERSIONS:
            raise UsageError(
                f"MCP protocol version {self.protocol_version!r} is not supported; use one of {', '.join(SUPPORTED_VERSIONS)}"
            )
        if self.stateless:
            self.state = SessionState.READY
            self.negotiated_version = self.protocol_version

    @property
    def stateless(self) -> bool:
        """2026-07-28 and later: no handshake, no session; each request carries its version in ``_meta``."""
        return self.protocol_version in STATELESS_VERSIONS

    @property
    def needs_initialize(self) -> bool:
        return self.state in (SessionState.NEW, SessionState.EXPIRED)

    def initialize(self) -> Outgoing:
        """Start (or restart after expiry) the handshake; the old session id is dropped, as the spec requires."""
        if self.stateless:
            raise MCPProtocolError("stateless protocol versions have no initialize")
        self.state = SessionState.INITIALIZING
        self.session_id = None
        self.negotiated_version = None
        params = {
            "protocolVersion": self.protocol_version,
            "capabilities": self.capabilities,
            "clientInfo": {"name": self.client_name, "version": self.client_version},
        }
        return self._request("initialize", params)

    def on_initialize_result(self, result: Any, session_id: str | None) -> None:
        """Take the InitializeResult and the header the answer carried; the session becomes ready."""
        if self.state is not SessionState.INITIALIZING:
            raise MCPProtocolError(f"initialize result while {self.state.value}")
        if not isinstance(result, dict) or not isinstance(result.get("protocolVersion"), str):
            raise MCPProtocolError("InitializeResult without protocolVersion")
        version = result["protocolVersion"]
        if version not in HANDSHAKE_VERSIONS:
            self.state = SessionState.NEW
            raise UnsupportedVersion("server chose a protocol version this client does not speak")
        if session_id is None and self.require_session_id:
            self.state = SessionState.NEW
            raise MissingSessionId("initialize answered without Mcp-Session-Id")
        if session_id is not None and not _visible_ascii(session_id):
            self.state = SessionState.NEW
            raise MCPProtocolError("Mcp-Session-Id has characters outside visible ASCII")
        self.session_id = session_id
        self.negotiated_version = version
        self.server_info = dict(result.get("serverInfo") or {})
        self.state = SessionState.READY
        self.initializations += 1

    def initialized(self) -> Outgoing:
        """The ``notifications/initialized`` the client sends once the result is in (answer: 202, no body)."""
        return self._notification("notifications/initialized")

    def list_tools(self, cursor: str | None = None) -> Outgoing:
        return self._request("tools/list", {"cursor": cursor} if cursor else {})

    def call_tool(self, name: str, arguments: dict[str, Any] | None = None, progress: bool = False) -> Outgoing:
        """``progress``: ask for progress notifications, with the request id as the token."""
        params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
        if progress:
            params["_meta"] = {"progressToken": self._next_id}
        return self._request("tools/call", params, mcp_name=name)

    def ping(self) -> Outgoing:
        return self._request("ping", {})

    def request(self, method: str, params: dict[str, Any]) -> Outgoing:
        """Any other request (``resources/list``, ``prompts/list`` ...) in the current session."""
        return self._request(method, params)

    def expire(self) -> None:
        """The server answered 404 for our session id: forget it; the next call must initialize again."""
        self.session_id = None
        self.negotiated_version = None if not self.stateless else self.protocol_version
        self.state = SessionState.EXPIRED if not self.stateless else SessionState.READY

    def abandon(self) -> None:
        """Forget the session without telling the server (churn never sends DELETE)."""
        self.expire()
        if not self.stateless:
            self.state = SessionState.NEW

    def headers(self, method: str | None = None, mcp_name: str | None = None) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": ACCEPT}
        if self.session_id is not None:
            headers[SESSION_HEADER] = self.session_id
        if self.negotiated_version is not None:
            headers[VERSION_HEADER] = self.negotiated_version
        if self.stateless and method is not None:
            headers["Mcp-Method"] = method
            if mcp_name is not None:
                headers["Mcp-Name"] = mcp_name
        return headers

    def _request(self, method: str, params: dict[str, Any], mcp_name: str | None = None) -> Outgoing:
        if method != "initialize" and self.state is not SessionState.READY:
            raise MCPProtocolError(f"{method} before the session is ready ({self.state.value})")
        request_id = self._next_id
        self._next_id += 1
        if self.stateless:
            params = dict(params)
            meta = dict(params.get("_meta") or {})
            meta[META_VERSION_KEY] = self.protocol_version
            meta[META_CAPABILITIES_KEY] = self.capabilities
            params["_meta"] = meta
        body = encode({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return Outgoing(body, self.headers(method, mcp_name), request_id, method)

    def _notification(self, method: str) -> Outgoing:
        body = encode({"jsonrpc": "2.0", "method": method})
        return Outgoing(body, self.headers(method), None, method)


def _visible_ascii(text: str) -> bool:
    return bool(text) and all(0x21 <= ord(ch) <= 0x7E for ch in text)


def encode(message: dict[str, Any]) -> bytes:
    """Compact JSON, as every SDK sends it."""
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def validate_message(obj: Any) -> dict[str, Any]:
    """Return ``obj`` if it is a JSON-RPC 2.0 request, notification or response; raise ``NotJSONRPC`` if not."""
    if not isinstance(obj, dict) or obj.get("jsonrpc") != "2.0":
        raise NotJSONRPC("not a JSON-RPC 2.0 message")
    if "method" in obj:
        if not isinstance(obj["method"], str):
            raise NotJSONRPC("JSON-RPC method is not a string")
        return obj
    if "id" not in obj:
        raise NotJSONRPC("JSON-RPC message with neither method nor id")
    has_result, has_error = "result" in obj, "error" in obj
    if has_result == has_error:
        raise NotJSONRPC("JSON-RPC response needs exactly one of result and error")
    if has_error:
        error = obj["error"]
        if (
            not isinstance(error, dict)
            or not isinstance(error.get("code"), int)
            or not isinstance(error.get("message"), str)
        ):
            raise NotJSONRPC("JSON-RPC error without integer code and string message")
    return obj


def decode_json_body(body: bytes) -> list[dict[str, Any]]:
    """An ``application/json`` answer: one message, or a batch (2025-03-26 allows arrays)."""
    try:
        obj = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MCPProtocolError("answer is not JSON") from exc
    items = obj if isinstance(obj, list) else [obj]
    return [validate_message(item) for item in items]


def decode_sse_data(data: str) -> list[dict[str, Any]]:
    try:
        obj = json.loads(data)
    except ValueError as exc:
        raise SSEStreamError("SSE data is not JSON") from exc
    items = obj if isinstance(obj, list) else [obj]
    return [validate_message(item) for item in items]


class SSEMessageReader:
    """Turns SSE chunks into JSON-RPC messages and stops at the response to ``request_id``."""

    def __init__(self, request_id: int | None) -> None:
        self.request_id = request_id
        self.decoder = SSEDecoder()
        self.messages: list[dict[str, Any]] = []
        self.response: dict[str, Any] | None = None

    def feed(self, chunk: bytes) -> bool:
        """Add a chunk; True once the response to our request has arrived."""
        try:
            events = self.decoder.feed(chunk)
        except SSEError as exc:
            raise SSEStreamError(_sse_reason(exc)) from exc
        for event in events:
            if event.event != "message" or not event.data.strip():
                continue
            for message in decode_sse_data(event.data):
                self.messages.append(message)
                if self.response is None and _answers(message, self.request_id):
                    self.response = message
        return self.response is not None

    def close(self) -> None:
        """End of stream: an unfinished event, or no response at all, is an ``SSEStreamError``."""
        if self.response is not None:
            return
        try:
            self.decoder.close()
        except SSEError as exc:
            raise SSEStreamError(_sse_reason(exc)) from exc
        raise SSEStreamError("event stream ended without a response to the request")


def _answers(message: dict[str, Any], request_id: int | None) -> bool:
    return "method" not in message and request_id is not None and message.get("id") == request_id


def read_messages(content_type: str, body: bytes, request_id: int | None) -> list[dict[str, Any]]:
    """Every JSON-RPC message in a complete answer body, JSON or SSE."""
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind == "text/event-stream":
        reader = SSEMessageReader(request_id)
        reader.feed(body)
        reader.close()
        return reader.messages
    if kind == "application/json" or not kind:
        return decode_json_body(body)
    raise MCPProtocolError("unexpected Content-Type")


def result_of(messages: Iterable[dict[str, Any]], request_id: int | None) -> Any:
    """The ``result`` of the response to ``request_id``; a JSON-RPC error raises ``JSONRPCError`` with its code."""
    for message in messages:
        if _answers(message, request_id):
            if "error" in message:
                error = message["error"]
                raise JSONRPCError(error["code"], error["message"], error.get("data"))
            return message["result"]
    raise MCPProtocolError("no response to the request in the answer (wrong or missing id)")


def error_detail(body: bytes) -> str:
    """A short reason from an HTTP error body (a JSON-RPC error message if there is one)."""
    try:
        obj = json.loads(body)
        if isinstance(obj, dict) and isinstance(obj.get("error"), dict):
            return str(obj["error"].get("message", ""))[:200]
    except (ValueError, UnicodeDecodeError):
        pass
    return body[:200].decode("utf-8", "replace")


def tool_text(result: Any) -> str:
    """The text of a ``tools/call`` result; ``isError: true`` raises ``ToolError`` with that text."""
    if not isinstance(result, dict) or not isinstance(result.get("content", []), list):
        raise MCPProtocolError("tools/call result without a content list")
    texts = [
        block.get("text", "")
        for block in result.get("content", [])
        if isinstance(block, dict) and block.get("type") == "text"
    ]
    text = "\n".join(texts)
    if result.get("isError"):
        raise ToolError(text.splitlines()[0][:200] if text else "")
    return text


@dataclass(frozen=True)
class MarkToolText:
    """The demarkus tool-text convention: ``status: s`` then ``key: value`` lines, a blank line, the body."""

    status: str
    fields: dict[str, str]
    body: str


def parse_tool_text(text: str) -> MarkToolText:
    head, _, body = text.partition("\n\n")
    fields: dict[str, str] = {}
    for line in head.splitlines():
        key, sep, value = line.partition(": ")
        if sep:
            fields[key.strip()] = value
    if "status" not in fields:
        raise MCPProtocolError("tool text has no status line")
    status = fields.pop("status")
    return MarkToolText(status, fields, body)


def format_tool_text(status: str, fields: dict[str, str], body: str) -> str:
    lines = [f"status: {status}"] + [f"{key}: {value}" for key, value in fields.items()]
    return "\n".join(lines) + "\n\n" + body


def _sse_reason(exc: SSEError) -> str:
    """A fixed text per kind of SSE fault (the decoder's own message may quote the stream)."""
    if isinstance(exc, SSETruncated):
        return "event stream ended in the middle of an event"
    return "event stream is garbled (" + type(exc).__name__ + ")"
