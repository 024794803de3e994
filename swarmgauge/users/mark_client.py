"""``MarkClient``: the Mark Protocol (demarkus) over the gevent QUIC driver, with one named error per status.

The client is I/O only: framing comes from ``protocols.mark``, streams from ``users.quic``. It never fires Locust
events (``MarkUser`` does, through ``users.recording``), and it never logs or shows the token: the token lives in
``_token`` and goes out only as the ``auth`` key of each request.
"""

from __future__ import annotations

import datetime as _dt
import functools
import logging
import math
import time
from collections.abc import Callable, Iterator, Mapping
from typing import cast
from urllib.parse import urlsplit

import gevent
import gevent.lock

from swarmgauge.errors import Unfinished, UsageError
from swarmgauge.protocols.mark import MarkParseError, Response, encode_request, parse_response
from swarmgauge.quic.driver import DEFAULT_MAX_STREAMS, QuicDriver, QuicError, QuicStats, client_configuration
from swarmgauge.quic.engine import DEFAULT_ENGINE
from swarmgauge.quic.errors import ConnectionLost
from swarmgauge.quic.transport import TransportFactory
from swarmgauge.users.backoff import Backoff
from swarmgauge.users.mark_errors import (
    IncompleteListing,
    MarkMalformedResponse,
    raise_for_status,
)

log = logging.getLogger(__name__)

DEFAULT_PORT = 6309
# pooled: one connection per client; shared: one pooled client for many users (only connection-level errors drop
# it); fresh: a new connection per request
CONNECTION_MODES = ("pooled", "shared", "fresh")
MAX_LIST_PAGES = 10_000
BACKOFF_FIRST = 0.05  # seconds before the attempt that follows a failed connection attempt; doubles per failure
BACKOFF_MAX = 5.0  # the cap: a refused or vanished target costs at most one attempt per 5 s per client


