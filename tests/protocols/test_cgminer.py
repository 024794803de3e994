"""The CGMiner text codec: round trips, the mock's reply shapes, and every malformed input as CGMinerError."""

import pytest

from swarmgauge.protocols import cgminer


def test_request_round_trip_plain_and_with_parameter():
    assert cgminer.encode_request("summary") == b"summary"
    assert cgminer.decode_request(b"summary\n") == cgminer.Request("summary")
    request = cgminer.decode_request(cgminer.encode_request("ascset", "0,workmode,1"))
    assert request.command == "ascset" and request.args == ["0", "workmode", "1"]


@pytest.mark.parametrize("data", [b"", b"|0,1", b"SUMMARY", b"\xff\xfe", b"sum mary", b"x" * 9000])
def test_garbled_requests_raise(data):
    with pytest.raises(cgminer.CGMinerError):
        cgminer.decode_request(data)


def test_encode_request_refuses_separators():
    with pytest.raises(cgminer.CGMinerError):
        cgminer.encode_request("ascset", "0|1")
    with pytest.raises(cgminer.CGMinerError):
        cgminer.encode_request("bad word")


def test_reply_round_trip_keeps_sections_and_status():
    reply = cgminer.Reply(
        status="S",
        code=11,
        msg="Summary",
        description="mock",
        when=1700000000,
        sections=[("SUMMARY", {"Elapsed": "12", "MHS av": "110000000.00"})],
    )
    data = cgminer.encode_reply(reply)
    assert data.endswith(b"|\x00")
    decoded = cgminer.decode_reply(data)
    assert decoded.ok and decoded.code == 11 and decoded.when == 1700000000
    assert cgminer.number(decoded.section("summary"), "MHS av") == 110000000.0


def test_decodes_a_real_looking_cgminer_reply_with_several_sections():
    data = (
        b"STATUS=S,When=1700000000,Code=7,Msg=2 Pool(s),Description=cgminer 4.11.1|"
        b"POOL=0,URL=stratum+tcp://a:3333,Status=Alive|POOL=1,URL=stratum+tcp://b:3333,Status=Dead|\x00"
    )
    reply = cgminer.decode_reply(data)
    assert [name for name, _ in reply.sections] == ["POOL", "POOL"]
    assert reply.sections[1][1]["Status"] == "Dead"


def test_error_status_raises_named_status_error():
    reply = cgminer.decode_reply(b"STATUS=E,When=1,Code=14,Msg=Invalid command,Description=x|")
    assert not reply.ok
    with pytest.raises(cgminer.CGMinerStatusError) as info:
        reply.raise_for_status()
    assert info.value.code == 14


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00",
        b"HELLO=1|",
        b"STATUS=Q,Code=1|",
        b"STATUS=S,Code=x|",
        b"STATUS=S,Code=1|SUMMARY,Elapsed|",
        "STATUS=S,Msg=é|".encode(),
    ],
)
def test_malformed_replies_raise(data):
    with pytest.raises(cgminer.CGMinerError):
        cgminer.decode_reply(data)


def test_missing_section_and_non_numeric_field_raise():
    reply = cgminer.decode_reply(b"STATUS=S,Code=11,Msg=Summary|SUMMARY,Elapsed=abc|")
    with pytest.raises(cgminer.CGMinerError):
        reply.section("STATS")
    with pytest.raises(cgminer.CGMinerError):
        cgminer.number(reply.section("SUMMARY"), "Elapsed")
    with pytest.raises(cgminer.CGMinerError):
        cgminer.number(reply.section("SUMMARY"), "MHS av")


def test_values_with_separators_are_refused_on_encode():
    with pytest.raises(cgminer.CGMinerError):
        cgminer.encode_reply(cgminer.Reply("S", 1, "a,b"))
