"""The named failures of MCP over Streamable HTTP: each one a failure row of its own, its message from a fixed set
(the server's own words are kept on the exception, out of the name)."""

from __future__ import annotations

from typing import Any

from swarmgauge.errors import SwarmgaugeError


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
