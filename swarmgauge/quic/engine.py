"""The QUIC engine seam: aioquic or qh3 behind one small surface; with ``quic/engine_base.py``, the only code touching
their internals.

aioquic is the project's reference (pure Python packet path); qh3 is a maintained fork with the same sans-IO
``QuicConnection`` API and its packet core in Rust, several times cheaper per request. The client driver
(``quic/driver.py``), the in-memory pair and the reference server (``targets/mark/server.py``) take a
:class:`QuicEngine` and never import either library themselves, so a library upgrade that moves a private field
breaks here, where ``tests/quic/test_engine.py`` fails loudly, and nowhere else.

It lives in the core package because both ``users/`` (the driver) and ``targets/`` (the server) need it and
neither may import the other.
"""

from __future__ import annotations

import functools
import importlib
import logging
from collections.abc import Callable
from types import ModuleType
from typing import Any

import swarmgauge.quic.qh3_patches as qh3_patches
import swarmgauge.quic.qh3_post_handshake as qh3_post_handshake
from swarmgauge.errors import UsageError
from swarmgauge.quic.engine_base import QuicEngine

ENGINES = ("qh3", "aioquic")
#: The client's default: the fastest engine that passes everything (the QUIC, Mark, goldens and misbehaving-server
#: tests run on both).
DEFAULT_ENGINE = "qh3"
#: The reference server's default: qh3, the cheaper per request, so an embedded target competes less with the load.
DEFAULT_SERVER_ENGINE = "qh3"
#: qh3's native core remembers this many finished streams per connection (its stream tombstones: ~83 KiB of native
#: memory once full, ~80 bytes a stream, released with the connection); a pooled connection's memory grows until it
#: has finished this many requests, then stays flat (``tests/quic/test_qh3_stream_memory.py``). It is
#: ``MAX_STREAM_TOMBSTONES``, a constant compiled into qh3's Rust (``src/quic/connection.rs``) with no setter: a late
#: frame for a stream it no longer remembers would open that stream again, so it is left to qh3
QH3_FINISHED_STREAMS_KEPT = 1024
MAX_DATAGRAMS_PER_FLUSH = 1024  # a bound on one flush (qh3's own loop has none); the rest goes on the next one


class AioquicEngine(QuicEngine):
    """aioquic, whose client offers two key shares (X25519, P-256) instead of its own four."""

    def __init__(self, package: str) -> None:
        super().__init__(package)
        self.QuicConnection = _offering_two_key_shares(self.QuicConnection, self.tls)


def _offering_two_key_shares(connection_class: Any, tls: ModuleType) -> Any:
    """aioquic's ``QuicConnection`` whose client offers X25519 and P-256 key shares only.

    aioquic's client makes and sends a key share for each of P-256, P-384, X25519 and X448. Go's crypto/tls (the
    demarkus CLI) sends two (X25519MLKEM768 and X25519). Four cost aioquic three needless key pairs per handshake,
    and qh3 2.1's server answers such a ClientHello with more Initial data than one datagram holds, raises "packet
    builder capacity exhausted" on the rest and drops what it had built: every aioquic handshake against the qh3
    reference server then waited for the server's PTO, about 0.7 s.
    """

    class QuicConnection(connection_class):  # type: ignore[misc]  # aioquic's class is Any here
        def _initialize(self, peer_cid: bytes) -> None:
            super()._initialize(peer_cid)
            if self._is_client:
                self.tls._supported_groups = [tls.Group.X25519, tls.Group.SECP256R1]

    QuicConnection.__qualname__ = QuicConnection.__name__ = connection_class.__name__
    return QuicConnection


