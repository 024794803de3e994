"""quic-go's ACK habit on aioquic's QuicConnection: a pending ACK waits up to 25 ms, or goes out in the next
packet sent. Two in-memory connections on a virtual clock."""

from __future__ import annotations

import ssl

from aioquic import tls
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.connection import QuicConnection

from swarmgauge.protocols.quic_acks import MAX_ACK_DELAY, ack_with_next_packet, delay_acks
from swarmgauge.users.quic_transport import self_signed_certificate

CLIENT, SERVER = ("127.0.0.1", 40000), ("127.0.0.1", 4433)


def _pair() -> tuple[QuicConnection, QuicConnection, list[float]]:
    cert, key = self_signed_certificate()
    client = QuicConnection(configuration=QuicConfiguration(is_client=True, alpn_protocols=["mark"],
                                                            verify_mode=ssl.CERT_NONE))
    clock = [100.0]
    client.connect(SERVER, now=clock[0])
    first = client.datagrams_to_send(clock[0])
    from aioquic.buffer import Buffer
    from aioquic.quic.packet import pull_quic_header

    cid = pull_quic_header(Buffer(data=first[0][0]), host_cid_length=8).destination_cid
    server = QuicConnection(configuration=QuicConfiguration(is_client=False, alpn_protocols=["mark"], certificate=cert,
                                                            private_key=key), original_destination_connection_id=cid)
    delay_acks(server)
    outgoing = first
    for _ in range(20):  # the handshake, moved by hand
        for data, _ in outgoing:
            server.receive_datagram(data, CLIENT, clock[0])
        back = server.datagrams_to_send(clock[0])
        for data, _ in back:
            client.receive_datagram(data, SERVER, clock[0])
        outgoing = client.datagrams_to_send(clock[0])
        if not outgoing and not back:
            break
    return client, server, clock


def _one_request(client: QuicConnection, server: QuicConnection, now: float) -> None:
    stream_id = client.get_next_available_stream_id()
    client.send_stream_data(stream_id, b"FETCH /a.md\n", end_stream=True)
    for data, _ in client.datagrams_to_send(now):
        server.receive_datagram(data, CLIENT, now)


def test_a_pending_ack_waits_the_delay_and_rides_on_the_next_packet():
    client, server, clock = _pair()
    _one_request(client, server, clock[0])
    space = server._spaces[tls.Epoch.ONE_RTT]
    assert space.ack_at == clock[0] + MAX_ACK_DELAY  # not aioquic's 1 ms
    later = clock[0] + 0.002
    ack_with_next_packet(server, later)
    assert space.ack_at < later  # due: it goes out in the next packet, pacing or not
    server.datagrams_to_send(later)
    assert space.ack_at is None  # the ACK went out in that packet


def test_nothing_pending_is_left_alone():
    client, server, clock = _pair()
    space = server._spaces[tls.Epoch.ONE_RTT]
    server.datagrams_to_send(clock[0] + 1.0)
    assert space.ack_at is None
    ack_with_next_packet(server, clock[0] + 1.0)
    assert space.ack_at is None
