"""What a QUIC client is set up with and what it counts: the client configuration (cached per settings) and
``QuicStats``, apart from the driver that uses them."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from swarmgauge.quic.engine import DEFAULT_ENGINE, engine


@dataclass(slots=True)
class QuicStats:
    """Counters shared by every connection a client makes, for the User to report."""

    handshakes: int = 0
    streams_opened: int = 0
    reconnects: int = 0  # attempts to replace a lost or failed connection (``MarkClient``, the one owner of them)
    connections_lost: int = 0


@functools.lru_cache(maxsize=64)
def client_configuration(
    *,
    alpn: str = "mark",
    insecure: bool = False,
    ca_file: str | None = None,
    server_name: str | None = None,
    idle_timeout: float = 30.0,
    quic_engine: str = DEFAULT_ENGINE,
    initial_rtt: float | None = None,
) -> Any:
    """Client TLS/QUIC settings on ``quic_engine``: verification on unless ``insecure``; ``server_name`` is checked
    and sent as SNI. The configuration's class decides which engine the driver runs on.

    One configuration per distinct set of settings, shared by every connection that uses it (connections only read
    it): per user it was 1.5 KiB and a CA file read each time. Do not modify the one returned.

    ``initial_rtt`` is the round-trip estimate before the first sample (None: the library's own): both libraries
    resend a first Initial that got no answer after twice it (qh3 0.333 s, so 667 ms; aioquic 0.1 s; quic-go, the
    demarkus tools' client, 100 ms, so 200 ms).

    The engine's crypto is warmed here, once per process, before any handshake is timed (``warm_crypto``)."""
    configuration = engine(quic_engine).client_configuration(
        alpn=alpn,
        insecure=insecure,
        ca_file=ca_file,
        server_name=server_name,
        idle_timeout=idle_timeout,
        initial_rtt=initial_rtt,
    )
    warm_crypto(quic_engine)
    return configuration


#: where the warm-up's ClientHello is addressed: it is built, never sent
_NOWHERE = ("127.0.0.1", 9)


@functools.cache
def warm_crypto(quic_engine: str) -> None:
    """Build one ClientHello on ``quic_engine`` and send it nowhere, once per engine and process.

    The first key pair a process makes sets up the engine's crypto library: qh3's first X25519 key took 68-213 ms
    against 0.03 ms for the next, and every later handshake 2-8 ms. Without this, the first user's ``QUIC``
    ``handshake`` in each worker carried that set-up as if the server had taken it (a compose run of two workers
    showed a handshake p50 of 236 ms)."""
    quic = engine(quic_engine)
    configuration = quic.client_configuration(
        alpn="mark", insecure=True, ca_file=None, server_name=None, idle_timeout=1.0
    )
    connection = quic.QuicConnection(configuration=configuration)
    connection.connect(_NOWHERE, now=0.0)
    connection.datagrams_to_send(now=0.0)
