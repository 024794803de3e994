"""MCP over Streamable HTTP, sans-IO: JSON-RPC 2.0 messages and the session state machine.

``MCPSession`` holds what a client must remember between POSTs (negotiated version, ``Mcp-Session-Id``, the next
request id) and builds each body and its headers; ``read_messages`` turns an answer (JSON or SSE bytes) into
JSON-RPC messages, and ``result_of`` picks the response to a request out of them or raises the named error.
No I/O here: the drivers in ``users/mcp_user.py`` and the tests feed it bytes. The named errors are in
``protocols/mcp_errors.py`` and the codec in ``protocols/mcp_messages.py``; this module's namespace holds them all.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from swarmgauge.errors import UsageError
from swarmgauge.protocols.mcp_errors import (
    JSONRPCError,
    MCPError,
    MCPHTTPError,
    MCPProtocolError,
    MCPTimeout,
    MissingSessionId,
    NotJSONRPC,
    SessionExpired,
    SessionRefused,
    SSEStreamError,
    ToolError,
    UnsupportedVersion,
)
from swarmgauge.protocols.mcp_messages import (
    MarkToolText,
    SSEMessageReader,
    decode_json_body,
    decode_sse_data,
    encode,
    error_detail,
    format_tool_text,
    parse_tool_text,
    read_messages,
    result_of,
    tool_text,
    validate_message,
)

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


#: The protocol in one namespace (``from swarmgauge.protocols import mcp as proto``): the session here, the named
#: failures of ``mcp_errors.py`` and the wire codec of ``mcp_messages.py``.
__all__ = [
    "ACCEPT",
    "DEFAULT_VERSION",
    "HANDSHAKE_VERSIONS",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "META_CAPABILITIES_KEY",
    "META_VERSION_KEY",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "SESSION_HEADER",
    "STATELESS_VERSIONS",
    "SUPPORTED_VERSIONS",
    "VERSION_HEADER",
    "JSONRPCError",
    "MCPError",
    "MCPHTTPError",
    "MCPProtocolError",
    "MCPSession",
    "MCPTimeout",
    "MarkToolText",
    "MissingSessionId",
    "NotJSONRPC",
    "Outgoing",
    "SSEMessageReader",
    "SSEStreamError",
    "SessionExpired",
    "SessionRefused",
    "SessionState",
    "ToolError",
    "UnsupportedVersion",
    "decode_json_body",
    "decode_sse_data",
    "encode",
    "error_detail",
    "format_tool_text",
    "parse_tool_text",
    "read_messages",
    "result_of",
    "tool_text",
    "validate_message",
]
