"""qh3's private seams that the engine adapter patches: stream limits in its native core and transport parameters,
and trust in a self-issued server certificate named in the CA file.

Kept apart from ``quic_engine`` so the adapter reads as the engine's interface; every use of qh3's private names
is here, each checked before it is patched so a new qh3 fails loudly instead of running unpatched.
"""

from __future__ import annotations

import contextlib
import functools
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
