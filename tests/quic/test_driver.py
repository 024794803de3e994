"""The gevent QUIC driver over real QUIC, on each engine: UDP to a misbehaving server, and the in-memory pair."""

from __future__ import annotations

from typing import Any

import gevent
import pytest
from gevent import socket as gsocket

from swarmgauge.quic.acks import MAX_ACK_DELAY
from swarmgauge.quic.driver import (
    ALPNMismatch,
    ConnectFailed,
    ConnectionLost,
    HandshakeTimeout,
    QuicDriver,
    QuicStats,
    RequestTimeout,
    ResponseTooLarge,
    StreamReset,
    TLSVerificationFailed,
    client_configuration,
)
from swarmgauge.quic.engine import engine
from swarmgauge.quic.transport import MemoryPair
from tests.quic.misbehaving_quic import GOOD_RESPONSE, MisbehavingQuicServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(30)]


@pytest.fixture(scope="module")
def server(quic_engine):
    server = MisbehavingQuicServer(quic_engine=quic_engine).start()
    yield server
    server.stop()


def driver_for(server, **options) -> QuicDriver:
    max_streams = options.pop("max_streams", 10)
    options.setdefault("insecure", True)
    options.setdefault("quic_engine", server.engine.name)
    return QuicDriver("127.0.0.1", server.port, client_configuration(**options), max_streams=max_streams)


@pytest.fixture
def connected(server):
    driver = driver_for(server)
    driver.connect(timeout=5)
    yield driver
    driver.close()


def test_request_and_counters_over_udp(connected):
    assert connected.request(b"FETCH /good\n", timeout=5) == GOOD_RESPONSE
    assert connected.request(b"FETCH /other\n", timeout=5) == GOOD_RESPONSE
    assert connected.stats.handshakes == 1
    assert connected.stats.streams_opened == 2
    assert connected.handshake_seconds > 0


def test_request_carries_fin_and_exact_bytes(server, connected):
    request = b"PUBLISH /good\n---\nauth: x\n---\nbody \x00\xff"
    connected.request(request, timeout=5)
    assert server.requests[-1] == request


