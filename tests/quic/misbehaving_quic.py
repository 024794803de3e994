"""A deliberately misbehaving Mark-over-QUIC server: a fake below the client seam, for bad-input tests.

It is real QUIC and TLS (the engine's sans-IO server connection, qh3 or aioquic, on a gevent UDP socket, in a
greenlet of the test process), but its answers are chosen by the request path so each test can provoke one failure:

``/good``        a well-formed ok response
``/truncated``   frontmatter that never closes
``/non-utf8``    metadata that is not UTF-8
``/huge``        a response just over 4 MiB
``/reset``       RESET_STREAM instead of an answer
``/silent``      never answers
``/drop``        half a response, then CONNECTION_CLOSE
``/vanish``      forgets the connection without a word (the client only sees an idle timeout)
``/slow``        answers after ``slow_seconds``, counting how many streams were open at once
``/varied-error``    a ``server-error`` whose body differs on every request
``/varied-status``   a status never seen before, on every request
``/varied-metadata`` metadata with a key duplicated, the key different on every request
``/varied-close``    CONNECTION_CLOSE with a reason phrase different on every request

With ``drop_after_handshake`` every connection is closed as soon as its handshake completes (counted in
``handshakes``), before any request is answered. With ``silent`` every connection completes its handshake and no
stream is ever answered, whatever its path (``tests/users/silent_servers.py`` runs it as a process).
"""

from __future__ import annotations

from typing import Any

import gevent
from gevent import socket as gsocket

from swarmgauge.quic.engine import DEFAULT_ENGINE, engine
from swarmgauge.quic.transport import self_signed_certificate

QuicConnection = Any

GOOD_RESPONSE = b'---\netag: abc\nstatus: ok\nversion: "1"\n---\n# Good\n'
HUGE_SIZE = (4 << 20) + 1024


