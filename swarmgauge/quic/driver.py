"""A gevent driver for a sans-IO ``QuicConnection`` (qh3 or aioquic, ``swarmgauge.quic.engine``): callbacks on the
gevent hub, no asyncio.

Why not ``aioquic.asyncio``: Locust users are greenlets, and an asyncio loop inside gevent means two schedulers and
blocked hubs (locust-notes §2, option A). Here the connection is serviced from the hub itself, as aioquic's own
asyncio protocol is from its loop: when datagrams arrive or ``get_timer()``'s deadline passes, one non-blocking pass
drains the socket, runs ``handle_timer`` if due, routes stream events to their requests (``quic/streams.py``),
times out overdue ones, flushes ``datagrams_to_send``, re-arms a single timer and last switches to each answered
request's greenlet. No greenlet of its own, and no ``Timeout`` per wake or per request. A request is one
bidirectional stream: the whole request with FIN, then everything up to the peer's FIN (the Mark Protocol's framing). The network sits behind ``DatagramTransport``
(``quic/transport.py``) so the same driver runs over UDP or over an in-memory pair.
"""

from __future__ import annotations

import logging
import time
from typing import Any, cast

import gevent
import gevent.event
import gevent.lock

from swarmgauge.quic.acks import MAX_ACK_DELAY
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
    termination_error,
)
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

log = logging.getLogger(__name__)

MAX_RESPONSE = 4 << 20
DEFAULT_MAX_STREAMS = 10
ABORT_ERROR_CODE = 0x10  # application code sent with RESET_STREAM / STOP_SENDING when we give up on a stream


