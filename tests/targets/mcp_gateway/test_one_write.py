"""The gateway's HTTP writes: what uvicorn writes in one turn of the loop leaves in one send, the same bytes in the
same order; writes of later turns (an SSE stream's events) leave on their own; a close sends what waits first."""

from __future__ import annotations

import asyncio

from swarmgauge.targets.mcp_gateway.one_write import OneWriteTransport


class RecordingTransport:
    def __init__(self) -> None:
        self.sent: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.sent.append(bytes(data))

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str, default=None):
        return ("127.0.0.1", 8000) if name == "sockname" else default


def test_one_turns_writes_are_one_send_and_later_turns_their_own():
    async def run() -> RecordingTransport:
        inner = RecordingTransport()
        transport = OneWriteTransport(inner, asyncio.get_running_loop())
        transport.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n")
        transport.write(b"{}")
        transport.write(b"")
        assert inner.sent == []  # nothing leaves before the turn ends
        await asyncio.sleep(0)
        transport.write(b"event: one\r\n\r\n")
        await asyncio.sleep(0)
        transport.write(b"event: two\r\n\r\n")
        transport.close()
        assert transport.get_extra_info("sockname") == ("127.0.0.1", 8000)  # the rest is the wrapped transport's
        return inner

    inner = asyncio.run(run())
    assert inner.sent == [
        b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}",
        b"event: one\r\n\r\n",
        b"event: two\r\n\r\n",
    ]
    assert inner.closed


def test_nothing_is_written_to_a_transport_closing_under_it():
    async def run() -> RecordingTransport:
        inner = RecordingTransport()
        transport = OneWriteTransport(inner, asyncio.get_running_loop())
        transport.write(b"late")
        inner.closed = True  # the peer went away before the turn ended
        await asyncio.sleep(0)
        return inner

    assert asyncio.run(run()).sent == []
