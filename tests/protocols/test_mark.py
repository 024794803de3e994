"""The Mark codec: byte-exact framing, every limit, the stored-version bytes behind the golden etags, the cursor."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swarmgauge.protocols import mark
from swarmgauge.protocols.mark import MarkParseError

GOLDENS = Path(__file__).resolve().parents[1] / "targets" / "mark" / "goldens"


def test_request_bytes_follow_the_go_encoder():
    assert mark.encode_request("FETCH", "/docs/a.md") == b"FETCH /docs/a.md\n"
    assert mark.encode_request("LIST", "/docs", {"page-size": "1"}) == b'LIST /docs\n---\npage-size: "1"\n---\n'
    assert mark.encode_request("PUBLISH", "/a.md", None, b"---\nx") == b"PUBLISH /a.md\n---\n\n---\n---\nx"
    scenario_step_1 = (
        b'PUBLISH /docs/a.md\n---\nauth: storetest-write-token\nexpected-version: "0"\n'
        b'importance: "0.7"\ntags: alpha, wire\ntype: Note\n---\n# Alpha\n\nFirst body.\n'
    )
    assert (
        mark.encode_request(
            "PUBLISH",
            "/docs/a.md",
            {
                "type": "Note",
                "tags": "alpha, wire",
                "importance": "0.7",
                "expected-version": "0",
                "auth": "storetest-write-token",
            },
            b"# Alpha\n\nFirst body.\n",
        )
        == scenario_step_1
    )


@pytest.mark.parametrize(
    "name",
    [
        "fetch.golden",
        "fetch-version.golden",
        "list.golden",
        "lookup.golden",
        "versions.golden",
        "publish-created.golden",
        "publish-conflict.golden",
        "fetch-not-found.golden",
    ],
)
def test_goldens_parse_and_re_encode_byte_for_byte(name):
    data = (GOLDENS / name).read_bytes()
    response = mark.parse_response(data)
    assert mark.encode_response(response.status, response.metadata, response.body) == data


def test_stored_version_bytes_give_the_golden_etags():
    v1_body = b"# Alpha\n\nFirst body.\n"
    meta = {"importance": "0.7", "tags": "alpha,wire", "type": "Note"}
    v1 = mark.stored_version_bytes(1, v1_body, meta)
    assert mark.etag_of(v1) == "94e05cf0cc64c6e22e485312b29407d06ab5a85989f6b2ce566638405b4ad0ee"
    assert mark.content_hash(v1_body) == "sha256-534b0f02677fcd121e7c4be275e533709b0788060ccf2da54950441c698c527a"
    v2_body = b"# Alpha\n\nSecond body.\n\n## Details\n\nSee [beta](b.md).\n"
    v2 = mark.stored_version_bytes(2, v2_body, meta, previous_hash=mark.etag_of(v1))
    v3 = mark.stored_version_bytes(3, v2_body + b"\n## Appended\n\nMore.\n", meta, previous_hash=mark.etag_of(v2))
    assert mark.etag_of(v3) == "693067c46c892c9ff8b035c8b3848fb3a8b74a1f5787f5bc960688ce678573dd"


def test_error_bodies_and_titles():
    assert mark.error_body("not-found", "/x not found") == b"\n# Not found\n\n/x not found\n"
    assert mark.status_title("bad-request") == "Bad request"


def test_cursor_round_trip_and_the_brief_example():
    assert mark.encode_cursor("/docs", "a.md", False) == "AQAABS9kb2NzYS5tZA"
    assert mark.decode_cursor("AQAABS9kb2NzYS5tZA") == ("/docs", "a.md", False)
    assert mark.decode_cursor(mark.encode_cursor("/ü d", "x y.md", True)) == ("/ü d", "x y.md", True)
    for bad in ("", "!!!", "AgAABS9kb2NzYS5tZA", "AQAA"):
        with pytest.raises(MarkParseError):
            mark.decode_cursor(bad)


@pytest.mark.parametrize(
    "data, status",
    [
        (b"FETCH /" + b"a" * 4095 + b"\n", "server-error"),
        (b"NOPE /a\n", "bad-request"),
        (b"FETCH a\n", "bad-request"),
        (b"FETCH /a\x01b\n", "bad-request"),
        (b"FETCH /a\n---\nk: v\n", "bad-request"),
        (b"FETCH /a\n---\n" + b"k: " + b"v" * 65536 + b"\n---\n", "bad-request"),
        (b"PUBLISH /a.md\n" + b"x" * ((1 << 20) + 1), "server-error"),
        (b"FETCH /a\n---\nk: \xff\n---\n", "bad-request"),
    ],
)
def test_request_limits_and_malformations(data, status):
    with pytest.raises(MarkParseError) as caught:
        mark.parse_request(data)
    assert caught.value.status == status and caught.value.reason


def test_limits_are_inclusive():
    assert mark.parse_request(b"PUBLISH /a.md\n" + b"x" * (1 << 20)).body == b"x" * (1 << 20)
    longest_path = "/" + "a" * (mark.MAX_PATH - 1)
    assert mark.parse_request(f"FETCH {longest_path}\n".encode()).path == longest_path
    with pytest.raises(MarkParseError, match="path too long"):
        mark.parse_request(f"FETCH {longest_path}a\n".encode())


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"no block",
        b"---\nstatus: ok\n",
        b"---\nkey: v\n---\n",
        b"---\n- x\n---\n",
        b"---\nstatus: ok\n---\n" + b"x" * (4 << 20),
    ],
)
def test_malformed_responses(data):
    with pytest.raises(MarkParseError):
        mark.parse_response(data)


def test_block_ending_at_end_of_input():
    assert mark.parse_response(b"---\nstatus: rate-limited\n---").status == "rate-limited"


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=300))
def test_parse_on_arbitrary_bytes_returns_or_raises_only_the_named_error(data):
    for parse in (mark.parse_request, mark.parse_response):
        try:
            parse(data)
        except MarkParseError:
            pass


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(mark.VERBS),
    st.from_regex(r"/[a-zA-Z0-9 ._/-]{0,40}", fullmatch=True),
    st.dictionaries(st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True), st.text(max_size=30), max_size=5),
    st.binary(max_size=200),
)
def test_request_round_trip(verb, path, metadata, body):
    parsed = mark.parse_request(mark.encode_request(verb, path, metadata, body))
    assert (parsed.verb, parsed.path, parsed.metadata, parsed.body) == (verb, path, metadata, body)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(mark.STATUSES),
    st.dictionaries(
        st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True).filter(lambda k: k != "status"),
        st.text(max_size=30),
        max_size=5,
    ),
    st.binary(max_size=200),
)
def test_response_round_trip(status, metadata, body):
    parsed = mark.parse_response(mark.encode_response(status, metadata, body))
    assert (parsed.status, parsed.metadata, parsed.body) == (status, metadata, body)


def test_a_repeated_response_block_parses_to_a_fresh_dict_each_time():
    answer = mark.encode_response("ok", {"version": "3", "etag": "abc"}, b"body")
    first = mark.parse_response(answer)
    first.metadata["version"] = "changed by the caller"
    again = mark.parse_response(answer)
    assert again.metadata == {"version": "3", "etag": "abc"} and again.status == "ok"


def test_a_malformed_block_fails_every_time_and_a_large_one_still_parses():
    with pytest.raises(MarkParseError):
        mark.parse_response(b"---\nstatus: [ok\n---\n")
    with pytest.raises(MarkParseError):
        mark.parse_response(b"---\nstatus: [ok\n---\n")
    large = "x" * (mark.CACHED_BLOCK_BYTES + 10)
    assert mark.parse_response(mark.encode_response("ok", {"note": large})).metadata == {"note": large}
