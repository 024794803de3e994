"""The QUIC driver's named errors: one class per way a transport can fail, all under :class:`QuicError`."""

from __future__ import annotations

from swarmgauge.errors import SwarmgaugeError


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