class MisbehavingQuicServer:
    """Serve badly on purpose; ``alpn=None`` negotiates no ALPN at all."""

    def __init__(
        self,
        *,
        alpn: list[str] | None = ("mark",),
        names=("localhost", "127.0.0.1"),
        slow_seconds=0.2,
        quic_engine: str = DEFAULT_ENGINE,
        drop_after_handshake: bool = False,
        silent: bool = False,
    ):
        self.certificate, key = self_signed_certificate(tuple(names))
        self.engine = engine(quic_engine)
        self._configuration = self.engine.server_configuration(self.certificate, key, alpn="mark", idle_timeout=30.0)
        self._configuration.alpn_protocols = list(alpn) if alpn is not None else None
        self.slow_seconds = slow_seconds
        self.drop_after_handshake = drop_after_handshake
        self.silent = silent
        self.handshakes = 0
        self._connections: dict[tuple, QuicConnection] = {}
        self._forgotten: set[tuple] = set()
        self._buffers: dict[tuple, bytes] = {}
        self.open_slow = 0
        self.max_open_slow = 0
        self.requests: list[bytes] = []
        self._sock: gsocket.socket | None = None
        self._loop: gevent.Greenlet | None = None

    def start(self) -> MisbehavingQuicServer:
        self._sock = gsocket.socket(gsocket.AF_INET, gsocket.SOCK_DGRAM)
        self._sock.bind(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self.url = f"mark://127.0.0.1:{self.port}"
        self._loop = gevent.spawn(self._run)
        return self

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.kill()
            self._loop = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def certificate_pem(self) -> bytes:
        from cryptography.hazmat.primitives.serialization import Encoding

        return self.certificate.public_bytes(Encoding.PEM)

    def _run(self) -> None:
        import time

        while True:
            self._sock.settimeout(0.02)
            try:
                data, addr = self._sock.recvfrom(65536)
            except (TimeoutError, gsocket.timeout):
                data = None
            now = time.monotonic()
            if data is not None and addr not in self._forgotten:
                quic = self._connections.get(addr) or self._accept(data, addr)
                if quic is not None:
                    quic.receive_datagram(data, addr, now)
            for addr, quic in list(self._connections.items()):
                timer_at = quic.get_timer()
                if timer_at is not None and now >= timer_at:
                    quic.handle_timer(now)
                self._handle_events(addr, quic)
                self._flush(addr, quic)

    def _accept(self, data: bytes, addr: tuple) -> QuicConnection | None:
        original_cid = self.engine.initial_destination_cid(data)
        if original_cid is None:
            return None
        quic = self.engine.QuicConnection(
            configuration=self._configuration, original_destination_connection_id=original_cid
        )
        self._connections[addr] = quic
        return quic

    def _flush(self, addr: tuple, quic: QuicConnection) -> None:
        import time

        if addr in self._forgotten or self._sock is None:
            return
        for datagram, _ in quic.datagrams_to_send(time.monotonic()):
            self._sock.sendto(datagram, addr)

    def _handle_events(self, addr: tuple, quic: QuicConnection) -> None:
        event = quic.next_event()
        while event is not None:
            if isinstance(event, self.engine.HandshakeCompleted):
                self.handshakes += 1
                if self.drop_after_handshake:
                    quic.close(error_code=0x0, reason_phrase="dropped after the handshake")
            elif isinstance(event, self.engine.StreamDataReceived):
                key = (addr, event.stream_id)
                self._buffers[key] = self._buffers.get(key, b"") + event.data
                if event.end_stream:
                    self._answer(addr, quic, event.stream_id, self._buffers.pop(key))
            elif isinstance(event, self.engine.ConnectionTerminated):
                self._connections.pop(addr, None)
            event = quic.next_event()

    def _answer(self, addr: tuple, quic: QuicConnection, stream_id: int, request: bytes) -> None:
        self.requests.append(request)
        if self.silent:
            return
        line = request.split(b"\n", 1)[0]
        path = line.split(b" ", 1)[1] if b" " in line else b""
        if path == b"/truncated":
            quic.send_stream_data(stream_id, b'---\nstatus: ok\nversion: "1"\n', end_stream=True)
        elif path == b"/non-utf8":
            quic.send_stream_data(stream_id, b"---\nstatus: ok\ntitle: caf\xe9\xff\n---\nbody\n", end_stream=True)
        elif path == b"/huge":
            quic.send_stream_data(stream_id, GOOD_RESPONSE + b"x" * HUGE_SIZE, end_stream=True)
        elif path == b"/reset":
            quic.reset_stream(stream_id, 0x42)
        elif path == b"/silent":
            pass
        elif path == b"/drop":
            quic.send_stream_data(stream_id, b"---\nstatus: ok\n")
            self._flush(addr, quic)
            quic.close(error_code=0x0, reason_phrase="going away mid-stream")
        elif path == b"/vanish":
            self._forgotten.add(addr)
            self._connections.pop(addr, None)
        elif path.startswith(b"/varied-"):
            self._answer_varied(quic, stream_id, path, len(self.requests))
        elif path == b"/slow":
            self.open_slow += 1
            self.max_open_slow = max(self.max_open_slow, self.open_slow)
            gevent.spawn_later(self.slow_seconds, self._answer_slow, addr, quic, stream_id)
        else:
            quic.send_stream_data(stream_id, GOOD_RESPONSE, end_stream=True)

    def _answer_varied(self, quic: QuicConnection, stream_id: int, path: bytes, n: int) -> None:
        unique = f"{n}-{n * 7919:x}-id{n}q".encode()
        if path == b"/varied-close":
            quic.close(error_code=0x0, reason_phrase=f"going away {unique.decode()}")
            return
        answers = {
            b"/varied-error": b"---\nstatus: server-error\n---\n# Error\npanic at " + unique + b"\n",
            b"/varied-status": b"---\nstatus: weird-" + unique + b"\n---\n",
            b"/varied-metadata": b"---\nstatus: ok\nk" + unique + b": a\nk" + unique + b": b\n---\n",
        }
        quic.send_stream_data(stream_id, answers[path], end_stream=True)

    def _answer_slow(self, addr: tuple, quic: QuicConnection, stream_id: int) -> None:
        self.open_slow -= 1
        quic.send_stream_data(stream_id, GOOD_RESPONSE, end_stream=True)
        self._flush(addr, quic)
