"""The reference server's transport: an asyncio QUIC server (qh3 or aioquic), one request per bidirectional stream.

What the Go server does around its handler lives here: read each stream to FIN before parsing, a request deadline
from the stream's first byte, at most ``max_streams`` concurrent streams per connection (credited back as streams
finish, as quic-go does), no unidirectional streams, the per-IP rate limit that waits for a token, the simulated
backend, and a 30 s idle timeout; and, when asked, a lossy path in front of it (``initial_loss.py``). The request
logic itself is the sans-IO :class:`targets.mark.handler.Handler`.
The QUIC library is ``ServerSettings.quic_engine`` (``--quic-engine``), reached only through ``swarmgauge.quic.engine``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from swarmgauge.protocols.mark import MAX_PAYLOAD, MAX_REQUEST_LINE, encode_response, error_response
from swarmgauge.quic.engine import DEFAULT_SERVER_ENGINE, QuicEngine, engine
from swarmgauge.targets.mark.backend import BackendTimeout, SimulatedBackend
from swarmgauge.targets.mark.batch_send import BatchingTransport, BatchSender
from swarmgauge.targets.mark.handler import READ_VERBS, WRITE_VERBS, Handler
from swarmgauge.targets.mark.initial_loss import InitialLoss, lose_initials
from swarmgauge.targets.mark.pacing import PerClientLimiter
from swarmgauge.targets.mark.tls import DevCertificate

log = logging.getLogger(__name__)

ALPN = "mark"
DEFAULT_PORT = 6309
MAX_REQUEST_BYTES = MAX_REQUEST_LINE + MAX_PAYLOAD
STOP_SENDING_CODE = 0x0
RECEIVE_BUFFER = 7 << 20  # quic-go's wish for its UDP socket (the kernel may grant less: net.core.rmem_max)


@dataclass
class ServerSettings:
    """The transport knobs, with the real server's defaults (``DEMARKUS_*`` environment in Go)."""

    max_streams: int = 10
    idle_timeout: float = 30.0
    request_timeout: float = 10.0
    rate_limit: float = 0.0
    rate_burst: float = 100.0
    quic_engine: str = DEFAULT_SERVER_ENGINE
    initial_loss: float = 0.0  # share of new connections whose first flight the path loses (``initial_loss.py``)


@dataclass
class ServerCounters:
    """What the server saw, for logs and tests; never holds request contents."""

    requests: int = 0
    rate_limited: int = 0
    deadline_expired: int = 0
    by_verb: dict[str, int] = field(default_factory=dict)


def _verb_of(data: bytes) -> str:
    return data[: data.find(b" ")].decode("ascii", "replace") if b" " in data[:16] else ""


def limit_streams(quic_engine: QuicEngine, quic: Any, bidi: int) -> None:
    """Behave as quic-go's server does: ``bidi`` concurrent bidirectional streams, no unidirectional ones, and ACKs
    that wait up to 25 ms or ride on the answer (``protocols.quic_acks``).

    Neither library has a public setting for the stream limits; both credit one stream back per finished stream,
    which is quic-go's behaviour, so setting the initial limit before the handshake is all that is needed.
    """
    quic_engine.limit_streams(quic, bidi)
    quic_engine.delay_acks(quic)


def peer_host(quic_engine: QuicEngine, quic: Any) -> str:
    address = quic_engine.peer_address(quic)
    return str(address[0]) if address else "?"


