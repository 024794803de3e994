"""qh3's private seams that the engine adapter patches: stream limits in its native core and transport parameters,
trust in a self-issued server certificate named in the CA file, a cheaper TLS, and a connection's fields in slots
(what a client keeps after its handshake is ``qh3_post_handshake``).

Kept apart from ``quic_engine`` so the adapter reads as the engine's interface; every use of qh3's private names
is here, each checked before it is patched so a new qh3 fails loudly instead of running unpatched.
"""

from __future__ import annotations

import contextlib
import functools
import hmac
import importlib
import ssl
from collections.abc import Callable, Iterator
from typing import Any

_QH3_CORE_ARGUMENTS = 28  # QuicConnectionCore's positional parameters in qh3 2.1 (checked before patching)
_QH3_STREAM_LIMIT_ARGUMENTS = (21, 22)  # local_max_streams_bidi, local_max_streams_uni


def trusting_self_issued_servers(connection_class: Any) -> Any:
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


#: The instance fields qh3 2.1's ``QuicConnection.__init__`` sets, in its order (checked against qh3 in the tests)
QH3_CONNECTION_FIELDS = (
    "_configuration",
    "_is_client",
    "_original_destination_connection_id",
    "_retry_source_connection_id",
    "_session_ticket_fetcher",
    "_session_ticket_handler",
    "_core",
    "_tls",
    "_events",
    "_remote_addr",
    "_connect_called",
    "_state",
    "_handshake_complete",
    "_handshake_confirmed",
    "_transport_parameters_applied",
    "_applied_transport_parameters",
    "_early_data_attempted",
    "_zero_rtt_resolved",
    "_retry_count",
    "_version_negotiated",
    "_pre_handshake_streams",
    "_pre_handshake_writes",
    "_pre_handshake_state_replayed",
    "_version",
    "_quic_logger",
    "_remote_max_datagram_frame_size",
    "_peer_token",
    "_remote_max_stream_data_bidi_remote",
    "_close_event",
    "host_cid",
    "_next_stream_id_bidi",
    "_next_stream_id_uni",
    "_local_next_stream_id_bidi",
    "_local_next_stream_id_uni",
    "_created_local_stream_ids",
)


class LocalStreamIds(list):  # type: ignore[type-arg]  # ints: qh3's stream ids
    """qh3's set of the local streams not yet finished, as a list: it holds one id at a time on a pooled connection
    (``DEMARKUS_MAX_STREAMS``, 10, on a shared one), and an emptied list frees its items where a set keeps 216 B.
    qh3 asks it ``in``, ``add`` and ``discard`` only."""

    __slots__ = ()
    add = list.append

    def discard(self, stream_id: int) -> None:
        if stream_id in self:
            self.remove(stream_id)


def with_field_slots(connection_class: Any) -> Any:
    """qh3's ``QuicConnection`` whose fields are slots instead of entries of an instance dictionary, and whose event
    queue is a list.

    It sets 35 fields, more than the 30 that CPython (3.11+) shares one key table for among a class's instances, so
    every connection built a dictionary of its own: ~1.6 KiB per pooled connection. As slots they are 8 bytes each.
    Its event queue is a deque, whose first block is 624 bytes however few events wait (a handful, taken at once);
    qh3 only appends to it and takes from its front in ``next_event``, which a list does as well; its set of local
    streams in flight becomes a :class:`LocalStreamIds`. Behaviour is
    unchanged (a field qh3 adds later lands in the dictionary as before); a class attribute of the same name would
    be hidden by its slot, so one is refused here."""
    clashing = [name for name in QH3_CONNECTION_FIELDS if hasattr(connection_class, name)]
    if clashing:
        raise RuntimeError(f"qh3's QuicConnection has class attributes {clashing}: check with_field_slots()")

    class QuicConnection(connection_class):  # type: ignore[misc]  # qh3 has no type hints: its class is Any here
        __slots__ = QH3_CONNECTION_FIELDS

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._events: list[Any] = []
            self._created_local_stream_ids = LocalStreamIds()

        def next_event(self) -> Any:
            queued = self._events
            return queued.pop(0) if queued else None

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


