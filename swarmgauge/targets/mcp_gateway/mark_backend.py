"""The gateway's Mark client: the pure codec over one pooled QUIC connection (``mark_hop.MarkHop``).

The gateway runs inside the SDK server's asyncio loop, so it cannot use the gevent ``MarkClient``; this is the
same wire behaviour (one request per bidi stream, FIN after the request, read to the server's FIN, at most 10
streams in flight) in asyncio, on the QUIC engine the gevent client defaults to (qh3; ``--mark-quic-engine``).
A lost connection is reopened on the next request.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from swarmgauge.errors import SwarmgaugeError, UsageError
from swarmgauge.protocols import mark
from swarmgauge.quic.engine import DEFAULT_ENGINE, engine
from swarmgauge.targets.mcp_gateway.mark_hop import MarkHop, hop_protocol

ALPN = "mark"
MAX_IN_FLIGHT = 10


class MarkBackendError(SwarmgaugeError):
    """The Mark server could not be reached or answered garbage (a transport failure: tool ``isError: true``)."""


@dataclass(frozen=True)
class MarkAddress:
    host: str
    port: int

    @property
    def url(self) -> str:
        return f"mark://{self.host}:{self.port}"


def parse_mark_url(url: str) -> MarkAddress:
    parts = urlsplit(url)
    if parts.scheme != "mark" or not parts.hostname:
        raise UsageError(f"--mark must look like mark://127.0.0.1:6309, got {url!r}")
    return MarkAddress(parts.hostname, parts.port or 6309)


def target_path(address: MarkAddress, url: str) -> str:
    """A tool's ``url`` argument: ``mark://host:port/path`` on our server, or a bare ``/path``."""
    if url.startswith("/"):
        return url
    parts = urlsplit(url)
    if parts.scheme != "mark":
        raise MarkBackendError(f"not a mark:// URL: {url!r}")
    if parts.hostname not in (address.host, "localhost") or (parts.port or 6309) != address.port:
        raise MarkBackendError(f"unknown world {parts.netloc!r} (this gateway serves {address.url})")
    path = parts.path or "/"
    return f"{path}#{parts.fragment}" if parts.fragment else path


class MarkBackend:
    """Sends Mark requests over one lazily opened QUIC connection; safe for concurrent tool calls."""

    def __init__(self, address: MarkAddress, timeout: float = 10.0, quic_engine: str = DEFAULT_ENGINE) -> None:
        self.address = address
        self.timeout = timeout
        self.engine = engine(quic_engine)
        self.connections = 0  # opened so far: 1 while the first holds, one more per reopening
        self._configuration: Any = None
        self._hop: MarkHop | None = None
        self._transport: asyncio.DatagramTransport | None = None
        self._lock: asyncio.Lock | None = None
        self._slots: asyncio.Semaphore | None = None

    def _client_configuration(self) -> Any:
        if self._configuration is None:
            try:
                ipaddress.ip_address(self.address.host)
                server_name = None
            except ValueError:
                server_name = self.address.host
            self._configuration = self.engine.client_configuration(
                alpn=ALPN, insecure=True, ca_file=None, server_name=server_name, idle_timeout=30.0
            )
        return self._configuration

    async def _connection(self) -> MarkHop:
        assert self._lock is not None
        async with self._lock:
            if self._hop is not None and not self._hop.is_closed:
                return self._hop
            await self._drop(self._hop)
            protocol = hop_protocol(self.engine)
            quic_engine = self.engine
            try:
                transport, hop = await asyncio.wait_for(
                    quic_engine.open_asyncio_client(
                        self.address.host,
                        self.address.port,
                        self._client_configuration(),
                        lambda quic: protocol(quic, quic_engine=quic_engine),
                    ),
                    self.timeout,
                )
            except (TimeoutError, OSError, ConnectionError) as exc:
                raise MarkBackendError(f"cannot reach {self.address.url}: {type(exc).__name__}") from exc
            self._transport, self._hop = transport, hop
            self.connections += 1
            return hop

    async def _drop(self, hop: MarkHop | None) -> None:
        """Close ``hop`` if it is still the current connection: its requests in flight fail, the next one reopens."""
        if hop is None or hop is not self._hop:
            return
        transport, self._transport, self._hop = self._transport, None, None
        hop.abandon(ConnectionError("the Mark connection was dropped"))
        with contextlib.suppress(Exception):
            hop.close()  # type: ignore[attr-defined]  # the engine's QuicConnectionProtocol
            await asyncio.wait_for(hop.wait_closed(), 2.0)  # type: ignore[attr-defined]
        if transport is not None:
            transport.close()

    async def request(self, verb: str, path: str, metadata: dict[str, str] | None = None) -> mark.Response:
        payload = mark.encode_request(verb, path, metadata or {})
        if self._slots is None:
            self._lock, self._slots = asyncio.Lock(), asyncio.Semaphore(MAX_IN_FLIGHT)
        async with self._slots:
            hop = self._hop
            if hop is None or hop.is_closed:
                hop = await self._connection()
            try:
                data = await hop.request(payload, self.timeout)
            except (TimeoutError, ConnectionError, OSError) as exc:
                await self._drop(hop)
                raise MarkBackendError(f"{verb} {path}: {type(exc).__name__}") from exc
        try:
            return mark.parse_response(data)
        except mark.MarkParseError as exc:
            raise MarkBackendError(f"{verb} {path}: malformed answer ({exc})") from exc

    async def close(self) -> None:
        await self._drop(self._hop)
