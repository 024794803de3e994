"""The QUIC engine seam: aioquic or qh3 behind one small surface, and the only module touching their internals.

aioquic is the project's reference (pure Python packet path); qh3 is a maintained fork with the same sans-IO
``QuicConnection`` API and its packet core in Rust, several times cheaper per request. The client driver
(``users/quic.py``), the in-memory pair and the reference server (``targets/mark/server.py``) take a
:class:`QuicEngine` and never import either library themselves, so a library upgrade that moves a private field
breaks here, where ``tests/swarmgauge/test_quic_engine.py`` fails loudly, and nowhere else.

It lives in the core package because both ``users/`` (the driver) and ``targets/`` (the server) need it and
neither may import the other.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import logging
import socket
import ssl
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

from cryptography.hazmat.primitives import serialization

from swarmgauge.errors import UsageError
from swarmgauge.protocols.quic_acks import MAX_ACK_DELAY, overdue_ack_at

ENGINES = ("qh3", "aioquic")
#: The client's default: the fastest engine that passes everything (the QUIC, Mark, goldens and misbehaving-server
#: tests run on both).
DEFAULT_ENGINE = "qh3"
#: The reference server's default: qh3, the cheaper per request, so an embedded target competes less with the load.
DEFAULT_SERVER_ENGINE = "qh3"
_QH3_CORE_ARGUMENTS = 28  # QuicConnectionCore's positional parameters in qh3 2.1 (checked before patching)
_QH3_STREAM_LIMIT_ARGUMENTS = (21, 22)  # local_max_streams_bidi, local_max_streams_uni


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

    def _module(self, name: str) -> ModuleType:
        return importlib.import_module(f"{self._package}.{name}")

    # -- configuration ------------------------------------------------------------------------------------------

    def client_configuration(
        self, *, alpn: str, insecure: bool, ca_file: str | None, server_name: str | None, idle_timeout: float
    ) -> Any:
        """Client settings: verification on unless ``insecure``; ``server_name`` is checked and sent as SNI."""
        configuration = self.QuicConfiguration(
            is_client=True,
            alpn_protocols=[alpn],
            idle_timeout=idle_timeout,
            server_name=server_name,
            verify_mode=ssl.CERT_NONE if insecure else ssl.CERT_REQUIRED,
        )
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

    def initial_destination_cid(self, datagram: bytes) -> bytes | None:
        """The destination connection id of a client's first (Initial) datagram, None for any other packet."""
        buffer_module = importlib.import_module(f"{self._package}.buffer")
        packet = self._module("quic.packet")
        header = packet.pull_quic_header(buffer_module.Buffer(data=datagram), host_cid_length=8)
        if header.packet_type != packet.QuicPacketType.INITIAL:
            return None
        return bytes(header.destination_cid)

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
        return False

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

    def peer_address(self, quic: Any) -> tuple[Any, ...] | None:
        paths = quic._network_paths
        return tuple(paths[0].addr) if paths else None

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


