"""MCP's messages on the wire, sans-IO: JSON-RPC 2.0 encoded and checked, an answer's JSON or SSE body read into
messages, the response to a request picked out of them (or its named error raised), and the Mark tools' text."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from swarmgauge.protocols.mcp_errors import (
    JSONRPCError,
    MCPProtocolError,
    NotJSONRPC,
    SSEStreamError,
    ToolError,
)
from swarmgauge.protocols.sse import SSEDecoder, SSEError, SSETruncated


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
