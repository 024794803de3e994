"""Incremental Server-Sent Events decoder (WHATWG "event stream" rules), sans-IO.

MCP servers may answer a POST with ``text/event-stream``; the bytes arrive in arbitrary chunks, so an event, a
line, a CRLF pair or a UTF-8 sequence can be split across reads. ``SSEDecoder.feed`` takes raw chunks and returns
the events completed so far; ``close`` says whether the stream ended cleanly or was cut off mid-event.
"""

from __future__ import annotations

from dataclasses import dataclass

from swarmgauge.errors import SwarmgaugeError

_BOM = b"\xef\xbb\xbf"
MAX_EVENT_BYTES = 4 * 1024 * 1024


class SSEError(SwarmgaugeError):
    """The event stream is not valid (bytes that are not UTF-8, an event past the size cap)."""


class SSETruncated(SSEError):
    """The stream ended in the middle of an event (data received but no blank line to dispatch it)."""


@dataclass(frozen=True)
class SSEEvent:
    """One dispatched event; ``event`` defaults to ``message`` as the spec says."""

    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None


class SSEDecoder:
    """Feed bytes, get whole events. Comments (``:`` lines) and unknown fields are skipped, as the spec says."""

    def __init__(self, max_event_bytes: int = MAX_EVENT_BYTES) -> None:
        self._buffer = bytearray()
        self._started = False
        self._skip_lf = False
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None
        self._retry: int | None = None
        self._pending_bytes = 0
        self._max_event_bytes = max_event_bytes
        self.last_event_id: str | None = None
        self.retry: int | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Add a chunk of the stream; return the events it completed."""
        if not chunk:
            return []
        data = bytes(chunk)
        if self._skip_lf:
            self._skip_lf = False
            if data.startswith(b"\n"):
                data = data[1:]
        self._buffer += data
        if not self._started:
            if len(self._buffer) < len(_BOM) and _BOM.startswith(bytes(self._buffer)):
                return []
            self._started = True
            if self._buffer.startswith(_BOM):
                del self._buffer[: len(_BOM)]
        events: list[SSEEvent] = []
        for line in self._take_lines():
            event = self._process_line(line)
            if event is not None:
                events.append(event)
        if len(self._buffer) + self._pending_bytes > self._max_event_bytes:
            raise SSEError(f"event larger than {self._max_event_bytes} bytes")
        return events

    def close(self) -> None:
        """The stream ended: raise ``SSETruncated`` if an event (or a line) was left unfinished."""
        if self._buffer.strip() or self._data or self._event or self._pending_bytes:
            raise SSETruncated("event stream ended in the middle of an event")

    def _take_lines(self) -> list[bytes]:
        lines: list[bytes] = []
        buffer = self._buffer
        start = 0
        length = len(buffer)
        while start < length:
            lf = buffer.find(b"\n", start)
            cr = buffer.find(b"\r", start, lf if lf != -1 else length)
            if cr != -1:
                lines.append(bytes(buffer[start:cr]))
                if cr + 1 < length:
                    start = cr + 2 if buffer[cr + 1] == 0x0A else cr + 1
                else:
                    start = cr + 1
                    self._skip_lf = True
                continue
            if lf == -1:
                break
            lines.append(bytes(buffer[start:lf]))
            start = lf + 1
        del buffer[:start]
        return lines

    def _process_line(self, raw: bytes) -> SSEEvent | None:
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SSEError(f"event stream line is not UTF-8: {raw[:40]!r}") from exc
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        field, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        self._pending_bytes += len(raw)
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
        elif field == "id":
            if "\x00" not in value:
                self._id = value
        elif field == "retry":
            if value.isdigit():
                self._retry = int(value)
                self.retry = self._retry
        return None

    def _dispatch(self) -> SSEEvent | None:
        if self._id is not None:
            self.last_event_id = self._id
        event: SSEEvent | None = None
        if self._data:
            event = SSEEvent(
                data="\n".join(self._data),
                event=self._event or "message",
                id=self._id if self._id is not None else self.last_event_id,
                retry=self._retry,
            )
        self._data = []
        self._event = ""
        self._id = None
        self._retry = None
        self._pending_bytes = 0
        return event
