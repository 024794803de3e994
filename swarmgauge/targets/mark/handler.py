"""The sans-IO Mark request handler: whole request bytes in, whole response bytes out, the clock passed in.

Mirrors the Go server's ``handler.go``: the same check order, statuses and messages, so a client tested against
it sees what it would see against demarkus. Transport, deadlines, rate limits and pacing live in ``server.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime

from swarmgauge.protocols.mark import (
    MarkParseError,
    Request,
    content_hash,
    decode_cursor,
    encode_cursor,
    encode_response,
    etag_of,
    parse_request,
)
from swarmgauge.protocols.mark import error_response as error
from swarmgauge.targets.mark import catalog
from swarmgauge.targets.mark.auth import AuthDenied, TokenStore
from swarmgauge.targets.mark.render import (
    DirEntry,
    list_metadata,
    list_page,
    lookup_response,
    rfc3339,
    versions_response,
)
from swarmgauge.targets.mark.store import Document, Store, Version, canonical_path, contains_dot_dot
from swarmgauge.targets.mark.writes import WriteHandler

READ_VERBS = frozenset({"FETCH", "LIST", "VERSIONS", "LOOKUP"})
WRITE_VERBS = frozenset({"PUBLISH", "APPEND", "ARCHIVE"})
MAX_LIST_PAGE = 1000
DEFAULT_LOOKUP_LIMIT = 10
MAX_LOOKUP_RESULTS = 1000
_HASH_PATH = re.compile(r"/(sha256-[0-9a-f]{64})\Z")
_VERSION_SEGMENT = re.compile(r"v([0-9]+)\Z")


def not_modified() -> bytes:
    return encode_response("not-modified")


def parse_error_response(exc: MarkParseError) -> bytes:
    """writeParseError: a grammar error is the client's (bad-request), a size or read failure is not."""
    if exc.status == "bad-request":
        return error("bad-request", "bad request")
    if exc.reason == "content exceeds size limit":
        return error("server-error", "content exceeds size limit")
    return error("server-error", "could not read request")


