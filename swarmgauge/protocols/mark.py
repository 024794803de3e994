"""The Mark Protocol (demarkus) wire format: requests, responses, stored-version bytes, etags and the LIST cursor.

Pure functions over bytes, byte-faithful to the Go server (``protocol/request.go``, ``response.go``, ``storefmt``):
the client and the reference server both use them, and the goldens in ``shared/data/demarkus-wire`` check them.
Every malformed input raises :class:`MarkParseError`, nothing else.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from swarmgauge.protocols.goyaml import YamlMapError, decode_map, encode_map, yaml_scalar

__all__ = [
    "CONTROL_KEYS",
    "MAX_BODY",
    "MAX_METADATA",
    "MAX_PATH",
    "MAX_REQUEST_LINE",
    "MAX_RESPONSE",
    "OKF_KEYS",
    "STATUSES",
    "SUCCESS_STATUSES",
    "VERBS",
    "MarkParseError",
    "Request",
    "Response",
    "content_hash",
    "decode_cursor",
    "encode_cursor",
    "encode_metadata",
    "encode_request",
    "encode_response",
    "error_body",
    "etag_of",
    "parse_request",
    "parse_response",
    "status_title",
    "stored_version_bytes",
    "yaml_scalar",
]

MAX_REQUEST_LINE = 4096
MAX_PATH = MAX_REQUEST_LINE - 9
MAX_METADATA = 65536
MAX_BODY = 1 << 20
MAX_RESPONSE = 4 << 20
# readBoundedPayload's cap on everything after the request line.
MAX_PAYLOAD = MAX_METADATA + MAX_BODY + 64

VERBS = ("FETCH", "LIST", "VERSIONS", "PUBLISH", "ARCHIVE", "APPEND", "LOOKUP")
STATUSES = (
    "ok",
    "created",
    "not-modified",
    "not-found",
    "archived",
    "unauthorized",
    "not-permitted",
    "conflict",
    "bad-request",
    "server-error",
    "rate-limited",
    "resync",
    "closing",
)
SUCCESS_STATUSES = frozenset({"ok", "created", "not-modified"})
CONTROL_KEYS = frozenset({"auth", "expected-version", "if-none-match", "if-modified-since"})
# Open Knowledge Format keys stored bare in the version bytes; every other publisher key is stored as meta.<key>.
OKF_KEYS = frozenset({"type", "title", "description", "resource", "tags", "timestamp"})

_FENCE = b"---\n"
CACHED_BLOCKS = 1024  # decoded metadata blocks kept (``_decode_block``)
CACHED_BLOCK_BYTES = 1024


class MarkParseError(ValueError):
    """Bytes that are not a well-formed Mark request or response. ``status`` is what the real server answers."""

    def __init__(self, reason: str, status: str = "bad-request") -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status


@dataclass(frozen=True)
class Request:
    verb: str
    path: str
    metadata: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


@dataclass(frozen=True)
class Response:
    status: str
    metadata: dict[str, str] = field(default_factory=dict)  # without "status"
    body: bytes = b""


def encode_metadata(metadata: Mapping[str, str]) -> bytes:
    """The ``---`` block, keys sorted, values quoted as yaml.v3 quotes them."""
    return _FENCE + encode_map(metadata).encode("utf-8") + _FENCE


def encode_request(verb: str, path: str, metadata: Mapping[str, str] | None = None, body: bytes = b"") -> bytes:
    """A request as the Go client writes it; an empty block guards a body that itself starts with ``---``."""
    head = f"{verb} {path}\n".encode()
    if metadata:
        return head + encode_metadata(metadata) + body
    if body.startswith(_FENCE):
        return head + b"---\n\n---\n" + body
    return head + body


def encode_response(status: str, metadata: Mapping[str, str] | None = None, body: bytes = b"") -> bytes:
    """A response as the server writes it: always a block, ``status`` sorted in with the other keys."""
    return encode_metadata({**(metadata or {}), "status": status}) + body


def _split_frontmatter(data: bytes) -> tuple[bytes | None, bytes]:
    """(block text or None, body). The block ends at the first ``\\n---\\n`` or at ``\\n---`` ending the input."""
    if not data.startswith(_FENCE):
        return None, data
    end = data.find(b"\n---\n", 3)
    if end >= 0:
        return data[4 : end + 1] if end >= 4 else b"", data[end + 5 :]
    if data.endswith(b"\n---") and len(data) >= 7:
        return data[4:-3], b""
    raise MarkParseError("unterminated frontmatter")


def _decode_block(block: bytes) -> dict[str, str]:
    """A fresh dict each call (callers change it); a small block is decoded once per distinct block."""
    if len(block) <= CACHED_BLOCK_BYTES:
        return _decoded_small_block(block).copy()
    return dict(_decoded_block_items(block))


@functools.lru_cache(maxsize=CACHED_BLOCKS)
def _decoded_small_block(block: bytes) -> dict[str, str]:
    """Blocks repeat (a load test reads the same documents over and over), and decoding one cost more than the rest
    of a response's parse; bounded to 1,024 blocks of at most 1 KiB. A malformed block raises each time. The dict
    kept here is never handed out: callers get a copy (a dict copy is several times cheaper than building one
    from pairs)."""
    return dict(_decoded_block_items(block))


def _response_block(block: bytes) -> tuple[str, dict[str, str]]:
    """A response block's status and the rest of its metadata (a fresh dict); small blocks decoded once."""
    if len(block) <= CACHED_BLOCK_BYTES:
        status, metadata = _decoded_small_response_block(block)
        return status, metadata.copy()
    return _split_status(dict(_decoded_block_items(block)))


