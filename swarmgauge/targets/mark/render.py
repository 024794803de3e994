"""Markdown bodies of LIST, VERSIONS and LOOKUP responses, as the Go server's ``protocol/render`` writes them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from urllib.parse import quote

from swarmgauge.protocols.mark import encode_response

_ESCAPED = "\\[]()*_`~#|"


def escape(text: str) -> str:
    """Literal markdown text: a backslash before each of ``\\ [ ] ( ) * _ ` ~ # |``."""
    return "".join("\\" + ch if ch in _ESCAPED else ch for ch in text)


def escape_cell(text: str) -> str:
    """:func:`escape` for a table cell: any line break becomes one space, since a raw one would end the row."""
    return escape(text.replace("\r\n", " ").replace("\r", " ").replace("\n", " "))


def path_escape(text: str) -> str:
    """Go's ``url.PathEscape`` (``/`` is escaped too)."""
    return quote(text, safe="$&+,:;=@")


def rfc3339(moment: datetime) -> str:
    """Go's ``time.RFC3339`` for an instant, in UTC: seconds, ``Z``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class DirEntry:
    name: str
    is_dir: bool


@dataclass(frozen=True)
class ListPage:
    body: bytes
    entry_count: int
    complete: bool
    last_name: str


def index_heading(dir_path: str) -> str:
    if dir_path != "/" and not dir_path.endswith("/"):
        dir_path += "/"
    return f"\n# Index of {escape(dir_path)}\n\n"


def entry_line(entry: DirEntry) -> str:
    display, link = escape(entry.name), path_escape(entry.name)
    if entry.is_dir:
        return f"- [{display}/]({link}/)\n"
    return f"- [{display}]({link})\n"


def list_page(dir_path: str, entries: list[DirEntry], page_size: int) -> ListPage:
    """One page from up to ``page_size + 1`` entries: the extra one only tells a full page from the last."""
    shown = entries[:page_size]
    complete = len(entries) <= page_size
    body = index_heading(dir_path) + "".join(entry_line(e) for e in shown)
    if not complete:
        body += "\n*...truncated, too many entries*\n"
    return ListPage(body.encode("utf-8"), len(shown), complete, shown[-1].name if shown else "")


def list_metadata(entry_count: int, next_cursor: str) -> dict[str, str]:
    metadata = {"complete": "false" if next_cursor else "true", "entries": str(entry_count)}
    if next_cursor:
        metadata["next-cursor"] = next_cursor
    return metadata


def versions_response(doc_path: str, versions: list[tuple[int, datetime]], chain_valid: bool) -> bytes:
    """VERSIONS: newest first, each linking ``<PathEscaped doc path>/vN``."""
    lines = "".join(f"- [v{n}]({path_escape(doc_path)}/v{n}) - {rfc3339(moment)}\n" for n, moment in versions)
    metadata = {
        "chain-valid": "true" if chain_valid else "false",
        "current": str(versions[0][0]),
        "total": str(len(versions)),
    }
    if not chain_valid:
        metadata["chain-error"] = "chain integrity check failed"
    body = f"\n# Version History: {escape(doc_path)}\n\n{lines}"
    return encode_response("ok", metadata, body.encode("utf-8"))


@dataclass(frozen=True)
class LookupRow:
    path: str
    importance: float
    title: str
    tags: list[str] = field(default_factory=list)
    anchor: str = ""
    snippet: str = ""


def lookup_response(query: str, scope: str, rows: list[LookupRow], match: str | None) -> bytes:
    """LOOKUP: a table; body mode adds Snippet; ``match`` is echoed only when the request carried it."""
    body_mode = match == "body"
    parts = [f'\n# Lookup matches for "{escape(query)}" in {escape(scope)}\n\n']
    if body_mode:
        parts.append("| Path | Importance | Title | Tags | Snippet |\n|------|------------|-------|------|---------|\n")
    else:
        parts.append("| Path | Importance | Title | Tags |\n|------|------------|-------|------|\n")
    for row in rows:
        location = escape_cell(row.path) + ("#" + row.anchor if row.anchor else "")
        cells = [location, f"{row.importance:.2f}", escape_cell(row.title), escape_cell(", ".join(row.tags))]
        if body_mode:
            cells.append(escape_cell(row.snippet))
        parts.append("| " + " | ".join(cells) + " |\n")
    metadata = {"matches": str(len(rows))}
    if match is not None:
        metadata["match"] = match
    return encode_response("ok", metadata, "".join(parts).encode("utf-8"))
