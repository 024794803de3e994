"""Datagram transports under the QUIC driver: a gevent UDP socket, and an in-memory pair with no sockets.

The driver only needs four things from a transport (``DatagramTransport``): send one datagram, drain what has
arrived without blocking, tell it when more arrives, and close. Keeping that seam small lets a test, or the issue-3
benchmark's "engine itself" lower bound, run the very same driver against a server ``QuicConnection`` held in memory.
"""

from __future__ import annotations

import _socket
import datetime
import functools
import ipaddress
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import gevent
import gevent.event
from gevent import socket as gsocket

from swarmgauge.quic.engine import DEFAULT_ENGINE, QuicEngine, engine

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ec import EllipticCurvePrivateKey
    from cryptography.x509 import Certificate

NetworkAddress = tuple[Any, ...]
MAX_DATAGRAMS_PER_DRAIN = 256
MAX_DATAGRAM = 65536  # the largest UDP payload, so that no datagram is ever cut short


class _ReceiveBuffer(threading.local):
    """One receive buffer per thread, shared by every transport of that thread (its hub drains them one at a time).

    ``recv(65536)`` made a 64 KiB bytes object per datagram and per empty read, then shrank it: the heap kept the
    cut-off pieces, and a pooled connection's process grew by tens of bytes a request. Here the kernel writes into
    this buffer and only the datagram's own bytes are copied out."""

    def __init__(self) -> None:
        self.view = memoryview(bytearray(MAX_DATAGRAM))


_RECEIVE_BUFFER = _ReceiveBuffer()


@functools.lru_cache(maxsize=64)
def _literal_peer(host: str, port: int) -> tuple[int, NetworkAddress] | None:
    """(address family, socket address) of an address literal, None for a name (resolved at each connection). Made
    once per address: every connection to it shares the one tuple and its string (~110 B a pooled connection)."""
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None
    if address.version == 6:
        return gsocket.AF_INET6, (str(address), port, 0, 0)
    return gsocket.AF_INET, (str(address), port)


class DatagramTransport(Protocol):
    """What the driver needs from the network: datagrams to and from one peer."""

    peer: NetworkAddress

    def send(self, data: bytes) -> None: ...

    def drain(self, one_flush: bool = False) -> list[bytes]:
        """Return the datagrams that have arrived, without blocking (may raise ``OSError``); ``one_flush``: those of
        the peer's first flush at least (a transport may stop there), for a caller that awaits one answer."""

    def set_on_readable(self, callback: Callable[[], None] | None) -> None:
        """Call ``callback`` whenever datagrams arrive: in the hub (so it must not block), never from inside
        ``send()`` or another caller's greenlet, for the driver runs its whole pass, answers included, in it."""

    def close(self) -> None: ...


TransportFactory = Callable[[str, int], DatagramTransport]


