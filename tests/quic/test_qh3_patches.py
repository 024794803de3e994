"""qh3's TLS helpers as ``faster_tls`` replaces them: the same bytes as qh3's own for any input, the same refusal
of a block with trailing bytes, and a loud refusal of a qh3 whose functions moved."""

from __future__ import annotations

import importlib
import inspect
import re
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from swarmgauge.quic import qh3_patches as patches
from tests.quic.test_qh3_post_handshake import move_datagrams

tls = importlib.import_module("qh3.tls")
Buffer = importlib.import_module("qh3._hazmat").Buffer
patches.faster_tls()
ORIGINAL = patches.QH3_ORIGINALS


@given(
    algorithm=st.sampled_from([256, 384]),
    secret=st.binary(min_size=1, max_size=64),
    label=st.binary(max_size=40),
    hash_value=st.binary(max_size=64),
    length=st.integers(min_value=1, max_value=400),
)
def test_hkdf_expand_label_gives_qh3s_bytes(algorithm, secret, label, hash_value, length):
    mine = tls.hkdf_expand_label(algorithm, secret, label, hash_value, length)
    assert mine == ORIGINAL["hkdf_expand_label"](algorithm, secret, label, hash_value, length)
    assert importlib.import_module("qh3.quic.crypto").hkdf_expand_label is tls.hkdf_expand_label


@given(algorithm=st.sampled_from([256, 384]), salt=st.binary(max_size=64), key=st.binary(max_size=64))
def test_hkdf_extract_gives_qh3s_bytes(algorithm, salt, key):
    assert tls.hkdf_extract(algorithm, salt, key) == ORIGINAL["hkdf_extract"](algorithm, salt, key)


def _encode(push_block, push_extension, items: list[bytes]) -> bytes:
    buf = Buffer(capacity=4096)
    with push_block(buf, 3):
        for index, item in enumerate(items):
            with push_extension(buf, index), push_block(buf, 1):
                buf.push_bytes(item)
    return bytes(buf.data)


@given(items=st.lists(st.binary(max_size=50), max_size=8))
def test_nested_blocks_and_extensions_encode_and_decode_as_qh3s(items):
    encoded = _encode(tls.push_block, tls.push_extension, items)
    assert encoded == _encode(ORIGINAL["push_block"], ORIGINAL["push_extension"], items)
    buf = Buffer(data=encoded)
    decoded = []
    with tls.pull_block(buf, 3) as length:
        assert length == len(encoded) - 3
        for _ in items:
            buf.pull_uint16()
            with tls.pull_block(buf, 2), tls.pull_block(buf, 1) as size:
                decoded.append(buf.pull_bytes(size))
    assert decoded == items


@pytest.mark.parametrize("which", ["mine", "qh3"])
def test_a_block_with_trailing_bytes_is_a_decode_alert_with_both(which):
    pull_block = tls.pull_block if which == "mine" else ORIGINAL["pull_block"]
    buf = Buffer(data=b"\x02ab")
    with pytest.raises(tls.AlertDecodeError, match="extra bytes"), pull_block(buf, 1):
        buf.pull_bytes(1)


def test_an_error_inside_a_pushed_block_propagates_and_writes_no_length():
    buf = Buffer(capacity=16)
    with pytest.raises(ValueError, match="inside"), tls.push_block(buf, 2):
        buf.push_bytes(b"xyz")
        raise ValueError("inside")
    assert bytes(buf.data)[:2] == b"\x00\x00"


def test_a_qh3_without_one_of_the_functions_is_refused(monkeypatch):
    monkeypatch.setattr(tls, "push_block", ORIGINAL["push_block"])  # as if not yet applied
    monkeypatch.delattr(tls, "hkdf_extract")
    with pytest.raises(RuntimeError, match="hkdf_extract is gone"):
        patches.faster_tls()


