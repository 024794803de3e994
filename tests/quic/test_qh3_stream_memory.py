"""qh3's native per-connection stream state is bounded: what a 1,000-user generator's memory rests on.

qh3's core keeps a record of each finished stream, the last ``QH3_FINISHED_STREAMS_KEPT`` of them per connection
(~80 bytes each, in native memory that ``tracemalloc`` never sees). A pooled connection therefore grows for its first
1,024 requests and then not at all: at 1,000 users that fill is ~83 MiB and took the generator soak's first ten
minutes (issue 33 point 7), at 16 users it is 1.3 MiB and done in seconds. If a qh3 upgrade lets the record grow
without bound, every long run at many users grows with it, and this fails.

swarmgauge cannot make the record smaller (its size is ``MAX_STREAM_TOMBSTONES`` in qh3's Rust, with no setter) and
would not: the record is what makes the client drop a late copy of a finished stream's data instead of opening the
stream again, which the second test shows. A qh3 that keeps nothing per finished stream fails the first test with
a message to update ``QH3_FINISHED_STREAMS_KEPT``.

Two in-memory connections on a virtual clock (``tests/quic/test_engine.py``'s pair), no sockets; glibc's
``mallinfo2`` counts the bytes malloc hands out, compared only with themselves (no figure of this machine's).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc

import pytest

from swarmgauge.quic.engine import QH3_FINISHED_STREAMS_KEPT, engine
from tests.quic.test_engine import CLIENT, SERVER, connected_pair

MAX_PASSES_PER_REQUEST = 50


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks")
    ] + [("keepcost", ctypes.c_size_t)]


def _malloc_in_use() -> int:
    """Bytes malloc has handed out and not had back, after a full collection (glibc 2.33+ only)."""
    gc.collect()
    return int(_mallinfo2().uordblks)


def _mallinfo2():
    name = ctypes.util.find_library("c")
    function = getattr(ctypes.CDLL(name), "mallinfo2", None) if name else None
    if function is None:
        pytest.skip("no glibc mallinfo2 here")
    function.restype = _MallInfo2
    return function()


def _exchange(quic_engine, client, server, clock: float, count: int) -> float:
    """``count`` requests one after another on the pair, each answered and finished both ways; the clock after."""
    for _ in range(count):
        stream_id = client.get_next_available_stream_id()
        client.send_stream_data(stream_id, b"FETCH /a.md\n", end_stream=True)
        answered = False
        for _ in range(MAX_PASSES_PER_REQUEST):
            clock += 0.002
            for connection in (client, server):
                timer = connection.get_timer()
                if timer is not None and timer <= clock:
                    connection.handle_timer(clock)
            quic_engine.receive_datagrams(server, quic_engine.datagrams_to_send(client, clock), CLIENT, clock)
            while (event := server.next_event()) is not None:
                if isinstance(event, quic_engine.StreamDataReceived) and event.end_stream:
                    server.send_stream_data(event.stream_id, b"ok", end_stream=True)
            quic_engine.receive_datagrams(client, quic_engine.datagrams_to_send(server, clock), SERVER, clock)
            while (event := client.next_event()) is not None:
                answered = answered or (isinstance(event, quic_engine.StreamDataReceived) and event.end_stream)
            if answered:
                break
        assert answered, f"stream {stream_id} was not answered in {MAX_PASSES_PER_REQUEST} passes"
    return clock


def test_a_qh3_connection_stops_growing_once_it_has_finished_the_streams_it_keeps():
    """Growth over the first 1,024 requests (plus a margin), then twice as many more: the second adds under a
    quarter of the first (it adds nothing but noise; a per-stream record kept forever would add twice the first)."""
    quic_engine = engine("qh3")
    client, server, clock = connected_pair(quic_engine)
    clock = _exchange(quic_engine, client, server, clock, 16)  # first-use allocations out of the way
    start = _malloc_in_use()
    clock = _exchange(quic_engine, client, server, clock, QH3_FINISHED_STREAMS_KEPT + 64)
    filled = _malloc_in_use()
    _exchange(quic_engine, client, server, clock, 2 * QH3_FINISHED_STREAMS_KEPT)
    later = _malloc_in_use()
    fill_growth, later_growth = filled - start, later - filled
    assert fill_growth > 0, "qh3 kept nothing per finished stream: update QH3_FINISHED_STREAMS_KEPT and this test"
    assert later_growth * 4 < fill_growth, (fill_growth, later_growth)


def _events(connection) -> list:
    events = []
    while (event := connection.next_event()) is not None:
        events.append(event)
    return events


def _resent_while_the_acks_are_lost(quic_engine, client, server, clock: float) -> tuple[list[bytes], float]:
    """What the server sends again when none of the client's datagrams reach it (its probe timer resends the data it
    has no ACK for), and the clock then; the client's datagrams of that time are dropped."""
    for _ in range(MAX_PASSES_PER_REQUEST * 8):
        clock += 0.005
        for connection in (client, server):
            timer = connection.get_timer()
            if timer is not None and timer <= clock:
                connection.handle_timer(clock)
        quic_engine.datagrams_to_send(client, clock)
        resent = quic_engine.datagrams_to_send(server, clock)
        if resent:
            return resent, clock
    raise AssertionError("the server resent nothing while the client's ACKs were lost")


def test_a_late_copy_of_a_finished_streams_answer_is_dropped_and_does_not_reopen_the_stream():
    """What qh3's record of finished streams is for, and why swarmgauge leaves its size to qh3: the server's answer
    sent again after the client has finished the stream (the client's ACK lost, the server's probe carrying the data
    once more) arrives in a new packet; the client drops it, no second answer, and the stream stays finished. Without
    the record qh3 takes the late frame for a new stream: a second answer, and a stream held open for the connection's
    life (``StreamManager.get_or_create_receive`` in qh3's ``src/quic/stream.rs``)."""
    quic_engine = engine("qh3")
    client, server, clock = connected_pair(quic_engine)
    clock += 0.01
    body = b"x" * 1000  # larger than any ACK or PING alone: the datagrams sent again must carry it
    stream_id = client.get_next_available_stream_id()
    client.send_stream_data(stream_id, b"FETCH /a.md\n", end_stream=True)
    quic_engine.receive_datagrams(server, quic_engine.datagrams_to_send(client, clock), CLIENT, clock)
    for event in _events(server):
        if isinstance(event, quic_engine.StreamDataReceived) and event.end_stream:
            server.send_stream_data(event.stream_id, body, end_stream=True)
    quic_engine.receive_datagrams(client, quic_engine.datagrams_to_send(server, clock), SERVER, clock)
    answers = [event for event in _events(client) if isinstance(event, quic_engine.StreamDataReceived)]
    assert [(event.stream_id, event.data, event.end_stream) for event in answers] == [(stream_id, body, True)]
    assert client.open_outbound_streams == 0  # finished both ways: qh3 has moved it to its record

    resent, clock = _resent_while_the_acks_are_lost(quic_engine, client, server, clock)
    assert sum(len(data) for data in resent) > len(body)
    quic_engine.receive_datagrams(client, resent, SERVER, clock)
    late = [event for event in _events(client) if isinstance(event, quic_engine.StreamDataReceived)]
    assert late == []
    assert client.open_outbound_streams == 0
