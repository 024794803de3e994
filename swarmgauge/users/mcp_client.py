"""``MCPClient``: MCP Streamable HTTP over Locust's ``FastHttpSession`` (geventhttpclient), one event per operation.

Why FastHttpSession: ``benchmarks/mcp_client.py`` measures bare POSTs of the same ``tools/call`` bytes on both
Locust clients; on a 2-core VM a ``FastHttpUser`` POST cost about 1.1-1.3 ms of CPU per call and an ``HttpUser``
(requests) POST 2.4-2.7 ms, and MCP load is CPU-bound on the generator long before the gateway. We drive its user agent directly (``session.client.urlopen``) so the session
never fires its own ``request`` events: every event goes through ``users/recording.py``.
"""

from __future__ import annotations

import socket
from typing import Any
from urllib.parse import urlsplit

import gevent
from geventhttpclient.response import HTTPConnectionClosed, HTTPParseError
from locust.contrib.fasthttp import FastHttpSession
from locust.env import Environment

from swarmgauge.core import hooks
from swarmgauge.errors import UsageError
from swarmgauge.protocols import mcp as proto
from swarmgauge.users.recording import measure
from swarmgauge.users.single_attempt import close_connections, underlying_fault, unrecorded_session

REQUEST_TYPE = "MCP"
READ_CHUNK = 16 * 1024


class MCPUnreachable(proto.MCPError):
    """The connection failed (refused, reset, closed before an answer); the message is the kind, never the address."""


class MCPConnectionLost(MCPUnreachable):
    """The connection was reset or closed before the answer was complete (a server restart, a proxy cut)."""


class MCPBadHTTP(proto.MCPProtocolError):
    """What came back is not HTTP (a non-HTTP server on the port, a garbled status line or headers)."""


def transport_failure(exc: BaseException) -> proto.MCPError:
    """One named MCP error for any fault below HTTP, with a message from a fixed set (bounded failure rows)."""
    if isinstance(exc, proto.MCPError):
        return exc
    if (original := underlying_fault(exc)) is not exc:
        return transport_failure(original)
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return proto.MCPTimeout("no answer within the timeout")
    if isinstance(exc, HTTPConnectionClosed):
        return MCPConnectionLost("connection closed before the answer was complete")
    if isinstance(exc, HTTPParseError):
        return MCPBadHTTP("answer is not valid HTTP")
    if isinstance(exc, ConnectionRefusedError):
        return MCPUnreachable("connection refused")
    if isinstance(exc, (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)):
        return MCPConnectionLost("connection reset")
    if isinstance(exc, socket.gaierror):
        return MCPUnreachable("host name not resolved")
    if isinstance(exc, OSError):
        return MCPUnreachable(f"network error ({type(exc).__name__})")
    return MCPBadHTTP(f"answer could not be read ({type(exc).__name__})")


def session_lost(status: int, body: bytes) -> bool:
    """404 (the spec), or a 400 whose error says the session id is not valid (server-everything after a restart)."""
    if status == 404:
        return True
    return status == 400 and "session" in proto.error_detail(body).lower()


def split_endpoint(host: str, path: str) -> tuple[str, str]:
    """``(base_url, endpoint_url)``: a ``--host`` with a path of its own is the endpoint; else host + ``--mcp-path``."""
    parts = urlsplit(host)
    base = f"{parts.scheme}://{parts.netloc}"
    if parts.path not in ("", "/"):
        return base, base + parts.path + (f"?{parts.query}" if parts.query else "")
    return base, base + path + (f"?{parts.query}" if parts.query else "")


def _count(environment: Environment | None, name: str, n: int = 1, at: float | None = None) -> None:
    """Per-step counters through the hooks; a client made without an Environment counts nothing."""
    if environment is None:
        return
    hooks.count_step(environment, name, n, at=at)