def test_qh3s_connection_sets_the_fields_the_slots_name_and_a_patched_one_keeps_them_in_slots():
    """qh3-connection-slots: qh3's own class sets exactly ``QH3_CONNECTION_FIELDS`` (more than the 30 keys CPython
    shares among instances); the engine's class holds them all in slots, so a client that has connected, made its
    handshake and answered requests has an empty instance dictionary."""
    from swarmgauge.quic.engine import engine
    from tests.quic.test_engine import connected_pair

    connection = importlib.import_module("qh3.quic.connection")
    configuration = importlib.import_module("qh3.quic.configuration").QuicConfiguration(is_client=True)
    assert list(vars(connection.QuicConnection(configuration=configuration))) == list(patches.QH3_CONNECTION_FIELDS)
    assert len(patches.QH3_CONNECTION_FIELDS) > 30

    qh3 = engine("qh3")
    client, server, clock = connected_pair(qh3)
    client.send_stream_data(client.get_next_available_stream_id(), b"ping", end_stream=True)
    move_datagrams(client, server, clock)
    assert vars(client) == {} and vars(server) == {}
    assert client._handshake_complete and client.host_cid


def test_a_qh3_with_a_class_attribute_of_a_field_name_is_refused():
    """A slot would hide a class attribute of the same name (its default): such a qh3 must be looked at first."""

    class Changed:
        _events = ()

    with pytest.raises(RuntimeError, match="_events"):
        patches.with_field_slots(Changed)


def test_qh3_only_appends_to_its_event_queue_and_takes_from_its_front_in_next_event():
    """qh3-connection-slots queues a connection's events in a list: what qh3 does with the queue, a list does."""
    connection = importlib.import_module("qh3.quic.connection")
    assert set(re.findall(r"self\._events\.(\w+)", inspect.getsource(connection))) == {"append", "popleft"}
    assert "return self._events.popleft() if self._events else None" in inspect.getsource(
        connection.QuicConnection.next_event
    )


def test_a_patched_connection_hands_its_events_over_in_the_order_they_came():
    from swarmgauge.quic.engine import engine
    from tests.quic.test_engine import connected_pair

    qh3 = engine("qh3")
    client, server, clock = connected_pair(qh3)
    assert type(client._events) is list
    while client.next_event() is not None:
        pass
    sent = []
    for index in range(3):
        stream_id = client.get_next_available_stream_id()
        client.send_stream_data(stream_id, b"n%d" % index, end_stream=True)
        sent.append(stream_id)
    move_datagrams(client, server, clock)
    received = []
    while (event := server.next_event()) is not None:
        if isinstance(event, qh3.StreamDataReceived):
            received.append((event.stream_id, event.data))
    assert received == [(stream_id, b"n%d" % index) for index, stream_id in enumerate(sent)]
    assert server.next_event() is None


def test_qh3_asks_its_local_stream_ids_in_add_and_discard_only():
    """qh3-connection-slots keeps them in a LocalStreamIds: what qh3 does with its set, the list does."""
    connection = importlib.import_module("qh3.quic.connection")
    source = inspect.getsource(connection)
    assert set(re.findall(r"self\._created_local_stream_ids\.(\w+)", source)) == {"add", "discard"}
    assert "stream_id in self._created_local_stream_ids" in source


def test_local_stream_ids_answer_as_a_set_and_free_their_items_once_empty():
    ids = patches.LocalStreamIds()
    ids.add(0)
    ids.add(4)
    assert 0 in ids and 8 not in ids
    ids.discard(8)
    ids.discard(0)
    ids.discard(0)
    assert list(ids) == [4]
    ids.discard(4)
    assert not ids and sys.getsizeof(ids) == sys.getsizeof(patches.LocalStreamIds())


def test_a_patched_connection_forgets_each_local_stream_once_it_finished():
    from swarmgauge.quic.engine import engine
    from tests.quic.test_engine import connected_pair

    qh3 = engine("qh3")
    client, server, clock = connected_pair(qh3)
    assert type(client._created_local_stream_ids) is patches.LocalStreamIds
    for index in range(3):
        stream_id = client.get_next_available_stream_id()
        client.send_stream_data(stream_id, b"n%d" % index, end_stream=True)
        clock = move_datagrams(client, server, clock)
        while (event := server.next_event()) is not None:
            if isinstance(event, qh3.StreamDataReceived) and event.end_stream:
                server.send_stream_data(event.stream_id, b"ok", end_stream=True)
        clock = move_datagrams(client, server, clock)
        while client.next_event() is not None:
            pass
    for _ in range(3):  # the last answers' acknowledgements: a stream is finished once both sides know
        clock = move_datagrams(client, server, clock)
        while client.next_event() is not None or server.next_event() is not None:
            pass
    assert list(client._created_local_stream_ids) == []
