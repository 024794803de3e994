"""``QuicEngine``: the surface both QUIC libraries share, written once against aioquic's field names.

``quic/engine.py`` picks an engine and holds what only one library needs (qh3's native core, aioquic's key shares);
this base holds the rest, so the driver and the server see one surface whichever library runs under them.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import socket
import ssl
from collections.abc import Callable
from types import ModuleType
from typing import Any

from swarmgauge.quic.acks import MAX_ACK_DELAY, overdue_ack_at

#: the asyncio protocol classes made by :meth:`QuicEngine.asyncio_protocol`, by (engine, mixin)
_MIXED: dict[tuple[str, type], type] = {}


class QuicEngine:
    """One QUIC library: its classes under common names, and the private-field work each needs."""

    name: str

    def __init__(self, package: str) -> None:
        self.name = package
        self._package = package
        configuration = self._module("quic.configuration")
        connection = self._module("quic.connection")
        events = self._module("quic.events")
        packet = self._module("quic.packet")
        asyncio_api = self._module("asyncio")
        self.tls: ModuleType = self._module("tls")
        self.QuicConfiguration: Any = configuration.QuicConfiguration
        self.QuicConnection: Any = connection.QuicConnection
        self.ConnectionTerminated: Any = events.ConnectionTerminated
        self.HandshakeCompleted: Any = events.HandshakeCompleted
        self.StreamDataReceived: Any = events.StreamDataReceived
        self.StreamReset: Any = events.StreamReset
        self.QuicErrorCode: Any = packet.QuicErrorCode
        self.AlertDescription: Any = self.tls.AlertDescription
        self.QuicConnectionProtocol: Any = asyncio_api.QuicConnectionProtocol
        self.serve: Callable[..., Any] = asyncio_api.serve
        self.connect: Callable[..., Any] = asyncio_api.connect

    def __repr__(self) -> str:
        return f"<QuicEngine {self.name}>"

    def asyncio_protocol(self, mixin: type, name: str) -> type:
        """``mixin`` over this engine's asyncio ``QuicConnectionProtocol``, made once per engine and mixin (the Mark
        server's streams, the MCP gateway's hop): each side's wire logic written once for both libraries."""
        made = _MIXED.get((self.name, mixin))
        if made is None:
            made = _MIXED[(self.name, mixin)] = type(name, (mixin, self.QuicConnectionProtocol), {})
        return made

    def _module(self, name: str) -> ModuleType:
        return importlib.import_module(f"{self._package}.{name}")

    # -- configuration ------------------------------------------------------------------------------------------

    def client_configuration(
        self,
        *,
        alpn: str,
        insecure: bool,
        ca_file: str | None,
        server_name: str | None,
        idle_timeout: float,
        initial_rtt: float | None = None,
    ) -> Any:
        """Client settings: verification on unless ``insecure``; ``server_name`` is checked and sent as SNI;
        ``initial_rtt`` (None: the library's) is the RTT estimate before a sample, which sets the first PTO."""
        configuration = self.QuicConfiguration(
            is_client=True,
            alpn_protocols=[alpn],
            idle_timeout=idle_timeout,
            server_name=server_name,
            verify_mode=ssl.CERT_NONE if insecure else ssl.CERT_REQUIRED,
        )
        if initial_rtt is not None:
            configuration.initial_rtt = initial_rtt
        if ca_file is not None:
            configuration.load_verify_locations(cafile=ca_file)
        return configuration

    def server_configuration(self, certificate: Any, private_key: Any, *, alpn: str, idle_timeout: float) -> Any:
        """A server configuration from a ``cryptography`` certificate and key (each library loads them its own way)."""
        configuration = self.QuicConfiguration(is_client=False, alpn_protocols=[alpn], idle_timeout=idle_timeout)
        configuration.certificate = certificate
        configuration.private_key = private_key
        return configuration

    def alpn_refused(self, error_code: int, reason: str) -> bool:
        """Whether a CONNECTION_CLOSE says the peer shares no ALPN protocol with us."""
        return bool(error_code == self.QuicErrorCode.CRYPTO_ERROR + self.AlertDescription.no_application_protocol)

    def release_handshake_state(self, quic: Any) -> None:
        """What a client connection no longer needs once its handshake is done, let go (the engine's own)."""

    def initial_destination_cid(self, datagram: bytes) -> bytes | None:
        """The destination connection id of a client's first (Initial) datagram, None for any other packet."""
        cids = self.initial_cids(datagram)
        return cids[0] if cids is not None else None

    def initial_source_cid(self, datagram: bytes) -> bytes | None:
        """The source connection id of an Initial datagram, None for any other packet: a client's own id, the same
        in every Initial of its handshake (the destination changes to the server's once it has answered)."""
        cids = self.initial_cids(datagram)
        return cids[1] if cids is not None else None

    def initial_cids(self, datagram: bytes) -> tuple[bytes, bytes] | None:
        """(destination, source) connection ids of an Initial datagram, None for any other packet."""
        buffer_module = importlib.import_module(f"{self._package}.buffer")
        packet = self._module("quic.packet")
        try:
            header = packet.pull_quic_header(buffer_module.Buffer(data=datagram), host_cid_length=8)
        except ValueError:
            return None
        if header.packet_type != packet.QuicPacketType.INITIAL:
            return None
        return bytes(header.destination_cid), bytes(header.source_cid)

    # -- asyncio ------------------------------------------------------------------------------------------------

    async def open_asyncio_client(
        self, host: str, port: int, configuration: Any, create_protocol: Callable[[Any], Any]
    ) -> tuple[asyncio.DatagramTransport, Any]:
        """An asyncio client connection, its handshake done: ``(transport, protocol)``, the protocol made by
        ``create_protocol(quic)`` over this engine's ``QuicConnection``.

        The libraries' own ``connect()`` builds their unpatched connection class (aioquic's four key shares, each
        handshake against the qh3 server waiting a PTO); these are its steps with ours. The caller closes with
        ``protocol.close()``, ``await protocol.wait_closed()``, ``transport.close()``."""
        loop = asyncio.get_running_loop()
        family, _type, _proto, _name, address = (await loop.getaddrinfo(host, port, type=socket.SOCK_DGRAM))[0]
        sock = socket.socket(family, socket.SOCK_DGRAM)
        try:
            sock.bind(("::" if family == socket.AF_INET6 else "0.0.0.0", 0))
            quic = self.QuicConnection(configuration=configuration)
            transport, protocol = await loop.create_datagram_endpoint(lambda: create_protocol(quic), sock=sock)
        except BaseException:
            sock.close()
            raise
        try:
            protocol.connect(address)
            await protocol.wait_connected()
        except BaseException:  # refused, or the caller's timeout cancelled the handshake
            transport.close()
            raise
        return transport, protocol

    # -- the datagram path -------------------------------------------------------------------------------------

    def receive_datagrams(self, quic: Any, datagrams: list[bytes], peer: Any, now: float) -> None:
        """Hand every datagram that arrived in one pass to the connection."""
        for data in datagrams:
            quic.receive_datagram(data, peer, now)

    def datagrams_to_send(self, quic: Any, now: float) -> list[bytes]:
        return [data for data, _ in quic.datagrams_to_send(now)]

    # -- private fields -----------------------------------------------------------------------------------------

    def delay_acks(self, quic: Any) -> None:
        """Acknowledge up to ``MAX_ACK_DELAY`` after an ack-eliciting packet, as quic-go (aioquic's own is 1 ms)."""
        quic._ack_delay = MAX_ACK_DELAY

    def ack_with_next_packet(self, quic: Any, now: float) -> None:
        """Let a pending 1-RTT ACK ride in the packet about to be sent, instead of waiting for its own timer."""
        space = quic._spaces.get(self.tls.Epoch.ONE_RTT)
        if space is not None:
            space.ack_at = overdue_ack_at(space.ack_at, now)

    def only_ack_pending(self, quic: Any) -> bool:
        """Whether the next thing the connection wants to send is an ACK alone (the caller may hold it back);
        aioquic needs no help: ``delay_acks`` already makes it wait."""
        return self.next_timer(quic)[1]

    def next_timer(self, quic: Any) -> tuple[float | None, bool]:
        """The connection's next deadline, and whether what is due then is an ACK alone (``only_ack_pending``): one
        question to the engine where the driver asked two."""
        return quic.get_timer(), False

    def close_event(self, quic: Any) -> Any:
        """The ``ConnectionTerminated`` the library knows at once (its event waits out three PTOs), or None."""
        return quic._close_event

    def limit_streams(self, quic: Any, bidi: int) -> None:
        """Allow the peer ``bidi`` concurrent bidirectional streams and no unidirectional one (before the handshake)."""
        try:
            for limit, value in ((quic._local_max_streams_bidi, bidi), (quic._local_max_streams_uni, 0)):
                limit.value = limit.sent = value
        except AttributeError as exc:
            raise RuntimeError(f"{self.name} no longer exposes its stream limits") from exc

    def local_max_streams_bidi(self, quic: Any) -> int:
        """The bidirectional stream credit granted so far (it rises as finished streams are credited back)."""
        return int(quic._local_max_streams_bidi.value)

    def transmit(self, quic: Any, send: Callable[[], None]) -> None:
        """Run an asyncio protocol's ``transmit`` (``send``), and again if that pass retired streams: aioquic credits
        a finished stream back while it builds packets, after it has written MAX_STREAMS, so the second pass sends
        the freed credit at once instead of leaving it for the next packet that happens to go out."""
        before = self.local_max_streams_bidi(quic)
        send()
        if self.local_max_streams_bidi(quic) != before:
            send()

    def peer_max_streams_bidi(self, quic: Any) -> int:
        """How many bidirectional streams the peer lets this side open (what it advertised, plus its credits)."""
        return int(quic._remote_max_streams_bidi)

    def can_open_stream(self, quic: Any) -> bool:
        """Whether a new bidirectional stream may be opened now (aioquic queues one past the peer's limit itself)."""
        return True

    def open_stream(self, quic: Any, data: bytes, end_stream: bool) -> int | None:
        """Send ``data`` on a new bidirectional stream and return its id; None, nothing sent, while the peer's
        stream credit allows no new stream (``can_open_stream``)."""
        if not self.can_open_stream(quic):
            return None
        stream_id: int = quic.get_next_available_stream_id()
        quic.send_stream_data(stream_id, data, end_stream=end_stream)
        return stream_id

    def peer_address(self, quic: Any) -> tuple[Any, ...] | None:
        """Where datagrams go now: aioquic's public ``get_peer_address()`` (qh3 has none, see ``Qh3Engine``)."""
        address = quic.get_peer_address()
        return tuple(address) if address is not None else None

    def bound_port(self, server: Any) -> int:
        """The UDP port an asyncio ``serve()`` server listens on (it has no public accessor)."""
        return int(server._transport.get_extra_info("sockname")[1])

    def grow_receive_buffer(self, server: Any, size: int) -> int:
        """Ask for a ``size``-byte UDP receive buffer on a ``serve()`` server's socket, as quic-go does (one socket
        takes every client's datagrams, and the default 208 KiB overflows while the process waits for a core);
        return what the kernel reports (Linux: twice what it granted, which is at most ``net.core.rmem_max``)."""
        sock = server._transport.get_extra_info("socket")
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, size)
        except OSError as exc:
            logging.getLogger(__name__).info("cannot grow the UDP receive buffer to %d bytes: %s", size, exc)
        return int(sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF))
