"""KneoClient on Locust's FastHttpSession: what goes on the wire, one event per operation, named faults without URLs,
and a timed-out answer never read as the next request's. The server is a FAKE kneo-serv below the client's HTTP seam
(a gevent WSGI app); the real service's runs are in ``test_kneo_user.py``."""

from __future__ import annotations

import json
from typing import Any

import gevent
import pytest
from gevent.pywsgi import WSGIServer
from locust.env import Environment

from swarmgauge.protocols.kneo import KneoUnreachable, QueueFull
from swarmgauge.targets.postgres import free_port
from swarmgauge.users.kneo_client import KneoClient

pytestmark = pytest.mark.timeout(60)


class FakeKneo:
    """A FAKE kneo-serv: answers each new run with ``run-<n>`` (n counts requests from 0), a poll with its run; the
    first request ``slow_first`` seconds late. Keeps every request's method, path, headers and body."""

    def __init__(self, slow_first: float = 0.0, answer: tuple[str, list, bytes] | None = None) -> None:
        self.slow_first = slow_first
        self.answer = answer  # (status line, headers, body) for every request instead of a run
        self.seen: list[dict[str, Any]] = []
        self.server = WSGIServer(("127.0.0.1", 0), self.app, log=None)
        self.server.start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def app(self, environ: dict[str, Any], start_response: Any) -> list[bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        index = len(self.seen)
        self.seen.append(
            {
                "method": environ["REQUEST_METHOD"],
                "path": environ["PATH_INFO"],
                "authorization": environ.get("HTTP_AUTHORIZATION"),
                "content_type": environ.get("CONTENT_TYPE"),
                "body": body,
            }
        )
        if index == 0 and self.slow_first:
            gevent.sleep(self.slow_first)
        if self.answer is not None:
            status, headers, body = self.answer
            start_response(status, [*headers, ("Content-Length", str(len(body)))])
            return [body]
        run_id = environ["PATH_INFO"].rsplit("/", 1)[1] if environ["REQUEST_METHOD"] == "GET" else f"run-{index}"
        answer = json.dumps({"run_id": run_id, "status": "completed"}).encode()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(answer)))])
        return [answer]

    def stop(self) -> None:
        self.server.stop(timeout=1)


def recording() -> tuple[Environment, list[dict]]:
    environment = Environment(user_classes=[])
    recorded: list[dict] = []
    environment.events.request.add_listener(lambda **kw: recorded.append(kw))
    return environment, recorded


def test_a_run_is_one_json_post_with_the_bearer_and_one_event():
    server = FakeKneo()
    try:
        environment, recorded = recording()
        client = KneoClient(server.url, request_events=environment.events, api_key="k-secret", tag="sg-t")
        state = client.dispatch()
        client.poll(state.run_id)
    finally:
        server.stop()
    assert [(s["method"], s["path"]) for s in server.seen] == [("POST", "/v1/runs"), ("GET", "/v1/runs/run-0")]
    assert all(s["authorization"] == "Bearer k-secret" for s in server.seen)
    assert server.seen[0]["content_type"] == "application/json"
    sent = json.loads(server.seen[0]["body"])
    assert sent["async_mode"] is False and sent["metadata"] == {"swarmgauge_run": "sg-t"}
    assert [(e["request_type"], e["exception"]) for e in recorded] == [("run sync", None), ("run poll", None)]
    assert client.ledger.accepted == {"run-0": "completed"}


def test_a_refused_send_is_named_by_its_class_without_the_url_or_run_id():
    environment, recorded = recording()
    port = free_port()
    client = KneoClient(f"http://127.0.0.1:{port}", request_events=environment.events, timeout=2.0)
    with pytest.raises(KneoUnreachable) as caught:
        client.poll("run-4d2f")
    text = f"{caught.value} {caught.value!r} {recorded[0]['exception']!r}"
    assert "ConnectionRefusedError" in text
    assert "run-4d2f" not in text and str(port) not in text
    assert client.backoff.faults == 1


def test_an_answer_later_than_the_timeout_is_never_read_as_the_next_one():
    server = FakeKneo(slow_first=1.0)
    try:
        environment, recorded = recording()
        client = KneoClient(server.url, request_events=environment.events, timeout=0.3)
        with pytest.raises(KneoUnreachable):
            client.dispatch()
        client.backoff.succeeded()  # the next call at once, while the late answer is still on its way
        state = client.dispatch()
    finally:
        server.stop()
    assert state.run_id == "run-1"  # the second request's own answer, not the first one's late "run-0"
    assert [e["exception"] is None for e in recorded] == [False, True]
    assert client.ledger.indeterminate == 1  # the first send may have made a row: the ledger says so


def test_a_full_queue_is_queue_full_with_the_answer_s_retry_after_and_counted_apart():
    detail = {"detail": {"error": "queue_full", "message": "full", "queue_depth": 2, "limit": 2}}
    answer = ("503 Service Unavailable", [("Retry-After", "5"), ("Content-Type", "application/json")], b"")
    server = FakeKneo(answer=(answer[0], answer[1], json.dumps(detail).encode()))
    try:
        environment, recorded = recording()
        client = KneoClient(server.url, request_events=environment.events)
        with pytest.raises(QueueFull) as caught:
            client.submit()
    finally:
        server.stop()
    assert (caught.value.retry_after, caught.value.limit, caught.value.depth) == (5.0, 2, 2)
    assert [type(e["exception"]).__name__ for e in recorded] == ["QueueFull"]
    assert client.ledger.rejected_queue_full == 1 and not client.ledger.accepted
