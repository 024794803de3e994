"""Bad input over real QUIC: each case gets the real server's status, and the server keeps serving."""

from __future__ import annotations

import gevent
import pytest

from swarmgauge.protocols.mark import encode_request, parse_response
from swarmgauge.quic.driver import QuicDriver, client_configuration
from swarmgauge.users.mark_client import parse_mark_url
from tests.targets.mark.conftest import WRITE_TOKEN, write_tokens_toml

pytestmark = pytest.mark.integration  # starts servers, processes or locust runs

HEALTH = b"FETCH /health\n"


def status_of(answer: bytes) -> str:
    return parse_response(answer).status


@pytest.fixture
def server(start_mark):
    return start_mark("--publish-token", WRITE_TOKEN, "--request-timeout", "1s")


@pytest.fixture
def driver(server, quic_engine):
    host, port = parse_mark_url(server.url)
    made = QuicDriver(host, port, client_configuration(insecure=True, quic_engine=quic_engine), max_streams=32)
    made.connect(timeout=10)
    yield made
    made.close()


def still_serving(driver: QuicDriver) -> bool:
    return status_of(driver.request(HEALTH, timeout=10)) == "ok"


@pytest.mark.parametrize(
    "request_bytes, status",
    [
        (b"FETCH /" + b"a" * 4100 + b"\n", "server-error"),
        (b"STEAL /docs/a.md\n", "bad-request"),
        (b"FETCH\n", "bad-request"),
        (b"FETCH docs/a.md\n", "bad-request"),
        (b"FETCH /docs/a.md\n---\n- a\n- b\n---\n", "bad-request"),
        (b"FETCH /docs/a.md\n---\nkey:\n  nested: map\n---\n", "bad-request"),
        (b"FETCH /docs/a.md\n---\nkey: [1, 2]\n---\n", "bad-request"),
        (b"FETCH /docs/a.md\n---\nkey: \xff\xfe\n---\n", "bad-request"),
        (b"LOOKUP /\n---\nquery: *\n---\n", "bad-request"),
        (b"FETCH /docs/../etc/passwd\n", "not-found"),
        (b'PUBLISH /docs/a.md\n---\nexpected-version: "0"\n---\n# A\n', "unauthorized"),
        (b"PUBLISH /docs/a.md\n---\nauth: wrong-token\n---\n# A\n", "unauthorized"),
    ],
)
def test_malformed_requests_get_the_real_status(driver, request_bytes, status):
    assert status_of(driver.request(request_bytes, timeout=10)) == status
    assert still_serving(driver)


def test_body_over_one_mebibyte_is_a_server_error(driver):
    big = encode_request("PUBLISH", "/docs/big.md", {"auth": WRITE_TOKEN}, b"x" * ((1 << 20) + 1))
    answer = parse_response(driver.request(big, timeout=20))
    assert (answer.status, answer.body) == ("server-error", b"\n# Server error\n\ncontent exceeds size limit\n")
    assert still_serving(driver)


def test_a_body_of_exactly_one_mebibyte_is_accepted(driver):
    exact = encode_request("PUBLISH", "/docs/exact.md", {"auth": WRITE_TOKEN}, b"x" * (1 << 20))
    assert status_of(driver.request(exact, timeout=20)) == "created"


def test_token_without_the_path_is_not_permitted(start_mark, mark_client, tmp_path):
    tokens = write_tokens_toml(tmp_path / "tokens.toml", {"notes-only": ("notes-token", ["/notes/**"], ["publish"])})
    client = mark_client(start_mark("--tokens", str(tokens)).url)
    denied = parse_response(client.raw(encode_request("PUBLISH", "/docs/a.md", {"auth": "notes-token"}, b"# A\n")))
    assert (denied.status, denied.body) == ("not-permitted", b"\n# Not permitted\n\ninsufficient permissions\n")
    allowed = client.raw(encode_request("PUBLISH", "/notes/a.md", {"auth": "notes-token"}, b"# A\n"))
    assert status_of(allowed) == "created"


def test_writes_without_auth_configuration_are_not_permitted(start_mark, mark_client):
    client = mark_client(start_mark().url)
    answer = parse_response(client.raw(encode_request("PUBLISH", "/docs/a.md", {"auth": "x"}, b"# A\n")))
    assert answer.status == "not-permitted"
    assert b"requires auth configuration" in answer.body


def test_missing_fin_gets_a_server_error_at_the_deadline(driver):
    answer = driver.request(b"FETCH /health\n", timeout=10, finish=False)
    assert status_of(answer) == "server-error"
    assert still_serving(driver)


def test_more_than_ten_concurrent_streams_wait_for_a_free_one(driver):
    """Ten streams that never finish hold every slot; the eleventh and later run once the deadline frees them."""
    assert driver.peer_max_streams == 10
    stalled = [gevent.spawn(driver.request, b"FETCH /health\n", 10, finish=False) for _ in range(10)]
    gevent.sleep(0.2)
    waiting = [gevent.spawn(driver.request, HEALTH, 10) for _ in range(5)]
    gevent.joinall(stalled + waiting, timeout=30, raise_error=True)
    assert [status_of(g.value) for g in stalled] == ["server-error"] * 10
    assert [status_of(g.value) for g in waiting] == ["ok"] * 5
    assert still_serving(driver)


def test_rate_limit_waits_then_answers_rate_limited(start_mark, quic_engine):
    server = start_mark("--rate-limit", "5", "--rate-burst", "2", "--request-timeout", "0.3s")
    host, port = parse_mark_url(server.url)
    driver = QuicDriver(host, port, client_configuration(insecure=True, quic_engine=quic_engine), max_streams=10)
    driver.connect(timeout=10)
    try:
        answers = [
            g.value
            for g in gevent.joinall(
                [gevent.spawn(driver.request, HEALTH, 10) for _ in range(10)], timeout=20, raise_error=True
            )
        ]
    finally:
        driver.close()
    statuses = [status_of(a) for a in answers]
    assert statuses.count("ok") >= 3  # the burst of 2, plus at least one that waited for a token
    assert "rate-limited" in statuses
    assert all(a == b"---\nstatus: rate-limited\n---\n" for a in answers if status_of(a) == "rate-limited")


def test_each_answer_carries_the_ack_of_its_request(server, quic_engine):
    """As quic-go's delayed ACK: back to back, the server sends one datagram per request (the answer, with the ACK
    in it), not an ACK alone first (qh3 acknowledges a FIN at once, before an answer made later would be sent)."""
    from swarmgauge.quic.transport import UdpTransport

    received = [0]

    def counting(host: str, port: int) -> UdpTransport:
        transport = UdpTransport.open(host, port)
        drain = transport.drain

        def counted(one_flush: bool = False) -> list[bytes]:
            datagrams = drain(one_flush)
            received[0] += len(datagrams)
            return datagrams

        transport.drain = counted  # type: ignore[method-assign]
        return transport

    host, port = parse_mark_url(server.url)
    configuration = client_configuration(insecure=True, quic_engine=quic_engine)
    made = QuicDriver(host, port, configuration, transport_factory=counting, max_streams=32)
    made.connect(timeout=10)
    try:
        made.request(HEALTH, timeout=10)
        gevent.sleep(0.2)
        received[0] = 0
        for _ in range(30):
            assert status_of(made.request(HEALTH, timeout=10)) == "ok"
        assert received[0] < 45  # one per request and a few credits, not two per request
    finally:
        made.close()
