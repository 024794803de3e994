"""JSON-lines RPC over loopback TCP between the stand-in's processes (the real MDK uses HRPC over HyperDHT).

One connection carries many requests at once, matched by id; a caller that loses its peer gets
``RpcUnavailable`` and reconnects on its next call, which is how the stand-in survives restarts in the drills.

Both ends are asyncio protocols, not stream pairs: under 1,000 readers every device read crosses two of these
connections, and the streams' per-line waiters, a ``wait_for`` per call and one ``send`` per message were the
stand-in's own CPU, not the model's. The lines a connection writes in one pass of the event loop go out in one
``send``; a call's timeout is one timer on its future.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
import socket
from collections.abc import Awaitable, Callable
from typing import Any

from swarmgauge.errors import SwarmgaugeError

Handler = Callable[[dict[str, Any]], Awaitable[Any]]
LINE_LIMIT = 16 * 1024 * 1024
_encode = json.JSONEncoder(separators=(",", ":")).encode


class RpcError(SwarmgaugeError):
    """The remote handler failed; ``code`` is its ``ERR_...`` code."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


class RpcUnavailable(RpcError):
    """The peer is not connected (refused, reset, or gone while waiting)."""


class RpcTimeout(RpcError):
    """The peer did not answer within the call's timeout."""


class _Lines(asyncio.Protocol):
    """A connection of JSON lines: complete lines in, and the lines written in one loop pass out as one write."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self._partial: list[bytes] = []
        self._partial_size = 0
        self._outgoing: list[bytes] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if b"\n" not in data:
            self._partial.append(data)
            self._partial_size += len(data)
            if self._partial_size > LINE_LIMIT:
                self.close()
            return
        if self._partial:
            data = b"".join(self._partial) + data
            self._partial.clear()
        *lines, rest = data.split(b"\n")
        if rest:
            self._partial.append(rest)
        self._partial_size = len(rest)
        for line in lines:
            if self.closed:
                return
            try:
                message = json.loads(line)
            except ValueError:
                self.close()
                return
            if not isinstance(message, dict):
                self.close()
                return
            self.message_received(message)

    def message_received(self, message: dict[str, Any]) -> None:
        raise NotImplementedError

    def send(self, message: dict[str, Any]) -> None:
        if self.closed:
            return
        if not self._outgoing:
            asyncio.get_running_loop().call_soon(self._flush)
        self._outgoing.append(_encode(message).encode() + b"\n")

    def _flush(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(b"".join(self._outgoing))
        self._outgoing.clear()

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True


class _Serving(_Lines):
    """The answering end: each request runs its handler, and the reply goes back with the request's id."""

    def __init__(self, handlers: dict[str, Handler]) -> None:
        super().__init__()
        self.handlers = handlers
        self.running: set[asyncio.Future] = set()

    def message_received(self, message: dict[str, Any]) -> None:
        call_id = message.get("id")
        handler = self.handlers.get(message.get("method", ""))
        if handler is None:
            self.send({"id": call_id, "error": "ERR_METHOD_NOT_FOUND"})
            return
        try:
            running = asyncio.ensure_future(handler(message.get("params") or {}))
        except Exception as exc:  # noqa: BLE001 - a handler that fails before its first await answers as one after
            self.send(_error_reply(call_id, exc))
            return
        self.running.add(running)
        running.add_done_callback(functools.partial(self._answer, call_id))

    def _answer(self, call_id: Any, running: asyncio.Future) -> None:
        self.running.discard(running)
        if running.cancelled():
            return
        exc = running.exception()
        self.send({"id": call_id, "result": running.result()} if exc is None else _error_reply(call_id, exc))

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        for running in self.running:
            running.cancel()


def _error_reply(call_id: Any, exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, RpcError):
        return {"id": call_id, "error": exc.code}
    # a handler bug becomes an error reply, never a dead connection
    return {"id": call_id, "error": f"ERR_INTERNAL: {type(exc).__name__}"}


async def serve(host: str, port: int, handlers: dict[str, Handler]) -> asyncio.base_events.Server:
    """Answer ``{"id", "method", "params"}`` lines with ``{"id", "result"}`` or ``{"id", "error"}``."""
    loop = asyncio.get_running_loop()
    return await loop.create_server(lambda: _Serving(handlers), host, port)


class _Calling(_Lines):
    """The calling end: each reply settles the future of its id; a lost connection fails every call in flight."""

    def __init__(self) -> None:
        super().__init__()
        self.pending: dict[int, asyncio.Future] = {}

    def message_received(self, message: dict[str, Any]) -> None:
        future = self.pending.pop(message.get("id"), None)  # type: ignore[arg-type]
        if future is None or future.done():
            return
        if "error" in message:
            future.set_exception(RpcError(str(message["error"])))
        else:
            future.set_result(message.get("result"))

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        for future in self.pending.values():
            if not future.done():
                future.set_exception(RpcUnavailable("ERR_PEER_UNAVAILABLE"))
        self.pending.clear()


def _expire(future: asyncio.Future) -> None:
    if not future.done():
        future.set_exception(RpcTimeout("ERR_CHANNEL_TIMEOUT"))


class RpcClient:
    """An asyncio caller with one lazily (re)opened connection and many calls in flight."""

    def __init__(self, host: str, port: int, connect_timeout: float = 1.0) -> None:
        self.host, self.port, self.connect_timeout = host, port, connect_timeout
        self._connection: _Calling | None = None
        self._ids = itertools.count(1)
        self._connecting: asyncio.Lock | None = None

    @property
    def connected(self) -> bool:
        return self._connection is not None and not self._connection.closed

    async def _connect(self) -> _Calling:
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            if self._connection is not None and not self._connection.closed:
                return self._connection
            loop = asyncio.get_running_loop()
            try:
                _, connection = await asyncio.wait_for(
                    loop.create_connection(_Calling, self.host, self.port), self.connect_timeout
                )
            except (TimeoutError, OSError) as exc:
                raise RpcUnavailable("ERR_PEER_UNAVAILABLE") from exc
            self._connection = connection
            return connection

    async def call(self, method: str, params: dict | None = None, timeout: float = 10.0) -> Any:
        connection = self._connection
        if connection is None or connection.closed:
            connection = await self._connect()
        call_id = next(self._ids)
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        connection.pending[call_id] = future
        connection.send({"id": call_id, "method": method, "params": params or {}})
        timer = loop.call_later(timeout, _expire, future)
        try:
            return await future
        finally:
            timer.cancel()
            connection.pending.pop(call_id, None)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def call_blocking(host: str, port: int, method: str, params: dict | None = None, timeout: float = 2.0) -> Any:
    """One call on a fresh blocking socket, for drills and tools outside an event loop (gevent-patchable)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            sock.sendall(json.dumps({"id": 1, "method": method, "params": params or {}}).encode() + b"\n")
            buffer = b""
            while not buffer.endswith(b"\n"):
                chunk = sock.recv(65536)
                if not chunk:
                    raise RpcUnavailable("ERR_PEER_UNAVAILABLE")
                buffer += chunk
    except TimeoutError as exc:
        raise RpcTimeout("ERR_CHANNEL_TIMEOUT") from exc
    except OSError as exc:
        raise RpcUnavailable("ERR_PEER_UNAVAILABLE") from exc
    message = json.loads(buffer)
    if "error" in message:
        raise RpcError(str(message["error"]))
    return message.get("result")
