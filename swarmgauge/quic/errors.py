"""The QUIC driver's named errors: one class per way a transport can fail, all under :class:`QuicError`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from swarmgauge.errors import SwarmgaugeError

TLS_VERIFY_ALERT_NAMES = (
    "bad_certificate",
    "unsupported_certificate",
    "certificate_revoked",
    "certificate_expired",
    "certificate_unknown",
    "unknown_ca",
)


class QuicError(SwarmgaugeError):
    """A transport failure below the Mark Protocol."""


class ConnectFailed(QuicError):
    """The connection could not be set up (resolution, socket, refused, or a handshake the peer aborted)."""


class HandshakeTimeout(ConnectFailed):
    """The QUIC/TLS handshake did not finish within the connect timeout."""


class TLSVerificationFailed(ConnectFailed):
    """The server's certificate was not trusted (verification is on unless ``insecure``)."""


class ALPNMismatch(ConnectFailed):
    """The peer did not agree on the ALPN protocol (``mark``)."""


class StreamReset(QuicError):
    """The peer reset the request's stream before its FIN."""

    def __init__(self, message: str, error_code: int | None = None):
        super().__init__(message)
        self.error_code = error_code


class RequestTimeout(QuicError):
    """No complete response within the request timeout; the stream is abandoned, the connection kept."""


class ConnectionLost(QuicError):
    """The connection ended (peer close, idle timeout, network error, or closed locally) with streams pending."""


class ResponseTooLarge(QuicError):
    """The response grew past the cap while being read; the stream was stopped."""


# What to do about it: a dev server's certificate is self-signed (the demarkus one and the reference server's)
TRUST_HINT = "trust its certificate with --mark-ca FILE or skip the check with --mark-insecure; swarmgauge mark: --ca, --insecure"


def termination_error(
    quic_engine: Any,
    event: Any,
    *,
    handshake_over: bool,
    server_name: str,
    lost_or_failed: Callable[[str], QuicError],
) -> QuicError:
    """The named error for a ``ConnectionTerminated``: no common ALPN, an untrusted certificate during the handshake,
    else ``lost_or_failed`` of the close's code and reason (lost after a handshake, a failed connect before)."""
    reason = event.reason_phrase or "no reason given"
    code = event.error_code
    crypto_error, alerts = quic_engine.QuicErrorCode.CRYPTO_ERROR, quic_engine.AlertDescription
    if crypto_error <= code < crypto_error + 256:
        if quic_engine.alpn_refused(code, reason):
            return ALPNMismatch(f"no common ALPN protocol with the server ({reason})")
        if code - crypto_error in {alerts[name] for name in TLS_VERIFY_ALERT_NAMES} and not handshake_over:
            return TLSVerificationFailed(f"server certificate not trusted for {server_name}: {reason} ({TRUST_HINT})")
    return lost_or_failed(f"connection terminated (code 0x{code:x}): {reason}")