class QuicDriver:
    """One client QUIC connection: ``connect()`` once, then ``request()`` from any number of greenlets.

    In-flight streams are bounded by a semaphore (``max_streams``), so request 11 waits for a free stream instead of
    failing. After ``ConnectionLost`` (or ``close()``) the driver is dead (``alive`` is False): make a new one.
    """

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
        self._transport_factory = transport_factory or UdpTransport.open
        self._slots = gevent.lock.BoundedSemaphore(max_streams)
        self.max_response = max_response
        self.stats = stats if stats is not None else QuicStats()
        self.handshake_seconds: float | None = None
        self._engine: QuicEngine = engine_of(configuration)
        self._quic: Any = None
        self._transport: DatagramTransport | None = None
        self._hub_loop: Any = None  # gevent's hub loop, set by connect() (gevent is untyped)
        self._timer: Any | None = None  # a gevent loop timer watcher
        self._timer_at: float | None = None
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
            self._transport = self._transport_factory(self.host, self.port)
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
        if not self._slots.acquire(timeout=timeout):
            raise RequestTimeout(f"no free stream on {self.host}:{self.port} within {timeout:g} s")
        stream_id = None
        try:
            if self._error is not None or not self._connected:  # it failed while this request waited for a slot
                self._check_usable()
            quic, quic_engine = self._quic, self._engine
            if not quic_engine.can_open_stream(quic):
                self._wait_for_stream_credit(deadline, timeout)
            stream_id = quic.get_next_available_stream_id()
            pending = self._streams.open(stream_id, deadline, timeout)
            quic.send_stream_data(stream_id, data, end_stream=finish)
            self.stats.streams_opened += 1
            now = time.monotonic()
            quic_engine.ack_with_next_packet(quic, now)
            self._flush(now)
            self._arm_timer()
            return self._streams.wait(pending)  # the hub's pass answers it, or times it out (``_expire``)
        finally:
            if stream_id is not None:
                self._streams.forget(stream_id)
            self._slots.release()

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

    def _on_readable(self) -> None:
        """Datagrams arrived (the transport calls this in the hub): the pass runs now, without the hop through the
        hub's callback queue that ``_schedule`` takes (a callback object and a queue turn per answer)."""
        if not self._closed:
            self._service(True)

    def _schedule(self) -> None:
        """Ask the hub for one service pass (from a timer, or from a greenlet that must not run it itself)."""
        if not self._service_pending and not self._closed:
            self._service_pending = True
            self._hub_loop.run_callback(self._service)

    def _service(self, readable: bool = False) -> None:
        """One pass in the hub: receive, timers, events, flush, re-arm. Must not block or raise.

        Only a pass the transport asked for (``readable``) reads the socket: a timer's or a failure's pass would find
        it empty but for a datagram that just arrived, and that one makes the transport call back anyway (the io
        watcher is level-triggered), so the timer's pass, about one per ACK delay per connection, saves a receive
        that fails with EAGAIN."""
        self._service_pending = False
        if self._closed:
            self._streams.deliver()
            return
        quic = self._quic
        # only connect() arms the timer and the readable callback, after it has set the transport
        transport: DatagramTransport = self._transport  # type: ignore[assignment]
        held, timer_at = False, None
        try:
            received = transport.drain() if readable else None
            now = time.monotonic()
            if received:
                self._engine.receive_datagrams(quic, received, transport.peer, now)
                self._last_heard = now
                if self._credit_waiters and self._credit is not None:
                    self._credit.set()
            keepalive = self.keepalive
            if keepalive is not None and now >= self._last_heard + keepalive:  # the test inline: once per pass
                self._keep_alive(now)
            # get_timer() is not free: ask it only when the armed deadline is due (one that a receipt made due
            # is re-armed below at zero delay and handled on the next pass)
            if self._timer_fired or (self._timer_at is not None and now >= self._timer_at):
                self._timer_fired = False
                timer_at, ack_only = self._engine.next_timer(quic)
                # an ACK alone is due and may still wait: handling qh3's ACK timer would make it go out now, in a
                # datagram of its own, where the next request (or the hold's end) carries it
                if timer_at is not None and now >= timer_at and not (ack_only and self._ack_may_wait(now)):
                    quic.handle_timer(now)
            self._process_events()
            next_deadline = self._streams.next_deadline
            if next_deadline is not None and now >= next_deadline:
                self._expire(now)
            timer_at, ack_only = self._engine.next_timer(quic)
            held = ack_only and self._ack_may_wait(now)
            if not held:
                self._flush()
        except OSError as exc:
            self._fail(self._lost_or_failed(f"network error: {exc}"))
        except Exception as exc:
            log.exception("QUIC driver for %s:%s crashed", self.host, self.port)
            self._fail(ConnectionLost(f"driver error: {type(exc).__name__}: {exc}"))
        if self._error is not None:
            self._shutdown()
        elif held:
            self._arm_timer(timer_at, known=True)  # nothing was sent: the engine's deadline still stands
        else:
            self._arm_timer()
        self._streams.deliver()  # last: each answered greenlet runs (and may send its next request) from here

    def _expire(self, now: float) -> None:
        """Answer every stream past its deadline with ``RequestTimeout`` and give it up on the wire."""
        for stream_id, pending in self._streams.overdue(now):
            self._abort_stream(stream_id)
            self._streams.finish(pending, RequestTimeout(f"no complete response within {pending.timeout:g} s"))

    def _arm_timer(self, timer_at: float | None = None, *, known: bool = False) -> None:
        """One hub timer at the earliest of the engine's deadline and the keep-alive.

        A timer already armed at or before that deadline is kept: a pass woken early finds nothing due and re-arms.
        Each request moves the loss-detection, ACK and idle deadlines a little later, so re-making the timer whenever
        they move cost two timers per request; now a closed-loop connection re-arms about once per ACK delay.
        """
        if self._closed:
            return
        if not known:
            timer_at = self._quic.get_timer()
        # comparisons rather than min()/max(): this runs once or twice per request
        ack_wait_until = self._ack_wait_until
        if ack_wait_until is not None and timer_at is not None and ack_wait_until > timer_at:
            timer_at = ack_wait_until
        keepalive = self.keepalive
        if keepalive is not None and self._connected:
            ping_at = self._last_heard + keepalive
            if timer_at is None or ping_at < timer_at:
                timer_at = ping_at
        request_deadline = self._streams.next_deadline
        if request_deadline is not None and (timer_at is None or request_deadline < timer_at):
            timer_at = request_deadline
        armed_at = self._timer_at
        if self._timer is not None and armed_at is not None and (timer_at is None or armed_at <= timer_at):
            return
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self._timer_at = timer_at
        if timer_at is not None:
            self._timer = self._hub_loop.timer(max(0.0, timer_at - time.monotonic()))
            self._timer.start(self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_at = None
        self._timer_fired = True
        self._schedule()

    def _keep_alive(self, now: float) -> None:
        """PING a quiet connection (as the Go client does every 25 s) so the server's idle timeout never fires."""
        if self.keepalive is None or not self._connected:
            return
        if now >= self._last_heard + self.keepalive:
            self._pings += 1
            self._quic.send_ping(self._pings)
            self._last_heard = now

    def _process_events(self) -> None:
        quic, quic_engine = self._quic, self._engine
        event = quic.next_event()
        while event is not None:
            if isinstance(event, quic_engine.StreamDataReceived):
                self._on_stream_data(event)
            elif isinstance(event, quic_engine.StreamReset):
                error = StreamReset(f"stream reset by peer (code {event.error_code})", event.error_code)
                self._streams.fail(event.stream_id, error)
            elif isinstance(event, quic_engine.HandshakeCompleted):
                if event.alpn_protocol != self._alpn:
                    no_alpn = quic_engine.AlertDescription.no_application_protocol
                    quic.close(error_code=quic_engine.QuicErrorCode.CRYPTO_ERROR + no_alpn)
                    self._fail(ALPNMismatch(f"server chose ALPN {event.alpn_protocol!r}, not {self._alpn!r}"))
                elif not self._handshake.ready():
                    quic_engine.release_handshake_state(quic)
                    self._handshake.set(True)
            elif isinstance(event, quic_engine.ConnectionTerminated):
                self._fail(self._termination_error(event))
            event = quic.next_event()
        close_event = quic_engine.close_event(quic)  # set at once; the event itself waits out 3 PTOs
        if close_event is not None and self._error is None:
            self._fail(self._termination_error(close_event))

    def _on_stream_data(self, event: Any) -> None:
        if self._streams.receive(event.stream_id, event.data, event.end_stream, self.max_response):
            self._abort_stream(event.stream_id)  # past the response cap: that request fails with ResponseTooLarge

    def _abort_stream(self, stream_id: int) -> None:
        """Give up on a stream: stop the peer sending and reset our side, so its slot frees on both ends."""
        for action in (self._quic.stop_stream, self._quic.reset_stream):
            try:
                action(stream_id, ABORT_ERROR_CODE)
            except ValueError:
                pass  # already finished or discarded
        self._flush()
        self._arm_timer()

    def _termination_error(self, event: Any) -> QuicError:
        return termination_error(
            self._engine,
            event,
            handshake_over=self._handshake.ready(),
            server_name=self._configuration.server_name or self.host,
            lost_or_failed=self._lost_or_failed,
        )

    def _lost_or_failed(self, message: str) -> QuicError:
        if self._handshake.ready() and self._handshake.exception is None:
            return ConnectionLost(message)
        return ConnectFailed(f"{self.host}:{self.port}: {message}")

    def _fail(self, error: QuicError) -> None:
        """Record the first fatal error and hand it to the handshake and to every pending stream."""
        if self._error is not None:
            return
        self._error = error
        self.alive = False
        if self._connected:
            self.stats.connections_lost += 1
        if not self._handshake.ready():
            self._handshake.set_exception(error)
        if self._credit is not None:
            self._credit.set()
        self._streams.fail_all(error)
        if self._hub_loop is not None:
            self._schedule()  # the next pass flushes what aioquic still has to say, then shuts down

    def _ack_may_wait(self, now: float) -> bool:
        """quic-go's rule where the engine cannot be told it: hold an ACK-only datagram (the engine says one is all
        it owes) back up to the ACK delay, so that it rides on the next request instead."""
        if self._ack_wait_until is None:
            self._ack_wait_until = now + MAX_ACK_DELAY
        return now < self._ack_wait_until

    def _flush(self, now: float | None = None) -> None:
        self._ack_wait_until = None
        if self._transport is None:
            return
        for data in self._engine.datagrams_to_send(self._quic, time.monotonic() if now is None else now):
            try:
                self._transport.send(data)
            except OSError as exc:
                self._fail(self._lost_or_failed(f"network error: {exc}"))
                return

    def _shutdown(self) -> None:
        """Stop the timer and release the transport (after a failure or a close); idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        if self._transport is not None:
            self._transport.close()
