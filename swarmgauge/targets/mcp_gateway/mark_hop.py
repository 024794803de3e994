"""The gateway's one QUIC connection to the Mark server, on either engine's asyncio protocol.

A request goes on a new bidirectional stream with its FIN in the same call (``QuicEngine.open_stream``), and its
answer is buffered to the server's FIN and handed over whole: no ``asyncio.StreamReader``/``StreamWriter`` pair per
request, whose write, write_eof and read cost more than the Mark hop itself on qh3. Like the reference server's
``MarkStreams``, a mixin over the engine's ``QuicConnectionProtocol`` (:func:`hop_protocol` makes the pair); it
keeps its own reference to the connection and its own closed flag, so nothing reads the library protocol's fields.
"""

from __future__ import annotations

import asyncio
from typing import Any

from swarmgauge.quic.acks import ack_hold_until
from swarmgauge.quic.engine import QuicEngine


class MarkHop:
    """Requests over one QUIC connection; the asyncio protocol of the connection, mixed into the engine's own."""

    def __init__(self, quic: Any, *, quic_engine: QuicEngine, **kwargs: Any) -> None:
        super().__init__(quic, **kwargs)  # type: ignore[call-arg]  # the engine's QuicConnectionProtocol
        self._hop_quic = quic
        self._engine = quic_engine
        self._hop_loop = asyncio.get_running_loop()
        self._answers: dict[int, tuple[bytearray, asyncio.Future[bytes]]] = {}
        self._credit: asyncio.Event | None = None  # set after each pass while a request waits for stream credit
        self._terminated = False
        self._ack_held_until: float | None = None  # an ACK alone waits until then for a request to carry it
        self._ack_release: asyncio.TimerHandle | None = None
        quic_engine.delay_acks(quic)  # as the Mark client: the ACK of an answer rides on the next request

    @property
    def is_closed(self) -> bool:
        """Closed, or closing: the library knows of the close at once, its event comes three PTOs later."""
        return self._terminated or self._engine.close_event(self._hop_quic) is not None

    async def request(self, payload: bytes, timeout: float) -> bytes:
        """Send ``payload`` on a new stream with FIN; everything the server sends up to its FIN. TimeoutError past
        ``timeout``; ConnectionError when the connection or the stream is lost."""
        loop = self._hop_loop
        deadline = loop.time() + timeout
        if self.is_closed:
            raise ConnectionError("the Mark connection is closed")
        stream_id = self._engine.open_stream(self._hop_quic, payload, True)
        if stream_id is None:
            stream_id = await self._open_when_credited(payload, deadline)
        answer: asyncio.Future[bytes] = loop.create_future()
        self._answers[stream_id] = (bytearray(), answer)
        timer = loop.call_at(deadline, _expire, answer)
        try:
            self._engine.ack_with_next_packet(self._hop_quic, loop.time())
            self._send_now()  # never held: the engine's timer still names the ACK though a request now waits too
            return await answer
        finally:
            timer.cancel()
            self._answers.pop(stream_id, None)

    async def _open_when_credited(self, payload: bytes, deadline: float) -> int:
        """qh3 opens no stream past the server's cumulative limit: wait for its MAX_STREAMS, within the deadline.
        A held ACK goes at once: the server frees a finished stream's credit only once its answer is acknowledged."""
        if self._ack_held_until is not None:
            self._send_now()
        while True:
            remaining = deadline - self._hop_loop.time()
            if remaining <= 0:
                raise TimeoutError("no stream credit from the Mark server")
            credit = self._credit = self._credit or asyncio.Event()
            credit.clear()
            try:
                await asyncio.wait_for(credit.wait(), remaining)
            except TimeoutError:
                raise TimeoutError("no stream credit from the Mark server") from None
            if self.is_closed:
                raise ConnectionError("the Mark connection closed while waiting for stream credit")
            stream_id = self._engine.open_stream(self._hop_quic, payload, True)
            if stream_id is not None:
                return stream_id

    def transmit(self) -> None:
        """Send what the connection owes, except an ACK alone: it waits (``ack_hold_until``) for the next request
        to carry it, as the Mark client's driver holds it (qh3 ACKs a FIN at once and cannot be told to wait; aioquic
        waits by itself after ``delay_acks``). An answer's ACK sent alone cost a datagram each way and the server's
        stream credit a third: the server frees a stream when the ACK of its answer arrives."""
        if self._credit is not None:
            self._credit.set()
        if not self._terminated:
            now = self._hop_loop.time()
            _timer_at, ack_only = self._engine.next_timer(self._hop_quic)
            if ack_only:
                held_until = self._ack_held_until = ack_hold_until(self._ack_held_until, now)
                if self._ack_release is None:
                    self._ack_release = self._hop_loop.call_at(held_until, self._release_ack)
                if now < held_until:
                    return
        self._send_now()

    def _send_now(self) -> None:
        self._ack_held_until = None
        if self._ack_release is not None:
            self._ack_release.cancel()
            self._ack_release = None
        super().transmit()  # type: ignore[misc]

    def _release_ack(self) -> None:
        """The hold is over and no request came: the ACK goes alone."""
        self._ack_release = None
        self._send_now()

    def quic_event_received(self, event: Any) -> None:
        quic_engine = self._engine
        if isinstance(event, quic_engine.StreamDataReceived):
            pending = self._answers.get(event.stream_id)
            if pending is not None:
                pending[0].extend(event.data)
                if event.end_stream and not pending[1].done():
                    pending[1].set_result(bytes(pending[0]))
        elif isinstance(event, quic_engine.StreamReset):
            pending = self._answers.get(event.stream_id)
            if pending is not None and not pending[1].done():
                pending[1].set_exception(ConnectionResetError(f"stream reset by the server ({event.error_code})"))
        elif isinstance(event, quic_engine.ConnectionTerminated):
            self.abandon(ConnectionError(f"the Mark connection closed ({event.reason_phrase or event.error_code})"))

    def abandon(self, error: Exception) -> None:
        """Fail every request in flight with ``error`` and take no more (the connection is lost or being dropped)."""
        self._terminated = True
        if self._ack_release is not None:  # nothing more is sent on it: a held ACK's timer has nothing to do
            self._ack_release.cancel()
            self._ack_release = None
        for _buffer, answer in self._answers.values():
            if not answer.done():
                answer.set_exception(error)
        if self._credit is not None:
            self._credit.set()


def _expire(answer: asyncio.Future[bytes]) -> None:
    if not answer.done():
        answer.set_exception(TimeoutError("no answer from the Mark server in time"))


def hop_protocol(quic_engine: QuicEngine) -> type:
    """``MarkHop`` over ``quic_engine``'s asyncio ``QuicConnectionProtocol``."""
    return quic_engine.asyncio_protocol(MarkHop, "MarkHopProtocol")
