"""A gevent driver for a sans-IO ``QuicConnection`` (qh3 or aioquic, ``swarmgauge.quic.engine``): callbacks on the
gevent hub, no asyncio.

Why not ``aioquic.asyncio``: Locust users are greenlets, and an asyncio loop inside gevent means two schedulers and
blocked hubs (locust-notes §2, option A). Here the connection is serviced from the hub itself, as aioquic's own
asyncio protocol is from its loop: when datagrams arrive or ``get_timer()``'s deadline passes, one non-blocking pass
drains the socket, runs ``handle_timer`` if due, routes stream events to their requests (``quic/streams.py``),
times out overdue ones, flushes ``datagrams_to_send``, re-arms a single timer and last switches to each answered
request's greenlet. No greenlet of its own, and no ``Timeout`` per wake or per request. A request is one
bidirectional stream: the whole request with FIN, then everything up to the peer's FIN (the Mark Protocol's framing). The network sits behind ``DatagramTransport``
(``quic/transport.py``) so the same driver runs over UDP or over an in-memory pair. The pass itself, and how a
connection fails, are the driver's base class in ``quic/service_pass.py``.
"""

from __future__ import annotations

import time
from typing import Any, cast

import gevent
import gevent.event

from swarmgauge.quic.engine import QuicEngine, engine_of
from swarmgauge.quic.errors import (
    ALPNMismatch,
    ConnectFailed,
    ConnectionLost,
    HandshakeTimeout,
    QuicError,
    RequestTimeout,
    ResponseTooLarge,
    StreamReset,
    TLSVerificationFailed,
)
from swarmgauge.quic.service_pass import ServicePass
from swarmgauge.quic.settings import QuicStats, client_configuration
from swarmgauge.quic.streams import InFlight
from swarmgauge.quic.transport import DatagramTransport, TransportFactory, UdpTransport

__all__ = [
    "DEFAULT_MAX_STREAMS",
    "MAX_RESPONSE",
    "ALPNMismatch",
    "ConnectFailed",
    "ConnectionLost",
    "HandshakeTimeout",
    "QuicDriver",
    "QuicError",
    "QuicStats",
    "RequestTimeout",
    "ResponseTooLarge",
    "StreamReset",
    "TLSVerificationFailed",
    "client_configuration",
]

MAX_RESPONSE = 4 << 20
DEFAULT_MAX_STREAMS = 10

#: What a connected driver's handshake result becomes: one for all of them, set, so that a pooled connection does not
#: keep its own (160 B) for its life; read only through ``ready()`` and ``exception``, which answer as its own did.
HANDSHAKE_DONE = gevent.event.AsyncResult()
HANDSHAKE_DONE.set(True)