class MarkService:
    """Everything the connections of one server share: handler, limiter, backend, settings and counters."""

    def __init__(self, handler: Handler, settings: ServerSettings, backend: SimulatedBackend) -> None:
        self.handler = handler
        self.settings = settings
        self.engine = engine(settings.quic_engine)
        self.backend = backend
        self.counters = ServerCounters()
        self.limiter = PerClientLimiter(settings.rate_limit, settings.rate_burst) if settings.rate_limit > 0 else None
        self.initial_loss = InitialLoss(settings.initial_loss) if settings.initial_loss > 0 else None
        self.batch_sender: BatchSender | None = None

    def sender_for(self, transport: Any) -> BatchSender:
        """The one :class:`BatchSender` over the server's transport (one server a service), made with the first
        connection."""
        if self.batch_sender is None:
            self.batch_sender = BatchSender.over(transport)
        return self.batch_sender

    def close(self) -> None:
        """Release the sender's duplicate of the server's socket (after the server itself is closed)."""
        if self.batch_sender is not None:
            self.batch_sender.close()
            self.batch_sender = None

    @property
    def answers_at_once(self) -> bool:
        """Whether every answer is ready as soon as its request is read: no rate limit and no simulated backend."""
        return self.limiter is None and not self.backend.knobs.active

    def answer_now(self, data: bytes) -> bytes:
        """The answer when nothing makes it wait (``answers_at_once``), computed where the request's FIN is read."""
        self._count(data)
        return self.handler.handle(data)

    def _count(self, data: bytes) -> str:
        verb = _verb_of(data)
        self.counters.requests += 1
        self.counters.by_verb[verb] = self.counters.by_verb.get(verb, 0) + 1
        return verb

    async def answer(self, data: bytes, client: str, opened: float) -> bytes:
        """One whole request's answer, after the rate limit and the simulated backend have had their say."""
        deadline = opened + self.settings.request_timeout
        verb = self._count(data)
        if self.limiter is not None:
            wait = self.limiter.reserve(client, time.monotonic(), max(0.0, deadline - time.monotonic()))
            if wait is None:
                self.counters.rate_limited += 1
                return encode_response("rate-limited")
            if wait:
                await asyncio.sleep(wait)
        try:
            if verb in WRITE_VERBS:
                return await self.backend.commit(lambda: self.handler.handle(data), deadline)
            if verb in READ_VERBS and not data.startswith(b"FETCH /health\n"):
                await self.backend.read(deadline)
        except BackendTimeout as exc:
            log.debug("backend timeout: %s", exc)
            return error_response("server-error", "internal error")
        return self.handler.handle(data)