class Handler:
    """One world's request logic over a :class:`Store`; ``tokens`` None means no auth configuration."""

    def __init__(
        self, store: Store, tokens: TokenStore | None, clock: Callable[[], datetime], *, read_only: bool = False
    ) -> None:
        self.store = store
        self.tokens = tokens
        self.clock = clock
        self.writes = WriteHandler(store, tokens, clock, read_only=read_only)

    def handle(self, data: bytes) -> bytes:
        """Answer one request's bytes; never raises for bad input."""
        try:
            request = parse_request(data)
        except MarkParseError as exc:
            return parse_error_response(exc)
        return self.serve(request)

    def serve(self, req: Request) -> bytes:
        if contains_dot_dot(req.path):
            return error("not-found", req.path + " not found")
        req = Request(req.verb, canonical_path(req.path), req.metadata, req.body)
        if req.path == "/health" and req.verb == "FETCH":
            return encode_response("ok", {}, b"# Health Check\n\nServer is healthy.\n")
        if req.verb in WRITE_VERBS:
            return self.writes.serve(req)
        if req.verb == "FETCH":
            return self._fetch(req)
        if req.verb == "LIST":
            return self._list(req)
        if req.verb == "VERSIONS":
            return self._versions(req)
        if req.verb == "LOOKUP":
            return self._lookup(req)
        return error("bad-request", "unsupported verb: " + req.verb)

    # --- auth --------------------------------------------------------------------------------------------------
    def _read_denied(self, path: str, raw: str | None) -> bytes | None:
        if self.tokens is None:
            return None
        try:
            self.tokens.authorize_read(raw, path)
        except AuthDenied as denied:
            return error(denied.status, str(denied))
        return None

    def _readable(self, path: str, raw: str | None) -> bool:
        return self.tokens is None or self._read_denied(path, raw) is None

    # --- FETCH -------------------------------------------------------------------------------------------------
    def _fetch(self, req: Request) -> bytes:
        auth = req.metadata.get("auth")
        hashed = _HASH_PATH.match(req.path)
        if hashed:
            doc = self.store.by_hash(hashed.group(1))
            if doc is None:
                return error("not-found", "content not found for hash " + hashed.group(1))
            return self._read_denied(doc.path, auth) or self._serve_document(req, doc, doc.path)
        base, _, last = req.path.rpartition("/")
        numbered = _VERSION_SEGMENT.match(last)
        if numbered and int(numbered.group(1)) >= 1 and base and not self.store.is_dir(base):
            denied = self._read_denied(base, auth)
            if denied:
                return denied
            doc = self.store.get(base)
            version = doc.version(int(numbered.group(1))) if doc else None
            if doc is None or version is None:
                return error("not-found", req.path + " not found")
            return self._serve_version(req, version, {"current-version": str(doc.current.number)})
        denied = self._read_denied(req.path, auth)
        if denied:
            return denied
        doc = self.store.get(req.path)
        if doc is not None:
            return self._serve_document(req, doc, req.path)
        if self.store.is_dir(req.path):
            return self._fetch_directory(req)
        return error("not-found", req.path + " not found")

    def _serve_document(self, req: Request, doc: Document, shown_path: str) -> bytes:
        if doc.archived:
            return error("archived", shown_path + " is archived")
        return self._serve_version(req, doc.current, {})

    def _serve_version(self, req: Request, version: Version, extra: dict[str, str]) -> bytes:
        etag = version.etag
        if "if-none-match" in req.metadata and req.metadata["if-none-match"] == etag:
            return not_modified()
        since = req.metadata.get("if-modified-since")
        if since is not None:
            moment = _parse_rfc3339(since)
            if moment is not None and not version.modified > moment:
                return not_modified()
        metadata = dict(version.metadata)
        metadata.update(
            {
                "modified": rfc3339(version.modified),
                "etag": etag,
                "version": str(version.number),
                "content-hash": version.content_hash,
                **extra,
            }
        )
        return encode_response("ok", metadata, version.body)

    def _fetch_directory(self, req: Request) -> bytes:
        include_archived = req.metadata.get("include-archived") == "true"
        index = self.store.get(canonical_path(req.path + "/index.md"))
        if index is not None and not index.archived:
            return self._read_denied(index.path, req.metadata.get("auth")) or self._serve_document(
                req, index, index.path
            )
        entries = self._readable_entries(req.path, req.metadata.get("auth"), include_archived, None, MAX_LIST_PAGE + 1)
        page = list_page(req.path, entries, MAX_LIST_PAGE)
        etag = etag_of(page.body)
        if req.metadata.get("if-none-match") == etag:
            return not_modified()
        metadata = {"entries": str(page.entry_count), "etag": etag, "content-hash": content_hash(page.body)}
        return encode_response("ok", metadata, page.body)

    # --- LIST --------------------------------------------------------------------------------------------------
    def _readable_entries(
        self, path: str, auth: str | None, include_archived: bool, after: str | None, limit: int
    ) -> list[DirEntry]:
        entries = []
        for name, is_dir, full in self.store.entries(path, include_archived):
            if after is not None and name.encode("utf-8") <= after.encode("utf-8"):
                continue
            if not self._readable(full + ("/" if is_dir else ""), auth):
                continue
            entries.append(DirEntry(name, is_dir))
            if len(entries) >= limit:
                break
        return entries

    def _list(self, req: Request) -> bytes:
        denied = self._read_denied(req.path, req.metadata.get("auth"))
        if denied:
            return denied
        if _HASH_PATH.match(req.path):
            return error("not-found", req.path + " not found")
        archived_text = req.metadata.get("include-archived", "")
        if archived_text not in ("", "true", "false"):
            return error("bad-request", "invalid include-archived: want true or false")
        include_archived = archived_text == "true"
        size_text = req.metadata.get("page-size", "")
        page_size = MAX_LIST_PAGE
        if size_text:
            if not size_text.isdigit() or not 1 <= int(size_text) <= MAX_LIST_PAGE:
                return error("bad-request", f"invalid page-size: want 1..{MAX_LIST_PAGE}")
            page_size = int(size_text)
        after = None
        if req.metadata.get("cursor"):
            try:
                cursor_path, after, cursor_archived = decode_cursor(req.metadata["cursor"])
            except MarkParseError:
                return error("bad-request", "invalid cursor")
            if cursor_path != req.path or cursor_archived != include_archived:
                return error("bad-request", "invalid cursor")
        if not self.store.is_dir(req.path):
            return error("not-found", req.path + " not found")
        entries = self._readable_entries(req.path, req.metadata.get("auth"), include_archived, after, page_size + 1)
        page = list_page(req.path, entries, page_size)
        cursor = "" if page.complete else encode_cursor(req.path, page.last_name, include_archived)
        return encode_response("ok", list_metadata(page.entry_count, cursor), page.body)

    # --- VERSIONS ----------------------------------------------------------------------------------------------
    def _versions(self, req: Request) -> bytes:
        denied = self._read_denied(req.path, req.metadata.get("auth"))
        if denied:
            return denied
        doc = None if _HASH_PATH.match(req.path) else self.store.get(req.path)
        if doc is None:
            return error("not-found", req.path + " not found")
        rows = [(v.number, v.modified) for v in reversed(doc.versions)]
        return versions_response(req.path, rows, doc.chain_valid())

    # --- LOOKUP ------------------------------------------------------------------------------------------------
    def _lookup(self, req: Request) -> bytes:
        query = req.metadata.get("query", "").strip()
        if query != "*" and len(query) < 2:
            return error("bad-request", "query must be at least 2 characters")
        terms = catalog.count_terms(query)
        if terms > catalog.MAX_TERMS:
            return error("bad-request", f"query has too many terms: {terms} > {catalog.MAX_TERMS}")
        limit = DEFAULT_LOOKUP_LIMIT
        if req.metadata.get("limit"):
            text = req.metadata["limit"]
            if not re.fullmatch(r"[+-]?[0-9]+", text) or int(text) < 1:
                return error("bad-request", "invalid limit")
            limit = min(int(text), MAX_LOOKUP_RESULTS)
        try:
            predicates = catalog.parse_filter(req.metadata.get("filter", ""))
        except catalog.LookupError_ as exc:
            return error("bad-request", str(exc))
        match = req.metadata.get("match")
        if match not in (None, "", "catalog", "body"):
            return error("bad-request", f"invalid match {match!r}: want catalog or body")
        if req.path != "/" and not self.store.is_dir(req.path):
            return error("not-found", req.path + " not found")
        rows = catalog.lookup(self.store.live_documents(), query, req.path, predicates, body=match == "body")
        auth = req.metadata.get("auth")
        visible = [r for r in rows if self._readable(r.path, auth)][:limit]
        echoed = None if match is None else (match or "catalog")
        return lookup_response(query, req.path, visible, echoed)


def _parse_rfc3339(text: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else None
