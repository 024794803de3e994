"""A qh3 client after its handshake: its TLS bridge and context swapped for the stand-in, which takes session
tickets and refuses anything else as qh3 does, and its key shares kept while the handshake is not over."""

from __future__ import annotations

import importlib

import pytest

from swarmgauge.quic import qh3_post_handshake as post_handshake

tls = importlib.import_module("qh3.tls")
Buffer = importlib.import_module("qh3._hazmat").Buffer


def test_a_client_lets_go_of_its_tls_state_once_its_handshake_is_done_and_still_talks(monkeypatch):
    """A pooled connection keeps neither qh3's TLS context (its key-share private keys, ~4 KiB each, among it) nor
    its bridge after the handshake, and works on."""
    from swarmgauge.quic.driver import QuicDriver, client_configuration
    from swarmgauge.quic.engine import Qh3Engine
    from swarmgauge.quic.transport import MemoryPair

    released = []
    release = Qh3Engine.release_handshake_state

    def recording(engine, quic):
        held = [name for name in post_handshake.KEY_EXCHANGE_FIELDS if getattr(quic._tls.tls, name) is not None]
        release(engine, quic)
        released.append((quic, held))

    monkeypatch.setattr(Qh3Engine, "release_handshake_state", recording)
    pair = MemoryPair(lambda request: b"echo " + request, quic_engine="qh3")
    configuration = client_configuration(insecure=True, quic_engine="qh3")
    driver = QuicDriver("127.0.0.1", 4433, configuration, transport_factory=pair.transport_factory)
    driver.connect(timeout=5)
    [(quic, held)] = released
    assert held  # qh3 kept at least one key share until then
    assert isinstance(quic._tls, post_handshake.PostHandshakeTls) and quic.tls is None
    assert quic.get_cipher() is not None
    assert [driver.request(b"n%d" % i, timeout=5) for i in range(5)] == [b"echo n%d" % i for i in range(5)]
    driver.close()


def _late_handshake_message(server, message: bytes) -> None:
    """The server sends ``message`` on the 1-RTT CRYPTO stream after the handshake, as quic-go sends its tickets."""
    epoch = tls.Epoch.ONE_RTT
    offset = server._tls._output_offsets[epoch]
    server._call_core(server._core.send_crypto, int(epoch), offset, message)
    server._tls._output_offsets[epoch] = offset + len(message)


def dialling_client(qh3):
    """A qh3 client whose first flight is built (its handshake under way, nothing sent anywhere)."""
    quic = qh3.QuicConnection(
        configuration=qh3.client_configuration(
            alpn="mark", insecure=True, ca_file=None, server_name="localhost", idle_timeout=5.0
        )
    )
    quic.connect(("127.0.0.1", 4433), now=1.0)
    return quic


def move_datagrams(client, server, clock: float) -> float:
    """Ten rounds of datagrams both ways, the clock 10 ms on each (qh3 paces what it sends); the clock after."""
    from tests.quic.test_engine import CLIENT, SERVER

    for _ in range(10):
        clock += 0.01
        for data, _ in server.datagrams_to_send(clock):
            client.receive_datagram(data, SERVER, clock)
        for data, _ in client.datagrams_to_send(clock):
            server.receive_datagram(data, CLIENT, clock)
    return clock


def _session_ticket() -> bytes:
    buf = Buffer(capacity=512)
    ticket = tls.NewSessionTicket(ticket_lifetime=86400, ticket_age_add=7, ticket_nonce=b"", ticket=b"t" * 64)
    tls.push_new_session_ticket(buf, ticket)
    return bytes(buf.data)


def test_a_session_ticket_after_the_release_is_taken_and_the_connection_goes_on():
    from swarmgauge.quic.engine import engine
    from tests.quic.test_engine import connected_pair

    qh3 = engine("qh3")
    client, server, clock = connected_pair(qh3)
    assert post_handshake.release_handshake_tls(client)
    ticket = _session_ticket()
    _late_handshake_message(server, ticket[:5])  # a ticket in two CRYPTO frames, as a long one may come
    clock = move_datagrams(client, server, clock)
    _late_handshake_message(server, ticket[5:])
    clock = move_datagrams(client, server, clock)
    assert client._close_event is None
    stream_id = client.get_next_available_stream_id()
    client.send_stream_data(stream_id, b"ping", end_stream=True)
    move_datagrams(client, server, clock)
    received = []
    while (event := server.next_event()) is not None:
        if isinstance(event, qh3.StreamDataReceived):
            received.append(event.data)
    assert b"".join(received) == b"ping"


@pytest.mark.parametrize("released", [True, False])
def test_another_handshake_message_after_the_handshake_closes_the_connection_as_qh3_does(released):
    from swarmgauge.quic.engine import engine
    from tests.quic.test_engine import connected_pair

    qh3 = engine("qh3")
    client, server, clock = connected_pair(qh3)
    if released:
        assert post_handshake.release_handshake_tls(client)
    _late_handshake_message(server, bytes([tls.HandshakeType.KEY_UPDATE, 0, 0, 1, 0]))
    move_datagrams(client, server, clock)
    unexpected = qh3.QuicErrorCode.CRYPTO_ERROR + tls.AlertDescription.unexpected_message
    assert client._close_event is not None and client._close_event.error_code == unexpected


def test_the_release_waits_for_the_handshake_and_leaves_a_server_alone():
    from swarmgauge.quic.engine import engine
    from tests.quic.test_engine import connected_pair

    qh3 = engine("qh3")
    fresh = dialling_client(qh3)
    assert not post_handshake.release_handshake_tls(fresh) and fresh.tls is not None
    client, server, _ = connected_pair(qh3)
    assert not post_handshake.release_handshake_tls(server) and server.tls is not None
    assert post_handshake.release_handshake_tls(client) and client.tls is None


def test_non_contiguous_crypto_after_the_release_is_refused_as_qh3_refuses_it():
    stand_in = post_handshake.PostHandshakeTls(1, None, {tls.Epoch.ONE_RTT: 10}, b"")
    with pytest.raises(ValueError, match="non-contiguous"):
        stand_in.receive_crypto(tls.Epoch.ONE_RTT, b"x", 3)
    with pytest.raises(ValueError, match="not valid"):
        stand_in.receive_crypto(tls.Epoch.ZERO_RTT, b"x")


def test_the_stand_in_follows_each_epochs_offset_on_its_own():
    """The offsets are kept by epoch number: qh3's epochs must stay numbered 0-3 in order for that."""
    assert [int(epoch) for epoch in tls.Epoch] == list(range(len(tls.Epoch)))
    stand_in = post_handshake.PostHandshakeTls(1, None, {tls.Epoch.HANDSHAKE: 500, tls.Epoch.ONE_RTT: 10}, b"")
    stand_in.receive_crypto(tls.Epoch.ONE_RTT, b"\x04\x00", 10)  # the start of a message: kept until it is whole
    stand_in.receive_crypto(tls.Epoch.ONE_RTT, b"\x00", 12)
    with pytest.raises(ValueError, match="expected offset 13"):
        stand_in.receive_crypto(tls.Epoch.ONE_RTT, b"\x00", 12)
    with pytest.raises(ValueError, match="expected offset 500"):
        stand_in.receive_crypto(tls.Epoch.HANDSHAKE, b"\x00", 12)


def test_releasing_before_the_handshake_ends_keeps_the_key_shares():
    from swarmgauge.quic.engine import engine

    quic = dialling_client(engine("qh3"))
    post_handshake.release_key_exchange(quic)
    assert any(getattr(quic._tls.tls, name) is not None for name in post_handshake.KEY_EXCHANGE_FIELDS)