class MCPClient:
    """One MCP client session against ``base_url + path``; methods raise the named errors of ``protocols.mcp``."""

    def __init__(
        self,
        base_url: str,
        *,
        environment: Environment | None = None,
        path: str = "/mcp",
        protocol_version: str = proto.DEFAULT_VERSION,
        token: str | None = None,
        timeout: float = 10.0,
        require_session_id: bool = False,
        http: FastHttpSession | None = None,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise UsageError(f"MCP host must be an http(s) URL, got {base_url!r}")
        if not path.startswith("/"):
            raise UsageError(f"--mcp-path must start with '/', got {path!r}")
        if timeout <= 0:
            raise UsageError("--mcp-timeout must be positive")
        self.base_url, self.url = split_endpoint(base_url, path)
        self.environment = environment
        self.events = getattr(environment, "events", None)
        self.timeout = timeout
        self._token = token
        self.protocol_version = protocol_version
        self.require_session_id = require_session_id
        self.session = self._new_session()
        self._http = http or self._new_http()
        self.last_status: int | None = None
        self.last_notifications: list[dict[str, Any]] = []

    def _new_session(self) -> proto.MCPSession:
        return proto.MCPSession(protocol_version=self.protocol_version, require_session_id=self.require_session_id)

    def _new_http(self) -> FastHttpSession:
        return unrecorded_session(self.base_url, user=None, timeout=self.timeout, concurrency=1)

    def close(self) -> None:
        """Drop the pooled connections (also after a timeout, so a half-read answer is never reused)."""
        close_connections(self._http)

    # -- measured operations -------------------------------------------------------------------------------------

    def open_session(self) -> dict[str, Any]:
        """initialize + notifications/initialized: two measured requests; returns the InitializeResult."""
        result = self.initialize()
        self.send_initialized()
        return result

    def ensure_session(self) -> None:
        """Initialize when the session era needs it; a stateless version never does."""
        if not self.session.stateless and self.session.needs_initialize:
            self.open_session()

    def initialize(self) -> dict[str, Any]:
        with measure(self.events, REQUEST_TYPE, "initialize", reraise=True) as outcome:
            outgoing = self.session.initialize()
            try:
                messages, headers, length = self._exchange(outgoing)
                outcome.response_length = length
                result = proto.result_of(messages, outgoing.request_id)
                self.session.on_initialize_result(result, headers.get(proto.SESSION_HEADER))
            except proto.SessionRefused:
                self.session.abandon()
                _count(self.environment, "sessions_refused", at=outcome.start_time)
                raise
            except Exception:
                if self.session.state is proto.SessionState.INITIALIZING:
                    self.session.abandon()
                raise
            if self.session.session_id is not None:
                _count(self.environment, "sessions_started", at=outcome.start_time)
        return result

    def send_initialized(self) -> None:
        with measure(self.events, REQUEST_TYPE, "initialized", reraise=True):
            self._exchange(self.session.initialized())

    def call_tool(self, name: str, arguments: dict[str, Any] | None = None, *, progress: bool = False) -> str:
        """``tools/call``; returns the result text, raises ``ToolError`` on ``isError: true``.

        ``progress`` asks for progress notifications (a ``progressToken``); the ones that arrived before the result
        are kept in ``last_notifications`` and counted in the event's context.
        """
        with measure(self.events, REQUEST_TYPE, f"tools/call {name}", reraise=True) as outcome:
            outgoing = self.session.call_tool(name, arguments, progress=progress)
            messages, _, outcome.response_length = self._exchange(outgoing)
            self.last_notifications = [m for m in messages if "method" in m]
            outcome.context["notifications"] = len(self.last_notifications)
            text = proto.tool_text(proto.result_of(messages, outgoing.request_id))
        return text

    def list_tools(self) -> list[dict[str, Any]]:
        with measure(self.events, REQUEST_TYPE, "tools/list", reraise=True) as outcome:
            outgoing = self.session.list_tools()
            messages, _, outcome.response_length = self._exchange(outgoing)
            result = proto.result_of(messages, outgoing.request_id)
        return list(result.get("tools", [])) if isinstance(result, dict) else []

    def list_items(self, method: str) -> list[Any]:
        """``tools/list``, ``resources/list`` or ``prompts/list`` (first page); one measured request named by method."""
        kinds = {"tools/list": "tools", "resources/list": "resources", "prompts/list": "prompts"}
        if method not in kinds:
            raise UsageError(f"unknown MCP list method {method!r}; use one of {', '.join(kinds)}")
        with measure(self.events, REQUEST_TYPE, method, reraise=True) as outcome:
            outgoing = self.session.request(method, {})
            messages, _, outcome.response_length = self._exchange(outgoing)
            result = proto.result_of(messages, outgoing.request_id)
        return list(result.get(kinds[method], [])) if isinstance(result, dict) else []

    def ping(self) -> None:
        with measure(self.events, REQUEST_TYPE, "ping", reraise=True):
            outgoing = self.session.ping()
            messages, _, _ = self._exchange(outgoing)
            proto.result_of(messages, outgoing.request_id)

    def delete(self) -> None:
        """End the session on the server (only with ``--mcp-delete``); 405 means the server does not allow it."""
        if self.session.session_id is None:
            return
        with measure(self.events, REQUEST_TYPE, "DELETE", reraise=True):
            headers = self.session.headers()
            self._add_auth(headers)
            response = self._send("DELETE", b"", headers)
            status = response.status_code
            body = response.content or b""
            self.session.abandon()
            if status not in (200, 202, 204, 405):
                raise proto.MCPHTTPError(status, proto.error_detail(body))

    # -- transport -----------------------------------------------------------------------------------------------

    def _add_auth(self, headers: dict[str, str]) -> None:
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"

    def _send(self, method: str, body: bytes, headers: dict[str, str]) -> Any:
        try:
            return self._http.client.urlopen(self.url, method=method, payload=body, headers=headers)
        except proto.MCPError:
            self.close()
            raise
        except Exception as exc:
            self.close()
            raise transport_failure(exc) from exc

    def _exchange(self, outgoing: proto.Outgoing) -> tuple[list[dict[str, Any]], Any, int]:
        """POST one message; returns (messages, response headers, bytes read). Bounded by ``timeout`` overall."""
        headers = dict(outgoing.headers)
        self._add_auth(headers)
        timer = gevent.Timeout(self.timeout, proto.MCPTimeout(f"no complete answer within {self.timeout:g} s"))
        timer.start()
        try:
            response = self._send("POST", outgoing.body, headers)
            return self._read_answer(outgoing, response)
        except proto.MCPTimeout:
            self.close()
            raise
        except proto.MCPError:
            raise
        except Exception as exc:
            self.close()
            raise transport_failure(exc) from exc
        finally:
            timer.close()

    def _read_answer(self, outgoing: proto.Outgoing, response: Any) -> tuple[list[dict[str, Any]], Any, int]:
        status = response.status_code
        self.last_status = status
        headers = response.headers
        if self.session.session_id is not None and outgoing.method != "initialize" and status in (400, 404):
            body = response.content or b""
            if session_lost(status, body):
                self.session.expire()
                _count(self.environment, "sessions_expired")
                raise proto.SessionExpired(proto.error_detail(body), status)
            raise proto.MCPHTTPError(status, proto.error_detail(body))
        if status == 503 and outgoing.method == "initialize":
            raise proto.SessionRefused(proto.error_detail(response.content or b""))
        if status == 202 and outgoing.request_id is None:
            return [], headers, len(response.content or b"")
        if status != 200:
            raise proto.MCPHTTPError(status, proto.error_detail(response.content or b""))
        content_type = headers.get("content-type") or ""
        if outgoing.request_id is None:
            return [], headers, len(response.content or b"")
        if content_type.split(";", 1)[0].strip().lower() == "text/event-stream":
            reader = proto.SSEMessageReader(outgoing.request_id)
            length = 0
            for chunk in response.iter_content(READ_CHUNK, decode_content=False):
                length += len(chunk)
                reader.feed(chunk)
            reader.close()
            return reader.messages, headers, length
        body = response.content or b""
        return proto.read_messages(content_type, body, outgoing.request_id), headers, len(body)
