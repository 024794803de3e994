"""Capability tokens as the real server reads them: a ``tokens.toml`` of sha256 hashes, path globs and operations.

``[tokens.<label>] hash = "sha256-…"  paths = ["/docs/*", "/**"]  operations = ["publish", "read"]
expires = "RFC3339"``. Raw tokens are hashed on arrival and never kept or logged.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from swarmgauge.errors import UsageError

OPERATIONS = frozenset({"publish", "read"})


class AuthDenied(Exception):
    """A request the token store refuses; ``unauthenticated`` picks unauthorized over not-permitted."""

    def __init__(self, unauthenticated: bool) -> None:
        super().__init__("authentication required" if unauthenticated else "insufficient permissions")
        self.unauthenticated = unauthenticated

    @property
    def status(self) -> str:
        return "unauthorized" if self.unauthenticated else "not-permitted"


def hash_token(raw: str) -> str:
    return "sha256-" + hashlib.sha256(raw.encode("utf-8")).hexdigest()


def _segment_regex(pattern: str) -> str:
    """Go ``path.Match`` for a pattern without ``**``: ``*`` and ``?`` never cross ``/``, ``[...]`` classes."""
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "\\" and i + 1 < len(pattern):
            i += 1
            out.append(re.escape(pattern[i]))
        elif ch == "[":
            end = pattern.find("]", i + 2)
            if end < 0:
                raise UsageError(f"bad path glob {pattern!r}: unterminated [")
            body = pattern[i + 1 : end]
            negate = body.startswith("^")
            body = body[1:] if negate else body
            out.append("[" + ("^/" if negate else "") + body.replace("\\", "\\\\") + "]")
            i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


def compile_glob(pattern: str) -> re.Pattern[str]:
    """``path.Match`` plus one trailing ``/**`` (everything below) or infix ``/**/`` (any depth, zero included)."""
    if pattern.endswith("/**"):
        return re.compile(_segment_regex(pattern[:-3]) + "/.*\\Z")
    if "/**/" in pattern:
        head, tail = pattern.split("/**/", 1)
        return re.compile(_segment_regex(head) + "/(?:.*/)?" + _segment_regex(tail) + "\\Z")
    return re.compile(_segment_regex(pattern) + "\\Z")


@dataclass(frozen=True)
class Token:
    label: str
    hash: str
    paths: tuple[re.Pattern[str], ...]
    operations: frozenset[str]
    expires: datetime | None = None

    def covers(self, path: str) -> bool:
        return any(p.match(path) for p in self.paths)

    def expired(self, now: datetime) -> bool:
        return self.expires is not None and now >= self.expires


class TokenStore:
    """The tokens of one world; ``clock`` decides expiry (the server's pinned clock in tests)."""

    def __init__(self, tokens: Iterable[Token], clock: Callable[[], datetime]) -> None:
        self.tokens = tuple(tokens)
        self._by_hash = {t.hash: t for t in self.tokens}
        self._clock = clock

    def authorize(self, raw: str | None, path: str, operation: str) -> str:
        """The label of a live token granting ``operation`` on ``path``, else :class:`AuthDenied`."""
        token = self._by_hash.get(hash_token(raw)) if raw else None
        if token is None or token.expired(self._clock()):
            raise AuthDenied(unauthenticated=True)
        if operation not in token.operations or not token.covers(path):
            raise AuthDenied(unauthenticated=False)
        return token.label

    def requires_read_auth(self, path: str) -> bool:
        return any("read" in t.operations and t.covers(path) for t in self.tokens)

    def authorize_read(self, raw: str | None, path: str) -> None:
        """Reads are public unless some read token covers the path; then a token with ``read`` is needed."""
        if self.requires_read_auth(path):
            self.authorize(raw, path, "read")


def publish_token(raw: str, label: str = "cli") -> Token:
    """``--publish-token RAW``: ``publish`` on ``/**``."""
    return Token(label, hash_token(raw), (compile_glob("/**"),), frozenset({"publish"}))


def parse_tokens_toml(text: str) -> list[Token]:
    """Tokens from a tokens.toml; anything malformed is a :class:`UsageError` naming the entry."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"tokens file is not valid TOML: {exc}") from None
    tokens = []
    table = data.get("tokens", {})
    if not isinstance(table, dict):
        raise UsageError("tokens file: [tokens] must be a table")
    for label, entry in table.items():
        if not isinstance(entry, dict):
            raise UsageError(f"tokens file: tokens.{label} must be a table")
        digest = entry.get("hash")
        if not isinstance(digest, str) or not re.fullmatch(r"sha256-[0-9a-f]{64}", digest):
            raise UsageError(f"tokens file: tokens.{label}.hash must be sha256-<64 hex>")
        paths, operations = entry.get("paths"), entry.get("operations")
        if not isinstance(paths, list) or not paths or not all(isinstance(p, str) for p in paths):
            raise UsageError(f"tokens file: tokens.{label}.paths must be a non-empty list of globs")
        if not isinstance(operations, list) or not set(operations) <= OPERATIONS or not operations:
            raise UsageError(f"tokens file: tokens.{label}.operations must list publish and/or read")
        expires = entry.get("expires")
        if isinstance(expires, str):
            try:
                expires = datetime.fromisoformat(expires.replace("Z", "+00:00"))
            except ValueError:
                raise UsageError(f"tokens file: tokens.{label}.expires is not RFC 3339") from None
        elif expires is not None and not isinstance(expires, datetime):
            raise UsageError(f"tokens file: tokens.{label}.expires is not RFC 3339")
        if isinstance(expires, datetime) and expires.tzinfo is None:
            expires = expires.replace(tzinfo=UTC)
        tokens.append(Token(label, digest, tuple(compile_glob(p) for p in paths), frozenset(operations), expires))
    return tokens
