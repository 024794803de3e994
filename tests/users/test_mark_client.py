"""MarkClient against a misbehaving QUIC server (bad input) and on the wire bytes each method sends."""

from __future__ import annotations

import datetime
import logging

import gevent
import pytest

from swarmgauge.errors import UsageError
from swarmgauge.protocols.mark import Response, encode_request, encode_response
from swarmgauge.quic.driver import (
    ALPNMismatch,
    ConnectionLost,
    RequestTimeout,
    ResponseTooLarge,
    StreamReset,
    TLSVerificationFailed,
)
from swarmgauge.quic.transport import MemoryPair
from swarmgauge.users.mark_client import MarkClient
from swarmgauge.users.mark_errors import (
    Archived,
    BadRequest,
    Conflict,
    IncompleteListing,
    MarkMalformedResponse,
    MarkRateLimited,
    MarkStatusError,
    MarkUnauthorized,
    NotFound,
    NotPermitted,
    ServerError,
    raise_for_status,
)
from tests.quic.misbehaving_quic import MisbehavingQuicServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(30)]
TOKEN = "sekrit-token-5f3a"


@pytest.fixture(scope="module")
def server(quic_engine):
    server = MisbehavingQuicServer(quic_engine=quic_engine).start()
    yield server
    server.stop()


@pytest.fixture
def client(server):
    client = MarkClient(server.url, quic_engine=server.engine.name, insecure=True, timeout=5, token=TOKEN)
    yield client
    client.close()


def assert_still_usable(client):
    response = client.fetch("/good")
    assert response.status == "ok" and response.metadata["version"] == "1"


def test_truncated_frontmatter(client):
    with pytest.raises(MarkMalformedResponse, match="unterminated"):
        client.fetch("/truncated")
    assert_still_usable(client)


def test_non_utf8_metadata(client):
    with pytest.raises(MarkMalformedResponse, match="UTF-8"):
        client.fetch("/non-utf8")
    assert_still_usable(client)


def test_response_over_4_mib(client):
    with pytest.raises(ResponseTooLarge):
        client.fetch("/huge")
    assert_still_usable(client)


def test_stream_reset(client):
    with pytest.raises(StreamReset):
        client.fetch("/reset")
    assert_still_usable(client)


def test_no_answer(server):
    client = MarkClient(server.url, quic_engine=server.engine.name, insecure=True, timeout=0.3)
    with pytest.raises(RequestTimeout):
        client.fetch("/silent")
    assert client.connected
    assert_still_usable(client)
    client.close()


def test_connection_closed_mid_stream_then_reconnects(client):
    assert_still_usable(client)
    with pytest.raises(ConnectionLost):
        client.fetch("/drop")
    assert not client.connected
    assert_still_usable(client)
    assert client.stats.handshakes == 2
    assert client.stats.reconnects == 1


def test_wrong_alpn(quic_engine):
    server = MisbehavingQuicServer(alpn=["h3"], quic_engine=quic_engine).start()
    try:
        client = MarkClient(server.url, quic_engine=server.engine.name, insecure=True, timeout=5)
        with pytest.raises(ALPNMismatch):
            client.fetch("/good")
    finally:
        server.stop()


def test_untrusted_certificate_with_verification_on(server):
    handshakes = []
    client = MarkClient(
        server.url,
        quic_engine=server.engine.name,
        timeout=5,
        on_handshake=lambda seconds, error: handshakes.append(error),
    )
    with pytest.raises(TLSVerificationFailed) as failed:
        client.fetch("/good")
    assert isinstance(handshakes[0], TLSVerificationFailed)
    assert "--mark-ca" in str(failed.value) and "--mark-insecure" in str(failed.value)  # says what to do