def test_verification_with_ca_file_and_server_name(server, tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_bytes(server.certificate_pem())
    driver = driver_for(server, insecure=False, ca_file=str(ca), server_name="localhost")
    driver.connect(timeout=5)
    assert driver.request(b"FETCH /good\n", timeout=5) == GOOD_RESPONSE
    driver.close()


def test_untrusted_certificate_fails_verification(server):
    driver = driver_for(server, insecure=False, server_name="localhost")
    with pytest.raises(TLSVerificationFailed):
        driver.connect(timeout=5)
    assert not driver.alive


def test_server_name_mismatch_fails_verification(server, tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_bytes(server.certificate_pem())
    driver = driver_for(server, insecure=False, ca_file=str(ca), server_name="other.example")
    with pytest.raises(TLSVerificationFailed, match=r"other\.example"):
        driver.connect(timeout=5)


@pytest.mark.parametrize("alpn", [["h3"], None], ids=["other-alpn", "no-alpn"])
def test_wrong_alpn(alpn, quic_engine):
    server = MisbehavingQuicServer(alpn=alpn, quic_engine=quic_engine).start()
    try:
        driver = driver_for(server)
        with pytest.raises(ALPNMismatch):
            driver.connect(timeout=5)
    finally:
        server.stop()


def test_stream_reset_keeps_connection(connected):
    with pytest.raises(StreamReset) as caught:
        connected.request(b"FETCH /reset\n", timeout=5)
    assert caught.value.error_code == 0x42
    assert connected.request(b"FETCH /good\n", timeout=5) == GOOD_RESPONSE


def test_no_answer_times_out_and_keeps_connection(connected):
    with pytest.raises(RequestTimeout):
        connected.request(b"FETCH /silent\n", timeout=0.3)
    assert connected.in_flight == 0
    assert connected.request(b"FETCH /good\n", timeout=5) == GOOD_RESPONSE


def test_response_over_4_mib_is_stopped_and_keeps_connection(connected):
    with pytest.raises(ResponseTooLarge):
        connected.request(b"FETCH /huge\n", timeout=20)
    assert connected.request(b"FETCH /good\n", timeout=5) == GOOD_RESPONSE


def test_connection_closed_mid_stream(server):
    driver = driver_for(server)
    driver.connect(timeout=5)
    with pytest.raises(ConnectionLost, match="going away"):
        driver.request(b"FETCH /drop\n", timeout=5)
    assert not driver.alive
    with pytest.raises(ConnectionLost):
        driver.request(b"FETCH /good\n", timeout=5)
    assert driver.stats.connections_lost == 1


def test_silent_peer_is_detected_by_idle_timeout(server):
    driver = driver_for(server, idle_timeout=1.0)
    driver.connect(timeout=5)
    with pytest.raises(ConnectionLost, match="Idle timeout"):
        driver.request(b"FETCH /vanish\n", timeout=10)
    assert not driver.alive


def test_keepalive_pings_hold_an_idle_connection_open(server):
    driver = QuicDriver(
        "127.0.0.1",
        server.port,
        client_configuration(insecure=True, idle_timeout=1.0, quic_engine=server.engine.name),
        keepalive=0.25,
    )
    driver.connect(timeout=5)
    gevent.sleep(1.6)
    assert driver.alive
    assert driver.request(b"FETCH /good\n", timeout=5) == GOOD_RESPONSE
    driver.close()


def test_more_streams_than_the_bound_wait_instead_of_failing(server):
    driver = driver_for(server, max_streams=10)
    driver.connect(timeout=5)
    server.max_open_slow = 0
    requests = [gevent.spawn(driver.request, b"FETCH /slow\n", 10) for _ in range(25)]
    gevent.joinall(requests, raise_error=True)
    assert all(request.value == GOOD_RESPONSE for request in requests)
    assert server.max_open_slow == 10
    driver.close()


def test_close_fails_pending_and_later_requests(connected):
    pending = gevent.spawn(connected.request, b"FETCH /silent\n", 5)
    gevent.sleep(0.05)
    connected.close()
    with pytest.raises(ConnectionLost):
        pending.get()
    with pytest.raises(ConnectionLost):
        connected.request(b"FETCH /good\n", timeout=1)


def test_unreachable_port_fails_to_connect(quic_engine):
    probe = gsocket.socket(gsocket.AF_INET, gsocket.SOCK_DGRAM)
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    driver = QuicDriver("127.0.0.1", port, client_configuration(insecure=True, quic_engine=quic_engine))
    with pytest.raises(ConnectFailed):
        driver.connect(timeout=3)


def test_peer_that_never_answers_times_out_the_handshake(quic_engine):
    mute = gsocket.socket(gsocket.AF_INET, gsocket.SOCK_DGRAM)
    mute.bind(("127.0.0.1", 0))
    try:
        driver = QuicDriver(
            "127.0.0.1", mute.getsockname()[1], client_configuration(insecure=True, quic_engine=quic_engine)
        )
        with pytest.raises(HandshakeTimeout):
            driver.connect(timeout=0.3)
    finally:
        mute.close()


def test_unresolvable_transport_is_connect_failed(quic_engine):
    def failing_factory(host, port):
        raise OSError("name does not resolve")

    driver = QuicDriver("nowhere", 1, client_configuration(quic_engine=quic_engine), transport_factory=failing_factory)
    with pytest.raises(ConnectFailed, match="does not resolve"):
        driver.connect(timeout=1)


def test_memory_pair_runs_the_same_driver(quic_engine):
    pair = MemoryPair(lambda request: b"echo " + request, quic_engine=quic_engine)
    stats = QuicStats()
    driver = QuicDriver(
        "127.0.0.1",
        4433,
        client_configuration(insecure=True, quic_engine=quic_engine),
        transport_factory=pair.transport_factory,
        stats=stats,
    )
    driver.connect(timeout=5)
    replies = [driver.request(b"n%d" % i, timeout=5) for i in range(20)]
    assert replies == [b"echo n%d" % i for i in range(20)]
    assert stats.streams_opened == 20 and stats.handshakes == 1
    assert pair.server_cpu_seconds > 0
    driver.close()
    assert not driver.alive


class DatagramCountingMemoryPair(MemoryPair):
    """The in-memory pair, counting the datagrams the client sends."""

    def __init__(self, handler, quic_engine):
        super().__init__(handler, quic_engine=quic_engine)
        self.client_datagrams = 0

    def transport_factory(self, host, port):
        transport = super().transport_factory(host, port)
        send = transport.send

        def counted(data: bytes) -> None:
            self.client_datagrams += 1
            send(data)

        transport.send = counted
        return transport


def _driver_on(pair: Any, quic_engine: str) -> QuicDriver:
    """A driver to the in-memory pair ``pair``, connected."""
    driver = QuicDriver(
        "127.0.0.1",
        4433,
        client_configuration(insecure=True, quic_engine=quic_engine),
        transport_factory=pair.transport_factory,
    )
    driver.connect(timeout=5)
    return driver


def _counted_warm_driver(quic_engine: str) -> tuple[DatagramCountingMemoryPair, QuicDriver]:
    """A driver on a datagram-counting pair, past its handshake and a first request, the count at 0."""
    pair = DatagramCountingMemoryPair(lambda request: b"a" * 600, quic_engine)
    driver = _driver_on(pair, quic_engine)
    driver.request(b"warm", timeout=5)
    gevent.sleep(0.1)
    pair.client_datagrams = 0
    return pair, driver


def test_back_to_back_requests_carry_the_ack_of_the_previous_answer(quic_engine):
    """quic-go's habit on either engine: the ACK owed for an answer goes out in the next request's datagram, one
    datagram per request (aioquic alone sends an ACK-only one 1 ms after each answer, qh3 alone at once after a FIN)."""
    pair, driver = _counted_warm_driver(quic_engine)
    for i in range(30):
        driver.request(b"n%d" % i, timeout=5)
    assert 30 <= pair.client_datagrams <= 32
    driver.close()


def test_requests_spaced_under_the_ack_delay_send_no_ack_of_their_own(quic_engine):
    """A user whose requests come a few ms apart: the held ACK's timer, armed for an earlier answer, fires between
    them while the latest answer's ACK may still wait for the next request. That pass must leave it waiting (qh3
    sent it at once in a datagram of its own: about one extra datagram per four requests at 16 users)."""
    pair, driver = _counted_warm_driver(quic_engine)
    for i in range(30):
        driver.request(b"n%d" % i, timeout=5)
        gevent.sleep(0.008)
    assert 30 <= pair.client_datagrams <= 32
    driver.close()


def test_an_idle_connection_acknowledges_an_answer_within_the_ack_delay(quic_engine):
    """The held ACK waits for a next request only up to ``MAX_ACK_DELAY``: with none coming, it goes out alone."""
    pair, driver = _counted_warm_driver(quic_engine)
    driver.request(b"one", timeout=5)
    assert pair.client_datagrams == 1  # the request, carrying the ACK of the warm-up's answer
    gevent.sleep(MAX_ACK_DELAY * 4)
    # the answer's ACK, alone (qh3 then acknowledges the server's MAX_STREAMS for the finished stream too)
    assert pair.client_datagrams >= 2
    driver.close()


def test_timer_wakes_that_find_nothing_due_do_not_ask_the_engine(quic_engine, monkeypatch):
    """The driver keeps its hub timer armed at an earlier deadline rather than remake it on every request; when it
    wakes and the deadline now wanted is later (the next request moved it), it re-arms without a pass: the engine is
    asked for its next deadline once per answer, not once more per wake (two more calls and an empty flush each, about
    one wake per ACK delay per connection)."""
    pair, driver = _counted_warm_driver(quic_engine)
    quic = engine(quic_engine)
    asked = [0]
    next_timer = quic.next_timer

    def counted(connection: Any) -> Any:
        asked[0] += 1
        return next_timer(connection)

    monkeypatch.setattr(quic, "next_timer", counted)
    requests = 30
    for i in range(requests):
        driver.request(b"n%d" % i, timeout=5)
        gevent.sleep(MAX_ACK_DELAY / 3)  # requests a third of the ACK delay apart: the timer wakes between them
    assert asked[0] <= requests + 4
    driver.close()


class DrainCountingMemoryPair(MemoryPair):
    """The in-memory pair, counting the client's reads of its transport and the transport's readable callbacks."""

    def __init__(self, handler, quic_engine):
        super().__init__(handler, quic_engine=quic_engine)
        self.drains = self.readable_calls = 0

    def transport_factory(self, host, port):
        transport = super().transport_factory(host, port)
        drain, set_on_readable = transport.drain, transport.set_on_readable

        def counted_drain(one_flush=False):
            self.drains += 1
            return drain(one_flush)

        def counted_set_on_readable(callback):
            def counted_callback():
                self.readable_calls += 1
                callback()

            set_on_readable(None if callback is None else counted_callback)

        transport.drain, transport.set_on_readable = counted_drain, counted_set_on_readable
        return transport


class FlushRecordingMemoryPair(MemoryPair):
    """The in-memory pair, recording what each of the client's drains asked for (``one_flush``)."""

    def __init__(self, handler, quic_engine):
        super().__init__(handler, quic_engine=quic_engine)
        self.asked: list[bool] = []

    def transport_factory(self, host, port):
        transport = super().transport_factory(host, port)
        drain = transport.drain

        def recorded(one_flush=False):
            self.asked.append(one_flush)
            return drain(one_flush)

        transport.drain = recorded
        return transport


def test_one_answer_awaited_drains_one_flush_several_drain_everything(quic_engine):
    """A pooled user's connection awaits one answer at a time: its pass asks the transport for the peer's flush
    only (no read that finds the socket empty); a connection with several requests in flight reads until empty."""
    pair = FlushRecordingMemoryPair(lambda request: b"a" * 600, quic_engine)
    driver = _driver_on(pair, quic_engine)
    driver.request(b"warm", timeout=5)
    gevent.sleep(0.05)
    pair.asked.clear()
    assert driver.request(b"one", timeout=5) == b"a" * 600
    assert pair.asked[0] is True
    pair.asked.clear()
    answers = gevent.joinall([gevent.spawn(driver.request, b"n%d" % i, 5) for i in range(5)], raise_error=True)
    assert [greenlet.value for greenlet in answers] == [b"a" * 600] * 5
    assert False in pair.asked
    driver.close()


def test_a_timer_pass_does_not_read_the_transport(quic_engine):
    """Only a pass the transport called for reads it: the held ACK's timer (one per ACK delay per connection) wakes
    a pass that would find the socket empty, a failed receive per wake."""
    pair = DrainCountingMemoryPair(lambda request: b"a" * 600, quic_engine)
    driver = _driver_on(pair, quic_engine)
    assert driver.request(b"one", timeout=5) == b"a" * 600
    gevent.sleep(0.2)  # the held ACK's timer fires and its pass sends the ACK; nothing arrives meanwhile but acks
    assert driver.request(b"two", timeout=5) == b"a" * 600
    assert pair.readable_calls > 0 and pair.drains == pair.readable_calls
    driver.close()


def test_response_cap_is_exact(quic_engine):
    pair = MemoryPair(lambda request: b"x" * int(request), quic_engine=quic_engine)
    driver = QuicDriver(
        "127.0.0.1",
        4433,
        client_configuration(insecure=True, quic_engine=quic_engine),
        transport_factory=pair.transport_factory,
        max_response=3000,
    )
    driver.connect(timeout=5)
    assert len(driver.request(b"3000", timeout=5)) == 3000
    with pytest.raises(ResponseTooLarge):
        driver.request(b"3001", timeout=5)
    assert driver.request(b"10", timeout=5) == b"x" * 10
    driver.close()


@pytest.mark.parametrize("listen, client_host", [("::1", "::1"), ("127.0.0.1", "localhost")])
def test_an_ipv6_literal_and_a_name_both_reach_the_reference_server(listen, client_host, quic_engine):
    """Address literals skip the resolver (a thread hand-off per fresh connection); names still go through it."""
    from swarmgauge.targets.launch import launch_target

    with launch_target("mark", ["--host", listen, "--port", "0", "--quic-engine", quic_engine]) as server:
        port = int(server.url.rsplit(":", 1)[1])
        driver = QuicDriver(
            client_host, port, client_configuration(insecure=True, server_name="localhost", quic_engine=quic_engine)
        )
        driver.connect(timeout=10)
        assert driver.request(b"FETCH /index.md\n", timeout=10)
        driver.close()