class UdpTransport:
    """A connected, non-blocking UDP socket; an ICMP "port unreachable" surfaces as ``OSError``.

    The socket is the C one (``_socket.socket``), not gevent's wrapper: the driver never blocks on it (it waits on
    its own io watcher), so gevent's cooperative layer would only add Python frames to every send and receive.
    """

    def __init__(self, sock: _socket.socket, peer: NetworkAddress):
        self._sock = sock
        self.peer = peer
        self._watcher: Any | None = None  # a gevent loop io watcher (gevent is untyped)

    @classmethod
    def open(cls, host: str, port: int) -> UdpTransport:
        """Connect a UDP socket to ``host`` (``OSError`` if that fails); a name is resolved through gevent.

        An address literal skips the resolver: gevent's default one is a thread hand-off, about 0.1 ms of CPU, and a
        ``fresh`` user opens a connection per request.
        """
        literal = _literal_peer(host, port)
        if literal is None:
            family, _, _, _, sockaddr = gsocket.getaddrinfo(host, port, 0, gsocket.SOCK_DGRAM)[0]
        else:
            family, sockaddr = literal
        sock = _socket.socket(family, _socket.SOCK_DGRAM)
        try:
            sock.setblocking(False)
            sock.connect(sockaddr)
        except OSError:
            sock.close()
            raise
        return cls(sock, sockaddr)

    def send(self, data: bytes) -> None:
        try:
            self._sock.send(data)
        except BlockingIOError:
            pass  # a full socket buffer is packet loss; QUIC's loss recovery resends

    def drain(self, one_flush: bool = False) -> list[bytes]:
        """Every datagram that is in; with ``one_flush``, up to the first that is shorter than the one before it.

        A QUIC sender fills each datagram of a flush but the last (quic-go, qh3, the reference server's GSO batch,
        which arrives whole), so a shorter one ends it. A connection awaiting one answer has nothing more coming:
        the read that would find the socket empty, a system call and a BlockingIOError raised and caught (~5,000
        instructions), is left out. Anything that did come after it makes the io watcher (level-triggered) call
        again. Without ``one_flush`` (several answers awaited on the connection), the drain reads until empty."""
        recv_into, view = self._sock.recv_into, _RECEIVE_BUFFER.view
        received: list[bytes] = []
        previous = 0  # the size of the datagram before (while one_flush: 0 keeps the first from ending it)
        try:
            while len(received) < MAX_DATAGRAMS_PER_DRAIN:
                size = recv_into(view)
                received.append(view[:size].tobytes())
                if one_flush:
                    if size < previous:
                        break
                    previous = size
        except BlockingIOError:
            pass
        return received

    def set_on_readable(self, callback: Callable[[], None] | None) -> None:
        if self._watcher is not None:
            self._watcher.stop()
            self._watcher.close()
            self._watcher = None
        if callback is not None:
            self._watcher = gevent.get_hub().loop.io(self._sock.fileno(), 1)
            self._watcher.start(callback)

    def close(self) -> None:
        self.set_on_readable(None)
        self._sock.close()


