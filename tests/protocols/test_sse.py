"""The incremental SSE decoder: split reads, comments, multi-line data, CR/CRLF, truncation, garbage bytes."""

import pytest

from swarmgauge.protocols.sse import SSEDecoder, SSEError, SSETruncated


def feed_all(chunks):
    decoder = SSEDecoder()
    events = []
    for chunk in chunks:
        events.extend(decoder.feed(chunk))
    decoder.close()
    return events


def test_one_event_in_one_chunk():
    (event,) = feed_all([b'event: message\ndata: {"a":1}\n\n'])
    assert event.event == "message" and event.data == '{"a":1}'


def test_event_split_at_every_byte():
    stream = b": keepalive\r\nid: 7\r\ndata: first\r\ndata: second\r\n\r\ndata: x\n\n"
    events = feed_all([stream[i : i + 1] for i in range(len(stream))])
    assert [e.data for e in events] == ["first\nsecond", "x"]
    assert events[0].id == "7" and events[1].id == "7"


def test_comments_and_unknown_fields_are_skipped():
    events = feed_all([b":hello\nfoo: bar\ndata:no-space\n\n"])
    assert [e.data for e in events] == ["no-space"]


def test_bare_cr_line_endings_and_cr_split_from_lf():
    events = feed_all([b"data: a\r", b"\ndata: b\r\r"])
    assert [e.data for e in events] == ["a\nb"]


def test_utf8_split_across_reads_and_bom():
    payload = "\ufeffdata: caf\u00e9\n\n".encode()
    events = feed_all([payload[:2], payload[2:-4], payload[-4:]])
    assert events[0].data == "caf\u00e9"


def test_event_without_data_is_not_dispatched():
    assert feed_all([b"event: ping\n\n"]) == []


def test_cut_off_mid_event_is_truncated():
    decoder = SSEDecoder()
    assert decoder.feed(b'event: message\ndata: {"jsonrpc"') == []
    with pytest.raises(SSETruncated):
        decoder.close()


def test_non_utf8_garbage_is_an_sse_error():
    with pytest.raises(SSEError):
        SSEDecoder().feed(b"data: \xff\xfe\n\n")


def test_oversized_event_is_an_sse_error():
    decoder = SSEDecoder(max_event_bytes=64)
    with pytest.raises(SSEError):
        decoder.feed(b"data: " + b"x" * 100)