@functools.lru_cache(maxsize=CACHED_BLOCKS)
def _decoded_small_response_block(block: bytes) -> tuple[str, dict[str, str]]:
    """As ``_decoded_small_block``, for the client's side: the status taken out once per distinct block."""
    return _split_status(dict(_decoded_block_items(block)))


def _split_status(metadata: dict[str, str]) -> tuple[str, dict[str, str]]:
    status = metadata.pop("status", None)
    if not status:
        raise MarkParseError("response has no status")
    return status, metadata


def _decoded_block_items(block: bytes) -> tuple[tuple[str, str], ...]:
    try:
        text = block.decode("utf-8")
    except UnicodeDecodeError:
        raise MarkParseError("metadata is not UTF-8") from None
    try:
        return tuple(decode_map(text).items())
    except YamlMapError as exc:
        raise MarkParseError(f"invalid metadata: {exc}") from None


def _check_path(path: str) -> None:
    if not path.startswith("/"):
        raise MarkParseError("path must start with /")
    if len(path.encode("utf-8")) > MAX_PATH:
        raise MarkParseError("path too long")
    if any((ord(c) < 32 and c != "\t") or ord(c) == 127 for c in path):
        raise MarkParseError("path contains control characters")


def parse_request(data: bytes) -> Request:
    """Parse a whole request (everything up to the client's FIN), enforcing every protocol limit."""
    newline = data.find(b"\n")
    line, rest = (data, b"") if newline < 0 else (data[:newline], data[newline + 1 :])
    if len(line) + 1 > MAX_REQUEST_LINE:
        raise MarkParseError("request line too long", status="server-error")
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        raise MarkParseError("request line is not UTF-8") from None
    verb, space, path = text.partition(" ")
    if not space or verb not in VERBS:
        raise MarkParseError(f"unknown verb {verb[:32]!r}" if space else "malformed request line")
    _check_path(path)
    if len(rest) > MAX_PAYLOAD:
        raise MarkParseError("content exceeds size limit", status="server-error")
    block, body = _split_frontmatter(rest)
    metadata: dict[str, str] = {}
    if block is not None:
        if len(block) > MAX_METADATA:
            raise MarkParseError("metadata too large")
        metadata = _decode_block(block)
    if len(body) > MAX_BODY:
        raise MarkParseError("content exceeds size limit", status="server-error")
    return Request(verb, path, metadata, body)