def self_signed_certificate(
    names: tuple[str, ...] = ("localhost", "127.0.0.1", "::1"), *, days: int = 1
) -> tuple[Certificate, EllipticCurvePrivateKey]:
    """An EC P-256 certificate and key for ``names`` (DNS names or IP literals), made in memory."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = []
    for name in names:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            sans.append(x509.DNSName(name))
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return cert, key


class MemoryServer:
    """Server side of a :class:`MemoryPair`: one sans-IO server ``QuicConnection`` answering whole-stream requests.

    ``handler(request_bytes) -> response_bytes`` answers each bidirectional stream once its FIN arrives. The CPU it
    spends is added to ``cpu_seconds`` so a benchmark can subtract it and keep the client side only.
    """

    CLIENT_ADDR = ("127.0.0.2", 40000)

    def __init__(
        self, quic_engine: QuicEngine, configuration: Any, original_cid: bytes, handler: Callable[[bytes], bytes]
    ):
        self.engine = quic_engine
        self.quic = quic_engine.QuicConnection(
            configuration=configuration, original_destination_connection_id=original_cid
        )
        quic_engine.delay_acks(self.quic)  # as the reference server (and quic-go) does
        self.handler = handler
        self.cpu_seconds = 0.0
        self._buffers: dict[int, list[bytes]] = {}
        self._timer: gevent.Greenlet | None = None
        self.to_client: Callable[[bytes], None] = lambda data: None

    def receive(self, data: bytes) -> None:
        started = time.process_time()
        now = time.monotonic()
        self.quic.receive_datagram(data, self.CLIENT_ADDR, now)
        self._pump(now)
        self.cpu_seconds += time.process_time() - started

    def _on_timer(self) -> None:
        started = time.process_time()
        self._timer = None
        now = time.monotonic()
        self.quic.handle_timer(now)
        self._pump(now)
        self.cpu_seconds += time.process_time() - started

    def _pump(self, now: float) -> None:
        event = self.quic.next_event()
        while event is not None:
            if isinstance(event, self.engine.StreamDataReceived):
                self._buffers.setdefault(event.stream_id, []).append(event.data)
                if event.end_stream:
                    request = b"".join(self._buffers.pop(event.stream_id))
                    self.quic.send_stream_data(event.stream_id, self.handler(request), end_stream=True)
            elif isinstance(event, self.engine.ConnectionTerminated):
                self._buffers.clear()
            event = self.quic.next_event()
        self.engine.ack_with_next_packet(self.quic, now)
        for data, _ in self.quic.datagrams_to_send(now):
            self.to_client(data)
        self._arm_timer(now)

    def _arm_timer(self, now: float) -> None:
        if self._timer is not None:
            self._timer.kill(block=False)
            self._timer = None
        at = self.quic.get_timer()
        if at is not None:
            self._timer = gevent.spawn_later(max(0.0, at - now), self._on_timer)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.kill(block=False)
            self._timer = None


class MemoryTransport:
    """Client side of a :class:`MemoryPair`: datagrams go straight into the server connection, no sockets."""

    def __init__(self, pair: MemoryPair):
        self._pair = pair
        self.peer = ("127.0.0.1", 4433)
        self._inbox: deque[bytes] = deque()
        self._on_readable: Callable[[], None] | None = None
        self._readable_queued = False
        self.server: MemoryServer | None = None
        self._closed = False

    def _deliver(self, data: bytes) -> None:
        """A server datagram for the client: the readable callback runs in the hub, as a socket's would, not in the
        greenlet whose ``send()`` (or the server's timer) made the answer."""
        if self._closed:
            return
        self._inbox.append(data)
        if self._on_readable is not None and not self._readable_queued:
            self._readable_queued = True
            gevent.get_hub().loop.run_callback(self._readable)

    def _readable(self) -> None:
        self._readable_queued = False
        if self._on_readable is not None and self._inbox:
            self._on_readable()

    def send(self, data: bytes) -> None:
        if self._closed:
            return
        if self.server is None:
            self.server = self._pair.accept(data)
            self.server.to_client = self._deliver
        self.server.receive(data)

    def drain(self, one_flush: bool = False) -> list[bytes]:
        received = list(self._inbox)
        self._inbox.clear()
        return received

    def set_on_readable(self, callback: Callable[[], None] | None) -> None:
        self._on_readable = callback

    def close(self) -> None:
        self._closed = True
        self._on_readable = None
        if self.server is not None:
            self.server.stop()


class MemoryPair:
    """Two ``QuicConnection`` s exchanging datagrams in memory: the driver's transport factory with no sockets.

    This is the floor of what the QUIC engine itself costs per request (issue 3): real QUIC and TLS on both sides,
    no kernel. ``server_cpu_seconds`` is the server side's share, to subtract when measuring the client alone.
    """

    def __init__(self, handler: Callable[[bytes], bytes], *, alpn: str = "mark", quic_engine: str = DEFAULT_ENGINE):
        self.engine = engine(quic_engine)
        cert, key = self_signed_certificate()
        self.certificate = cert
        self._configuration = self.engine.server_configuration(cert, key, alpn=alpn, idle_timeout=30.0)
        self.handler = handler
        self.servers: list[MemoryServer] = []

    def accept(self, first_datagram: bytes) -> MemoryServer:
        original_cid = self.engine.initial_destination_cid(first_datagram)
        if original_cid is None:
            raise ConnectionRefusedError("the first datagram is not a QUIC Initial")
        server = MemoryServer(self.engine, self._configuration, original_cid, self.handler)
        self.servers.append(server)
        return server

    @property
    def server_cpu_seconds(self) -> float:
        return sum(server.cpu_seconds for server in self.servers)

    def transport_factory(self, host: str, port: int) -> MemoryTransport:
        return MemoryTransport(self)