def create_limited_core(
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


def create_limited_tls(
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


# -- qh3's TLS 1.3 in Python, made cheaper ---------------------------------------------------------------------
# A fresh connection's CPU is mostly qh3's handshake, written in Python: each of its ~70 length-prefixed blocks per
# handshake is a generator-based context manager, and each of its ~30 HKDF expansions builds ``hmac.HMAC`` objects
# by digest name. The replacements below compute the same bytes (checked against qh3's own in the tests) with a
# plain class and ``hmac.digest``; ``faster_tls`` applies them once, and refuses a qh3 whose functions moved.
_HASH_NAMES = {256: "sha256", 384: "sha384", 512: "sha512"}


class _PushBlock:
    """``qh3.tls.push_block``: reserve ``capacity`` bytes for the length, write the body, then the length."""

    __slots__ = ("buf", "capacity", "start")

    def __init__(self, buf: Any, capacity: int) -> None:
        self.buf, self.capacity, self.start = buf, capacity, 0

    def __enter__(self) -> None:
        self.start = self.buf.tell() + self.capacity
        self.buf.seek(self.start)

    def __exit__(self, exc_type: Any, exc: Any, traceback: Any) -> None:
        if exc_type is None:
            buf, end = self.buf, self.buf.tell()
            buf.seek(self.start - self.capacity)
            buf.push_bytes((end - self.start).to_bytes(self.capacity, byteorder="big"))
            buf.seek(end)


class _PushExtension(_PushBlock):
    """``qh3.tls.push_extension``: the extension type, then its body as a 2-byte length-prefixed block."""

    __slots__ = ("extension_type",)

    def __init__(self, buf: Any, extension_type: int) -> None:
        super().__init__(buf, 2)
        self.extension_type = extension_type

    def __enter__(self) -> None:
        self.buf.push_uint16(self.extension_type)
        super().__enter__()


class _PullBlock:
    """``qh3.tls.pull_block``: read the length, yield it, and refuse trailing bytes the body did not read."""

    __slots__ = ("buf", "capacity", "end")
    error: type[Exception] = ValueError  # qh3's AlertDecodeError once ``faster_tls`` has run

    def __init__(self, buf: Any, capacity: int) -> None:
        self.buf, self.capacity, self.end = buf, capacity, 0

    def __enter__(self) -> int:
        length = int.from_bytes(self.buf.pull_bytes(self.capacity), byteorder="big")
        self.end = self.buf.tell() + length
        return length

    def __exit__(self, exc_type: Any, exc: Any, traceback: Any) -> None:
        if exc_type is None and self.buf.tell() != self.end:
            raise _PullBlock.error("extra bytes at the end of a block")


def _hkdf_expand_label(algorithm: int, secret: bytes, label: bytes, hash_value: bytes, length: int) -> bytes:
    """``qh3.tls.hkdf_expand_label`` (RFC 8446 7.1) with one-shot ``hmac.digest`` calls."""
    full_label = b"tls13 " + label
    info = length.to_bytes(2, "big") + bytes((len(full_label),)) + full_label + bytes((len(hash_value),)) + hash_value
    name, blocks, block = _HASH_NAMES[algorithm], [], b""
    for counter in range(1, 256):
        block = hmac.digest(secret, block + info + bytes((counter,)), name)
        blocks.append(block)
        if len(blocks) * len(block) >= length:
            break
    return b"".join(blocks)[:length]


def _hkdf_extract(algorithm: int, salt: bytes, key_material: bytes) -> bytes:
    """``qh3.tls.hkdf_extract`` with a one-shot ``hmac.digest``."""
    return hmac.digest(salt, key_material, _HASH_NAMES[algorithm])


QH3_ORIGINALS: dict[str, Any] = {}  # qh3's own functions, kept by ``faster_tls`` (the tests compare against them)
_TLS_REPLACEMENTS = {
    "push_block": _PushBlock,
    "push_extension": _PushExtension,
    "pull_block": _PullBlock,
    "hkdf_expand_label": _hkdf_expand_label,
    "hkdf_extract": _hkdf_extract,
}


def faster_tls() -> None:
    """Swap qh3's TLS block helpers and HKDF for the equivalents above (idempotent; process-wide, client and server)."""
    tls: Any = importlib.import_module("qh3.tls")
    crypto: Any = importlib.import_module("qh3.quic.crypto")
    if tls.push_block is _PushBlock:
        return
    for name in _TLS_REPLACEMENTS:
        if not callable(getattr(tls, name, None)):
            raise RuntimeError(f"qh3.tls.{name} is gone: the TLS speed-up knows qh3 2.1")
    if crypto.hkdf_expand_label is not tls.hkdf_expand_label:
        raise RuntimeError("qh3.quic.crypto no longer takes hkdf_expand_label from qh3.tls")
    _PullBlock.error = tls.AlertDecodeError
    for name, replacement in _TLS_REPLACEMENTS.items():
        QH3_ORIGINALS[name] = getattr(tls, name)
        setattr(tls, name, replacement)
    crypto.hkdf_expand_label = _hkdf_expand_label
