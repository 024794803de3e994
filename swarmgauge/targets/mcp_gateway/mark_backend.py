"""The gateway's Mark client: aioquic's asyncio client plus the pure codec, one pooled QUIC connection.

The gateway runs inside the SDK server's asyncio loop, so it cannot use the gevent ``MarkClient``; this is the
same wire behaviour (one request per bidi stream, FIN after the request, read to the server's FIN, at most 10
streams in flight) in asyncio. A lost connection is reopened on the next request.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit

from aioquic.asyncio.client import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.quic.configuration import QuicConfiguration

from swarmgauge.errors import SwarmgaugeError, UsageError
from swarmgauge.protocols import mark
from swarmgauge.quic.engine import engine_of

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

    def __init__(self, address: MarkAddress, timeout: float = 10.0) -> None:
        self.address = address
        self.timeout = timeout
        self._stack: contextlib.AsyncExitStack | None = None
        self._protocol: QuicConnectionProtocol | None = None
        self._lock: asyncio.Lock | None = None
        self._slots: asyncio.Semaphore | None = None

    async def _connection(self):
        if self._lock is None:
            self._lock = asyncio.Lock()
            self._slots = asyncio.Semaphore(MAX_IN_FLIGHT)
        async with self._lock:
            if self._protocol is not None and not self._closed(self._protocol):
                return self._protocol
            await self._drop()
            configuration = QuicConfiguration(
                is_client=True, alpn_protocols=["mark"], verify_mode=ssl.CERT_NONE, idle_timeout=30.0
            )
            stack = contextlib.AsyncExitStack()
            try:
                protocol = await asyncio.wait_for(
                    stack.enter_async_context(
                        connect(self.address.host, self.address.port, configuration=configuration)
                    ),
                    self.timeout,
                )
            except (TimeoutError, OSError, ConnectionError) as exc:
                await stack.aclose()
                raise MarkBackendError(f"cannot reach {self.address.url}: {type(exc).__name__}") from exc
            self._stack, self._protocol = stack, protocol
            return protocol

    @staticmethod
    def _closed(protocol) -> bool:
        closed = getattr(protocol, "_closed", None)
        return (
            closed is None
            or closed.is_set()
            or engine_of(protocol._quic.configuration).close_event(protocol._quic) is not None
        )

    async def _drop(self) -> None:
        stack, self._stack, self._protocol = self._stack, None, None
        if stack is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(stack.aclose(), 2.0)

    async def request(self, verb: str, path: str, metadata: dict[str, str] | None = None) -> mark.Response:
        payload = mark.encode_request(verb, path, metadata or {})
        protocol = await self._connection()
        assert self._slots is not None
        async with self._slots:
            try:
                reader, writer = await protocol.create_stream()
                writer.write(payload)
                writer.write_eof()
                data = await asyncio.wait_for(reader.read(), self.timeout)
            except (TimeoutError, ConnectionError, OSError) as exc:
                await self._drop()
                raise MarkBackendError(f"{verb} {path}: {type(exc).__name__}") from exc
        try:
            return mark.parse_response(data)
        except mark.MarkParseError as exc:
            raise MarkBackendError(f"{verb} {path}: malformed answer ({exc})") from exc

    async def close(self) -> None:
        await self._drop()
