"""What a qh3 client connection keeps after its handshake: its TLS bridge and context swapped for a small stand-in,
or at least its key-share private keys let go.

Apart from ``qh3_patches`` (qh3's other private seams) so that neither module passes ~400 lines; every qh3 private
name used here is listed in ``swarmgauge.patches`` under ``qh3-post-handshake-tls``.
"""

from __future__ import annotations

import importlib
from typing import Any

#: The client's key-share private keys on qh3's TLS context (qh3 2.1): one per group offered in the ClientHello
KEY_EXCHANGE_FIELDS = (
    "_ec_p256_private_key",
    "_ec_p384_private_key",
    "_ec_p521_private_key",
    "_x25519_private_key",
    "_x25519_kyber_768_private_key",
)


class PostHandshakeTls:
    """What a client connection's TLS still does once its handshake is over, in place of qh3's ``QuicTlsBridge`` and
    ``tls.Context`` (~9 KiB a pooled connection kept for its life: the context's ~80 fields, the transcript hash,
    the peer's parsed certificate, three deques and two dicts of the bridge).

    qh3 2.1 reads its bridge after the handshake only when CRYPTO data arrives: a client in ``CLIENT_POST_HANDSHAKE``
    accepts NewSessionTicket messages at the 1-RTT level and nothing else. Without a session-ticket handler it parses
    each ticket and drops it; this does the same (qh3's own parser), and answers any other message, or one at another
    level, with the alert qh3 sends (unexpected_message). No secrets, no outbound data, no events follow."""

    __slots__ = ("_offsets", "_received", "cipher_suite", "version")
    handshake_complete = True
    remote_transport_parameters = None  # applied during the handshake; nothing new arrives after it
    tls = None  # ``QuicConnection.tls`` is None from here on: nobody may drive the context any more
    ech_accepted = False
    ech_retry_configs = None
    peer_certificate = None  # ``get_peercert()``: the certificate was verified during the handshake, then let go
    peer_certificate_chain: tuple[Any, ...] = ()

    def __init__(self, version: int, cipher_suite: Any, offsets: dict[Any, int], received: bytes) -> None:
        self.version, self.cipher_suite = version, cipher_suite
        # the next CRYPTO offset by epoch number (qh3's Epoch: an IntEnum numbered 0-3 in order), None at an epoch the
        # bridge had none for: a tuple of four is 88 B where a copy of the bridge's dict was 240 B, kept for the
        # connection's life, and it changes only when a session ticket comes
        self._offsets = tuple(offsets.get(epoch) for epoch in importlib.import_module("qh3.tls").Epoch)
        self._received = received

    def receive_crypto(self, epoch: Any, data: bytes, offset: int | None = None, *, version: int | None = None) -> None:
        """qh3's ``QuicTlsBridge.receive_crypto`` and ``Context.handle_message`` for a client after its handshake."""
        tls = importlib.import_module("qh3.tls")
        offsets, index = self._offsets, int(epoch)
        expected = offsets[index] if 0 <= index < len(offsets) else None
        if expected is None:
            raise ValueError(f"TLS CRYPTO is not valid at epoch {epoch!r}")
        if offset is not None and offset != expected:
            raise ValueError(f"non-contiguous CRYPTO data for {epoch.name}: expected offset {expected}, got {offset}")
        if version is not None:
            self.version = version
        self._offsets = (*offsets[:index], expected + len(data), *offsets[index + 1 :])
        self._received += data
        while len(self._received) >= 4:
            length = 4 + int.from_bytes(self._received[1:4], byteorder="big")
            if len(self._received) < length:
                break
            message, self._received = self._received[:length], self._received[length:]
            if epoch != tls.Epoch.ONE_RTT or message[0] != tls.HandshakeType.NEW_SESSION_TICKET:
                raise _bridge_error(tls.AlertUnexpectedMessage())
            try:
                tls.pull_new_session_ticket(tls.Buffer(data=message))
            except tls.Alert as exc:
                raise _bridge_error(exc) from exc

    def next_traffic_secret(self) -> None:
        return None

    def next_crypto_data(self) -> None:
        return None

    def next_event(self) -> None:
        return None


def _bridge_error(alert: Any) -> Exception:
    """The error qh3's bridge raises for a TLS alert (the connection closes with CRYPTO_ERROR + the alert)."""
    bridge = importlib.import_module("qh3.quic.tls_bridge")
    code = importlib.import_module("qh3.quic.packet").QuicErrorCode.CRYPTO_ERROR + int(alert.description)
    return bridge.QuicTlsBridgeError(code, str(alert))  # type: ignore[no-any-return]


def release_handshake_tls(quic: Any) -> bool:
    """Replace a client's TLS bridge and context by a :class:`PostHandshakeTls` once its handshake is done; False
    (nothing changed) when the connection may still need them: a server, a handshake not over, a session-ticket
    handler or a logger to feed, or a qh3 whose bridge looks otherwise."""
    bridge: Any = getattr(quic, "_tls", None)
    context = getattr(bridge, "tls", None)
    tls = importlib.import_module("qh3.tls")
    if (
        context is None
        or not quic._is_client
        or not quic._handshake_complete
        or context.state != tls.State.CLIENT_POST_HANDSHAKE
        or quic._session_ticket_handler is not None
        or context.new_session_ticket_cb is not None
        or quic._quic_logger is not None
    ):
        return False
    for name in ("_input_offsets", "_receive_buffer", "version", "cipher_suite"):
        if not hasattr(bridge if name != "_receive_buffer" else context, name):
            raise RuntimeError(f"qh3's TLS bridge has no {name}: check release_handshake_tls()")
    quic._tls = PostHandshakeTls(bridge.version, bridge.cipher_suite, bridge._input_offsets, context._receive_buffer)
    quic._applied_transport_parameters = None  # read only to compare with what the bridge received
    return True


def release_key_exchange(quic: Any) -> None:
    """Drop a client's key-share private keys once its handshake is done: TLS 1.3 derives every later key from the
    handshake's secrets, so qh3 never reads them again, yet its context keeps them for the connection's life (the
    X25519MLKEM768 pair alone ~4 KiB of native memory per pooled connection). A no-op before the handshake ends."""
    bridge = getattr(quic, "_tls", None)
    context = getattr(bridge, "tls", None)
    if context is None:
        return
    tls = importlib.import_module("qh3.tls")
    if context.state != tls.State.CLIENT_POST_HANDSHAKE:
        return
    for name in KEY_EXCHANGE_FIELDS:
        if not hasattr(context, name):
            raise RuntimeError(f"qh3's TLS context has no {name}: check release_key_exchange()")
        setattr(context, name, None)
