"""PUBLISH, APPEND and ARCHIVE as the Go server's ``serveWrite`` does them: same check order, statuses and bodies.

Kept apart from the read side because writes are where the protocol's rules pile up (auth, metadata rules,
expected-version, archive state, retention) and each rule has its own answer.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from datetime import datetime
from typing import Literal, overload

from swarmgauge.protocols.mark import CONTROL_KEYS, MAX_BODY, Request, encode_response, error_response
from swarmgauge.targets.mark.auth import AuthDenied, TokenStore
from swarmgauge.targets.mark.render import rfc3339
from swarmgauge.targets.mark.store import Document, Store

MAX_META_KEYS = 50
MAX_META_BYTES = 1024
CONSUMED_KEYS = CONTROL_KEYS | {"retention"}
RESERVED_KEYS = frozenset(
    {
        "version",
        "etag",
        "status",
        "matches",
        "archived",
        "previous-hash",
        "content-hash",
        "modified",
        "current-version",
        "server-version",
        "your-version",
        "entries",
        "complete",
        "next-cursor",
        "chain-valid",
        "chain-error",
        "current",
        "total",
    }
)
UNTYPED_NAMES = frozenset({"index.md", "log.md"})
_KEY = re.compile(r"[a-z0-9-]+\Z")
_INTEGER = re.compile(r"[+-]?[0-9]+\Z")


def conflict_body(yours: int, server: int) -> bytes:
    """The Version Conflict page; create-only (``expected-version: 0``) on an existing path says so."""
    if yours == 0:
        lead = f"A document already exists at this path (version {server})."
    else:
        lead = "The document has been modified since you last fetched it."
    return (
        f"# Version Conflict\n\n{lead}\n\nYour version: {yours}\nServer version: {server}\n\n"
        "Please fetch the latest version and reapply your edits.\n"
    ).encode()


def conflict(yours: int, server: int) -> bytes:
    return encode_response(
        "conflict", {"server-version": str(server), "your-version": str(yours)}, conflict_body(yours, server)
    )


class WriteRefused(Exception):
    """A write rule that failed; ``response`` is the whole answer."""

    def __init__(self, response: bytes) -> None:
        super().__init__("write refused")
        self.response = response


def publisher_metadata(metadata: dict[str, str]) -> dict[str, str]:
    """The keys a publisher may store, checked as the server checks them; control keys are dropped first."""
    kept = {k: v for k, v in metadata.items() if k not in CONSUMED_KEYS}
    if len(kept) > MAX_META_KEYS:
        raise WriteRefused(error_response("bad-request", f"too many metadata keys: {len(kept)} > {MAX_META_KEYS}"))
    for key, value in kept.items():
        if not _KEY.match(key):
            raise WriteRefused(error_response("bad-request", f"invalid metadata key {key!r}"))
        if key in RESERVED_KEYS:
            raise WriteRefused(error_response("bad-request", f"reserved metadata key {key!r}"))
        if "\n" in value or "\r" in value:
            raise WriteRefused(error_response("bad-request", f"metadata value for {key!r} must be a single line"))
        if len(value.encode("utf-8")) > MAX_META_BYTES:
            raise WriteRefused(
                error_response("bad-request", f"metadata value for {key!r} exceeds {MAX_META_BYTES} bytes")
            )
    return kept


def with_default_type(path: str, metadata: dict[str, str]) -> dict[str, str]:
    """The server adds ``type: Document`` when none is declared, except for ``index.md`` and ``log.md``."""
    if "type" in metadata or posixpath.basename(path) in UNTYPED_NAMES:
        return metadata
    return {**metadata, "type": "Document"}


@overload
def expected_version(metadata: dict[str, str], *, required: Literal[True]) -> int: ...
@overload
def expected_version(metadata: dict[str, str], *, required: bool = False) -> int | None: ...
def expected_version(metadata: dict[str, str], *, required: bool = False) -> int | None:
    text = metadata.get("expected-version")
    if text is None or text == "":
        if required:
            raise WriteRefused(error_response("bad-request", "expected-version is required"))
        return None
    if not _INTEGER.match(text) or int(text) < 0:
        raise WriteRefused(error_response("bad-request", "invalid expected-version: want a non-negative integer"))
    return int(text)


def retention_of(metadata: dict[str, str]) -> int | None:
    text = metadata.get("retention")
    if text is None:
        return None
    if not _INTEGER.match(text) or int(text) < 1:
        raise WriteRefused(error_response("bad-request", "invalid retention: want a positive integer"))
    return int(text)


class WriteHandler:
    """The write verbs of one world; ``tokens`` None means the server has no auth configuration."""

    def __init__(
        self, store: Store, tokens: TokenStore | None, clock: Callable[[], datetime], *, read_only: bool = False
    ) -> None:
        self.store = store
        self.tokens = tokens
        self.clock = clock
        self.read_only = read_only

    def serve(self, req: Request) -> bytes:
        try:
            self._precheck(req)
            if req.verb == "PUBLISH":
                return self._publish(req)
            if req.verb == "APPEND":
                return self._append(req)
            return self._archive(req)
        except WriteRefused as refused:
            return refused.response

    def _precheck(self, req: Request) -> None:
        if self.read_only:
            raise WriteRefused(error_response("not-permitted", "server is read-only"))
        if req.path.startswith("/sha256-"):
            raise WriteRefused(error_response("bad-request", "cannot write to a content hash path"))
        if len(req.body) > MAX_BODY:
            raise WriteRefused(error_response("server-error", "content exceeds size limit"))
        if self.tokens is None:
            raise WriteRefused(error_response("not-permitted", f"{req.verb.lower()} requires auth configuration"))
        try:
            self.tokens.authorize(req.metadata.get("auth"), req.path, "publish")
        except AuthDenied as denied:
            raise WriteRefused(error_response(denied.status, str(denied))) from None
        if not req.path.endswith(".md"):
            raise WriteRefused(error_response("bad-request", "path must end in .md"))
        try:
            req.body.decode("utf-8")
        except UnicodeDecodeError:
            raise WriteRefused(error_response("bad-request", "content must be UTF-8")) from None

    def _publish(self, req: Request) -> bytes:
        doc = self.store.get(req.path)
        if not req.body:
            return self._unarchive(req, doc)
        metadata = with_default_type(req.path, publisher_metadata(req.metadata))
        expected = expected_version(req.metadata)
        retention = retention_of(req.metadata)
        current = doc.current.number if doc is not None and doc.versions else 0
        if expected is not None and expected != current:
            return conflict(expected, current)
        if doc is not None and doc.archived:
            return error_response("archived", "document is archived; unarchive first")
        if doc is not None and doc.versions and doc.current.body == req.body and doc.current.metadata == metadata:
            return encode_response("ok", {"modified": rfc3339(doc.current.modified), "version": str(current)})
        version = self.store.add_version(req.path, req.body, metadata, self.clock(), retention=retention)
        return encode_response("created", {"modified": rfc3339(version.modified), "version": str(version.number)})

    def _unarchive(self, req: Request, doc: Document | None) -> bytes:
        """An empty PUBLISH body brings an archived document back; on a live one it changes nothing."""
        if doc is None or not doc.versions:
            return error_response("not-found", req.path + " not found")
        self.store.set_archived(doc, False)
        return encode_response("ok", {"version": str(doc.current.number)})

    def _append(self, req: Request) -> bytes:
        expected = expected_version(req.metadata, required=True)
        if expected == 0:
            raise WriteRefused(error_response("bad-request", "expected-version must be at least 1 for append"))
        if not req.body:
            return error_response("bad-request", "append requires a non-empty body")
        doc = self.store.get(req.path)
        if doc is None or not doc.versions:
            return error_response("not-found", req.path + " not found")
        if doc.archived:
            return error_response("archived", "document is archived; unarchive first")
        if expected != doc.current.number:
            return conflict(expected, doc.current.number)
        metadata = dict(doc.current.metadata)
        metadata.update(publisher_metadata(req.metadata))
        version = self.store.add_version(
            req.path, doc.current.body + req.body, metadata, self.clock(), retention=retention_of(req.metadata)
        )
        return encode_response("created", {"modified": rfc3339(version.modified), "version": str(version.number)})

    def _archive(self, req: Request) -> bytes:
        doc = self.store.get(req.path)
        if doc is None or not doc.versions:
            return error_response("not-found", req.path + " not found")
        self.store.set_archived(doc, True)
        return encode_response("ok", {"archived": "true", "version": str(doc.current.number)})
