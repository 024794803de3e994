"""The UDP transport's receive path: every datagram whole, in order, and its own bytes (the receive buffer is shared
by the transports of a thread, so what one drain returned must not change with the next)."""

from __future__ import annotations

import socket
import time

from swarmgauge.quic.transport import MAX_DATAGRAM, UdpTransport


def _peer_and_transport() -> tuple[socket.socket, UdpTransport]:
    peer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    peer.bind(("127.0.0.1", 0))
    transport = UdpTransport.open("127.0.0.1", peer.getsockname()[1])
    transport.send(b"hello")  # the peer learns where the transport is
    _, address = peer.recvfrom(64)
    peer.connect(address)
    return peer, transport


def _drain_until(transport: UdpTransport, count: int) -> list[bytes]:
    received: list[bytes] = []
    for _ in range(200):  # bounded: loopback delivers at once, a busy machine may take a few ms
        received += transport.drain()
        if len(received) >= count:
            break
        time.sleep(0.005)
    return received


def test_datagrams_of_every_size_arrive_whole_and_in_order():
    peer, transport = _peer_and_transport()
    try:
        sizes = [1, 1200, 1472, 9000, MAX_DATAGRAM - 29]  # the last: the most IPv4 UDP carries on loopback
        sent = [bytes([index + 1]) * size for index, size in enumerate(sizes)]
        for data in sent:
            peer.send(data)
        assert _drain_until(transport, len(sent)) == sent
        assert transport.drain() == []
    finally:
        transport.close()
        peer.close()


def test_what_a_drain_returned_keeps_its_bytes_after_other_transports_drain():
    first_peer, first = _peer_and_transport()
    second_peer, second = _peer_and_transport()
    try:
        first_peer.send(b"a" * 1000)
        [kept] = _drain_until(first, 1)
        second_peer.send(b"b" * 2000)
        assert _drain_until(second, 1) == [b"b" * 2000]
        assert kept == b"a" * 1000 and isinstance(kept, bytes)
    finally:
        for closing in (first, second, first_peer, second_peer):
            closing.close()