class QuicDriver(ServicePass):
    """One client QUIC connection: ``connect()`` once, then ``request()`` from any number of greenlets.

    In-flight streams are bounded (``max_streams``), so request 11 waits for a free stream instead of failing: a
    count, and an event made only while requests wait for it (a semaphore kept for the connection's life was 160 B
    a pooled user at 1,000 users, for a bound one request at a time never meets). After ``ConnectionLost`` (or ``close()``) the driver is dead (``alive`` is False): make a new one.
    """

    # the rest are ServicePass's
    __slots__ = ("_free_streams", "_stream_freed", "_stream_waiters", "_transport_factory", "handshake_seconds")

    def __init__(
        self,
        host: str,
        port: int,
        configuration: Any,
        *,
        transport_factory: TransportFactory | None = None,
        max_streams: int = DEFAULT_MAX_STREAMS,
        max_response: int = MAX_RESPONSE,
        stats: QuicStats | None = None,
        keepalive: float | None = None,
    ):
        self.host, self.port = host, port
        self.keepalive = keepalive
        self._last_heard = 0.0
        self._pings = 0
        self._configuration = configuration
        self._alpn = (configuration.alpn_protocols or [None])[0]
        self._transport_factory = transport_factory  # None: UDP, looked up by connect() (no bound method kept)
        if max_streams < 1:
            raise ValueError(f"max_streams must be >= 1, not {max_streams!r}")
        self._free_streams = max_streams
        self._stream_freed: gevent.event.Event | None = None  # set when a stream is given back while requests wait
        self._stream_waiters = 0
        self.max_response = max_response
        self.stats = stats if stats is not None else QuicStats()
        self.handshake_seconds: float | None = None
        self._engine: QuicEngine = engine_of(configuration)
        self._quic: Any = None
        self._transport: DatagramTransport | None = None
        self._hub_loop: Any = None  # gevent's hub loop, set by connect() (gevent is untyped)
        self._timer: Any | None = None  # a gevent loop timer watcher
        self._timer_at: float | None = None
        self._wanted_at: float | None = None  # the deadline the last _arm_timer wanted (the armed one may be earlier)
        self._timer_fired = False
        self._ack_wait_until: float | None = None  # an ACK held back to ride on the next request (qh3)
        self._service_pending = False
        self._closed = False
        self._handshake = gevent.event.AsyncResult()
        self._streams = InFlight(gevent.get_hub())
        self._credit: gevent.event.Event | None = None  # made by the first request to wait for stream credit
        self._credit_waiters = 0
        self._error: QuicError | None = None
        self._connected = False
        #: connected and not failed since: a field, not a property, as the client reads it before every request
        self.alive = False

    def __repr__(self) -> str:
        state = "alive" if self.alive else ("new" if self._quic is None else "closed")
        return f"<QuicDriver {self.host}:{self.port} {state} streams={len(self._streams)}>"

    @property
    def in_flight(self) -> int:
        return len(self._streams)

    @property
    def peer_max_streams(self) -> int:
        """The bidirectional streams the server lets this connection open (0 before the handshake)."""
        return 0 if self._quic is None else self._engine.peer_max_streams_bidi(self._quic)

    def connect(self, timeout: float = 10.0) -> float:
        """Open the connection; return the handshake duration in seconds (also kept as ``handshake_seconds``)."""
        if self._quic is not None:
            raise RuntimeError("connect() is called once per driver")
        started = time.perf_counter()
        try:
            self._transport = (self._transport_factory or UdpTransport.open)(self.host, self.port)
        except OSError as exc:
            raise ConnectFailed(f"cannot reach {self.host}:{self.port}: {exc}") from exc
        self._quic = self._engine.QuicConnection(configuration=self._configuration)
        self._engine.delay_acks(self._quic)  # as quic-go: the ACK of an answer rides on the next request
        self._quic.connect(self._transport.peer, now=time.monotonic())
        self._hub_loop = gevent.get_hub().loop
        self._transport.set_on_readable(self._on_readable)
        self._flush()
        self._arm_timer()
        try:
            self._handshake.get(timeout=timeout)
        except gevent.Timeout:
            self._fail(HandshakeTimeout(f"no QUIC handshake with {self.host}:{self.port} within {timeout:g} s"))
            self._shutdown()
            raise cast(QuicError, self._error) from None  # _fail() has just set it (or kept an earlier one)
        except BaseException:  # a failed handshake, or the calling greenlet killed mid-handshake
            self._fail(ConnectionLost("connect interrupted"))
            self._shutdown()
            raise
        self._handshake = HANDSHAKE_DONE
        self.handshake_seconds = time.perf_counter() - started
        self._connected = True
        self.alive = self._error is None
        self._last_heard = time.monotonic()
        self.stats.handshakes += 1
        return self.handshake_seconds

    def request(self, data: bytes, timeout: float = 10.0, *, finish: bool = True) -> bytes:
        """Send ``data`` on a new stream with FIN; return everything the peer sends up to its FIN.

        ``finish=False`` leaves the send side open, to test how a server treats a request that never ends.
        """
        deadline = time.monotonic() + timeout
        if self._error is not None or not self._connected:  # the checks inline: they run on every request
            self._check_usable()
        if self._free_streams:  # inline: the path of every request
            self._free_streams -= 1
        elif not self._wait_for_a_stream(timeout):
            raise RequestTimeout(f"no free stream on {self.host}:{self.port} within {timeout:g} s")
        stream_id = None
        try:
            if self._error is not None or not self._connected:  # it failed while this request waited for a slot
                self._check_usable()
            quic, quic_engine = self._quic, self._engine
            stream_id = quic_engine.open_stream(quic, data, finish)
            if stream_id is None:  # no stream credit from the peer yet: wait for it, within the request's deadline
                self._wait_for_stream_credit(deadline, timeout)
                stream_id = quic_engine.open_stream(quic, data, finish)
                if stream_id is None:
                    raise RequestTimeout(f"no stream credit from {self.host}:{self.port} within {timeout:g} s")
            pending = self._streams.open(stream_id, deadline, timeout)
            self.stats.streams_opened += 1
            now = time.monotonic()
            quic_engine.ack_with_next_packet(quic, now)
            self._flush(now)
            self._arm_timer()
            return self._streams.wait(pending)  # the hub's pass answers it, or times it out (``_expire``)
        finally:
            if stream_id is not None:
                self._streams.forget(stream_id)
            self._give_back_a_stream()

    def _wait_for_a_stream(self, timeout: float) -> bool:
        """Wait until a request gives its stream back and take it; False after ``timeout`` (as a semaphore would,
        a request arriving as one is given back may take it before the waiters run)."""
        deadline = time.monotonic() + timeout
        while not self._free_streams:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            freed = self._stream_freed
            if freed is None:
                freed = self._stream_freed = gevent.event.Event()
            self._stream_waiters += 1
            try:
                freed.clear()
                freed.wait(remaining)
            finally:
                self._stream_waiters -= 1
                if not self._stream_waiters:
                    self._stream_freed = None
        self._free_streams -= 1
        return True

    def _give_back_a_stream(self) -> None:
        self._free_streams += 1
        if self._stream_waiters:
            cast(gevent.event.Event, self._stream_freed).set()

    def _wait_for_stream_credit(self, deadline: float, timeout: float) -> None:
        """Wait (bounded by the request's deadline) until the server's MAX_STREAMS lets one more stream open."""
        while not self._engine.can_open_stream(self._quic):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RequestTimeout(f"no stream credit from {self.host}:{self.port} within {timeout:g} s")
            if self._credit is None:
                self._credit = gevent.event.Event()  # set after a receipt while requests wait for stream credit
            self._credit_waiters += 1
            try:
                self._credit.clear()
                self._credit.wait(remaining)
            finally:
                self._credit_waiters -= 1
            self._check_usable()

    def close(self) -> None:
        """Close cleanly (CONNECTION_CLOSE sent); pending requests fail with ``ConnectionLost``."""
        if self._quic is None or self._closed:
            return
        if self._error is None:
            self._quic.close(error_code=self._engine.QuicErrorCode.NO_ERROR, reason_phrase="client closed")
            self._flush()
            self._fail(ConnectionLost("connection closed by the client"))
        self._shutdown()

    def _check_usable(self) -> None:
        if self._error is not None:
            raise type(self._error)(str(self._error))
        if not self._connected:
            raise ConnectionLost("not connected")