def test_trusted_with_ca_file_and_server_name(server, tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_bytes(server.certificate_pem())
    client = MarkClient(server.url, quic_engine=server.engine.name, ca_file=str(ca), server_name="localhost", timeout=5)
    assert_still_usable(client)
    client.close()


def test_more_than_ten_concurrent_requests_are_bounded_not_failed(server):
    client = MarkClient(server.url, quic_engine=server.engine.name, insecure=True, timeout=10)
    server.max_open_slow = 0
    calls = [gevent.spawn(client.fetch, "/slow") for _ in range(25)]
    gevent.joinall(calls, raise_error=True)
    assert all(call.value.status == "ok" for call in calls)
    assert server.max_open_slow == 10
    assert client.stats.handshakes == 1
    client.close()


def test_greenlets_connecting_at_once_share_one_handshake_and_leave_no_lock(server):
    """One greenlet opens the pooled connection while the others wait for it; the lock goes once none waits."""
    client = MarkClient(server.url, quic_engine=server.engine.name, insecure=True, timeout=10)
    connects = [gevent.spawn(client.connect) for _ in range(5)]
    gevent.joinall(connects, raise_error=True)
    opened = [call.value for call in connects if call.value is not None]
    assert len(opened) == 1 and opened[0] > 0  # the others found it open: None, as connect() says
    assert client.stats.handshakes == 1 and client.stats.reconnects == 0
    assert client._connect_lock is None  # an idle client keeps no lock
    assert_still_usable(client)
    client.close()


def test_a_client_keeps_a_backoff_only_between_a_fault_and_the_next_answer(server):
    """A pooled client that has not failed keeps no Backoff; a refused attempt makes one; an answer lets it go."""
    client = MarkClient(server.url, quic_engine=server.engine.name, insecure=True, timeout=5)
    assert_still_usable(client)
    assert client._backoff is None
    client._fault()  # as a refused or dropped connection counts one
    assert client._backoff is not None and client._backoff.faults == 1 and client._backoff.remaining() > 0
    client.close()
    assert_still_usable(client)  # waits the backoff out, reconnects, is answered
    assert client._backoff is None
    client.close()


def test_requests_past_the_stream_bound_wait_their_turn_and_one_that_waits_too_long_times_out(server):
    """max_streams 2: five at once run two at a time; a request given less time than its turn fails alone."""
    client = MarkClient(server.url, quic_engine=server.engine.name, insecure=True, timeout=10, max_streams=2)
    assert_still_usable(client)
    server.max_open_slow = 0
    calls = [gevent.spawn(client.fetch, "/slow") for _ in range(5)]
    gevent.sleep(0.05)  # the first two are in flight, three wait
    driver = client._driver
    assert driver is not None
    with pytest.raises(RequestTimeout, match="no free stream"):
        driver.request(encode_request("FETCH", "/health"), timeout=0.05)
    gevent.joinall(calls, raise_error=True)
    assert all(call.value.status == "ok" for call in calls) and server.max_open_slow == 2
    assert driver._free_streams == 2 and driver._stream_freed is None  # all given back, no waiter left
    assert_still_usable(client)
    client.close()


def test_fresh_mode_uses_one_connection_per_request(server):
    seen = []
    client = MarkClient(
        server.url,
        quic_engine=server.engine.name,
        insecure=True,
        timeout=5,
        connection="fresh",
        on_handshake=lambda seconds, error: seen.append((seconds, error)),
    )
    for _ in range(3):
        assert_still_usable(client)
    assert client.stats.handshakes == 3 and client.stats.reconnects == 0
    assert len(seen) == 3 and all(seconds > 0 and error is None for seconds, error in seen)
    assert not client.connected


def test_pooled_mode_connects_once(server):
    seen = []
    client = MarkClient(
        server.url, quic_engine=server.engine.name, insecure=True, timeout=5, on_handshake=lambda s, e: seen.append(s)
    )
    assert client.connect() > 0
    for _ in range(3):
        assert_still_usable(client)
    assert len(seen) == 1 and client.stats.handshakes == 1
    client.close()


def test_token_is_sent_as_auth_and_never_shown(server, client, caplog):
    caplog.set_level(logging.DEBUG)
    client.publish("/good", "body\n", expected_version=1)
    assert f"auth: {TOKEN}\n".encode() in server.requests[-1]
    errors = []
    for path in ("/truncated", "/reset", "/drop"):
        try:
            client.fetch(path)
        except Exception as exc:  # noqa: BLE001 - every failure class is inspected
            errors.append(exc)
    assert_still_usable(client)
    shown = [repr(client), str(client), caplog.text] + [repr(e) for e in errors] + [str(e) for e in errors]
    assert all(TOKEN not in text for text in shown)
    assert "redacted" in repr(client)


def test_raw_sends_exact_bytes_without_token(server, client):
    request = b'FETCH /good\n---\nx-probe: "1"\n---\n'
    assert client.raw(request).startswith(b"---\n")
    assert server.requests[-1] == request


@pytest.mark.parametrize(
    "call, wire",
    [
        (lambda c: c.fetch("/d.md", if_none_match="abc"), b"FETCH /d.md\n---\nif-none-match: abc\n---\n"),
        (
            lambda c: c.fetch("/d.md", if_modified_since=datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)),
            b'FETCH /d.md\n---\nif-modified-since: "2026-01-01T00:00:00Z"\n---\n',
        ),
        (lambda c: c.fetch("/d.md/v2"), b"FETCH /d.md/v2\n"),
        (
            lambda c: c.list("/docs", page_size=1, cursor="AQAA", include_archived=True),
            b'LIST /docs\n---\ncursor: AQAA\ninclude-archived: "true"\npage-size: "1"\n---\n',
        ),
        (lambda c: c.versions("/d.md"), b"VERSIONS /d.md\n"),
        (
            lambda c: c.lookup("/", "*", limit=5, filter={"tag": "a"}, match="body"),
            b"LOOKUP /\n---\nfilter: tag=a\nlimit: \"5\"\nmatch: body\nquery: '*'\n---\n",
        ),
        (
            lambda c: c.publish("/d.md", b"# T\n", expected_version=0, metadata={"type": "Note"}),
            b'PUBLISH /d.md\n---\nexpected-version: "0"\ntype: Note\n---\n# T\n',
        ),
        (
            lambda c: c.append("/d.md", "more\n", expected_version=3),
            b'APPEND /d.md\n---\nexpected-version: "3"\n---\nmore\n',
        ),
        (lambda c: c.archive("/d.md"), b"ARCHIVE /d.md\n"),
    ],
    ids=["if-none-match", "if-modified-since", "version", "list", "versions", "lookup", "publish", "append", "archive"],
)
def test_methods_write_the_expected_wire_bytes(server, call, wire):
    client = MarkClient(server.url, quic_engine=server.engine.name, insecure=True, timeout=5)
    call(client)
    assert server.requests[-1] == wire
    client.close()


