"""A small asyncio HTTP/1.1 server (keep-alive, Content-Length bodies) for the stand-in Gateway.

uvicorn without httptools parses with h11, which is too slow for a 1,000 submits/s burst on a shared core; the
Gateway needs only request line, headers and a JSON body, so this is all it parses.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from http import HTTPStatus
from urllib.parse import parse_qs, unquote, urlsplit

MAX_BODY = 1024 * 1024


@dataclass
class HttpRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    peer: str


@dataclass
class HttpResponse:
    status: int
    body: bytes
    content_type: str = "application/json; charset=utf-8"

    @classmethod
    def json(cls, status: int, value) -> HttpResponse:
        return cls(status, json.dumps(value, separators=(",", ":")).encode())


App = Callable[[HttpRequest], Awaitable[HttpResponse]]

_KNOWN_STATUSES = frozenset(status.value for status in HTTPStatus)


def _head(response: HttpResponse, keep_alive: bool) -> bytes:
    reason = HTTPStatus(response.status).phrase if response.status in _KNOWN_STATUSES else "Status"
    return (
        f"HTTP/1.1 {response.status} {reason}\r\nContent-Type: {response.content_type}\r\n"
        f"Content-Length: {len(response.body)}\r\nConnection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n"
    ).encode("latin-1")


async def serve(host: str, port: int, app: App) -> asyncio.base_events.Server:
    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = (writer.get_extra_info("peername") or ("?",))[0]
        try:
            while True:
                line = await reader.readline()
                if not line.strip():
                    break
                parts = line.decode("latin-1").split()
                if len(parts) != 3:
                    writer.write(_head(HttpResponse(400, b""), False))
                    break
                method, target, version = parts
                headers: dict[str, str] = {}
                while (header := await reader.readline()) not in (b"\r\n", b"\n", b""):
                    name, _, value = header.decode("latin-1").partition(":")
                    headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length") or 0)
                if length > MAX_BODY:
                    writer.write(_head(HttpResponse(413, b""), False))
                    break
                body = await reader.readexactly(length) if length else b""
                url = urlsplit(target)
                request = HttpRequest(method.upper(), unquote(url.path), parse_qs(url.query), headers, body, peer)
                response = await app(request)
                keep_alive = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
                writer.write(_head(response, keep_alive) + response.body)
                await writer.drain()
                if not keep_alive:
                    break
        except (ConnectionError, asyncio.IncompleteReadError, ValueError, UnicodeDecodeError):
            pass
        finally:
            writer.close()

    return await asyncio.start_server(on_connect, host, port, backlog=1024, limit=64 * 1024)
