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


def test_one_flush_ends_at_a_datagram_shorter_than_the_one_before_it():
    """A QUIC sender fills every datagram of a flush but the last: a connection awaiting one answer stops its drain
    there, without the read that would find the socket empty; the next drain takes what came after."""
    peer, transport = _peer_and_transport()
    try:
        sizes = [1200, 1200, 500, 1200, 300, 40]  # three flushes: each ends at a datagram shorter than the one before
        sent = [bytes([index + 1]) * size for index, size in enumerate(sizes)]
        for data in sent:
            peer.send(data)
        drains = _drains_until(transport, len(sent), one_flush=True)
        assert [data for drained in drains for data in drained] == sent  # all of it, in order
        assert len(drains) >= 3  # no drain goes on past a shorter datagram
        for drained in drains:
            lengths = [len(data) for data in drained]
            assert lengths[:-1] == sorted(lengths[:-1])  # a shorter datagram is the last of its drain
        assert transport.drain(one_flush=True) == []
    finally:
        transport.close()
        peer.close()


def test_without_one_flush_a_drain_reads_every_flush():
    peer, transport = _peer_and_transport()
    try:
        sent = [b"a" * 1200, b"b" * 500, b"c" * 1200, b"d" * 300]
        for data in sent:
            peer.send(data)
        time.sleep(0.02)  # loopback has them all by now, but for a very busy machine
        drains = _drains_until(transport, len(sent), one_flush=False)
        assert [data for drained in drains for data in drained] == sent
        assert len(drains[0]) > 2 or len(drains) > 1  # read past the first shorter datagram, unless not yet there
    finally:
        transport.close()
        peer.close()


def _drains_until(transport: UdpTransport, count: int, *, one_flush: bool) -> list[list[bytes]]:
    """The non-empty drains until ``count`` datagrams came (bounded: a busy machine may take a few ms)."""
    drains: list[list[bytes]] = []
    for _ in range(200):
        drained = transport.drain(one_flush=one_flush)
        if drained:
            drains.append(drained)
        if sum(len(d) for d in drains) >= count:
            break
        if not drained:
            time.sleep(0.005)
    return drains


def test_what_one_flush_leaves_makes_the_transport_call_again():
    """The io watcher is level-triggered: the flushes a drain left in the socket bring another readable callback."""
    import gevent

    peer, transport = _peer_and_transport()
    drains: list[list[bytes]] = []
    transport.set_on_readable(lambda: drains.append(transport.drain(one_flush=True)))
    try:
        sent = [b"a" * 1200, b"b" * 500, b"c" * 1200, b"d" * 300]
        for data in sent:
            peer.send(data)
        for _ in range(200):  # bounded
            if sum(len(d) for d in drains) >= len(sent):
                break
            gevent.sleep(0.005)
        assert [data for drained in drains for data in drained] == sent
        assert len([drained for drained in drains if drained]) >= 2
    finally:
        transport.close()
        peer.close()


def test_the_memory_pair_calls_back_in_the_hub_not_inside_send():
    """The driver runs its whole pass (answers switched to their greenlets included) in the readable callback, so a
    transport must call it from the hub: the in-memory server answers inside ``send()``, and its callback waits for
    the hub instead of running in the sender's greenlet."""
    import gevent

    from swarmgauge.quic.engine import engine
    from swarmgauge.quic.settings import client_configuration
    from swarmgauge.quic.transport import MemoryPair

    pair = MemoryPair(lambda request: request, quic_engine="qh3")
    transport = pair.transport_factory("127.0.0.1", 4433)
    called_in: list[object] = []
    transport.set_on_readable(lambda: called_in.append(gevent.getcurrent()))
    client = engine("qh3").QuicConnection(configuration=client_configuration(insecure=True, quic_engine="qh3"))
    client.connect(transport.peer, now=time.monotonic())
    for data, _ in client.datagrams_to_send(time.monotonic()):
        transport.send(data)
    assert called_in == []  # the server's first flight is waiting in the inbox, not handed over inside send()
    gevent.sleep(0)
    assert called_in == [gevent.get_hub()]  # once for the whole flight, from the hub
    assert transport.drain()
    transport.close()


def test_transports_to_one_address_literal_share_its_socket_address():
    """Each pooled connection to the target kept a socket address of its own; now one per address."""
    peer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    peer.bind(("127.0.0.1", 0))
    port = peer.getsockname()[1]
    first, second = UdpTransport.open("127.0.0.1", port), UdpTransport.open("127.0.0.1", port)
    try:
        assert first.peer == ("127.0.0.1", port) and first.peer is second.peer
        first.send(b"one")
        second.send(b"two")
        assert sorted(peer.recvfrom(64)[0] for _ in range(2)) == [b"one", b"two"]
    finally:
        first.close()
        second.close()
        peer.close()
