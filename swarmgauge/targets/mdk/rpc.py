"""JSON-lines RPC over loopback TCP between the stand-in's processes (the real MDK uses HRPC over HyperDHT).

One connection carries many requests at once, matched by id; a caller that loses its peer gets
``RpcUnavailable`` and reconnects on its next call, which is how the stand-in survives restarts in the drills.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
from collections.abc import Awaitable, Callable
from typing import Any

from swarmgauge.errors import SwarmgaugeError

Handler = Callable[[dict[str, Any]], Awaitable[Any]]
LINE_LIMIT = 16 * 1024 * 1024


class RpcError(SwarmgaugeError):
    """The remote handler failed; ``code`` is its ``ERR_...`` code."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


class RpcUnavailable(RpcError):
    """The peer is not connected (refused, reset, or gone while waiting)."""


class RpcTimeout(RpcError):
    """The peer did not answer within the call's timeout."""


async def serve(host: str, port: int, handlers: dict[str, Handler]) -> asyncio.base_events.Server:
    """Answer ``{"id", "method", "params"}`` lines with ``{"id", "result"}`` or ``{"id", "error"}``."""

    async def run_one(message: dict, writer: asyncio.StreamWriter) -> None:
        handler = handlers.get(message.get("method", ""))
        reply: dict[str, Any] = {"id": message.get("id")}
        try:
            if handler is None:
                raise RpcError("ERR_METHOD_NOT_FOUND")
            reply["result"] = await handler(message.get("params") or {})
        except RpcError as exc:
            reply["error"] = exc.code
        except Exception as exc:  # noqa: BLE001 - a handler bug becomes an error reply, never a dead connection
            reply["error"] = f"ERR_INTERNAL: {type(exc).__name__}"
        if not writer.is_closing():
            writer.write(json.dumps(reply, separators=(",", ":")).encode() + b"\n")

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        tasks: set[asyncio.Task] = set()
        try:
            while line := await reader.readline():
                try:
                    message = json.loads(line)
                except ValueError:
                    break
                task = asyncio.ensure_future(run_one(message, writer))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            for task in tasks:
                task.cancel()
            writer.close()

    return await asyncio.start_server(on_connect, host, port, limit=LINE_LIMIT)


class RpcClient:
    """An asyncio caller with one lazily (re)opened connection and many calls in flight."""

    def __init__(self, host: str, port: int, connect_timeout: float = 1.0) -> None:
        self.host, self.port, self.connect_timeout = host, port, connect_timeout
        self._writer: asyncio.StreamWriter | None = None
        self._pending: dict[int, asyncio.Future] = {}
        self._ids = itertools.count(1)
        self._connecting: asyncio.Lock | None = None
        self._reader_task: asyncio.Task | None = None

    @property
    def connected(self) -> bool:
        return self._writer is not None and not self._writer.is_closing()

    async def _connect(self) -> None:
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            if self.connected:
                return
            try:
                reader, writer = await asyncio.wait_for(
                    asyncio.open_connection(self.host, self.port, limit=LINE_LIMIT), self.connect_timeout
                )
            except (TimeoutError, OSError) as exc:
                raise RpcUnavailable("ERR_PEER_UNAVAILABLE") from exc
            self._writer = writer
            self._reader_task = asyncio.ensure_future(self._read_replies(reader, writer))

    async def _read_replies(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                message = json.loads(line)
                future = self._pending.pop(message.get("id"), None)
                if future is not None and not future.done():
                    if "error" in message:
                        future.set_exception(RpcError(str(message["error"])))
                    else:
                        future.set_result(message.get("result"))
        except (ConnectionError, ValueError, asyncio.IncompleteReadError):
            pass
        finally:
            if self._writer is writer:
                self._writer = None
            writer.close()
            for future in list(self._pending.values()):
                if not future.done():
                    future.set_exception(RpcUnavailable("ERR_PEER_UNAVAILABLE"))
            self._pending.clear()

    async def call(self, method: str, params: dict | None = None, timeout: float = 10.0) -> Any:
        if not self.connected:
            await self._connect()
        assert self._writer is not None
        call_id = next(self._ids)
        future = asyncio.get_running_loop().create_future()
        self._pending[call_id] = future
        self._writer.write(json.dumps({"id": call_id, "method": method, "params": params or {}}).encode() + b"\n")
        try:
            return await asyncio.wait_for(future, timeout)
        except TimeoutError as exc:
            raise RpcTimeout("ERR_CHANNEL_TIMEOUT") from exc
        finally:
            self._pending.pop(call_id, None)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


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