def parse_response(data: bytes) -> Response:
    """Parse a whole response (read to the server's FIN); the status block is required."""
    if len(data) > MAX_RESPONSE:
        raise MarkParseError("response exceeds 4 MiB")
    block, body = _split_frontmatter(data)
    if block is None:
        raise MarkParseError("response has no status block")
    status, metadata = _response_block(block)
    return Response(status, metadata, body)


def status_title(status: str) -> str:
    """``not-found`` → ``Not found``, as handler.go's statusTitle writes error headings."""
    words = status.replace("-", " ")
    return words[:1].upper() + words[1:]


def error_body(status: str, message: str) -> bytes:
    """The body of an error response: ``\\n# Not found\\n\\n<message>\\n``."""
    return f"\n# {status_title(status)}\n\n{message}\n".encode()


def error_response(status: str, message: str) -> bytes:
    """A whole error answer as the server writes it: only ``status`` in the block, the titled message as body."""
    return encode_response(status, {}, error_body(status, message))


def content_hash(body: bytes) -> str:
    return "sha256-" + hashlib.sha256(body).hexdigest()


def etag_of(stored: bytes) -> str:
    return hashlib.sha256(stored).hexdigest()


def stored_version_bytes(
    version: int, body: bytes, metadata: Mapping[str, str], *, archived: bool = False, previous_hash: str | None = None
) -> bytes:
    """One stored version as storefmt writes it; its sha256 is the etag and the next version's previous-hash.

    ``previous_hash`` is the hex digest of the previous stored bytes, with or without the ``sha256-`` prefix.
    """
    lines = [f"version: {version}", f"archived: {'true' if archived else 'false'}"]
    if previous_hash:
        lines.append(
            "previous-hash: " + (previous_hash if previous_hash.startswith("sha256-") else "sha256-" + previous_hash)
        )
    for key in sorted(metadata):
        value = metadata[key]
        if key == "tags":
            lines.append("tags: [" + ", ".join(t for t in split_tags(value)) + "]")
        elif key in OKF_KEYS:
            lines.append(f"{key}: {value}")
        else:
            lines.append(f"meta.{key}: {value}")
    return ("---\n" + "\n".join(lines) + "\n---\n").encode("utf-8") + body


def split_tags(value: str) -> list[str]:
    """Tags as the server keeps them: comma-separated, trimmed, empties dropped."""
    return [t.strip() for t in value.split(",") if t.strip()]


def encode_cursor(path: str, last_name: str, include_archived: bool) -> str:
    """The opaque LIST cursor: base64url(0x01, flags, uint16-BE len(path), path, last name), no padding."""
    raw_path = path.encode("utf-8")
    raw = bytes([1, 1 if include_archived else 0]) + len(raw_path).to_bytes(2, "big") + raw_path
    return base64.urlsafe_b64encode(raw + last_name.encode("utf-8")).rstrip(b"=").decode("ascii")


def decode_cursor(cursor: str) -> tuple[str, str, bool]:
    """(path, last name, include-archived) from a cursor; anything malformed raises :class:`MarkParseError`."""
    try:
        raw = base64.urlsafe_b64decode(cursor.encode("ascii") + b"=" * (-len(cursor) % 4))
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise MarkParseError("invalid cursor") from None
    if "=" in cursor or len(raw) < 4 or raw[0] != 1 or raw[1] not in (0, 1):
        raise MarkParseError("invalid cursor")
    size = int.from_bytes(raw[2:4], "big")
    if len(raw) < 4 + size:
        raise MarkParseError("invalid cursor")
    try:
        path = raw[4 : 4 + size].decode("utf-8")
        last = raw[4 + size :].decode("utf-8")
    except UnicodeDecodeError:
        raise MarkParseError("invalid cursor") from None
    return path, last, raw[1] == 1