@pytest.mark.parametrize(
    "status, error_class",
    [
        ("not-found", NotFound),
        ("archived", Archived),
        ("unauthorized", MarkUnauthorized),
        ("not-permitted", NotPermitted),
        ("bad-request", BadRequest),
        ("server-error", ServerError),
        ("rate-limited", MarkRateLimited),
        ("closing", MarkStatusError),
    ],
)
def test_each_status_has_its_error(status, error_class):
    response = Response(status, {}, b"\n# Title\n\n/docs/x.md went wrong\n")
    with pytest.raises(error_class) as caught:
        raise_for_status(response)
    assert type(caught.value) is error_class
    assert caught.value.status == status and caught.value.response is response
    assert caught.value.message == "/docs/x.md went wrong"
    assert str(caught.value) == status  # the body stays out of the failure name (issue 33.4)


def test_conflict_carries_both_versions():
    response = Response("conflict", {"server-version": "2", "your-version": "1"}, b"# Version Conflict\n")
    with pytest.raises(Conflict) as caught:
        raise_for_status(response)
    assert (caught.value.server_version, caught.value.your_version) == (2, 1)


def test_list_all_follows_cursors_and_is_bounded(quic_engine):
    pages = {None: ("c1", "false"), "c1": ("c2", "false"), "c2": (None, "true")}

    def answer(request: bytes) -> bytes:
        cursor = None
        for line in request.decode().splitlines():
            if line.startswith("cursor: "):
                cursor = line.split(": ", 1)[1]
        next_cursor, complete = pages[cursor]
        meta = {"complete": complete, "entries": "1"}
        if next_cursor:
            meta["next-cursor"] = next_cursor
        return encode_response("ok", meta, f"page after {cursor}\n".encode())

    pair = MemoryPair(answer, quic_engine=quic_engine)
    client = MarkClient(
        "mark://127.0.0.1:4433", insecure=True, transport_factory=pair.transport_factory, quic_engine=quic_engine
    )
    assert len(list(client.list_all("/docs"))) == 3
    pages["c2"] = ("c1", "false")
    with pytest.raises(IncompleteListing):
        list(client.list_all("/docs"))
    with pytest.raises(IncompleteListing):
        list(client.list_all("/docs", max_pages=2))
    client.close()


@pytest.mark.parametrize("url", ["http://127.0.0.1:6309", "mark://", "mark://h:notaport", "mark://h:1/docs"])
def test_bad_urls_are_usage_errors(url):
    with pytest.raises(UsageError):
        MarkClient(url)


def test_bad_connection_mode_is_a_usage_error():
    with pytest.raises(UsageError):
        MarkClient("mark://127.0.0.1", connection="sometimes")


@pytest.mark.parametrize("url", ["http://127.0.0.1:6309", "mark://h:1/docs"])
def test_a_bad_url_is_refused_each_time_it_is_given(url):
    for _ in range(2):  # the parsed-address cache keeps answers, never a refusal
        with pytest.raises(UsageError):
            MarkClient(url)


def test_clients_of_one_url_share_its_host_and_canonical_url():
    """A thousand users' clients of one target hold one copy of its address, not one each."""
    first, second = MarkClient("mark://127.0.0.1:4433/"), MarkClient("mark://127.0.0.1:4433/")
    assert (first.host, first.port, first.url) == ("127.0.0.1", 4433, "mark://127.0.0.1:4433")
    assert first.host is second.host and first.url is second.url
    assert MarkClient("mark://[::1]").url == "mark://[::1]:6309"
