"""geventhttpclient without its hidden retries: one request, one attempt on the wire, one recorded event.

``geventhttpclient.HTTPClient.request`` silently sends an idempotent request again, up to ``concurrency + 1`` times,
when the connection is closed or reset before the answer (FastHttpSession's default concurrency of 10: up to 12
sends). Against a server that resets connections the server then sees many times the requests Locust records.
The library has no switch for it; every resend takes a fresh socket from the client's connection pool, so the pool
is wrapped to hand out one socket per ``request()`` call and to end the call with :class:`ConnectionDropped` when a
second one is asked for. A stale pooled socket is not affected: the pool drops those before handing one out.
"""

from __future__ import annotations

from typing import Any

import gevent
from geventhttpclient.client import HTTPClient, HTTPClientPool
from geventhttpclient.response import HTTPConnectionClosed
from geventhttpclient.url import URL
from geventhttpclient.useragent import ConnectionError as AgentConnectionError
from locust.contrib.fasthttp import FastHttpSession


class ConnectionDropped(HTTPConnectionClosed):
    """The connection was closed or reset before the answer; the request was sent once and is not sent again."""


DROPPED_MESSAGE = "connection closed or reset before the answer"


class OneSocketPerRequest:
    """A connection pool in front of geventhttpclient's: one ``get_socket()`` per request of each greenlet."""

    def __init__(self, pool: Any) -> None:
        self.pool = pool
        self.sockets_taken: dict[Any, int] = {}  # greenlet -> sockets taken in its current request()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.pool, name)

    def begin(self) -> None:
        self.sockets_taken[gevent.getcurrent()] = 0

    def end(self) -> None:
        self.sockets_taken.pop(gevent.getcurrent(), None)

    def get_socket(self) -> Any:
        current = gevent.getcurrent()
        taken = self.sockets_taken.get(current)
        if taken is not None:
            if taken >= 1:
                raise ConnectionDropped(DROPPED_MESSAGE)
            self.sockets_taken[current] = taken + 1
        return self.pool.get_socket()


class SingleAttemptHTTPClient(HTTPClient):
    """``HTTPClient`` whose ``request()`` sends once: a dropped connection is :class:`ConnectionDropped`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # the library keeps its pool here and offers no other way to choose one
        self._connection_pool = OneSocketPerRequest(self._connection_pool)  # type: ignore[assignment]

    def request(self, method: str, request_uri: str, body: Any = b"", headers: Any = None) -> Any:
        pool: OneSocketPerRequest = self._connection_pool  # type: ignore[assignment]
        pool.begin()
        try:
            return super().request(method, request_uri, body=body, headers=headers)
        finally:
            pool.end()


class SingleAttemptClientPool(HTTPClientPool):
    """Locust's per-host client pool, making :class:`SingleAttemptHTTPClient` s."""

    def get_client(self, url: Any) -> HTTPClient:
        if not isinstance(url, URL):
            url = URL(url)
        client_key = (url.host, url.port)
        client = self.clients.get(client_key)
        if client is None:
            client = SingleAttemptHTTPClient.from_url(url, **self.client_args)
            self.clients[client_key] = client
        return client


def send_once(session: Any) -> Any:
    """Make a Locust ``FastHttpSession`` send each request once (its user agent keeps ``max_retries``, 0 by
    default); returns the session."""
    agent = session.client
    if not isinstance(agent.clientpool, SingleAttemptClientPool):
        agent.clientpool = SingleAttemptClientPool(**agent.clientpool.client_args)
    return session


#: Every status: an unrecorded session hands each answer back for its client to classify, and never raises on one.
ALL_STATUSES = frozenset(range(100, 600))


class _NoRequestEvent:
    """FastHttpSession's request hook for a client whose events ``users.recording`` fires instead."""

    def fire(self, **_kwargs: Any) -> None:
        return None


NO_REQUEST_EVENT = _NoRequestEvent()


def unrecorded_session(
    base_url: str, *, user: Any, timeout: float, concurrency: int, headers: dict[str, str] | None = None
) -> FastHttpSession:
    """A ``FastHttpSession`` for a protocol client that measures its own operations: each request sent once
    (:func:`send_once`), no ``request`` event of the session's own, every status handed back."""
    session = FastHttpSession(
        base_url,
        request_event=NO_REQUEST_EVENT,
        user=user,
        network_timeout=timeout,
        connection_timeout=timeout,
        max_retries=0,
        concurrency=concurrency,
        headers=headers,
    )
    # a per-instance override (geventhttpclient annotates it as a class attribute): not on every UserAgent
    session.client.valid_response_codes = ALL_STATUSES  # type: ignore[misc]
    return send_once(session)


def close_connections(session: Any) -> None:
    """Drop a session's pooled connections (after a fault, so a late or half-read answer is never read as the next)."""
    try:
        session.client.clientpool.close()
    except Exception:  # noqa: BLE001 - closing a broken pool is best effort
        pass


def underlying_fault(exc: BaseException) -> BaseException:
    """The fault the user agent's ``ConnectionError`` wraps (its text carries the URL), else ``exc`` itself."""
    original = getattr(exc, "original", None) if isinstance(exc, AgentConnectionError) else None
    return original if isinstance(original, BaseException) else exc