class Qh3Engine(QuicEngine):
    """qh3: a native packet core with its own ACK timing, and stream limits fixed at its creation."""

    def __init__(self, package: str) -> None:
        super().__init__(package)
        self.QuicConnection = _trusting_self_issued_servers(self.QuicConnection)
        quic_log = logging.getLogger("quic")
        if quic_log.level == logging.NOTSET:  # qh3 warns on every peer close: routine here, thousands a minute
            quic_log.setLevel(logging.ERROR)

    def client_configuration(
        self, *, alpn: str, insecure: bool, ca_file: str | None, server_name: str | None, idle_timeout: float
    ) -> Any:
        """As aioquic's, plus Ed25519 offered: qh3 leaves it out by default, and the demarkus dev certificate is one."""
        configuration = super().client_configuration(
            alpn=alpn, insecure=insecure, ca_file=ca_file, server_name=server_name, idle_timeout=idle_timeout
        )
        algorithms = self.tls.SignatureAlgorithm
        configuration.signature_algorithms = [
            algorithms.ECDSA_SECP256R1_SHA256,
            algorithms.ED25519,
            algorithms.RSA_PSS_RSAE_SHA256,
            algorithms.RSA_PKCS1_SHA256,
            algorithms.ECDSA_SECP384R1_SHA384,
            algorithms.RSA_PSS_RSAE_SHA384,
            algorithms.RSA_PKCS1_SHA384,
            algorithms.RSA_PSS_RSAE_SHA512,
            algorithms.RSA_PKCS1_SHA512,
        ]
        return configuration

    def alpn_refused(self, error_code: int, reason: str) -> bool:
        """qh3's server refuses with ``handshake_failure`` and says why only in the reason phrase."""
        handshake_failure = self.QuicErrorCode.CRYPTO_ERROR + self.AlertDescription.handshake_failure
        return super().alpn_refused(error_code, reason) or (error_code == handshake_failure and "ALPN" in reason)

    def server_configuration(self, certificate: Any, private_key: Any, *, alpn: str, idle_timeout: float) -> Any:
        configuration = self.QuicConfiguration(is_client=False, alpn_protocols=[alpn], idle_timeout=idle_timeout)
        certificate_pem = certificate.public_bytes(serialization.Encoding.PEM)
        key_pem = private_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        configuration.load_cert_chain(certificate_pem, key_pem)
        return configuration

    def initial_destination_cid(self, datagram: bytes) -> bytes | None:
        hazmat = self._module("_hazmat")
        packet = self._module("quic.packet")
        try:
            header = hazmat.pull_quic_header(datagram, 0, 8)
        except ValueError:
            return None
        if header[1] != int(packet.QuicPacketType.INITIAL):
            return None
        return bytes(header[3])

    def delay_acks(self, quic: Any) -> None:
        """Nothing to set: qh3's native core fixes its own ACK timing (1 ms after data, at once after a stream's FIN).
        The client driver holds such an ACK back itself (``only_ack_pending``); the server leaves it as it is."""

    def ack_with_next_packet(self, quic: Any, now: float) -> None:
        """Nothing to do: qh3's core puts a pending ACK into any packet it sends."""

    def only_ack_pending(self, quic: Any) -> bool:
        """qh3's core names its next timer: an ``ack_application`` one means an ACK is owed and nothing else is due."""
        core = quic._core
        timer = None if core is None or quic._close_event is not None else core.get_timer()
        return timer is not None and timer[0] == "ack_application" and bool(quic._handshake_complete)

    def limit_streams(self, quic: Any, bidi: int) -> None:
        """qh3 fixes the limits (100 bidirectional, 103 unidirectional) where it creates its native core and where
        it writes its transport parameters: both get ours instead, for this connection only."""
        if quic._core is not None or quic._tls is not None:
            raise RuntimeError("stream limits must be set before the connection's first datagram")
        limits = (bidi, 0)
        quic._create_core = functools.partial(_create_limited_core, quic, type(quic)._create_core, limits)
        quic._create_tls = functools.partial(_create_limited_tls, quic, type(quic)._create_tls, limits)

    def local_max_streams_bidi(self, quic: Any) -> int:
        """What this connection advertised (qh3's core does not show the credit it has granted since)."""
        bridge = quic._tls
        parameters = None if bridge is None else bridge.tls.handshake_extensions
        if not parameters:
            return 0
        push = importlib.import_module("qh3.quic.packet")
        buffer_type = importlib.import_module("qh3._hazmat").Buffer
        return int(push.pull_quic_transport_parameters(buffer_type(data=parameters[0][1])).initial_max_streams_bidi)

    def transmit(self, quic: Any, send: Callable[[], None]) -> None:
        """One pass: qh3's core sends a stream's credit in the same pass that retires it."""
        send()

    def peer_max_streams_bidi(self, quic: Any) -> int:
        return int(quic.max_concurrent_bidi_streams)

    def can_open_stream(self, quic: Any) -> bool:
        """qh3 refuses (ValueError) a stream past the peer's cumulative limit, so the caller waits for credit."""
        return bool(quic.get_next_available_stream_id() // 4 < quic.max_concurrent_bidi_streams)

    def peer_address(self, quic: Any) -> tuple[Any, ...] | None:
        address = quic._remote_addr
        return tuple(address) if address is not None else None


def _trusting_self_issued_servers(connection_class: Any) -> Any:
    """qh3's ``QuicConnection`` whose client also trusts a self-issued server certificate found in its CA file.

    qh3 sorts a CA file into trust anchors and drops any self-issued certificate that carries a TLS extKeyUsage
    (``load_store_and_sort``): the demarkus dev certificate is one (serverAuth), so a client given it as ``--mark-ca``
    failed with "unable to get local issuer certificate (empty CA store)". OpenSSL, and so aioquic, trusts such a
    certificate when it is named; this does the same, and the rest (name, validity, usage) is still qh3's check.
    """

    class QuicConnection(connection_class):  # type: ignore[misc]  # qh3 has no type hints: its class is Any here
        def _create_tls(self, *args: Any, **kwargs: Any) -> Any:
            bridge = super()._create_tls(*args, **kwargs)
            if self._configuration.is_client and self._configuration.verify_mode != ssl.CERT_NONE:
                context = bridge.tls
                verify = context._client_handle_certificate_verify
                context._client_handle_certificate_verify = functools.partial(_verify_trusting_servers, verify)
            return bridge

    QuicConnection.__qualname__ = QuicConnection.__name__ = connection_class.__name__
    return QuicConnection


def _verify_trusting_servers(verify: Callable[[Any], None], input_buffer: Any) -> None:
    """Run qh3's CertificateVerify handling with self-issued server certificates counted as trust anchors."""
    sort = importlib.import_module("qh3.tls").load_store_and_sort

    def anchors_and_servers(*args: Any, **kwargs: Any) -> tuple[list[bytes], list[bytes], list[bytes]]:
        anchors, intermediates, servers = sort(*args, **kwargs)
        return [*anchors, *servers], intermediates, servers

    with _replaced("qh3.tls", "load_store_and_sort", anchors_and_servers):
        verify(input_buffer)


@contextlib.contextmanager
def _replaced(module_name: str, attribute: str, replacement: Callable[..., Any]) -> Iterator[Callable[..., Any]]:
    """``module.attribute`` is ``replacement`` for the ``with`` body (synchronous code: no other greenlet sees it)."""
    module = importlib.import_module(module_name)
    original = getattr(module, attribute)
    setattr(module, attribute, replacement)
    try:
        yield original
    finally:
        setattr(module, attribute, original)


def _create_limited_core(
    quic: Any, create_core: Callable[..., None], limits: tuple[int, int], *args: Any, **kwargs: Any
) -> None:
    """Run qh3's own ``_create_core`` with the native core's stream-limit arguments replaced by ``limits``."""
    native = importlib.import_module("qh3.quic.connection").QuicConnectionCore

    def limited(*core_args: Any) -> Any:
        if len(core_args) != _QH3_CORE_ARGUMENTS:
            raise RuntimeError(f"qh3's QuicConnectionCore got {len(core_args)} arguments, the adapter knows 28")
        values = list(core_args)
        for index, limit in zip(_QH3_STREAM_LIMIT_ARGUMENTS, limits):
            values[index] = limit
        return native(*values)

    with _replaced("qh3.quic.connection", "QuicConnectionCore", limited):
        create_core(quic, *args, **kwargs)


def _create_limited_tls(
    quic: Any, create_tls: Callable[..., Any], limits: tuple[int, int], *args: Any, **kwargs: Any
) -> Any:
    """Run qh3's own ``_create_tls`` so that the transport parameters it writes (now and after a version change)
    advertise ``limits``."""
    module_name = "qh3.quic.tls_bridge"
    push = importlib.import_module(module_name).push_quic_transport_parameters

    def advertise(buffer: Any, parameters: Any) -> None:
        parameters.initial_max_streams_bidi, parameters.initial_max_streams_uni = limits
        push(buffer, parameters)

    with _replaced(module_name, "push_quic_transport_parameters", advertise):
        bridge = create_tls(quic, *args, **kwargs)
    serialize = bridge.serialize_transport_parameters

    def serialize_limited() -> bytes:
        with _replaced(module_name, "push_quic_transport_parameters", advertise):
            return bytes(serialize())

    bridge.serialize_transport_parameters = serialize_limited
    return bridge


@functools.cache
def engine(name: str = DEFAULT_ENGINE) -> QuicEngine:
    """The engine called ``name`` (``qh3`` or ``aioquic``), imported on first use; anything else is a UsageError."""
    if name == "aioquic":
        return QuicEngine("aioquic")
    if name == "qh3":
        return Qh3Engine("qh3")
    raise UsageError(f"QUIC engine must be one of {', '.join(ENGINES)}, not {name!r}")


def engine_of(configuration: Any) -> QuicEngine:
    """The engine a ``QuicConfiguration`` belongs to, so a connection is never built with the other library."""
    return engine(type(configuration).__module__.split(".", 1)[0])


__all__ = ["DEFAULT_ENGINE", "DEFAULT_SERVER_ENGINE", "ENGINES", "QuicEngine", "engine", "engine_of"]
