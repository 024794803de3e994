"""The reference server's transport: aioquic's asyncio server, one request per bidirectional stream.

What the Go server does around its handler lives here: read each stream to FIN before parsing, a request deadline
from the stream's first byte, at most ``max_streams`` concurrent streams per connection (credited back as streams
finish, as quic-go does), no unidirectional streams, the per-IP rate limit that waits for a token, the simulated
backend, and a 30 s idle timeout. The request logic itself is the sans-IO :class:`targets.mark.handler.Handler`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field

from aioquic.asyncio import QuicConnectionProtocol, serve
from aioquic.asyncio.server import QuicServer
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.connection import QuicConnection
from aioquic.quic.events import ConnectionTerminated, QuicEvent, StreamDataReceived, StreamReset

from swarmgauge.protocols.mark import MAX_PAYLOAD, MAX_REQUEST_LINE, encode_response, error_response
from swarmgauge.protocols.quic_acks import ack_with_next_packet, delay_acks
from swarmgauge.targets.mark.backend import BackendTimeout, SimulatedBackend
from swarmgauge.targets.mark.handler import READ_VERBS, WRITE_VERBS, Handler
from swarmgauge.targets.mark.pacing import PerClientLimiter
from swarmgauge.targets.mark.tls import DevCertificate

log = logging.getLogger(__name__)

ALPN = "mark"
DEFAULT_PORT = 6309
MAX_REQUEST_BYTES = MAX_REQUEST_LINE + MAX_PAYLOAD
STOP_SENDING_CODE = 0x0


@dataclass
class ServerSettings:
    """The transport knobs, with the real server's defaults (``DEMARKUS_*`` environment in Go)."""

    max_streams: int = 10
    idle_timeout: float = 30.0
    request_timeout: float = 10.0
    rate_limit: float = 0.0
    rate_burst: float = 100.0


@dataclass
class ServerCounters:
    """What the server saw, for logs and tests; never holds request contents."""

    requests: int = 0
    rate_limited: int = 0
    deadline_expired: int = 0
    by_verb: dict[str, int] = field(default_factory=dict)


def _verb_of(data: bytes) -> str:
    return data[: data.find(b" ")].decode("ascii", "replace") if b" " in data[:16] else ""


def limit_streams(quic: QuicConnection, bidi: int) -> None:
    """Behave as quic-go's server does: ``bidi`` concurrent bidirectional streams, no unidirectional ones, and ACKs
    that wait up to 25 ms or ride on the answer (``protocols.quic_acks``).

    aioquic has no public setting for the stream limits (it advertises 128); it credits one stream back per finished
    stream, which is quic-go's behaviour, so setting the initial limit before the handshake is all that is needed.
    """
    try:
        for limit, value in ((quic._local_max_streams_bidi, bidi), (quic._local_max_streams_uni, 0)):
            limit.value = limit.sent = value
    except AttributeError as exc:
        raise RuntimeError("this aioquic version does not expose its stream limits") from exc
    delay_acks(quic)


def peer_host(quic: QuicConnection) -> str:
    paths = getattr(quic, "_network_paths", None)
    return str(paths[0].addr[0]) if paths else "?"


class MarkService:
    """Everything the connections of one server share: handler, limiter, backend, settings and counters."""

    def __init__(self, handler: Handler, settings: ServerSettings, backend: SimulatedBackend) -> None:
        self.handler = handler
        self.settings = settings
        self.backend = backend
        self.counters = ServerCounters()
        self.limiter = (PerClientLimiter(settings.rate_limit, settings.rate_burst)
                        if settings.rate_limit > 0 else None)

    async def answer(self, data: bytes, client: str, opened: float) -> bytes:
        """One whole request's answer, after the rate limit and the simulated backend have had their say."""
        deadline = opened + self.settings.request_timeout
        verb = _verb_of(data)
        self.counters.requests += 1
        self.counters.by_verb[verb] = self.counters.by_verb.get(verb, 0) + 1
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


class MarkServerProtocol(QuicConnectionProtocol):
    """One QUIC connection: buffer each stream to FIN, answer it in one write, enforce the deadline."""

    def __init__(self, *args, service: MarkService, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._service = service
        limit_streams(self._quic, service.settings.max_streams)
        self._buffers: dict[int, bytearray] = {}
        self._opened: dict[int, float] = {}
        self._timers: dict[int, asyncio.TimerHandle] = {}
        self._tasks: dict[int, asyncio.Task] = {}

    def transmit(self) -> None:
        """Send, and send again if that pass retired streams: aioquic credits a finished stream back while it
        builds packets, after it has written MAX_STREAMS, so the second pass sends the freed credit at once instead
        of leaving it for the next packet that happens to go out."""
        limit = self._quic._local_max_streams_bidi
        before = limit.value
        super().transmit()
        if limit.value != before:
            super().transmit()

    def quic_event_received(self, event: QuicEvent) -> None:
        if isinstance(event, StreamDataReceived):
            self._on_data(event)
        elif isinstance(event, StreamReset):
            self._forget(event.stream_id)
        elif isinstance(event, ConnectionTerminated):
            for stream_id in list(self._buffers) + list(self._tasks):
                self._forget(stream_id)

    def _on_data(self, event: StreamDataReceived) -> None:
        sid = event.stream_id
        if sid in self._tasks:
            return
        if sid not in self._buffers:
            self._buffers[sid] = bytearray()
            self._opened[sid] = time.monotonic()
            self._timers[sid] = asyncio.get_running_loop().call_later(
                self._service.settings.request_timeout, self._deadline_passed, sid)
        buffer = self._buffers[sid]
        buffer += event.data
        if len(buffer) > MAX_REQUEST_BYTES + 1:
            self._reply_early(sid, error_response("server-error", "content exceeds size limit"))
        elif event.end_stream:
            self._cancel_timer(sid)
            data = bytes(self._buffers.pop(sid))
            task = asyncio.ensure_future(self._serve(sid, data, self._opened.pop(sid)))
            self._tasks[sid] = task

    async def _serve(self, sid: int, data: bytes, opened: float) -> None:
        try:
            response = await self._service.answer(data, peer_host(self._quic), opened)
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
        except Exception:  # the peer may already have reset or finished the stream
            pass
        self._send(sid, response)

    def _send(self, sid: int, response: bytes) -> None:
        try:
            self._quic.send_stream_data(sid, response, end_stream=True)
        except Exception as exc:  # stream reset or connection gone meanwhile: nothing left to answer
            log.debug("could not answer stream %d: %s", sid, exc)
            return
        ack_with_next_packet(self._quic, self._loop.time())
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


def server_configuration(cert: DevCertificate, settings: ServerSettings) -> QuicConfiguration:
    configuration = QuicConfiguration(is_client=False, alpn_protocols=[ALPN], idle_timeout=settings.idle_timeout)
    configuration.certificate = cert.certificate
    configuration.private_key = cert.private_key
    return configuration


async def start_server(service: MarkService, cert: DevCertificate, host: str, port: int) -> tuple[QuicServer, int]:
    """Listen on ``host:port`` (0 picks a free port); returns the server and the bound port."""
    server = await serve(
        host, port, configuration=server_configuration(cert, service.settings),
        create_protocol=lambda *a, **kw: MarkServerProtocol(*a, service=service, **kw))
    bound = server._transport.get_extra_info("sockname")[1]
    return server, bound
