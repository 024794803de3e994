"""The demarkus MCP tools over a ``MarkBackend``, answering in the demarkus tool-text convention.

``status: <s>`` then ``key: value`` lines, a blank line, and the body (``mark.md`` §6). World-side answers
(not-found, archived, conflict, not-permitted) are ordinary results; transport and URL failures raise
``MarkBackendError``, which the SDK turns into ``isError: true``.
"""

from __future__ import annotations

from swarmgauge.protocols.mark import Response
from swarmgauge.protocols.mcp import format_tool_text
from swarmgauge.targets.mcp_gateway.mark_backend import MarkBackend, target_path

OUTLINE_LIMIT = 8 * 1024
FETCH_FIELDS = ("version", "etag", "modified", "content-hash", "current-version", "type", "tags")
LIST_FIELDS = ("entries", "complete", "next-cursor")
VERSIONS_FIELDS = ("current", "total", "chain-valid", "chain-error")
LOOKUP_FIELDS = ("matches", "match")


def _text(
    response: Response, wanted: tuple[str, ...], body: str | None = None, extra: dict[str, str] | None = None
) -> str:
    fields = {key: response.metadata[key] for key in wanted if key in response.metadata}
    fields.update(extra or {})
    text = body if body is not None else response.body.decode("utf-8", "replace")
    return format_tool_text(response.status, fields, text)


def _outline(body: str) -> str:
    headings = [line for line in body.splitlines() if line.startswith("#")]
    return "\n".join(headings) + "\n"


async def mark_fetch(backend: MarkBackend, url: str, force: bool = False) -> str:
    path, _, anchor = target_path(backend.address, url).partition("#")
    response = await backend.request("FETCH", path)
    body = response.body.decode("utf-8", "replace")
    extra: dict[str, str] = {}
    if anchor and response.status == "ok":
        body = _section(body, anchor)
        extra["section"] = anchor
    if response.status == "ok" and len(body.encode()) > OUTLINE_LIMIT and not force:
        extra["outline"] = "true"
        extra["size"] = str(len(body.encode()))
        body = _outline(body)
    return _text(response, FETCH_FIELDS, body, extra)


def _section(body: str, anchor: str) -> str:
    lines = body.splitlines(keepends=True)
    start = None
    level = 0
    for index, line in enumerate(lines):
        if line.startswith("#"):
            hashes = len(line) - len(line.lstrip("#"))
            slug = "-".join(line.lstrip("#").strip().lower().split())
            if start is None and slug == anchor.lower():
                start, level = index, hashes
            elif start is not None and hashes <= level:
                return "".join(lines[start:index])
    return "".join(lines[start:]) if start is not None else ""


async def mark_list(
    backend: MarkBackend, url: str, include_archived: bool = False, cursor: str = "", page_size: int = 0
) -> str:
    metadata: dict[str, str] = {}
    if include_archived:
        metadata["include-archived"] = "true"
    if cursor:
        metadata["cursor"] = cursor
    if page_size:
        metadata["page-size"] = str(int(page_size))
    response = await backend.request("LIST", target_path(backend.address, url), metadata)
    return _text(response, LIST_FIELDS)


async def mark_versions(backend: MarkBackend, url: str) -> str:
    response = await backend.request("VERSIONS", target_path(backend.address, url))
    return _text(response, VERSIONS_FIELDS)


def _lookup_metadata(query: str, filter: str, limit: int, match: str) -> dict[str, str]:
    metadata = {"query": query}
    if filter:
        metadata["filter"] = filter
    if limit:
        metadata["limit"] = str(int(limit))
    if match:
        metadata["match"] = match
    return metadata


async def mark_lookup(
    backend: MarkBackend, url: str, query: str, filter: str = "", limit: int = 0, match: str = ""
) -> str:
    response = await backend.request(
        "LOOKUP", target_path(backend.address, url), _lookup_metadata(query, filter, limit, match)
    )
    return _text(response, LOOKUP_FIELDS)


async def mark_lookup_all(
    backend: MarkBackend, query: str, scope: str = "/", filter: str = "", limit: int = 0, match: str = ""
) -> str:
    """Every world this gateway knows (one: its Mark server); the rows come back under a ``world`` field."""
    response = await backend.request(
        "LOOKUP", target_path(backend.address, scope or "/"), _lookup_metadata(query, filter, limit, match)
    )
    return _text(response, LOOKUP_FIELDS, extra={"worlds": "1", "world": backend.address.url})


def field_of(text: str, key: str) -> str:
    """One ``key: value`` field of a tool answer's head ('' when absent)."""
    head, _, _body = text.partition("\n\n")
    for line in head.splitlines():
        name, sep, value = line.partition(": ")
        if sep and name == key:
            return value
    return ""
