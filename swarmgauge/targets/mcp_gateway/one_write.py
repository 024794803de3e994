"""uvicorn's h11 protocol with each response's writes sent together: one send, one TCP segment, per answer.

uvicorn writes the status line and headers when the app starts its response and the body when it sends it, two
``transport.write`` calls in the same turn of the loop; with TCP_NODELAY on, each is a send of its own, and the
send was the gateway's largest single cost per tool call (a fifth of its profile). The bytes are the same; the writes
of one turn are joined and sent at the end of it, so a streamed (SSE) answer still goes out event by event.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol


class OneWriteTransport:
    """A socket transport whose writes within one turn of the loop go out as one; everything else is the wrapped
    transport's."""

    def __init__(self, transport: Any, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []

    def write(self, data: bytes) -> None:
        if not data:
            return
        if not self._pending:
            self._loop.call_soon(self._flush)
        self._pending.append(data)

    def _flush(self) -> None:
        pending, self._pending = self._pending, []
        if pending and not self._transport.is_closing():
            self._transport.write(pending[0] if len(pending) == 1 else b"".join(pending))

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class OneWriteH11Protocol(H11Protocol):
    """uvicorn's h11 protocol over a :class:`OneWriteTransport` (``uvicorn.Config(http=...)`` takes the class)."""

    def connection_made(self, transport: Any) -> None:
        super().connection_made(OneWriteTransport(transport, asyncio.get_running_loop()))  # type: ignore[arg-type]
