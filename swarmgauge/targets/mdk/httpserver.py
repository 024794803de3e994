"""A small asyncio HTTP/1.1 server (keep-alive, Content-Length bodies) for the stand-in Gateway.

uvicorn without httptools parses with h11, which is too slow for a 1,000 submits/s burst on a shared core; the
Gateway needs only request line, headers and a JSON body, so this is all it parses. It is a protocol that parses a
request from the bytes it has, not a stream read line by line: under 1,000 readers the streams' waiters and a read
per header line were most of the Gateway's CPU. Requests on one connection are answered in order, one at a time.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from http import HTTPStatus
from urllib.parse import parse_qs, unquote, urlsplit

MAX_BODY = 1024 * 1024
MAX_HEAD = 64 * 1024


@dataclass(slots=True)
class HttpRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    peer: str


@dataclass(slots=True)
class HttpResponse:
    status: int
    body: bytes
    content_type: str = "application/json; charset=utf-8"

    @classmethod
    def json(cls, status: int, value) -> HttpResponse:
        return cls(status, json.dumps(value, separators=(",", ":")).encode())


App = Callable[[HttpRequest], Awaitable[HttpResponse]]

_REASONS = {status.value: status.phrase for status in HTTPStatus}


def _head(response: HttpResponse, keep_alive: bool) -> bytes:
    return (
        f"HTTP/1.1 {response.status} {_REASONS.get(response.status, 'Status')}\r\n"
        f"Content-Type: {response.content_type}\r\nContent-Length: {len(response.body)}\r\n"
        f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n"
    ).encode("latin-1")


def _target(target: str) -> tuple[str, dict[str, list[str]]]:
    """The path and query of a request target; a plain path (the Gateway's routes) skips the URL parser."""
    if target.startswith("/") and not any(ch in target for ch in "?%#"):
        return target, {}
    url = urlsplit(target)
    return unquote(url.path), parse_qs(url.query)


def _head_end(buffer: bytearray) -> tuple[int, int]:
    """Where the head ends and the body starts, or (-1, -1) while the blank line has not come."""
    crlf, lf = buffer.find(b"\r\n\r\n"), buffer.find(b"\n\n")
    if crlf >= 0 and (lf < 0 or crlf < lf):
        return crlf, crlf + 4
    if lf >= 0:
        return lf, lf + 2
    return -1, -1


class _Connection(asyncio.Protocol):
    def __init__(self, app: App) -> None:
        self.app = app
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self.buffer = bytearray()
        self.busy = False  # a request is with the app; the next waits in the buffer
        self.paused = False  # the client does not read our answers: read no more requests until it does
        self.eof = False  # the client sent all it will: answer what is complete, then close

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.peer = (transport.get_extra_info("peername") or ("?",))[0]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if not self.busy:
            self._next()

    def _refuse(self, status: int) -> None:
        assert self.transport is not None
        self.transport.write(_head(HttpResponse(status, b""), False))
        self.transport.close()

    def _next(self) -> None:
        """Parse the buffer's first request, if it is all there, and hand it to the app."""
        transport = self.transport
        if transport is None or transport.is_closing() or self.paused:
            return
        head_end, body_start = _head_end(self.buffer)
        if head_end < 0:
            if self.eof or len(self.buffer) > MAX_HEAD:
                transport.close()
            return
        try:
            lines = self.buffer[:head_end].decode("latin-1").splitlines()
        except UnicodeDecodeError:
            transport.close()
            return
        if not lines or not lines[0].strip():
            transport.close()  # a blank line where the request line should be: the client is done
            return
        parts = lines[0].split()
        if len(parts) != 3:
            self._refuse(400)
            return
        method, target, version = parts
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        try:
            length = int(headers.get("content-length") or 0)
        except ValueError:
            transport.close()
            return
        if length > MAX_BODY:
            self._refuse(413)
            return
        if len(self.buffer) < body_start + length:
            if self.eof:
                transport.close()
            return
        body = bytes(self.buffer[body_start : body_start + length])
        del self.buffer[: body_start + length]
        path, query = _target(target)
        request = HttpRequest(method.upper(), path, query, headers, body, self.peer)
        keep_alive = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
        self.busy = True
        answering = asyncio.ensure_future(self.app(request))
        answering.add_done_callback(lambda done: self._answered(done, keep_alive))

    def _answered(self, answering: asyncio.Future, keep_alive: bool) -> None:
        self.busy = False
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        failed = None if answering.cancelled() else answering.exception()
        if answering.cancelled() or failed is not None:
            transport.close()  # the app failed: no answer, and the failure logged as the event loop does
            if failed is not None:
                asyncio.get_running_loop().call_exception_handler(
                    {"message": "the stand-in Gateway's app failed", "exception": failed}
                )
            return
        response: HttpResponse = answering.result()
        transport.write(_head(response, keep_alive) + response.body)
        if not keep_alive:
            transport.close()
            return
        self._next()

    def eof_received(self) -> bool:
        self.eof = True
        if not self.busy:
            self._next()
        return True  # half-closed: the transport stays open for the answers still to come

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        if not self.busy:
            self._next()

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None


async def serve(host: str, port: int, app: App) -> asyncio.base_events.Server:
    loop = asyncio.get_running_loop()
    return await loop.create_server(lambda: _Connection(app), host, port, backlog=1024)