class Qh3Engine(QuicEngine):
    """qh3: a native packet core with its own ACK timing, and stream limits fixed at its creation."""

    def __init__(self, package: str) -> None:
        super().__init__(package)
        self.QuicConnection = qh3_patches.with_field_slots(
            qh3_patches.trusting_self_issued_servers(self.QuicConnection)
        )
        qh3_patches.faster_tls()
        quic_log = logging.getLogger("quic")
        if quic_log.level == logging.NOTSET:  # qh3 warns on every peer close: routine here, thousands a minute
            quic_log.setLevel(logging.ERROR)

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
        """As aioquic's, plus Ed25519 offered: qh3 leaves it out by default, and the demarkus dev certificate is one."""
        configuration = super().client_configuration(
            alpn=alpn,
            insecure=insecure,
            ca_file=ca_file,
            server_name=server_name,
            idle_timeout=idle_timeout,
            initial_rtt=initial_rtt,
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

    def release_handshake_state(self, quic: Any) -> None:
        """Let go of qh3's TLS bridge and context after a client's handshake (a small stand-in takes the session
        tickets that may still come); where that cannot be, at least the key-share private keys (never read again).

        The context's two callbacks are the bridge's bound methods, and the bridge holds the context: without them
        cleared, the pair (~9 KiB, 27 objects) waited as cyclic garbage for the collector's next pass over its
        generation, so a generator's memory right after a ramp held it for many of the connections just made.

        Its two lists of streams and writes made before the handshake (emptied when it completed, read or appended to
        only before it) become the empty tuple: 112 B per pooled connection."""
        context = getattr(quic._tls, "tls", None)
        if not qh3_post_handshake.release_handshake_tls(quic):
            qh3_post_handshake.release_key_exchange(quic)
        elif context is not None:
            context.alpn_cb = context.update_traffic_key_cb = None
        if quic._handshake_complete and not quic._pre_handshake_streams and not quic._pre_handshake_writes:
            quic._pre_handshake_streams = quic._pre_handshake_writes = ()

    def alpn_refused(self, error_code: int, reason: str) -> bool:
        """qh3's server refuses with ``handshake_failure`` and says why only in the reason phrase."""
        handshake_failure = self.QuicErrorCode.CRYPTO_ERROR + self.AlertDescription.handshake_failure
        return super().alpn_refused(error_code, reason) or (error_code == handshake_failure and "ALPN" in reason)

    def server_configuration(self, certificate: Any, private_key: Any, *, alpn: str, idle_timeout: float) -> Any:
        """qh3 loads PEM bytes; ``cryptography`` (8 MiB resident) is imported here, by a server only: a client on
        qh3, a Locust worker's MarkUser, never needs it."""
        from cryptography.hazmat.primitives import serialization

        configuration = self.QuicConfiguration(is_client=False, alpn_protocols=[alpn], idle_timeout=idle_timeout)
        certificate_pem = certificate.public_bytes(serialization.Encoding.PEM)
        key_pem = private_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        configuration.load_cert_chain(certificate_pem, key_pem)
        return configuration

    def initial_cids(self, datagram: bytes) -> tuple[bytes, bytes] | None:
        hazmat = self._module("_hazmat")
        packet = self._module("quic.packet")
        try:
            header = hazmat.pull_quic_header(datagram, 0, 8)
        except ValueError:
            return None
        if header[1] != int(packet.QuicPacketType.INITIAL):
            return None
        return bytes(header[3]), bytes(header[4])

    def receive_datagrams(self, quic: Any, datagrams: list[bytes], peer: Any, now: float) -> None:
        """qh3's batch entry once the handshake is done: one native call and one event drain for the lot, without the
        per-datagram version-negotiation, Retry and header checks that only the handshake needs. Without a logger
        the native core is called directly: qh3's wrapper re-validates the peer address (``inet_pton``) on every
        call and walks the batch once more for its logger, for an address that is the transport's own."""
        core = quic._core
        if core is None or not quic._handshake_complete or quic._quic_logger is not None or not datagrams:
            quic.receive_many_datagrams(datagrams, peer, now)  # datagram by datagram until the handshake is done
            return
        try:
            core.receive_many_datagrams(datagrams, peer, now)
        except RuntimeError as exc:
            raise self._core_error(exc) from exc
        quic._drain_core()

    def _core_error(self, error: RuntimeError) -> Exception:
        """A native core failure as qh3's own ``_call_core`` wrapper raises it (an internal-error
        ``QuicConnectionError``); the two hot calls below make it here instead, without that wrapper's frame."""
        connection_error = self._module("quic.connection").QuicConnectionError
        return connection_error(self.QuicErrorCode.INTERNAL_ERROR, None, str(error))  # type: ignore[no-any-return]

    def datagrams_to_send(self, quic: Any, now: float) -> list[bytes]:
        """qh3's ``datagrams_to_send`` parses every packet header of every datagram for its logger even when there is
        none; without a logger, the native core's datagrams are taken as they come."""
        core = quic._core
        if core is None or quic._quic_logger is not None:
            return super().datagrams_to_send(quic, now)
        poll = core.poll_transmit
        datagrams = []
        try:
            for _ in range(MAX_DATAGRAMS_PER_FLUSH):
                transmit = poll(now)
                if transmit is None:
                    break
                datagrams.append(transmit[0])
        except RuntimeError as exc:
            raise self._core_error(exc) from exc
        return datagrams

    def delay_acks(self, quic: Any) -> None:
        """Nothing to set: qh3's native core fixes its own ACK timing (1 ms after data, at once after a stream's FIN).
        The client driver holds such an ACK back itself (``only_ack_pending``); the server leaves it as it is."""

    def ack_with_next_packet(self, quic: Any, now: float) -> None:
        """Nothing to do: qh3's core puts a pending ACK into any packet it sends."""

    def next_timer(self, quic: Any) -> tuple[float | None, bool]:
        """qh3's core names its next timer: an ``ack_application`` one means an ACK is owed and nothing else is due."""
        core = quic._core
        timer = None if core is None else core.get_timer()
        if timer is None:
            return None, False
        ack_only = timer[0] == "ack_application" and quic._close_event is None and bool(quic._handshake_complete)
        return timer[1], ack_only

    def limit_streams(self, quic: Any, bidi: int) -> None:
        """qh3 fixes the limits (100 bidirectional, 103 unidirectional) where it creates its native core and where
        it writes its transport parameters: both get ours instead, for this connection only."""
        if quic._core is not None or quic._tls is not None:
            raise RuntimeError("stream limits must be set before the connection's first datagram")
        limits = (bidi, 0)
        quic._create_core = functools.partial(qh3_patches.create_limited_core, quic, type(quic)._create_core, limits)
        quic._create_tls = functools.partial(qh3_patches.create_limited_tls, quic, type(quic)._create_tls, limits)

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

    def open_stream(self, quic: Any, data: bytes, end_stream: bool) -> int | None:
        """Once the handshake is done, the stream's id, credit and data go to the native core directly, as qh3's
        ``send_stream_data`` does after its checks (the next id, the stream recorded, the core's ``send_stream``):
        one call where a request made seven Python ones (the id asked twice, the credit property, the buffer check,
        ``_require_core``, ``_call_core``)."""
        core = quic._core
        if core is None or not quic._handshake_complete or type(data) is not bytes:
            return super().open_stream(quic, data, end_stream)
        stream_id: int = quic._next_stream_id_bidi
        if stream_id // 4 >= core.stream_limits[0]:  # qh3 would refuse it (ValueError): the caller waits for credit
            return None
        quic._record_local_stream(stream_id)
        try:
            core.send_stream(stream_id, data, end_stream)
        except RuntimeError as exc:
            raise self._core_error(exc) from exc
        return stream_id

    def can_open_stream(self, quic: Any) -> bool:
        """qh3 refuses (ValueError) a stream past the peer's cumulative limit, so the caller waits for credit."""
        return bool(quic.get_next_available_stream_id() // 4 < quic.max_concurrent_bidi_streams)

    def peer_address(self, quic: Any) -> tuple[Any, ...] | None:
        address = quic._remote_addr
        return tuple(address) if address is not None else None


@functools.cache
def engine(name: str = DEFAULT_ENGINE) -> QuicEngine:
    """The engine called ``name`` (``qh3`` or ``aioquic``), imported on first use; anything else is a UsageError."""
    if name == "aioquic":
        return AioquicEngine("aioquic")
    if name == "qh3":
        return Qh3Engine("qh3")
    raise UsageError(f"QUIC engine must be one of {', '.join(ENGINES)}, not {name!r}")


def engine_of(configuration: Any) -> QuicEngine:
    """The engine a ``QuicConfiguration`` belongs to, so a connection is never built with the other library."""
    return engine(type(configuration).__module__.split(".", 1)[0])


__all__ = ["DEFAULT_ENGINE", "DEFAULT_SERVER_ENGINE", "ENGINES", "QuicEngine", "engine", "engine_of"]
