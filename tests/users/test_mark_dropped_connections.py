"""Issue 33.4: a QUIC server that completes each handshake and then drops the connection is backed off from, as a
refused one is (before: 8,569 handshakes in 14 s at 92 % CPU). The server is the misbehaving FAKE of
``tests/quic/misbehaving_quic.py`` (real QUIC and TLS) with ``drop_after_handshake``."""

from __future__ import annotations

import time

import pytest

from swarmgauge.quic.driver import QuicError
from swarmgauge.users.backoff import max_attempts
from swarmgauge.users.mark_client import BACKOFF_FIRST, BACKOFF_MAX, MarkClient
from tests.quic.misbehaving_quic import MisbehavingQuicServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

WINDOW = 1.5  # seconds of requests against the dropping server
MAX_REQUESTS = 2_000  # the loop's own bound, far above what a backed-off client gets through


@pytest.fixture
def dropping_server(quic_engine):
    server = MisbehavingQuicServer(quic_engine=quic_engine, drop_after_handshake=True).start()
    yield server
    server.stop()


@pytest.mark.parametrize("connection", ["pooled", "fresh"])
def test_connections_dropped_after_the_handshake_are_backed_off(dropping_server, connection):
    client = MarkClient(
        dropping_server.url, quic_engine=dropping_server.engine.name, insecure=True, timeout=2, connection=connection
    )
    failures = 0
    ends_at = time.monotonic() + WINDOW
    for _ in range(MAX_REQUESTS):
        if time.monotonic() >= ends_at:
            break
        try:
            client.fetch("/good")
        except QuicError:
            failures += 1
    client.close()
    assert failures > 0
    # one attempt, then one after each backoff wait (jitter 0.2), plus the attempt whose wait ends past the window
    bound = max_attempts(WINDOW, BACKOFF_FIRST, BACKOFF_MAX, jitter=0.2) + 1
    assert dropping_server.handshakes <= bound, (dropping_server.handshakes, bound)


def test_a_connection_that_answers_is_kept(quic_engine):
    """A connection that answers is not a fault: it is kept, with no reconnect and no backoff."""
    server = MisbehavingQuicServer(quic_engine=quic_engine).start()
    try:
        client = MarkClient(server.url, quic_engine=server.engine.name, insecure=True, timeout=2)
        assert client.fetch("/good").status == "ok"
        assert client.fetch("/good").status == "ok"
        assert server.handshakes == 1
        client.close()
    finally:
        server.stop()
