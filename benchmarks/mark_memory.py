"""A QUIC engine alone (qh3 or aioquic): a client and a server ``QuicConnection`` passing datagrams by hand, no
sockets, no event loop.

The lower bound of issue 3's benchmark: the client side's CPU only (``thread_time`` around each client-side call,
less what the timing itself adds), on a virtual clock so that timers (pacing, loss recovery) fire when due without
waiting. Both sides acknowledge as the driver and the reference server do (``swarmgauge.quic.engine``: a pending
ACK rides on the next packet), so the bound handles the same datagrams per request as the real client, no more.
The server answers from a table of exact response bytes (``reference_pairs`` in ``mark_client_cases``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from benchmarks.mark_client_cases import BenchmarkError

SERVER_ADDR, CLIENT_ADDR = ("127.0.0.1", 6309), ("127.0.0.1", 40000)
MAX_STEPS = 10_000  # datagram moves per exchange; past it the exchange is stuck


class MemoryExchange:
    """A client and a server ``QuicConnection`` passing datagrams by hand on a virtual clock; client CPU alone."""

    def __init__(self, answers: dict[bytes, bytes], quic_engine: str = "aioquic"):
        from swarmgauge.quic.engine import engine
        from swarmgauge.targets.mark.server import ServerSettings, limit_streams, server_configuration
        from swarmgauge.targets.mark.tls import dev_certificate

        self.engine = engine(quic_engine)
        self._connection_class, self._events = self.engine.QuicConnection, self.engine
        self._limit_streams = lambda quic, bidi: limit_streams(self.engine, quic, bidi)
        self._delay_acks, self._ack_with_next_packet = self.engine.delay_acks, self.engine.ack_with_next_packet
        self._destination_cid = self.engine.initial_destination_cid
        self.client_config = self.engine.client_configuration(
            alpn="mark", insecure=True, ca_file=None, server_name=SERVER_ADDR[0], idle_timeout=30.0
        )
        self.server_config = server_configuration(dev_certificate(), ServerSettings(quic_engine=quic_engine))
        self.answers = answers
        self.now = 1000.0
        self.overhead = 0.0
        self.client = self.server = None
        self._server_buffers: dict[int, list[bytes]] = {}
        self._chunks: dict[int, list[bytes]] = {}
        self.answered: dict[int, bytes] = {}
        self.handshaken = False
        self.cpu = 0.0
        for _ in range(2000):
            self._timed(int)
        self.overhead, self.cpu = self.cpu / 2000, 0.0  # what _timed itself adds to a call, taken off each call

    def _timed(self, call: Callable, *args: Any) -> Any:
        started = time.thread_time()
        try:
            return call(*args)
        finally:
            self.cpu += time.thread_time() - started - self.overhead

    def open(self) -> None:
        self.client = self._timed(lambda: self._connection_class(configuration=self.client_config))
        self._delay_acks(self.client)
        self.server, self.handshaken = None, False
        self._timed(self.client.connect, SERVER_ADDR, self.now)
        self.settle(lambda: self.handshaken)

    def fetch(self, request: bytes) -> bytes:
        def send() -> int:
            stream_id = self.client.get_next_available_stream_id()
            self.client.send_stream_data(stream_id, request, end_stream=True)
            self._ack_with_next_packet(self.client, self.now)
            return stream_id

        stream_id = self._timed(send)
        self.settle(lambda: stream_id in self.answered)
        return self.answered.pop(stream_id)

    def close(self) -> None:
        self._timed(self.client.close)
        self._move()

    def settle(self, done: Callable[[], bool]) -> None:
        """Move datagrams until ``done``, firing timers as they fall due; an ACK still owed waits for the next
        request, as the driver's does."""
        for _ in range(MAX_STEPS):
            if self._move(hold_client_ack=done()):
                continue
            if done():
                return
            timers = [
                (at, side)
                for side in (self.client, self.server)
                if side is not None and (at := side.get_timer()) is not None
            ]
            soonest = min(timers, key=lambda timer: timer[0], default=None)
            if soonest is None:
                raise BenchmarkError("memory exchange stalled with no timer")
            self.now = max(self.now, soonest[0])
            for at, side in timers:
                if at <= self.now:
                    self._timed(side.handle_timer, self.now) if side is self.client else side.handle_timer(self.now)
        raise BenchmarkError(f"memory exchange not finished after {MAX_STEPS} steps")

    def _move(self, hold_client_ack: bool = False) -> bool:
        """One round: client datagrams to the server, the server's answers and datagrams back; True if any moved.

        ``hold_client_ack``: once the answer is in, an ACK alone stays with the client for the next request, as the
        driver holds it (``QuicDriver._ack_may_wait``)."""
        stream_data_received, moved = self._events.StreamDataReceived, False
        held = hold_client_ack and self._timed(self.engine.only_ack_pending, self.client)
        for data, _ in [] if held else self._timed(self.client.datagrams_to_send, self.now):
            if self.server is None:
                self.server = self._connection_class(
                    configuration=self.server_config, original_destination_connection_id=self._destination_cid(data)
                )
                self._limit_streams(self.server, 10)
                self._server_buffers.clear()
            self.server.receive_datagram(data, CLIENT_ADDR, self.now)
            moved = True
        if self.server is None:
            return moved
        while (event := self.server.next_event()) is not None:
            if isinstance(event, stream_data_received):
                self._server_buffers.setdefault(event.stream_id, []).append(event.data)
                if event.end_stream:
                    request = b"".join(self._server_buffers.pop(event.stream_id))
                    self.server.send_stream_data(event.stream_id, self.answers[request], end_stream=True)
                    self._ack_with_next_packet(self.server, self.now)
        for data, _ in self.server.datagrams_to_send(self.now):
            self._timed(self.client.receive_datagram, data, SERVER_ADDR, self.now)
            moved = True

        def client_events() -> None:
            while (event := self.client.next_event()) is not None:
                if isinstance(event, stream_data_received):
                    self._chunks.setdefault(event.stream_id, []).append(event.data)
                    if event.end_stream:
                        self.answered[event.stream_id] = b"".join(self._chunks.pop(event.stream_id))
                elif isinstance(event, self._events.HandshakeCompleted):
                    self.handshaken = True

        self._timed(client_events)
        return moved
