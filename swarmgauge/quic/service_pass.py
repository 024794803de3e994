"""The hub's side of the gevent QUIC driver (``quic/driver.py``): the service pass that receives, runs timers,
routes stream events to their requests, times out overdue ones, flushes and re-arms, and the failure paths it
shares with the callers' side.

A base class of ``QuicDriver`` only so that neither module passes ~400 lines; the driver's ``__init__`` sets every
field declared here, and ``connect()`` / ``request()`` / ``close()`` live beside it there.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import gevent.event

from swarmgauge.quic.acks import ack_hold_until
from swarmgauge.quic.engine import QuicEngine
from swarmgauge.quic.errors import (
    ALPNMismatch,
    ConnectFailed,
    ConnectionLost,
    QuicError,
    RequestTimeout,
    StreamReset,
    termination_error,
)
from swarmgauge.quic.settings import QuicStats
from swarmgauge.quic.streams import InFlight
from swarmgauge.quic.transport import DatagramTransport

log = logging.getLogger("swarmgauge.quic.driver")  # the driver's own name, as before the hub's side moved here

ABORT_ERROR_CODE = 0x10  # application code sent with RESET_STREAM / STOP_SENDING when we give up on a stream


class ServicePass:
    """The driver's pass in the hub, and how a connection fails; the fields are ``QuicDriver``'s (set in its
    ``__init__``).

    The fields are slots: a driver has 30, and CPython 3.11 keeps at most 29 in the key table a class's instances
    share, so the 30th made every driver build a dictionary of its own (1,584 B per pooled user, against 272 B of
    slots)."""

    __slots__ = (
        "_ack_wait_until",
        "_alpn",
        "_closed",
        "_configuration",
        "_connected",
        "_credit",
        "_credit_waiters",
        "_engine",
        "_error",
        "_handshake",
        "_hub_loop",
        "_last_heard",
        "_pings",
        "_quic",
        "_service_pending",
        "_streams",
        "_timer",
        "_timer_at",
        "_timer_fired",
        "_transport",
        "_wanted_at",
        "alive",
        "host",
        "keepalive",
        "max_response",
        "port",
        "stats",
    )

    host: str
    port: int
    keepalive: float | None
    max_response: int
    stats: QuicStats
    alive: bool
    _last_heard: float
    _pings: int
    _configuration: Any
    _alpn: str | None
    _engine: QuicEngine
    _quic: Any
    _transport: DatagramTransport | None
    _hub_loop: Any
    _timer: Any | None
    _timer_at: float | None
    _wanted_at: float | None
    _timer_fired: bool
    _ack_wait_until: float | None
    _service_pending: bool
    _closed: bool
    _handshake: gevent.event.AsyncResult
    _streams: InFlight
    _credit: gevent.event.Event | None
    _credit_waiters: int
    _error: QuicError | None
    _connected: bool

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
            # one request in flight (a pooled user's): its answer is all that is coming
            received = transport.drain(len(self._streams.streams) == 1) if readable else None
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
        self._wanted_at = timer_at
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
        """The hub timer fired (in the hub). Mostly it was armed for a deadline that has moved later since (each
        request moves the loss-detection and ACK deadlines; ``_arm_timer`` keeps the earlier timer rather than remake
        it): then nothing is due and a timer for the deadline now wanted replaces it, without a pass. About one such
        wake per ACK delay per busy connection, each a whole pass before (the engine asked twice, an empty flush)."""
        self._timer = None
        self._timer_at = None
        wanted_at = self._wanted_at
        if wanted_at is not None and wanted_at > time.monotonic():
            self._arm_timer(wanted_at, known=True)
            return
        self._timer_fired = True
        if not self._closed:
            self._service()  # in the hub already, as the transport's callback: no hop through the callback queue

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
        """Hold an ACK-only datagram (the engine says one is all it owes) back, as ``ack_hold_until`` says, so that
        it rides on the next request instead."""
        until = self._ack_wait_until = ack_hold_until(self._ack_wait_until, now)
        return now < until

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