class MarkStreams:
    """One QUIC connection: buffer each stream to FIN, answer it in one write, enforce the deadline.

    A mixin over the engine's ``QuicConnectionProtocol`` (:func:`protocol_class` makes the pair), so the same
    logic serves on either library.
    """

    _quic: Any
    _loop: asyncio.AbstractEventLoop

    def __init__(self, *args: Any, service: MarkService, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._service = service
        self._engine = service.engine
        limit_streams(self._engine, self._quic, service.settings.max_streams)
        self._buffers: dict[int, bytearray] = {}
        self._opened: dict[int, float] = {}
        self._timers: dict[int, asyncio.TimerHandle] = {}
        self._tasks: dict[int, asyncio.Task] = {}
        self._batching: BatchingTransport | None = None

    def connection_made(self, transport: Any) -> None:
        """Give the library a transport that holds each flush's datagrams and sends them a peer at once."""
        self._batching = BatchingTransport(self._service.sender_for(transport))
        super().connection_made(self._batching)  # type: ignore[misc]

    def transmit(self) -> None:
        """Send, with the credit of streams retired by this pass sent at once (``QuicEngine.transmit``), and the
        whole flush's datagrams for the peer in one system call where the kernel allows (``batch_send.py``)."""
        batching = self._batching
        started = batching is not None and batching.begin()
        try:
            self._engine.transmit(self._quic, super().transmit)  # type: ignore[misc]
        finally:
            if started and batching is not None:
                batching.flush()

    def quic_event_received(self, event: Any) -> None:
        quic_engine = self._engine
        if isinstance(event, quic_engine.StreamDataReceived):
            self._on_data(event)
        elif isinstance(event, quic_engine.StreamReset):
            self._forget(event.stream_id)
        elif isinstance(event, quic_engine.ConnectionTerminated):
            for stream_id in list(self._buffers) + list(self._tasks):
                self._forget(stream_id)

    def _on_data(self, event: Any) -> None:
        sid = event.stream_id
        if sid in self._tasks:
            return
        if sid not in self._buffers:
            self._buffers[sid] = bytearray()
            self._opened[sid] = time.monotonic()
            self._timers[sid] = asyncio.get_running_loop().call_later(
                self._service.settings.request_timeout, self._deadline_passed, sid
            )
        buffer = self._buffers[sid]
        buffer += event.data
        if len(buffer) > MAX_REQUEST_BYTES + 1:
            self._reply_early(sid, error_response("server-error", "content exceeds size limit"))
        elif event.end_stream:
            self._cancel_timer(sid)
            data = bytes(self._buffers.pop(sid))
            opened = self._opened.pop(sid)
            if self._service.answers_at_once:
                self._answer_now(sid, data)
            else:
                self._tasks[sid] = asyncio.ensure_future(self._serve(sid, data, opened))

    def _answer_now(self, sid: int, data: bytes) -> None:
        """Answer inside the event handler, before the library's transmit: the ACK of the request then rides in the
        answer's datagram, as quic-go's delayed ACK does, instead of going out alone first (qh3 ACKs a FIN at once)."""
        try:
            response = self._service.answer_now(data)
        except Exception:  # the handler never raises for bad input; anything else is our bug, not the client's
            log.exception("request failed")
            response = error_response("server-error", "internal error")
        self._send(sid, response)

    async def _serve(self, sid: int, data: bytes, opened: float) -> None:
        try:
            response = await self._service.answer(data, peer_host(self._engine, self._quic), opened)
        except Exception:  # the handler never raises for bad input; anything else is our bug, not the client's
            log.exception("request failed")
            response = error_response("server-error", "internal error")
        finally:
            self._tasks.pop(sid, None)
        self._send(sid, response)

    def _deadline_passed(self, sid: int) -> None:
        """No FIN within the request timeout: the Go server's read fails and it answers as for a failed read."""
        self._service.counters.deadline_expired += 1
        self._reply_early(sid, error_response("server-error", "could not read request"))

    def _reply_early(self, sid: int, response: bytes) -> None:
        self._forget(sid)
        try:
            self._quic.stop_stream(sid, STOP_SENDING_CODE)
        except Exception:  # noqa: BLE001 - the peer may already have reset or finished the stream
            pass
        self._send(sid, response)

    def _send(self, sid: int, response: bytes) -> None:
        try:
            self._quic.send_stream_data(sid, response, end_stream=True)
        except Exception as exc:  # noqa: BLE001 - stream reset or connection gone meanwhile: nothing left to answer
            log.debug("could not answer stream %d: %s", sid, exc)
            return
        self._engine.ack_with_next_packet(self._quic, self._loop.time())
        self.transmit()

    def _cancel_timer(self, sid: int) -> None:
        timer = self._timers.pop(sid, None)
        if timer is not None:
            timer.cancel()

    def _forget(self, sid: int) -> None:
        self._cancel_timer(sid)
        self._buffers.pop(sid, None)
        self._opened.pop(sid, None)
        task = self._tasks.pop(sid, None)
        if task is not None:
            task.cancel()


def protocol_class(quic_engine: QuicEngine) -> type:
    """``MarkStreams`` over ``quic_engine``'s asyncio ``QuicConnectionProtocol``."""
    return quic_engine.asyncio_protocol(MarkStreams, "MarkServerProtocol")


def server_configuration(cert: DevCertificate, settings: ServerSettings) -> Any:
    return engine(settings.quic_engine).server_configuration(
        cert.certificate, cert.private_key, alpn=ALPN, idle_timeout=settings.idle_timeout
    )


async def start_server(service: MarkService, cert: DevCertificate, host: str, port: int) -> tuple[Any, int]:
    """Listen on ``host:port`` (0 picks a free port); returns the server and the bound port."""
    protocol = protocol_class(service.engine)
    server = await service.engine.serve(
        host,
        port,
        configuration=server_configuration(cert, service.settings),
        create_protocol=lambda *a, **kw: protocol(*a, service=service, **kw),
    )
    if service.initial_loss is not None:
        lose_initials(server, service.initial_loss, service.engine.initial_source_cid)
    granted = service.engine.grow_receive_buffer(server, RECEIVE_BUFFER)
    log.debug("UDP receive buffer: %d bytes", granted)
    return server, service.engine.bound_port(server)
