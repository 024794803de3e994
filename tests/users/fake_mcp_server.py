"""A deliberately misbehaving HTTP "MCP server" (a FAKE, for bad-input tests of the client only).

Each path misbehaves one way; initialize is answered properly on paths that fail later, so the failure lands on
``tools/call``. It speaks just enough HTTP/1.1 (Content-Length bodies, keep-alive) for geventhttpclient.
"""

from __future__ import annotations

import json
import socket
import struct

import gevent
from gevent.server import StreamServer

INIT_RESULT = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "fake", "version": "0"}}


def _response(status: int, body: bytes, content_type: str = "application/json", extra: str = "") -> bytes:
    reason = {
        200: "OK",
        202: "Accepted",
        400: "Bad Request",
        404: "Not Found",
        500: "Internal Server Error",
        503: "Unavailable",
    }[status]
    head = f"HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n{extra}\r\n"
    return head.encode() + body


# Transport faults, answered to initialize and tools/call alike; an empty answer closes the socket unanswered.
INIT_FAULTS = {
    "/cut": b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\nConnection: close\r\n"
    b'\r\n{"js',
    "/nonhttp": b"SSH-2.0-OpenSSH_9.2\r\nConnection: close\r\n",
    "/reset": b"",
    "/badstatus": b"HTTP/1.1 2x0 WHAT\r\nConnection: close\r\n\r\n",
}


class FakeMCPServer:
    """``start()`` binds 127.0.0.1:0; ``url`` is the base; the path picks the misbehaviour."""

    def __init__(self) -> None:
        self.server = StreamServer(("127.0.0.1", 0), self._handle)
        self.requests: list[tuple[str, dict]] = []
        self.lost_once = False

    def start(self) -> FakeMCPServer:
        self.server.start()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def stop(self) -> None:
        self.server.stop(timeout=1)

    def _handle(self, sock, _address) -> None:
        reader = sock.makefile("rb")
        try:
            while True:
                line = reader.readline()
                if not line:
                    return
                _method, path, _ = line.decode().split(" ", 2)
                headers = {}
                while True:
                    header = reader.readline().decode()
                    if header in ("\r\n", "\n", ""):
                        break
                    key, _, value = header.partition(":")
                    headers[key.strip().lower()] = value.strip()
                body = reader.read(int(headers.get("content-length", "0")))
                message = json.loads(body) if body else {}
                self.requests.append((path, message))
                answer = self._answer(path, message)
                if answer is None:
                    return
                if answer == b"":
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close = RST
                    return
                sock.sendall(answer)
                if b"Connection: close" in answer[:200]:
                    return
        except (OSError, ValueError):
            return
        finally:
            reader.close()
            sock.close()

    def _answer(self, path: str, message: dict) -> bytes | None:
        method = message.get("method")
        if method == "initialize" and path in INIT_FAULTS:
            return INIT_FAULTS[path]
        if method == "tools/call" and path in INIT_FAULTS:
            return INIT_FAULTS[path]
        if method == "tools/call" and path == "/wrongid":
            return _response(200, json.dumps({"jsonrpc": "2.0", "id": message["id"] + 1000, "result": {}}).encode())
        if method == "initialize":
            if path == "/nosession":
                return _response(
                    200, json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": INIT_RESULT}).encode()
                )
            return _response(
                200,
                json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": INIT_RESULT}).encode(),
                extra="Mcp-Session-Id: fake-session-1\r\n",
            )
        if method == "notifications/initialized":
            return _response(202, b"")
        if path == "/nonjson":
            return _response(200, b"<html>502 bad gateway</html>")
        if path == "/notrpc":
            return _response(200, b'{"result": "looks like JSON, is not JSON-RPC"}')
        if path == "/sse-garbage":
            return _response(200, b"event: message\ndata: \x00\x01garbage{{{\n\n", "text/event-stream")
        if path == "/sse-cut":
            head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
            return head + b'event: message\ndata: {"jsonrpc":"2.0","id":' + str(message.get("id")).encode()
        if path == "/500":
            return _response(500, b"Internal Server Error")
        if path == "/expire":
            return _response(404, b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Session not found"}}')
        if path == "/lost400" and method == "tools/call" and not self.lost_once:
            self.lost_once = True  # as server-everything answers a session id it lost in a restart
            return _response(
                400,
                b'{"jsonrpc":"2.0","error":{"code":-32000,'
                b'"message":"Bad Request: No valid session ID provided"},"id":null}',
            )
        if path == "/hang":
            gevent.sleep(30)
            return None
        return _response(
            200,
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": message.get("id"),
                    "result": {"content": [{"type": "text", "text": "status: ok\n\nhello"}]},
                }
            ).encode(),
        )