def parse_mark_url(url: str) -> tuple[str, int]:
    """``mark://host[:port][/]`` -> (host, port); anything else is a ``UsageError``."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UsageError(f"bad mark:// URL {url!r}: {exc}") from None
    if parts.scheme != "mark" or not parts.hostname:
        raise UsageError(f"not a mark://host[:port] URL: {url!r}")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise UsageError(f"a Mark host URL has no path: {url!r} (paths go to each request)")
    return parts.hostname, port if port is not None else DEFAULT_PORT


@functools.lru_cache(maxsize=64)
def _address(url: str) -> tuple[str, int, str]:
    """(host, port, canonical ``mark://`` URL) of ``url``, made once per URL: the thousand clients of a run's users
    then share these three objects instead of each holding copies of its own (~160 B a client)."""
    host, port = parse_mark_url(url)
    return host, port, f"mark://{'[' + host + ']' if ':' in host else host}:{port}"


def _rfc3339(value: str | _dt.datetime) -> str:
    if isinstance(value, str):
        return value
    if value.tzinfo is None:
        value = value.replace(tzinfo=_dt.UTC)
    return value.astimezone(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _as_bytes(body: bytes | str) -> bytes:
    return body.encode("utf-8") if isinstance(body, str) else body


HandshakeHook = Callable[[float, "BaseException | None"], None]
ReconnectHook = Callable[[], None]


class MarkClient:
    """A Mark client over QUIC: ``pooled`` (one multiplexed connection, reconnected lazily), ``shared`` (the same,
    for many users at once) or ``fresh`` per request.

    ``on_handshake(seconds, exception)`` is called after every connection attempt with its real duration, so a User
    can report ``QUIC``/``handshake`` as its own request. This client is the one owner of reconnecting: a connection
    that died (``ConnectionLost``, a failed handshake) is replaced by the next request, each such attempt counted in
    ``stats.reconnects`` and reported to ``on_reconnect``; after a failed attempt the next one waits a bounded,
    doubling backoff. A connection that completes its handshake and dies before any answer counts as a failed
    attempt too (a server that accepts and drops every connection would otherwise be a handshake loop at full CPU):
    only an answer resets the backoff. A stream-level error (``RequestTimeout``, ``StreamReset``, ``ResponseTooLarge``) fails only its
    request, whatever the mode: a peer that vanished is found by the idle timeout (keep-alive PINGs go unanswered).
    Transport failures raise ``users.quic.QuicError`` subclasses.
    """

    def __init__(
        self,
        url: str = f"mark://127.0.0.1:{DEFAULT_PORT}",
        *,
        token: str | None = None,
        insecure: bool = False,
        ca_file: str | None = None,
        server_name: str | None = None,
        timeout: float = 10.0,
        connect_timeout: float | None = None,
        max_streams: int = DEFAULT_MAX_STREAMS,
        connection: str = "pooled",
        idle_timeout: float = 30.0,
        keepalive: float | None = 25.0,
        transport_factory: TransportFactory | None = None,
        on_handshake: HandshakeHook | None = None,
        on_reconnect: ReconnectHook | None = None,
        stats: QuicStats | None = None,
        quic_engine: str = DEFAULT_ENGINE,
        initial_rtt: float | None = None,
    ):
        if connection not in CONNECTION_MODES:
            raise UsageError(f"connection must be one of {', '.join(CONNECTION_MODES)}, not {connection!r}")
        if not (math.isfinite(timeout) and timeout > 0) or max_streams < 1:
            raise UsageError(f"timeout must be a finite number of seconds > 0 (not {timeout!r}) and max_streams >= 1")
        self.host, self.port, self.url = _address(url)
        self._token = token or None
        self.connection = connection
        self.timeout = timeout
        self.connect_timeout = connect_timeout if connect_timeout is not None else timeout
        self.max_streams = max_streams
        self.keepalive = keepalive
        self.on_handshake = on_handshake
        self.on_reconnect = on_reconnect
        self.stats = stats if stats is not None else QuicStats()
        self._configuration = client_configuration(
            insecure=insecure,
            ca_file=ca_file,
            server_name=server_name or self.host,
            idle_timeout=idle_timeout,
            quic_engine=quic_engine,
            initial_rtt=initial_rtt,
        )
        self.quic_engine = quic_engine
        self._transport_factory = transport_factory
        self._driver: QuicDriver | None = None
        self._ever_attempted = False
        self._answered = False  # whether the pooled connection has answered a request
        # made by the first fault in a row and let go at the next answer (an answered Backoff is a new one): a
        # pooled client that has not failed keeps none (96 B a user at 1,000 users)
        self._backoff: Backoff | None = None
        # made when a connection is opened and let go once no greenlet is opening or waiting for one: an idle
        # pooled client keeps no lock (152 B a user at 1,000 users)
        self._connect_lock: gevent.lock.Semaphore | None = None
        self._connecting = 0

    def __repr__(self) -> str:
        token = " token=<redacted>" if self._token else ""
        return f"<MarkClient {self.url} {self.connection}{token}>"

    __str__ = __repr__

    # -- connections -------------------------------------------------------------------------------------------

    def connect(self) -> float | None:
        """Open the connection now (waiting out any backoff first); return its handshake seconds, None if one is
        already open. In ``fresh`` mode the connection is kept for the next request only."""
        if self.ready:
            return None
        driver, opened = self._open_once()
        return driver.handshake_seconds if opened else None

    @property
    def ready(self) -> bool:
        """Whether a request would go out on an open connection, with no connection attempt first."""
        return self._driver is not None and self._driver.alive

    def close(self) -> None:
        """Close the pooled connection; a later request opens a new one."""
        driver, self._driver = self._driver, None
        if driver is not None:
            driver.close()

    @property
    def connected(self) -> bool:
        return self._driver is not None and self._driver.alive

    def wait_for_backoff(self) -> None:
        """Sleep until the next connection attempt is allowed (at once unless the last attempt failed)."""
        if self._backoff is not None:
            self._backoff.wait()

    def _fault(self) -> None:
        """One more transport fault in a row: the next connection attempt waits out a longer backoff."""
        if self._backoff is None:
            self._backoff = Backoff(BACKOFF_FIRST, BACKOFF_MAX, jitter=0.2)
        self._backoff.failed()

    def _open(self) -> QuicDriver:
        self.wait_for_backoff()
        driver = QuicDriver(
            self.host,
            self.port,
            self._configuration,
            transport_factory=self._transport_factory,
            max_streams=self.max_streams,
            stats=self.stats,
            keepalive=self.keepalive,
        )
        started = time.perf_counter()
        try:
            seconds = driver.connect(timeout=self.connect_timeout)
        except QuicError as exc:
            self._fault()
            self._report_handshake(time.perf_counter() - started, exc)
            raise
        except BaseException as exc:
            if not isinstance(exc, Exception):  # the user stopped mid-handshake: recorded as unfinished
                self._report_handshake(time.perf_counter() - started, Unfinished())
            raise
        self._report_handshake(seconds, None)
        return driver

    def _report_handshake(self, seconds: float, error: BaseException | None) -> None:
        if self.on_handshake is not None:
            self.on_handshake(seconds, error)

    def _pooled_driver(self) -> QuicDriver:
        driver = self._driver
        if driver is not None and driver.alive:  # no greenlet switch between this check and the return
            return driver
        return self._open_once()[0]

    def _open_once(self) -> tuple[QuicDriver, bool]:
        """The pooled connection, opened by one greenlet while any other waits for it; whether this call opened it."""
        lock = self._connect_lock
        if lock is None:
            lock = self._connect_lock = gevent.lock.Semaphore()
        self._connecting += 1
        try:
            with lock:
                if self._driver is not None and self._driver.alive:
                    return self._driver, False
                return self._reopen(), True
        finally:
            self._connecting -= 1
            if not self._connecting:
                self._connect_lock = None

    def _reopen(self) -> QuicDriver:
        if self._driver is not None:
            self._driver.close()
            self._driver = None
            log.info("Mark connection to %s was lost; reconnecting", self.url)
            if not self._answered:  # accepted, then dropped before any answer: back off as after a refusal
                self._fault()
        if self._ever_attempted and self.connection != "fresh":
            self.stats.reconnects += 1
            if self.on_reconnect is not None:
                self.on_reconnect()
        self._ever_attempted = True
        self._answered = False
        self._driver = self._open()
        return self._driver

    def _exchange(self, data: bytes) -> bytes:
        if self.connection == "fresh":
            # one that connect() prepared (``ready`` implies it is set), or a new one
            fresh = cast(QuicDriver, self._driver) if self.ready else self._open()
            self._driver = None
            try:
                answer = fresh.request(data, timeout=self.timeout)
            except ConnectionLost:  # a fresh connection that dies has answered nothing: back off
                self._fault()
                raise
            finally:
                fresh.close()
            self._answered_now()
            return answer
        driver = self._driver
        if driver is None or not driver.alive:  # the lock only when a connection has to be (re)made
            driver = self._pooled_driver()
        answer = driver.request(data, timeout=self.timeout)
        self._answered = True  # _answered_now() inline: once per pooled request
        self._backoff = None  # answered: the next fault starts again from the first wait
        return answer

    def _answered_now(self) -> None:
        """A request was answered: the connection works, so the next failure starts the backoff from its first wait."""
        self._answered = True
        self._backoff = None  # answered: the next fault starts again from the first wait

    # -- the protocol ------------------------------------------------------------------------------------------

    def raw(self, request_bytes: bytes) -> bytes:
        """Send exactly ``request_bytes`` on one stream (no token added) and return the exact response bytes."""
        return self._exchange(request_bytes)

    def request(
        self, verb: str, path: str, metadata: Mapping[str, str | None] | None = None, body: bytes | str = b""
    ) -> Response:
        """One request with the token added as ``auth``; a non-success status raises its ``MarkStatusError``."""
        fields = {key: value for key, value in (metadata or {}).items() if value is not None}
        if self._token is not None:
            fields.setdefault("auth", self._token)
        return self._send(verb, path, fields, _as_bytes(body))

    def _send(self, verb: str, path: str, fields: Mapping[str, str] | None, body: bytes) -> Response:
        """Encode, exchange and parse one request whose fields are final (the token already in them)."""
        raw = self._exchange(encode_request(verb, path, fields, body))
        try:
            response = parse_response(raw)
        except MarkParseError as exc:
            raise MarkMalformedResponse(exc.reason) from None
        return raise_for_status(response)

    def fetch(
        self, path: str, *, if_none_match: str | None = None, if_modified_since: str | _dt.datetime | None = None
    ) -> Response:
        """FETCH a document, ``/doc.md/vN`` or ``/sha256-…``; a conditional match returns ``not-modified``."""
        if if_none_match is None and if_modified_since is None:  # the plain FETCH of a read load: no field to filter
            return self._send("FETCH", path, None if self._token is None else {"auth": self._token}, b"")
        return self.request(
            "FETCH",
            path,
            {
                "if-none-match": if_none_match,
                "if-modified-since": _rfc3339(if_modified_since) if if_modified_since is not None else None,
            },
        )

    def list(
        self,
        path: str = "/",
        *,
        page_size: int | None = None,
        cursor: str | None = None,
        include_archived: bool = False,
    ) -> Response:
        """One LIST page; ``complete`` and ``next-cursor`` in its metadata say whether more follow."""
        return self.request(
            "LIST",
            path,
            {
                "page-size": str(page_size) if page_size is not None else None,
                "cursor": cursor,
                "include-archived": "true" if include_archived else None,
            },
        )

    def list_all(
        self,
        path: str = "/",
        *,
        page_size: int | None = None,
        include_archived: bool = False,
        max_pages: int = MAX_LIST_PAGES,
    ) -> Iterator[Response]:
        """Every LIST page in order, following ``next-cursor``; stops with ``IncompleteListing`` past ``max_pages``."""
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(max_pages):
            page = self.list(path, page_size=page_size, cursor=cursor, include_archived=include_archived)
            yield page
            cursor = page.metadata.get("next-cursor")
            if page.metadata.get("complete", "true") == "true" or not cursor:
                return
            if cursor in seen:
                raise IncompleteListing(f"LIST {path} returned a cursor twice")
            seen.add(cursor)
        raise IncompleteListing(f"LIST {path} was not complete after {max_pages} pages")

    def versions(self, path: str) -> Response:
        """VERSIONS: the history of a document, newest first, with ``chain-valid``."""
        return self.request("VERSIONS", path)

    def lookup(
        self,
        scope: str,
        query: str,
        *,
        limit: int | None = None,
        filter: str | Mapping[str, str] | None = None,
        match: str | None = None,
    ) -> Response:
        """LOOKUP ``query`` under ``scope``; ``filter`` as ``"tag=a,modified-after=…"`` or a mapping."""
        if isinstance(filter, Mapping):
            filter = ",".join(f"{key}={value}" for key, value in filter.items())
        return self.request(
            "LOOKUP",
            scope,
            {
                "query": query,
                "limit": str(limit) if limit is not None else None,
                "filter": filter,
                "match": match,
            },
        )

    def publish(
        self,
        path: str,
        body: bytes | str,
        *,
        expected_version: int | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> Response:
        """PUBLISH a new version (``expected_version=0`` is create-only; an empty body unarchives)."""
        return self.request("PUBLISH", path, _write_fields(metadata, expected_version), body)

    def append(
        self,
        path: str,
        body: bytes | str,
        *,
        expected_version: int | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> Response:
        """APPEND to the current version (the server requires ``expected_version`` >= 1)."""
        return self.request("APPEND", path, _write_fields(metadata, expected_version), body)

    def archive(self, path: str, *, expected_version: int | None = None) -> Response:
        """ARCHIVE a document (``archived: "true"`` in the answer)."""
        return self.request("ARCHIVE", path, _write_fields(None, expected_version))


def _write_fields(metadata: Mapping[str, str] | None, expected_version: int | None) -> dict[str, str]:
    fields = dict(metadata or {})
    if expected_version is not None:
        fields["expected-version"] = str(expected_version)
    return fields
